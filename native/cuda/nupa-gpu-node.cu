/*
 * nupa-gpu-node: a fabric node whose packets are received, processed and sent by a CUDA kernel (nupa_gpu_node.cuh,
 * native/cuda/README.md "A GPU node").
 *
 *   nupa-gpu-node [--claim cas|sole] FABRIC ADDRESS IP/LEN echo PORT THREADS SECONDS
 *       a UDP echo server on PORT: each datagram back to its sender, byte for byte, headers and checksums built on the
 *       GPU
 *   nupa-gpu-node [--claim cas|sole] FABRIC ADDRESS IP/LEN reduce PORT SENDERS ELEMENTS CHUNK THREADS SECONDS
 *       inline reduction: SENDERS senders each send a vector of ELEMENTS floats per round, in datagrams of CHUNK
 *       elements; once all have sent round r, the kernel sums the vectors and sends the sum to every sender
 *   nupa-gpu-node FABRIC -1 IP/LEN reduce-check SERVER_IP PORT SENDERS ELEMENTS CHUNK ROUNDS
 *       the senders, on the CPU: SENDERS nodes in this process (the lowest free addresses, node a at 10.0.0.(a+1)/24;
 *       IP/LEN is unused but for its prefix) send ROUNDS rounds of vectors and check every result, bit for bit, against
 *       the sum computed here; prints rounds per second (the rounds after the first)
 *
 * The host joins ADDRESS (-1: the lowest free one), publishes IP/LEN in the neighbor directory, registers the fabric
 * with CUDA and launches one block of THREADS threads that serves until SECONDS pass, SIGTERM or SIGINT, or the node
 * is evicted. Meanwhile the host heartbeats (libnupa's thread) and wakes CPU peers the kernel found asleep. Prints one
 * line when it serves and one with its counters when it stops; exit 0, 1 when the run failed, 2 for bad arguments.
 *
 * --claim: how the kernel claims and publishes slots in its peers' rings (nupa_gpu_node.cuh): cas, the protocol's CASes,
 * which other producers may share a ring with where the link makes the GPU's atomics atomic with the CPUs'; sole, stores
 * alone, as the only producer of every ring it sends into (no other node may send to its peers meanwhile). By default
 * sole where CUDA reports no native atomics on host memory (there a CAS would not guard a shared ring either), else cas.
 *
 * Reduction datagrams (UDP data, SENDERS x ELEMENTS x 4 bytes a round each way):
 *   0  u32 magic 0x4E524544 ("NRED"), big-endian      8  u32 first element, big-endian (a multiple of CHUNK)
 *   4  u32 round, big-endian (0, 1, ...)               12 u32 count, big-endian: min(CHUNK, ELEMENTS - first)
 *   16 count floats, IEEE 754 binary32, little-endian
 * The result of round r comes back in the same format from PORT to each sender's address and port; element i is
 * 0.0f + v[s0][i] + v[s1][i] + ... in float arithmetic, the senders ordered by IPv4 address, then port.
 */
#include <cuda_runtime.h>

#include "nupa.h"
#include "nupa_cuda.cuh"
#include "nupa_gpu_node.cuh"
#include "gpu_echo.cuh"
#include "gpu_reduce.cuh"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the host ---- */

static volatile sig_atomic_t stopped;
static void on_stop(int sig) {
    (void) sig;
    stopped = 1;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000ull + (uint64_t) t.tv_nsec;
}

static void usage(FILE *out) {
    fprintf(out, "usage: nupa-gpu-node [--claim cas|sole] FABRIC ADDRESS IP/LEN echo PORT THREADS SECONDS\n"
                 "       nupa-gpu-node [--claim cas|sole] FABRIC ADDRESS IP/LEN reduce PORT SENDERS ELEMENTS CHUNK THREADS SECONDS\n"
                 "       nupa-gpu-node FABRIC -1 IP/LEN reduce-check SERVER_IP PORT SENDERS ELEMENTS CHUNK ROUNDS\n"
                 "--claim: cas (shared rings, where the link has native atomics) or sole (this node the only producer of its\n"
                 "peers' rings); by default sole where CUDA reports no native atomics on host memory, else cas\n");
}

#define CUDA_OR_FAIL(x)                                                                                                   \
    do {                                                                                                                  \
        cudaError_t e_ = (x);                                                                                             \
        if (e_ != cudaSuccess) {                                                                                          \
            fprintf(stderr, "nupa-gpu-node: %s: %s\n", #x, cudaGetErrorString(e_));                                       \
            return 2;                                                                                                     \
        }                                                                                                                 \
    } while (0)

static int parse_ip(const char *s, uint32_t *ip, int *prefix) {
    unsigned a, b, c, d;
    int len = 24, n = 0;
    if (sscanf(s, "%u.%u.%u.%u%n", &a, &b, &c, &d, &n) != 4 || a > 255 || b > 255 || c > 255 || d > 255) {
        return -1;
    }
    if (s[n] == '/') {
        char *end;
        long l = strtol(s + n + 1, &end, 10);
        if (*end != 0 || l < 1 || l > 32) {
            return -1;
        }
        len = (int) l;
    } else if (s[n] != 0) {
        return -1;
    }
    *ip = (a << 24) | (b << 16) | (c << 8) | d;
    *prefix = len;
    return 0;
}

static long number(const char *s, long lo, long hi) {
    char *end;
    long v = strtol(s, &end, 10);
    return *s != 0 && *end == 0 && v >= lo && v <= hi ? v : lo - 1;
}

static int serve(nupa_node *node, int reduce, struct service svc, int threads, long seconds, const char *ipname, int claim) {
    size_t size;
    uint8_t *host_base = (uint8_t *) nupa_fabric_memory(node, &size), *dev_base;
    CUDA_OR_FAIL(cudaHostRegister(host_base, size, cudaHostRegisterMapped));
    CUDA_OR_FAIL(cudaHostGetDevicePointer((void **) &dev_base, host_base, 0));
    struct control *ctl, *dctl;
    struct nupa_gpu_shared *shared, *dshared;
    CUDA_OR_FAIL(cudaHostAlloc((void **) &ctl, sizeof *ctl, cudaHostAllocMapped));
    CUDA_OR_FAIL(cudaHostAlloc((void **) &shared, sizeof *shared, cudaHostAllocMapped));
    memset(ctl, 0, sizeof *ctl);
    memset(shared, 0, sizeof *shared);
    CUDA_OR_FAIL(cudaHostGetDevicePointer((void **) &dctl, ctl, 0));
    CUDA_OR_FAIL(cudaHostGetDevicePointer((void **) &dshared, shared, 0));
    struct nupa_gpu_fabric f;
    char err[256];
    if (nupa_gpu_fabric_view(node, dev_base, dshared, &f, err, sizeof err) != 0) {
        fprintf(stderr, "nupa-gpu-node: %s\n", err);
        return 2;
    }
    int native_atomics = 0;
    cudaDeviceGetAttribute(&native_atomics, cudaDevAttrHostNativeAtomicSupported, 0);
    f.sole_producer = claim >= 0 ? (uint32_t) claim : !native_atomics;
    if (!native_atomics) {
        fprintf(stderr, "nupa-gpu-node: CUDA reports no native atomics on host memory: %s\n",
                f.sole_producer ? "this node sends as the only producer of its peers' rings (--claim sole): no other node may send "
                                  "to a node it answers while it does (native/cuda/README.md)"
                                : "the GPU's CAS on a peer's ring is atomic with CPU producers only where the link makes it so "
                                  "(PCIe AtomicOps; native/cuda/README.md)");
    }
    uint32_t max_data = f.max_frame - 36;
    if (reduce && 16 + 4ull * svc.chunk > max_data) {
        fprintf(stderr, "nupa-gpu-node: a chunk of %u floats does not fit one datagram of this fabric (at most %u floats)\n", svc.chunk,
                (max_data - 16) / 4);
        return 2;
    }
    uint8_t *staging;
    CUDA_OR_FAIL(cudaMalloc((void **) &staging, BATCH * (size_t) ((f.max_frame + 63) & ~63u))); /* a frame of a batch each (echo) */
    struct reduce_state *rs = NULL;
    if (reduce) {
        struct reduce_state init;
        memset(&init, 0, sizeof init);
        uint32_t chunks = (svc.elements + svc.chunk - 1) / svc.chunk;
        CUDA_OR_FAIL(cudaMalloc((void **) &init.vectors, (size_t) svc.senders * svc.elements * sizeof(float)));
        CUDA_OR_FAIL(cudaMalloc((void **) &init.result, (size_t) svc.elements * sizeof(float)));
        CUDA_OR_FAIL(cudaMalloc((void **) &init.marks, (size_t) svc.senders * chunks * sizeof(uint32_t)));
        CUDA_OR_FAIL(cudaMemset(init.marks, 0, (size_t) svc.senders * chunks * sizeof(uint32_t)));
        CUDA_OR_FAIL(cudaMalloc((void **) &rs, sizeof *rs));
        CUDA_OR_FAIL(cudaMemcpy(rs, &init, sizeof init, cudaMemcpyHostToDevice));
    }
    cudaStream_t stream;
    CUDA_OR_FAIL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (reduce) {
        void *args[] = {&f, &svc, &dctl, &staging, &rs};
        CUDA_OR_FAIL(cudaLaunchKernel(reduce_kernel, dim3(1), dim3(threads), args, 0, stream)); /* not <<<>>>: sim/ runs it too */
    } else {
        void *args[] = {&f, &svc, &dctl, &staging};
        CUDA_OR_FAIL(cudaLaunchKernel(echo_kernel, dim3(1), dim3(threads), args, 0, stream));
    }
#ifdef NUPA_CUDA_SIM
    const char *where = "CPU simulation";
#else
    const char *where = "GPU";
#endif
    const char *claims = f.sole_producer ? "claims by store, the only producer" : "claims by CAS";
    if (reduce) {
        printf("nupa-gpu-node: node %d serving reduction on UDP port %u at %s: %u senders x %u floats in chunks of %u (%s, %d threads, %s)\n",
               nupa_address(node), svc.port, ipname, svc.senders, svc.elements, svc.chunk, where, threads, claims);
    } else {
        printf("nupa-gpu-node: node %d serving UDP echo on port %u at %s (%s, %d threads, %s)\n", nupa_address(node), svc.port, ipname,
               where, threads, claims);
    }
    fflush(stdout);
    /* The host's part while the kernel serves: wake CPU peers it found asleep; stop on a signal, the deadline or eviction. */
    uint64_t end = now_ns() + (uint64_t) seconds * 1000000000ull, last_look = 0;
    int evicted = 0;
    uint64_t woken = 0;
    struct nupa_gpu_counts added;
    memset(&added, 0, sizeof added);
    cudaError_t q;
    while ((q = cudaStreamQuery(stream)) == cudaErrorNotReady) {
        woken += (uint64_t) nupa_gpu_host_poll(node, shared, &added);
        uint64_t now = now_ns();
        if (now - last_look >= 1000000) {
            last_look = now;
            if (!nupa_is_up(node) && !evicted) {
                evicted = 1;
                fprintf(stderr, "nupa-gpu-node: node %d was evicted from the fabric; stopping\n", nupa_address(node));
            }
            if (stopped || now >= end || evicted) {
                __atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
            }
        }
        struct timespec nap = {0, 10000};
        nanosleep(&nap, NULL);
    }
    woken += (uint64_t) nupa_gpu_host_poll(node, shared, &added); /* the last counts */
    if (q != cudaSuccess) {
        fprintf(stderr, "nupa-gpu-node: the kernel failed: %s\n", cudaGetErrorString(q));
        return 1;
    }
    struct counters c = ctl->c; /* the kernel stored them last on its way out */
    if (added.tails_moved > 0) {
        fprintf(stderr, "nupa-gpu-node: %llu times a peer's ring had a tail this node had not put there: another producer shared "
                        "a ring with it (--claim sole allows none), or the consumer repaired its ring\n", (unsigned long long) added.tails_moved);
    }
    if (reduce) {
        printf("nupa-gpu-node: %llu rounds reduced from %llu datagrams, %llu result datagrams sent; dropped: %llu not UDP, %llu bad "
               "checksums, %llu to other ports, %llu bad requests, %llu sends failed; %llu wakes\n",
               (unsigned long long) c.rounds, (unsigned long long) c.served, (unsigned long long) c.results, (unsigned long long) c.not_udp,
               (unsigned long long) c.bad_checksum, (unsigned long long) c.no_port, (unsigned long long) c.bad_request,
               (unsigned long long) c.send_failed, (unsigned long long) woken);
    } else {
        printf("nupa-gpu-node: %llu datagrams echoed; dropped: %llu not UDP, %llu bad checksums, %llu to other ports, %llu sends failed; "
               "%llu wakes\n",
               (unsigned long long) c.served, (unsigned long long) c.not_udp, (unsigned long long) c.bad_checksum,
               (unsigned long long) c.no_port, (unsigned long long) c.send_failed, (unsigned long long) woken);
        if (c.served > 0) {
            printf("nupa-gpu-node: per datagram echoed, ns on average: %.0f headers read and checked, %.0f data summed, %.0f claim, %.0f "
                   "copy and headers, %.0f publish\n", (double) c.step_ns[0] / c.served, (double) c.step_ns[1] / c.served,
                   (double) c.step_ns[2] / c.served, (double) c.step_ns[3] / c.served, (double) c.step_ns[4] / c.served);
            if (c.lone > 0) {
                printf("nupa-gpu-node: %llu frames came alone (warp 0 answered them), ns on average: %.0f waited for, %.0f slot read\n",
                       (unsigned long long) c.lone, (double) c.lone_wait_ns / c.lone, (double) c.lone_read_ns / c.lone);
            }
        }
    }
    return evicted ? 1 : 0;
}

/* ---- reduce-check: the senders on the CPU, and the CPU's computation of every result ---- */

/* Sender s's element e in round r: a float in [-1, 1) with a full mantissa, so that the order of the sum matters. */
static float element(uint32_t s, uint32_t e, uint32_t r) {
    uint64_t x = ((uint64_t) s << 40) ^ ((uint64_t) r << 24) ^ e;
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdULL;
    x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (float) (x >> 40) / 8388608.0f - 1.0f;
}

struct checker {
    nupa_node *node;
    uint32_t ip;
    uint32_t server_ip;
    uint16_t port, server_port;
    uint32_t round, elements, chunk, chunks, got, bad;
    float *expected; /* this round's sum */
};

static void on_result(void *ctx, int source, uint16_t protocol, const uint8_t *p, uint32_t len) {
    struct checker *c = (struct checker *) ctx;
    (void) source;
    struct nupa_g_ip ip;
    if (protocol != NUPA_PROTO_IPV4 || nupa_g_ipv4_parse(p, len, c->ip, &ip) != NUPA_G_IP_OK || ip.proto != 17 || ip.src != c->server_ip) {
        return;
    }
    const uint8_t *u = p + 20, *d = u + 8;
    uint32_t ulen = nupa_g_get16(u + 4);
    if (ulen < 24 || ulen > ip.total - 20 || nupa_g_get16(u) != c->server_port || nupa_g_get16(u + 2) != c->port
            || !nupa_g_udp_valid(u, ip.src, ip.dst, nupa_g_sum(d, ulen - 8, 0))) {
        c->bad++;
        return;
    }
    uint32_t first = nupa_g_get32(d + 8), count = nupa_g_get32(d + 12);
    if (nupa_g_get32(d) != RED_MAGIC || nupa_g_get32(d + 4) != c->round || first >= c->elements || first % c->chunk != 0
            || count != (c->elements - first < c->chunk ? c->elements - first : c->chunk) || ulen - 8 != 16 + 4 * count
            || memcmp(d + 16, c->expected + first, 4 * (size_t) count) != 0) { /* bit for bit: the same sum in the same order */
        c->bad++;
        return;
    }
    c->got++;
}

static int reduce_check(const char *fabric, char **argv) {
    uint32_t server_ip;
    int prefix;
    long port = number(argv[1], 1, 65535), senders = number(argv[2], 1, MAX_SENDERS), elements = number(argv[3], 1, 1L << 26),
         chunk = number(argv[4], 1, 1L << 22), rounds = number(argv[5], 1, 1L << 30);
    if (parse_ip(argv[0], &server_ip, &prefix) != 0 || port < 1 || senders < 1 || elements < 1 || chunk < 1 || rounds < 1) {
        usage(stderr);
        return 2;
    }
    struct checker *c = (struct checker *) calloc((size_t) senders, sizeof *c);
    float *sum = (float *) calloc((size_t) elements, sizeof(float));
    uint8_t *out = (uint8_t *) malloc(65536);
    char err[256];
    int rc = 0;
    for (long s = 0; s < senders; s++) {
        c[s].node = nupa_join(fabric, -1, err, sizeof err);
        if (c[s].node == NULL) {
            fprintf(stderr, "nupa-gpu-node: %s\n", err);
            return 2;
        }
        c[s].ip = (10u << 24) | (uint32_t) (nupa_address(c[s].node) + 1);
        nupa_publish_ipv4(c[s].node, c[s].ip, 24);
        c[s].server_ip = server_ip;
        c[s].port = (uint16_t) (40000 + s);
        c[s].server_port = (uint16_t) port;
        c[s].elements = (uint32_t) elements;
        c[s].chunk = (uint32_t) chunk;
        c[s].chunks = (uint32_t) ((elements + chunk - 1) / chunk);
        c[s].expected = sum;
    }
    int server = -1;
    for (int tries = 0; tries < 3000 && server < 0; tries++) {
        server = nupa_lookup_ipv4(c[0].node, server_ip);
        if (server < 0) {
            usleep(10000);
        }
    }
    if (server < 0) {
        fprintf(stderr, "nupa-gpu-node: no node publishes %s\n", argv[0]);
        rc = 1;
    }
    uint32_t order[MAX_SENDERS];
    for (long s = 0; s < senders; s++) {
        long k = s;
        for (; k > 0 && c[order[k - 1]].ip > c[s].ip; k--) {
            order[k] = order[k - 1];
        }
        order[k] = (uint32_t) s;
    }
    uint64_t t1 = 0;
    uint16_t id = 0;
    for (uint32_t r = 0; rc == 0 && r < (uint32_t) rounds; r++) {
        if (r == 1) {
            t1 = now_ns();
        }
        /* The CPU's sum: senders by IPv4 address (each has its own here), from 0.0f. */
        for (long e = 0; e < elements; e++) {
            float acc = 0.0f;
            for (long k = 0; k < senders; k++) {
                acc += element(order[k], (uint32_t) e, r);
            }
            sum[e] = acc;
        }
        for (long s = 0; s < senders; s++) {
            c[s].round = r;
            c[s].got = 0;
        }
        for (long s = 0; s < senders && rc == 0; s++) {
            for (uint32_t k = 0; k < c[s].chunks && rc == 0; k++) {
                uint32_t first = k * (uint32_t) chunk, count = (uint32_t) (elements - first < chunk ? elements - first : chunk);
                uint8_t *d = out + 28;
                nupa_g_put32(d, RED_MAGIC);
                nupa_g_put32(d + 4, r);
                nupa_g_put32(d + 8, first);
                nupa_g_put32(d + 12, count);
                for (uint32_t j = 0; j < count; j++) {
                    float v = element((uint32_t) s, first + j, r);
                    memcpy(d + 16 + 4 * j, &v, 4); /* little-endian on x86 */
                }
                uint32_t len = 16 + 4 * count;
                nupa_g_ipv4_build(out, c[s].ip, server_ip, 17, 8 + len, ++id);
                nupa_g_udp_build(out + 20, c[s].ip, server_ip, c[s].port, (uint16_t) port, len, nupa_g_sum(d, len, 0));
                int sent;
                uint64_t start = now_ns();
                while ((sent = nupa_send(c[s].node, server, NUPA_PROTO_IPV4, out, 28 + len)) == NUPA_BACK_PRESSURED && now_ns() - start < 10000000000ull) {
                }
                if (sent != NUPA_OK) {
                    fprintf(stderr, "nupa-gpu-node: round %u: a datagram to %s not sent (%d)\n", r, argv[0], sent);
                    rc = 1;
                }
            }
        }
        uint64_t start = now_ns();
        for (int done = 0; rc == 0 && !done;) {
            done = 1;
            for (long s = 0; s < senders; s++) {
                nupa_poll(c[s].node, on_result, &c[s], 64);
                done &= c[s].got == c[s].chunks;
                if (c[s].bad > 0) {
                    fprintf(stderr, "nupa-gpu-node: round %u: sender %ld got a result that differs from the CPU's sum\n", r, s);
                    rc = 1;
                }
            }
            if (!done && now_ns() - start > 10000000000ull) {
                fprintf(stderr, "nupa-gpu-node: round %u: no complete result within 10 s\n", r);
                rc = 1;
            }
        }
    }
    if (rc == 0) {
        double secs = rounds > 1 ? (now_ns() - t1) / 1e9 : 0;
        printf("nupa-gpu-node: reduce-check: %ld rounds of %ld senders x %ld floats, every result equal to the CPU's sum; %.1f rounds/s\n",
               rounds, senders, elements, rounds > 1 ? (rounds - 1) / secs : 0.0);
    }
    for (long s = 0; s < senders; s++) {
        nupa_leave(c[s].node);
    }
    free(c);
    free(sum);
    free(out);
    return rc;
}

int main(int argc, char **argv) {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    int claim = -1; /* by default: as the link's atomics allow */
    if (argc >= 2 && strcmp(argv[1], "--claim") == 0) {
        if (argc < 3 || (strcmp(argv[2], "cas") != 0 && strcmp(argv[2], "sole") != 0)) {
            fprintf(stderr, "nupa-gpu-node: --claim takes cas or sole\n");
            return 2;
        }
        claim = strcmp(argv[2], "sole") == 0;
        argv[2] = argv[0];
        argv += 2;
        argc -= 2;
    }
    if (argc == 11 && strcmp(argv[4], "reduce-check") == 0) {
        return reduce_check(argv[1], argv + 5);
    }
    int echo = argc == 8 && strcmp(argv[4], "echo") == 0;
    int reduce = argc == 11 && strcmp(argv[4], "reduce") == 0;
    if (!echo && !reduce) {
        usage(stderr);
        return 2;
    }
    uint32_t ip;
    int prefix;
    if (parse_ip(argv[3], &ip, &prefix) != 0) {
        fprintf(stderr, "nupa-gpu-node: %s is not A.B.C.D/LEN\n", argv[3]);
        return 2;
    }
    long address = number(argv[2], -1, 1023);
    struct service svc;
    memset(&svc, 0, sizeof svc);
    svc.ip = ip;
    long port = number(argv[5], 1, 65535);
    long threads = number(argv[reduce ? 9 : 6], 1, 1024);
    long seconds = number(argv[reduce ? 10 : 7], 1, 365L * 86400);
    if (address < -1 || port < 1 || threads < 1 || seconds < 1) {
        fprintf(stderr, "nupa-gpu-node: need ADDRESS -1..1023, PORT 1..65535, THREADS 1..1024 and SECONDS >= 1\n");
        return 2;
    }
    svc.port = (uint16_t) port;
    if (reduce) {
        long senders = number(argv[6], 1, MAX_SENDERS), elements = number(argv[7], 1, 1L << 26), chunk = number(argv[8], 1, 1L << 22);
        if (senders < 1 || elements < 1 || chunk < 1) {
            fprintf(stderr, "nupa-gpu-node: need SENDERS 1..%d, ELEMENTS 1..%ld and CHUNK >= 1\n", MAX_SENDERS, 1L << 26);
            return 2;
        }
        svc.senders = (uint32_t) senders;
        svc.elements = (uint32_t) elements;
        svc.chunk = (uint32_t) chunk;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        fprintf(stderr, "nupa-gpu-node: no CUDA device\n");
        return 2;
    }
    char err[256];
    nupa_node *node = nupa_join(argv[1], (int) address, err, sizeof err);
    if (node == NULL) {
        fprintf(stderr, "nupa-gpu-node: %s\n", err);
        return 2;
    }
    nupa_publish_ipv4(node, ip, prefix);
    struct sigaction stop;
    memset(&stop, 0, sizeof stop);
    stop.sa_handler = on_stop;
    sigaction(SIGTERM, &stop, NULL);
    sigaction(SIGINT, &stop, NULL);
    int rc = serve(node, reduce, svc, (int) threads, seconds, argv[3], claim);
    nupa_leave(node);
    return rc;
}
