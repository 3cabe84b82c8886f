/*
 * nupa-cnode: a fabric node written against libnupa alone, for checking it against the Java nodes.
 *
 *   nupa-cnode FABRIC ADDRESS IP/LEN ping DEST_IP COUNT        ICMP echo requests, built here, to DEST_IP
 *   nupa-cnode FABRIC ADDRESS IP/LEN udp DEST_IP PORT FROM TO  one UDP datagram of each size FROM..TO to an
 *                                                               echo service, each echo checked byte for byte
 *   nupa-cnode FABRIC ADDRESS IP/LEN serve SECONDS             answers ICMP echo and UDP echo on port 7 for
 *                                                               SECONDS, or until SIGTERM or SIGINT
 *   nupa-cnode FABRIC ADDRESS IP/LEN rate DEST_IP PORT SIZE SECONDS WINDOW
 *                                                               datagrams of SIZE bytes to an echo service for
 *                                                               SECONDS, WINDOW of them unanswered at most, each echo
 *                                                               checked byte for byte: the echo rate with many in flight
 *
 * IPv4 (RFC 791), ICMP (RFC 792) and UDP (RFC 768) with their checksums; no options, no fragments. ADDRESS -1
 * takes the lowest free address. Prints one result line and exits 0 when every exchange succeeded.
 */
#define _GNU_SOURCE
#include "nupa.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static nupa_node *node;
static uint32_t my_ip;
static uint8_t out[65536];

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000 + (uint64_t) t.tv_nsec / 1000000;
}

static int parse_ip(const char *s, uint32_t *ip) {
    unsigned a, b, c, d;
    char tail;
    if (sscanf(s, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 || b > 255 || c > 255 || d > 255) {
        return -1;
    }
    *ip = (a << 24) | (b << 16) | (c << 8) | d;
    return 0;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t) (v >> 8); p[1] = (uint8_t) v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t) (v >> 16)); put16(p + 2, (uint16_t) v); }
static uint16_t get16(const uint8_t *p) { return (uint16_t) ((p[0] << 8) | p[1]); }
static uint32_t get32(const uint8_t *p) { return ((uint32_t) get16(p) << 16) | get16(p + 2); }

/* The Internet checksum (RFC 1071) of b, starting from sum. */
static uint32_t sum16(const uint8_t *b, size_t n, uint32_t sum) {
    for (size_t i = 0; i + 1 < n; i += 2) {
        sum += (uint32_t) get16(b + i);
    }
    if (n & 1) {
        sum += (uint32_t) b[n - 1] << 8;
    }
    return sum;
}
static uint16_t fold(uint32_t sum) {
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    return (uint16_t) ~sum;
}

/* Sends an IPv4 datagram of protocol proto carrying body (length bytes, already at out + 20) to dst. */
static int send_ip(uint32_t dst, uint8_t proto, size_t length) {
    int to = nupa_lookup_ipv4(node, dst);
    if (to < 0) {
        return -1;
    }
    static uint16_t id;
    uint8_t *h = out;
    memset(h, 0, 20);
    h[0] = 0x45;
    put16(h + 2, (uint16_t) (20 + length));
    put16(h + 4, ++id);
    put16(h + 6, 0x4000); /* DF: never fragmented here */
    h[8] = 64;
    h[9] = proto;
    put32(h + 12, my_ip);
    put32(h + 16, dst);
    put16(h + 10, fold(sum16(h, 20, 0)));
    for (int tries = 0; tries < 1000; tries++) {
        int rc = nupa_send(node, to, NUPA_PROTO_IPV4, out, (uint32_t) (20 + length));
        if (rc != NUPA_BACK_PRESSURED) {
            return rc;
        }
        usleep(100);
    }
    return NUPA_BACK_PRESSURED;
}

static int send_udp(uint32_t dst, uint16_t sport, uint16_t dport, const uint8_t *data, size_t n) {
    uint8_t *u = out + 20;
    put16(u, sport);
    put16(u + 2, dport);
    put16(u + 4, (uint16_t) (8 + n));
    put16(u + 6, 0);
    memmove(u + 8, data, n);
    uint8_t pseudo[12];
    put32(pseudo, my_ip);
    put32(pseudo + 4, dst);
    pseudo[8] = 0;
    pseudo[9] = 17;
    put16(pseudo + 10, (uint16_t) (8 + n));
    uint16_t c = fold(sum16(u, 8 + n, sum16(pseudo, 12, 0)));
    put16(u + 6, c == 0 ? 0xFFFF : c); /* RFC 768: a computed 0 goes as all ones */
    return send_ip(dst, 17, 8 + n);
}

/* What the last frame held, for the modes that wait for one answer at a time. */
struct seen {
    int icmp_reply; /* the sequence number of the last echo reply, -1 none */
    uint8_t udp[65536];
    int udp_len; /* the last UDP payload's length, -1 none */
    long served_icmp, served_udp;
    int serving;
    const uint8_t *rate_data; /* rate: what every echo must hold, rate_len bytes; echoes counted, not kept */
    int rate_len;
    long rate_intact, rate_corrupt;
};
static struct seen seen = {-1, {0}, -1, 0, 0, 0, NULL, 0, 0, 0};
static uint8_t answer[65536];

static void on_frame(void *ctx, int source, uint16_t protocol, const uint8_t *p, uint32_t len) {
    (void) ctx;
    (void) source;
    if (protocol != NUPA_PROTO_IPV4 || len < 20 || (p[0] >> 4) != 4 || (p[0] & 15) != 5 || get16(p + 2) > len
        || get32(p + 16) != my_ip || fold(sum16(p, 20, 0)) != 0) {
        return; /* not IPv4 for us without options, or a bad header: dropped */
    }
    uint32_t src = get32(p + 12);
    const uint8_t *b = p + 20;
    size_t n = get16(p + 2) - 20;
    if (p[9] == 1 && n >= 8 && fold(sum16(b, n, 0)) == 0) {
        if (b[0] == 0) {
            seen.icmp_reply = get16(b + 6);
        } else if (b[0] == 8 && seen.serving) { /* an echo request: the same body back as a reply */
            memcpy(answer, b, n);
            answer[0] = 0;
            put16(answer + 2, 0);
            put16(answer + 2, fold(sum16(answer, n, 0)));
            memcpy(out + 20, answer, n);
            if (send_ip(src, 1, n) == NUPA_OK) {
                seen.served_icmp++;
            }
        }
    } else if (p[9] == 17 && n >= 8 && get16(b + 4) == n) {
        uint8_t pseudo[12];
        put32(pseudo, src);
        put32(pseudo + 4, my_ip);
        pseudo[8] = 0;
        pseudo[9] = 17;
        put16(pseudo + 10, (uint16_t) n);
        if (get16(b + 6) != 0 && fold(sum16(b, n, sum16(pseudo, 12, 0))) != 0) {
            return; /* a bad UDP checksum: dropped */
        }
        if (seen.serving && get16(b + 2) == 7) {
            memcpy(answer, b + 8, n - 8);
            if (send_udp(src, 7, get16(b), answer, n - 8) == NUPA_OK) {
                seen.served_udp++;
            }
        } else if (seen.rate_data != NULL) {
            if ((int) (n - 8) == seen.rate_len && memcmp(b + 8, seen.rate_data, n - 8) == 0) {
                seen.rate_intact++;
            } else {
                seen.rate_corrupt++;
            }
        } else {
            seen.udp_len = (int) (n - 8);
            memcpy(seen.udp, b + 8, n - 8);
        }
    }
}

/* Polls and sleeps until done() holds or ms pass; returns whether it held. */
static int wait_until(int (*done)(int), int arg, uint64_t ms) {
    uint64_t end = now_ms() + ms;
    while (!done(arg)) {
        if (nupa_poll(node, on_frame, NULL, 64) == 0) {
            if (now_ms() >= end) {
                return 0;
            }
            /* Frames ring the doorbell, and a stop signal interrupts the sleep (no SA_RESTART): an idle node wakes only
             * for its deadline, at most once a second, so a thousand of them cost little (docs/libnupa.md). */
            uint64_t left = end - now_ms();
            nupa_wait(node, (long) (left < 1000 ? left : 1000) * 1000000L);
        }
    }
    return 1;
}
static int got_reply(int seq) { return seen.icmp_reply == seq; }
static int got_udp(int len) { return seen.udp_len == len; }
static volatile sig_atomic_t stopped;
static void on_stop(int sig) { (void) sig; stopped = 1; }
static int stop_asked(int unused) { (void) unused; return stopped; }

static int ping(uint32_t dst, const char *name, int count) {
    int replies = 0;
    for (int i = 1; i <= count; i++) {
        uint8_t *e = out + 20;
        e[0] = 8;
        e[1] = 0;
        put16(e + 2, 0);
        put16(e + 4, (uint16_t) getpid());
        put16(e + 6, (uint16_t) i);
        for (int k = 0; k < 56; k++) {
            e[8 + k] = (uint8_t) (k + i);
        }
        put16(e + 2, fold(sum16(e, 64, 0)));
        int rc = send_ip(dst, 1, 64);
        if (rc != NUPA_OK) {
            fprintf(stderr, "nupa-cnode: echo request %d to %s not sent (%d: no node publishes that address?)\n", i, name, rc);
        } else if (wait_until(got_reply, i, 2000)) {
            replies++;
        }
    }
    printf("nupa-cnode: ping %s: %d of %d echo replies\n", name, replies, count);
    return replies == count ? 0 : 1;
}

static int udp(uint32_t dst, const char *name, int port, int from, int to) {
    static uint8_t data[65536];
    int intact = 0, total = 0;
    for (int size = from; size <= to; size++) {
        for (int k = 0; k < size; k++) {
            data[k] = (uint8_t) (k * 7 + size);
        }
        seen.udp_len = -1;
        total++;
        if (send_udp(dst, 40000, (uint16_t) port, data, (size_t) size) == NUPA_OK && wait_until(got_udp, size, 2000)
            && memcmp(seen.udp, data, (size_t) size) == 0) {
            intact++;
        }
    }
    printf("nupa-cnode: udp %s:%d: %d of %d datagrams of %d..%d bytes echoed intact\n", name, port, intact, total, from, to);
    return intact == total ? 0 : 1;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000ull + (uint64_t) t.tv_nsec;
}

/*
 * The echo rate: one datagram of size bytes, built once, sent again and again while fewer than window are unanswered,
 * for seconds, spinning (no sleep: the sender is not to be what limits the rate). Echoes are counted as they come; if
 * none comes for 200 ms the ones in flight are counted lost. Exit 0 when echoes came and none was corrupt.
 */
static int rate(uint32_t dst, const char *name, int port, int size, int seconds, int window) {
    static uint8_t data[65536], pkt[65536];
    int to = nupa_lookup_ipv4(node, dst);
    if (to < 0) {
        fprintf(stderr, "nupa-cnode: no node publishes %s\n", name);
        return 1;
    }
    for (int k = 0; k < size; k++) {
        data[k] = (uint8_t) (k * 7 + size);
    }
    uint8_t *u = pkt + 20;
    put16(u, 40001);
    put16(u + 2, (uint16_t) port);
    put16(u + 4, (uint16_t) (8 + size));
    put16(u + 6, 0);
    memcpy(u + 8, data, (size_t) size);
    uint8_t pseudo[12] = {0};
    put32(pseudo, my_ip);
    put32(pseudo + 4, dst);
    pseudo[9] = 17;
    put16(pseudo + 10, (uint16_t) (8 + size));
    uint16_t c = fold(sum16(u, 8 + (size_t) size, sum16(pseudo, 12, 0)));
    put16(u + 6, c == 0 ? 0xFFFF : c);
    pkt[0] = 0x45;
    put16(pkt + 2, (uint16_t) (28 + size));
    put16(pkt + 6, 0x4000);
    pkt[8] = 64;
    pkt[9] = 17;
    put32(pkt + 12, my_ip);
    put32(pkt + 16, dst);
    put16(pkt + 10, fold(sum16(pkt, 20, 0)));
    seen.rate_data = data;
    seen.rate_len = size;
    long sent = 0, inflight = 0, lost = 0;
    uint64_t start = now_ns(), end = start + (uint64_t) seconds * 1000000000ull, last = start, now = start;
    while (now < end) {
        while (inflight < window) {
            int rc = nupa_send(node, to, NUPA_PROTO_IPV4, pkt, (uint32_t) (28 + size));
            if (rc == NUPA_BACK_PRESSURED) {
                break;
            }
            if (rc != NUPA_OK) {
                fprintf(stderr, "nupa-cnode: a datagram to %s not sent (%d)\n", name, rc);
                return 1;
            }
            sent++;
            inflight++;
        }
        long before = seen.rate_intact + seen.rate_corrupt;
        nupa_poll(node, on_frame, NULL, 64);
        long got = seen.rate_intact + seen.rate_corrupt - before;
        inflight -= got;
        now = now_ns();
        if (got > 0) {
            last = now;
        } else if (inflight > 0 && now - last > 200000000ull) {
            lost += inflight;
            inflight = 0;
            last = now;
        }
    }
    double s = (double) (now - start) / 1e9;
    printf("nupa-cnode: rate %s:%d %d B window %d: %ld echoes intact in %.2f s, %.0f datagrams/s; %ld corrupt, %ld lost, %ld sent\n", name,
           port, size, window, seen.rate_intact, s, seen.rate_intact / s, seen.rate_corrupt, lost, sent);
    return seen.rate_intact > 0 && seen.rate_corrupt == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: nupa-cnode FABRIC ADDRESS IP/LEN ping DEST_IP COUNT | udp DEST_IP PORT FROM TO | serve SECONDS | rate DEST_IP PORT SIZE SECONDS WINDOW\n");
        return 2;
    }
    char ipbuf[32];
    snprintf(ipbuf, sizeof ipbuf, "%s", argv[3]);
    char *slash = strchr(ipbuf, '/');
    int prefix = slash != NULL ? atoi(slash + 1) : 24;
    if (slash != NULL) {
        *slash = 0;
    }
    if (parse_ip(ipbuf, &my_ip) < 0 || prefix < 1 || prefix > 32) {
        fprintf(stderr, "nupa-cnode: %s is not A.B.C.D/LEN\n", argv[3]);
        return 2;
    }
    char err[256];
    node = nupa_join(argv[1], atoi(argv[2]), err, sizeof err);
    if (node == NULL) {
        fprintf(stderr, "nupa-cnode: %s\n", err);
        return 1;
    }
    nupa_publish_ipv4(node, my_ip, prefix);
    int status = 2;
    uint32_t dst;
    if (strcmp(argv[4], "ping") == 0 && argc == 7 && parse_ip(argv[5], &dst) == 0) {
        status = ping(dst, argv[5], atoi(argv[6]));
    } else if (strcmp(argv[4], "udp") == 0 && argc == 9 && parse_ip(argv[5], &dst) == 0) {
        int from = atoi(argv[7]), to = atoi(argv[8]);
        if (from < 0 || to < from || to > 65507) {
            fprintf(stderr, "nupa-cnode: sizes must be 0 <= FROM <= TO <= 65507\n");
        } else {
            status = udp(dst, argv[5], atoi(argv[6]), from, to);
        }
    } else if (strcmp(argv[4], "rate") == 0 && argc == 10 && parse_ip(argv[5], &dst) == 0) {
        int size = atoi(argv[7]), seconds = atoi(argv[8]), window = atoi(argv[9]);
        if (size < 0 || size > 65507 || seconds < 1 || window < 1) {
            fprintf(stderr, "nupa-cnode: rate needs 0 <= SIZE <= 65507, SECONDS >= 1 and WINDOW >= 1\n");
        } else {
            status = rate(dst, argv[5], atoi(argv[6]), size, seconds, window);
        }
    } else if (strcmp(argv[4], "serve") == 0 && argc == 6) {
        seen.serving = 1;
        struct sigaction stop = {0};
        stop.sa_handler = on_stop; /* a stop leaves the fabric cleanly; without SA_RESTART it ends a sleep at once */
        sigaction(SIGTERM, &stop, NULL);
        sigaction(SIGINT, &stop, NULL);
        printf("nupa-cnode: node %d serving ICMP echo and UDP echo on port 7 at %s\n", nupa_address(node), argv[3]);
        fflush(stdout);
        wait_until(stop_asked, 0, (uint64_t) atoi(argv[5]) * 1000);
        printf("nupa-cnode: served %ld echo requests and %ld UDP datagrams\n", seen.served_icmp, seen.served_udp);
        status = 0;
    } else {
        fprintf(stderr, "nupa-cnode: unknown command or arguments: %s (ping DEST_IP COUNT | udp DEST_IP PORT FROM TO | serve SECONDS | rate DEST_IP PORT SIZE SECONDS WINDOW)\n",
                argv[4]);
    }
    nupa_leave(node);
    return status;
}
