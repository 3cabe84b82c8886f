// shm-floor: the physical floor of a shared-memory hand-off on this machine, in C, to check the
// floor that every `nupa perf` latency tool measures beside its own figure (the same measure).
// Two processes (parent and forked child) bounce a counter through one cache line of a
// shared mapping, both busy-spinning; prints one-way latency (round trip / 2) percentiles.
// Build and run, from the repository root:
//   cc -O2 -o /tmp/shm-floor bench/floor/shm-floor.c && /tmp/shm-floor [round_trips]
// Output (last line): floor_oneway_ns p50=.. p99=.. mean=.. round_trips=..
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % (int)sysconf(_SC_NPROCESSORS_ONLN), &set);
    sched_setaffinity(0, sizeof set, &set);
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000, warm = 100000;
    // Two lines 256 bytes apart so adjacent-line prefetch does not couple them.
    volatile uint64_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) { perror("mmap"); return 1; }
    uint64_t *ping = (uint64_t *)mem, *pong = (uint64_t *)((char *)mem + 256);
    pid_t child = fork();
    if (child == 0) {
        pin(1);
        for (uint64_t i = 1; i <= (uint64_t)(n + warm); i++) {
            while (__atomic_load_n(ping, __ATOMIC_ACQUIRE) != i) __builtin_ia32_pause();
            __atomic_store_n(pong, i, __ATOMIC_RELEASE);
        }
        _exit(0);
    }
    pin(0);
    uint64_t *rtt = malloc(sizeof(uint64_t) * (size_t)n), i = 1, total = 0;
    for (; i <= (uint64_t)warm; i++) {
        __atomic_store_n(ping, i, __ATOMIC_RELEASE);
        while (__atomic_load_n(pong, __ATOMIC_ACQUIRE) != i) __builtin_ia32_pause();
    }
    for (long k = 0; k < n; k++, i++) {
        uint64_t t = now_ns();
        __atomic_store_n(ping, i, __ATOMIC_RELEASE);
        while (__atomic_load_n(pong, __ATOMIC_ACQUIRE) != i) __builtin_ia32_pause();
        rtt[k] = now_ns() - t;
        total += rtt[k];
    }
    waitpid(child, NULL, 0);
    qsort(rtt, (size_t)n, sizeof(uint64_t), cmp);
    printf("floor_oneway_ns p50=%.1f p99=%.1f mean=%.1f round_trips=%ld\n",
           rtt[n / 2] / 2.0, rtt[(long)(n * 0.99)] / 2.0, (double)total / n / 2.0, n);
    return 0;
}
