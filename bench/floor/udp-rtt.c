// udp-rtt: UDP ping-pong round trips to an echo server, one datagram in flight, nanosecond clock. It
// busy-polls for each answer (non-blocking recv), so that its own wake-up is not part of the round trip,
// unless MODE is "block" (a blocking recv, as most clients wait).
// Build: cc -O2 -o udp-rtt udp-rtt.c
// Run:   ./udp-rtt IPV4 PORT COUNT [SIZE [MODE]]   prints "p50_ns=N p99_ns=N lost=N"
// bench/gateway-rtt.sh uses it against the TAP floor (bench/floor/tap-echo-floor.c) and the gateway.
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: udp-rtt IPV4 PORT COUNT [SIZE [spin|block]]\n"); return 2; }
    int count = atoi(argv[3]), size = argc > 4 ? atoi(argv[4]) : 64;
    int block = argc > 5 && strcmp(argv[5], "block") == 0;
    if (count < 1 || size < 8 || size > 1400) { fprintf(stderr, "COUNT >= 1 and SIZE in 8..1400\n"); return 2; }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {0};
    to.sin_family = AF_INET;
    to.sin_port = htons((unsigned short)atoi(argv[2]));
    if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) { fprintf(stderr, "bad IPv4 address\n"); return 2; }
    if (connect(fd, (struct sockaddr *)&to, sizeof to) < 0) { perror("connect"); return 1; }
    struct timeval tv = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv); // a blocking recv gives up after a second
    long long *rtt = calloc((size_t)count, sizeof *rtt);
    char buf[1500], in[1500];
    memset(buf, 'x', sizeof buf);
    int got = 0, lost = 0;
    for (int i = 0; i < count; i++) {
        memcpy(buf, &i, sizeof i);
        long long t0 = now_ns();
        if (send(fd, buf, (size_t)size, 0) != size) { lost++; continue; }
        for (;;) {
            ssize_t n = recv(fd, in, sizeof in, block ? 0 : MSG_DONTWAIT);
            if (n < 0) {
                if (block || now_ns() - t0 > 1000000000LL) { lost++; break; } // no answer in a second
                continue;
            }
            int seq;
            memcpy(&seq, in, sizeof seq);
            if (seq == i) { rtt[got++] = now_ns() - t0; break; }
        }
    }
    if (got == 0) { printf("p50_ns=nan p99_ns=nan lost=%d\n", lost); return 1; }
    qsort(rtt, (size_t)got, sizeof *rtt, cmp);
    printf("p50_ns=%lld p99_ns=%lld lost=%d\n", rtt[(got - 1) / 2], rtt[(long)(got - 1) * 99 / 100], lost);
    return 0;
}
