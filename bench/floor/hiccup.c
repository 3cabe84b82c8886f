// hiccup: what the machine alone takes from a spinning thread, the floor under a latency tool's stalls. Reads
// CLOCK_MONOTONIC in a loop on the CPU it is pinned to and counts the gaps between two reads over 100 us and over
// 1 ms; a gap is time the thread did not run (an interrupt, another task, the hypervisor).
// Build and run, from the repository root:
//   cc -O2 -o /tmp/hiccup bench/floor/hiccup.c && taskset -c 2 /tmp/hiccup [seconds]
// Output: hiccup: S s, gaps over 1 ms N, over 100 us M, longest L ms
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    if (!(seconds > 0)) {
        fprintf(stderr, "hiccup: seconds must be above 0, not %s\n", argv[1]);
        return 2;
    }
    long end = now_ns() + (long) (seconds * 1e9), last = now_ns(), longest = 0, over1ms = 0, over100us = 0;
    for (long t = now_ns(); t < end; t = now_ns()) {
        long gap = t - last;
        over1ms += gap > 1000000;
        over100us += gap > 100000;
        if (gap > longest) {
            longest = gap;
        }
        last = t;
    }
    printf("hiccup: %.0f s, gaps over 1 ms %ld, over 100 us %ld, longest %.3f ms\n", seconds, over1ms, over100us, longest / 1e6);
    return 0;
}
