/*
 * nupa-gpu-node: a fabric node whose packets are received, processed and sent by a CUDA kernel (nupa_gpu_node.cuh,
 * native/cuda/README.md "A GPU node").
 *
 *   nupa-gpu-node FABRIC ADDRESS IP/LEN echo PORT THREADS SECONDS
 *       a UDP echo server on PORT: each datagram back to its sender, byte for byte, headers and checksums built on the
 *       GPU
 *   nupa-gpu-node FABRIC ADDRESS IP/LEN reduce PORT SENDERS ELEMENTS CHUNK THREADS SECONDS
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

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RED_MAGIC 0x4E524544u
#define BATCH 32
#define MAX_SENDERS 64
/* How long a reply waits for room in its peer's ring before it is dropped and counted. */
static constexpr uint64_t SEND_WAIT_NS = 1000ull * 1000 * 1000;
/* After this long without frames the kernel naps between polls (fewer PCIe reads when idle). */
static constexpr uint64_t SPIN_NS = 1000ull * 1000;

/* What the kernel counts: thread 0's, in device memory, stored after every batch into the control block the host reads. */
struct counters {
    uint64_t served;       /* echoes sent, or reduction datagrams accepted */
    uint64_t rounds;       /* reduction rounds completed */
    uint64_t results;      /* reduction result datagrams sent */
    uint64_t not_udp;      /* not IPv4/UDP for this node: another protocol, a bad or fragmented IPv4 header */
    uint64_t bad_checksum; /* a UDP checksum that does not check out */
    uint64_t no_port;      /* UDP to another port */
    uint64_t bad_request;  /* reduction: a wrong magic, round, range, length, an unknown sender or a duplicate */
    uint64_t send_failed;  /* replies not sent: the peer down, its ring full for SEND_WAIT_NS, or a late publish */
    /* echo: thread 0's time a datagram spends in each step, summed over the datagrams echoed (%globaltimer ns): the
     * slot's and datagram's headers read and checked, the data read and summed, the claim, the copy and headers
     * written, the publish */
    uint64_t step_ns[5];
};

struct control {
    uint32_t stop; /* set by the host */
    /* ... and the kernel's counters (store_counts): stores only, so that a count costs no read across PCIe */
    uint32_t pad[15];
    struct counters c;
};

/* One sender of the reduction. */
struct sender {
    uint32_t ip, node;
    uint16_t port;
};

struct reduce_state {
    struct sender senders[MAX_SENDERS];
    uint32_t nsenders, got[MAX_SENDERS];
    uint32_t round;  /* this session's round */
    uint32_t serial; /* rounds of every session so far: what marks compare with */
    float *vectors; /* SENDERS x ELEMENTS */
    float *result;  /* ELEMENTS */
    uint32_t *marks; /* SENDERS x chunks: serial + 1 once that chunk of that round came */
};

struct service {
    uint32_t ip;
    uint16_t port;
    uint32_t senders, elements, chunk; /* reduce */
};

/* ---- the kernels ---- */

static __device__ int stop_asked(const struct control *ctl) { return *(const volatile uint32_t *) &ctl->stop != 0; }

/* Thread 0: the counters into the host's control block (posted writes). */
static __device__ void store_counts(struct control *ctl, const struct counters *cnt) {
    volatile uint64_t *to = (volatile uint64_t *) &ctl->c;
    for (unsigned k = 0; k < sizeof *cnt / 8; k++) {
        to[k] = ((const uint64_t *) cnt)[k];
    }
}

/*
 * Thread 0: waits for frames in any of the node's rings. Returns how many slots it took (0 when asked to stop), with
 * their ring and where its head goes once they are done with. Spins for SPIN_NS after the last frame, then naps; looks at
 * the stop flag and runs the stall check every millisecond while idle.
 */
static __device__ int wait_frames(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, const struct control *ctl,
        const uint8_t **slots, uint32_t *ring, uint64_t *next, int *stop) {
    uint64_t idle_since = nupa_globaltimer(), last_look = idle_since;
    for (uint32_t turn = 0;; turn++) {
        for (uint32_t r = 0; r < f->rings_per_node; r++) {
            int n = nupa_gpu_rx_ready(f, st, r, slots, BATCH, next);
            if (n > 0 || *next != st->head[r]) {
                *ring = r;
                return n;
            }
        }
        if ((turn & 63) == 63) {
            uint64_t now = nupa_globaltimer();
            if (now - last_look >= 1000000) {
                last_look = now;
                if (stop_asked(ctl)) {
                    *stop = 1;
                    return 0;
                }
                nupa_gpu_rx_check(f, st, now);
                nupa_gpu_flush(f, st);
            }
            if (now - idle_since >= SPIN_NS) {
                __nanosleep(20000);
            }
        }
    }
}

/* Thread 0: claims room for a frame of length bytes in ring 0 of dest, waiting while it is full. NUPA_OK or why not. */
static __device__ int claim_reply(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t dest, uint32_t length, struct nupa_gpu_claim *c,
        const struct control *ctl) {
    uint64_t start = 0;
    for (;;) {
        int rc = nupa_gpu_claim(f, st, dest, 0, length, c);
        if (rc != NUPA_BACK_PRESSURED) {
            return rc;
        }
        uint64_t now = nupa_globaltimer();
        if (start == 0) {
            start = now;
        } else if (now - start >= SEND_WAIT_NS || stop_asked(ctl)) {
            return rc;
        }
        __nanosleep(500);
    }
}

/* A datagram's IPv4 header and UDP ports and length, as check_udp found them. */
struct udp_seen {
    struct nupa_g_ip ip;
    uint16_t sport;
    uint32_t len; /* data bytes */
};

/* Thread 0: whether the datagram in hdr (its first 28 bytes at least) is UDP to port for this node (counted if not). */
static __device__ int check_udp(const struct nupa_gpu_frame *fr, const uint8_t *hdr, uint32_t my_ip, uint16_t port,
        struct udp_seen *u, struct counters *cnt) {
    if (fr->protocol != NUPA_PROTO_IPV4 || fr->length < 28 || nupa_g_ipv4_parse(hdr, fr->length, my_ip, &u->ip) != NUPA_G_IP_OK
            || u->ip.proto != 17) {
        cnt->not_udp++;
        return 0;
    }
    uint32_t ulen = nupa_g_get16(hdr + 24);
    if (ulen < 8 || ulen > u->ip.total - 20) {
        cnt->not_udp++;
        return 0;
    }
    if (nupa_g_get16(hdr + 22) != port) {
        cnt->no_port++;
        return 0;
    }
    u->sport = nupa_g_get16(hdr + 20);
    u->len = ulen - 8;
    return 1;
}

/* Thread 0: writes the link, IPv4 and UDP headers of a reply (36 bytes) into the claimed slot. */
static __device__ void reply_headers(const struct nupa_gpu_fabric *f, const struct nupa_gpu_claim *c, uint32_t my_ip, uint32_t to_ip,
        uint16_t sport, uint16_t dport, uint32_t data_len, uint64_t data_sum, uint16_t id) {
    uint32_t h[9];
    uint8_t *b = (uint8_t *) h;
    nupa_g_link_build(b, c->dest, f->address, NUPA_PROTO_IPV4, 28 + data_len);
    nupa_g_ipv4_build(b + 8, my_ip, to_ip, 17, 8 + data_len, id);
    nupa_g_udp_build(b + 28, my_ip, to_ip, sport, dport, data_len, data_sum);
    for (int k = 0; k < 9; k++) {
        ((volatile uint32_t *) c->frame)[k] = h[k];
    }
}

/*
 * The UDP echo: thread 0 takes a batch of frames; for each, the block reads its headers, thread 0 checks them, the
 * block sums the data (checking the checksum) while copying it to staging, thread 0 claims a slot in the sender's ring,
 * the block copies the data into it, thread 0 writes the headers and publishes; then the batch's slots are released.
 */
__global__ void __launch_bounds__(1024) echo_kernel(struct nupa_gpu_fabric f, struct service svc, struct control *ctl, struct counters *cnt,
        struct nupa_gpu_state *st, uint8_t *staging) {
    __shared__ const uint8_t *s_slots[BATCH];
    __shared__ uint32_t s_words[NUPA_GPU_LOAD_WORDS];
    __shared__ struct nupa_gpu_frame s_frame;
    __shared__ uint32_t s_accepted;
    __shared__ int s_n, s_stop, s_ok;
    __shared__ uint32_t s_ring;
    __shared__ uint64_t s_next;
    __shared__ struct udp_seen s_udp;
    __shared__ struct nupa_gpu_claim s_claim;
    __shared__ uint64_t s_scratch[1024];
    uint16_t id = 0;
    if (threadIdx.x == 0) {
        nupa_gpu_init(&f, st);
        s_stop = 0;
    }
    for (;;) {
        if (threadIdx.x == 0) {
            int stop = 0;
            s_n = wait_frames(&f, st, ctl, s_slots, &s_ring, &s_next, &stop);
            s_accepted = 0;
            s_stop = stop;
        }
        __syncthreads();
        if (s_stop) {
            if (threadIdx.x == 0) {
                store_counts(ctl, cnt);
            }
            return;
        }
        for (int i = 0; i < s_n; i++) {
            uint64_t t0 = threadIdx.x == 0 ? nupa_globaltimer() : 0, t1 = 0, t2 = 0, t3 = 0;
            nupa_gpu_rx_load(s_slots[i], s_words); /* the slot's and the datagram's headers in one round trip */
            const uint32_t *s_hdr = s_words + 4;
            if (threadIdx.x == 0) {
                s_ok = nupa_gpu_rx_frame(&f, st, s_slots[i], s_words, &s_frame)
                        && check_udp(&s_frame, (const uint8_t *) s_hdr, svc.ip, svc.port, &s_udp, cnt);
                s_accepted += s_ok;
                t1 = nupa_globaltimer();
            }
            __syncthreads();
            if (!s_ok) {
                continue;
            }
            uint64_t sum = nupa_gpu_block_sum(s_frame.payload + 28, staging, s_udp.len, s_scratch);
            if (threadIdx.x == 0) {
                s_ok = 0;
                t2 = nupa_globaltimer();
                if (!nupa_g_udp_valid((const uint8_t *) s_hdr + 20, s_udp.ip.src, s_udp.ip.dst, sum)) {
                    cnt->bad_checksum++;
                } else if (claim_reply(&f, st, s_frame.source, 36 + s_udp.len, &s_claim, ctl) != NUPA_OK) {
                    cnt->send_failed++;
                } else {
                    s_ok = 1;
                }
            }
            __syncthreads();
            if (!s_ok) {
                continue;
            }
            /* Each thread copies the words it staged itself: data at frame + 36, 4-byte aligned in the slot; thread 0
             * writes the headers meanwhile. */
            if (threadIdx.x == 0) {
                t3 = nupa_globaltimer();
                reply_headers(&f, &s_claim, svc.ip, s_udp.ip.src, svc.port, s_udp.sport, s_udp.len, sum, ++id);
            }
            for (uint32_t k = threadIdx.x; k < (s_udp.len + 3) / 4; k += blockDim.x) {
                ((volatile uint32_t *) (s_claim.frame + 36))[k] = ((const uint32_t *) staging)[k];
            }
            __threadfence_system();
            __syncthreads();
            if (threadIdx.x == 0) {
                uint64_t t4 = nupa_globaltimer();
                if (nupa_gpu_publish(&f, st, &s_claim, 0) == NUPA_OK) {
                    cnt->served++;
                    uint64_t t5 = nupa_globaltimer();
                    cnt->step_ns[0] += t1 - t0;
                    cnt->step_ns[1] += t2 - t1;
                    cnt->step_ns[2] += t3 - t2;
                    cnt->step_ns[3] += t4 - t3;
                    cnt->step_ns[4] += t5 - t4;
                } else {
                    cnt->send_failed++;
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            nupa_gpu_rx_release(&f, st, s_ring, s_next, s_accepted);
            store_counts(ctl, cnt);
        }
        __syncthreads();
    }
}

/* Whether no datagram of the current round has come yet. */
static __device__ int idle_round(const struct reduce_state *rs) {
    for (uint32_t s = 0; s < rs->nsenders; s++) {
        if (rs->got[s] != 0) {
            return 0;
        }
    }
    return 1;
}

/* Thread 0: the sender of a datagram (registered at its first), or -1 once SENDERS others are known. */
static __device__ int sender_of(struct reduce_state *st, uint32_t limit, uint32_t ip, uint16_t port, uint32_t node) {
    for (uint32_t s = 0; s < st->nsenders; s++) {
        if (st->senders[s].ip == ip && st->senders[s].port == port) {
            st->senders[s].node = node;
            return (int) s;
        }
    }
    if (st->nsenders >= limit) {
        return -1;
    }
    st->senders[st->nsenders].ip = ip;
    st->senders[st->nsenders].port = port;
    st->senders[st->nsenders].node = node;
    st->got[st->nsenders] = 0;
    return (int) st->nsenders++;
}

/*
 * Inline reduction (GPUNetIO's manner): datagrams are checked and their floats copied into the sender's vector as they
 * come; when every sender's every chunk of the round is in, the block sums the vectors and sends each sender the sum,
 * chunk by chunk, then the round moves on.
 */
__global__ void __launch_bounds__(1024) reduce_kernel(struct nupa_gpu_fabric f, struct service svc, struct control *ctl, struct counters *cnt,
        struct nupa_gpu_state *st, uint8_t *staging, struct reduce_state *rs) {
    __shared__ const uint8_t *s_slots[BATCH];
    __shared__ uint32_t s_words[NUPA_GPU_LOAD_WORDS];
    __shared__ struct nupa_gpu_frame s_frame;
    __shared__ uint32_t s_accepted;
    __shared__ int s_n, s_stop, s_ok, s_sender, s_done;
    __shared__ uint32_t s_ring, s_first, s_count;
    __shared__ uint64_t s_next;
    __shared__ struct udp_seen s_udp;
    __shared__ struct nupa_gpu_claim s_claim;
    __shared__ uint32_t s_order[MAX_SENDERS];
    __shared__ uint64_t s_scratch[1024];
    const uint32_t chunks = (svc.elements + svc.chunk - 1) / svc.chunk;
    uint16_t id = 0;
    if (threadIdx.x == 0) {
        nupa_gpu_init(&f, st);
        s_stop = 0;
    }
    for (;;) {
        if (threadIdx.x == 0) {
            int stop = 0;
            s_n = wait_frames(&f, st, ctl, s_slots, &s_ring, &s_next, &stop);
            s_accepted = 0;
            s_stop = stop;
        }
        __syncthreads();
        if (s_stop) {
            if (threadIdx.x == 0) {
                store_counts(ctl, cnt);
            }
            return;
        }
        for (int i = 0; i < s_n; i++) {
            nupa_gpu_rx_load(s_slots[i], s_words); /* the slot's and the datagram's headers in one round trip */
            const uint32_t *s_hdr = s_words + 4;
            if (threadIdx.x == 0) {
                s_ok = nupa_gpu_rx_frame(&f, st, s_slots[i], s_words, &s_frame)
                        && check_udp(&s_frame, (const uint8_t *) s_hdr, svc.ip, svc.port, &s_udp, cnt);
                s_accepted += s_ok;
            }
            __syncthreads();
            if (!s_ok) {
                continue;
            }
            uint64_t sum = nupa_gpu_block_sum(s_frame.payload + 28, staging, s_udp.len, s_scratch);
            if (threadIdx.x == 0) {
                const uint8_t *d = (const uint8_t *) s_hdr + 28;
                s_ok = 0;
                if (!nupa_g_udp_valid((const uint8_t *) s_hdr + 20, s_udp.ip.src, s_udp.ip.dst, sum)) {
                    cnt->bad_checksum++;
                } else {
                    uint32_t first = s_udp.len >= 16 ? nupa_g_get32(d + 8) : 0, count = s_udp.len >= 16 ? nupa_g_get32(d + 12) : 0;
                    int s = -1;
                    uint32_t round = s_udp.len >= 16 ? nupa_g_get32(d + 4) : 0;
                    if (round == 0 && rs->round != 0 && nupa_g_get32(d) == RED_MAGIC && idle_round(rs)) {
                        rs->round = 0; /* a new session: its senders register afresh */
                        rs->nsenders = 0;
                    }
                    if (s_udp.len < 16 || nupa_g_get32(d) != RED_MAGIC || round != rs->round || first >= svc.elements
                            || first % svc.chunk != 0 || count != min(svc.chunk, svc.elements - first) || s_udp.len != 16 + 4 * count
                            || (s = sender_of(rs, svc.senders, s_udp.ip.src, s_udp.sport, s_frame.source)) < 0
                            || rs->marks[(uint64_t) s * chunks + first / svc.chunk] == rs->serial + 1) {
                        cnt->bad_request++;
                    } else {
                        rs->marks[(uint64_t) s * chunks + first / svc.chunk] = rs->serial + 1;
                        s_ok = 1;
                        s_sender = s;
                        s_first = first;
                        s_count = count;
                    }
                }
            }
            __syncthreads();
            if (!s_ok) {
                continue;
            }
            float *v = rs->vectors + (uint64_t) s_sender * svc.elements + s_first;
            for (uint32_t k = threadIdx.x; k < s_count; k += blockDim.x) {
                v[k] = ((const float *) (staging + 16))[k]; /* staged by the sum's pass, little-endian as the GPU's */
            }
            if (threadIdx.x == 0) {
                cnt->served++;
                s_done = 0;
                if (++rs->got[s_sender] == chunks && rs->nsenders == svc.senders) {
                    s_done = 1;
                    for (uint32_t s = 0; s < rs->nsenders; s++) {
                        s_done &= rs->got[s] == chunks;
                    }
                }
                if (s_done) { /* the senders in address, then port, order: the sum's order, which the CPU's check repeats */
                    for (uint32_t s = 0; s < rs->nsenders; s++) {
                        uint32_t k = s;
                        while (k > 0) {
                            const struct sender *a = &rs->senders[s_order[k - 1]], *b = &rs->senders[s];
                            if (a->ip < b->ip || (a->ip == b->ip && a->port < b->port)) {
                                break;
                            }
                            s_order[k] = s_order[k - 1];
                            k--;
                        }
                        s_order[k] = s;
                    }
                }
            }
            __syncthreads();
            if (!s_done) {
                continue;
            }
            for (uint32_t e = threadIdx.x; e < svc.elements; e += blockDim.x) {
                float acc = 0.0f;
                for (uint32_t s = 0; s < svc.senders; s++) {
                    acc += rs->vectors[(uint64_t) s_order[s] * svc.elements + e];
                }
                rs->result[e] = acc;
            }
            __syncthreads();
            for (uint32_t s = 0; s < svc.senders; s++) {
                for (uint32_t k = 0; k < chunks; k++) {
                    uint32_t first = k * svc.chunk, count = min(svc.chunk, svc.elements - first), len = 16 + 4 * count;
                    if (threadIdx.x == 0) {
                        nupa_g_put32(staging, RED_MAGIC);
                        nupa_g_put32(staging + 4, rs->round);
                        nupa_g_put32(staging + 8, first);
                        nupa_g_put32(staging + 12, count);
                        s_ok = claim_reply(&f, st, rs->senders[s].node, 36 + len, &s_claim, ctl) == NUPA_OK;
                        if (!s_ok) {
                            cnt->send_failed++;
                        }
                    }
                    for (uint32_t j = threadIdx.x; j < count; j += blockDim.x) {
                        ((float *) (staging + 16))[j] = rs->result[first + j];
                    }
                    __syncthreads();
                    int ok = s_ok;
                    __syncthreads(); /* everyone read s_ok before thread 0 writes the next chunk's */
                    if (!ok) {
                        continue;
                    }
                    uint64_t rsum = nupa_gpu_block_sum(staging, s_claim.frame + 36, len, s_scratch);
                    if (threadIdx.x == 0) {
                        reply_headers(&f, &s_claim, svc.ip, rs->senders[s].ip, svc.port, rs->senders[s].port, len, rsum, ++id);
                    }
                    __threadfence_system();
                    __syncthreads();
                    if (threadIdx.x == 0) {
                        if (nupa_gpu_publish(&f, st, &s_claim, 0) == NUPA_OK) {
                            cnt->results++;
                        } else {
                            cnt->send_failed++;
                        }
                    }
                    __syncthreads();
                }
            }
            if (threadIdx.x == 0) {
                for (uint32_t s = 0; s < rs->nsenders; s++) {
                    rs->got[s] = 0;
                }
                rs->round++;
                rs->serial++;
                cnt->rounds++;
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            nupa_gpu_rx_release(&f, st, s_ring, s_next, s_accepted);
            store_counts(ctl, cnt);
        }
        __syncthreads();
    }
}

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
    fprintf(out, "usage: nupa-gpu-node FABRIC ADDRESS IP/LEN echo PORT THREADS SECONDS\n"
                 "       nupa-gpu-node FABRIC ADDRESS IP/LEN reduce PORT SENDERS ELEMENTS CHUNK THREADS SECONDS\n"
                 "       nupa-gpu-node FABRIC -1 IP/LEN reduce-check SERVER_IP PORT SENDERS ELEMENTS CHUNK ROUNDS\n");
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

static int serve(nupa_node *node, int reduce, struct service svc, int threads, long seconds, const char *ipname) {
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
    uint32_t max_data = f.max_frame - 36;
    if (reduce && 16 + 4ull * svc.chunk > max_data) {
        fprintf(stderr, "nupa-gpu-node: a chunk of %u floats does not fit one datagram of this fabric (at most %u floats)\n", svc.chunk,
                (max_data - 16) / 4);
        return 2;
    }
    struct nupa_gpu_state *gst;
    struct counters *dcnt;
    uint8_t *staging;
    CUDA_OR_FAIL(cudaMalloc((void **) &gst, sizeof *gst));
    CUDA_OR_FAIL(cudaMalloc((void **) &dcnt, sizeof *dcnt));
    CUDA_OR_FAIL(cudaMemset(dcnt, 0, sizeof *dcnt));
    CUDA_OR_FAIL(cudaMalloc((void **) &staging, (f.max_frame + 63) & ~63u));
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
        void *args[] = {&f, &svc, &dctl, &dcnt, &gst, &staging, &rs};
        CUDA_OR_FAIL(cudaLaunchKernel(reduce_kernel, dim3(1), dim3(threads), args, 0, stream)); /* not <<<>>>: sim/ runs it too */
    } else {
        void *args[] = {&f, &svc, &dctl, &dcnt, &gst, &staging};
        CUDA_OR_FAIL(cudaLaunchKernel(echo_kernel, dim3(1), dim3(threads), args, 0, stream));
    }
#ifdef NUPA_CUDA_SIM
    const char *where = "CPU simulation";
#else
    const char *where = "GPU";
#endif
    int native_atomics = 0;
    cudaDeviceGetAttribute(&native_atomics, cudaDevAttrHostNativeAtomicSupported, 0);
    if (!native_atomics) { /* nupa_gpu_node.cuh: the claim's CAS is atomic among this GPU's threads, not with CPU producers */
        fprintf(stderr, "nupa-gpu-node: CUDA reports no native atomics on host memory: the GPU's CAS on a peer's ring is atomic "
                        "with CPU producers only where the link makes it so (PCIe AtomicOps; native/cuda/README.md)\n");
    }
    if (reduce) {
        printf("nupa-gpu-node: node %d serving reduction on UDP port %u at %s: %u senders x %u floats in chunks of %u (%s, %d threads)\n",
               nupa_address(node), svc.port, ipname, svc.senders, svc.elements, svc.chunk, where, threads);
    } else {
        printf("nupa-gpu-node: node %d serving UDP echo on port %u at %s (%s, %d threads)\n", nupa_address(node), svc.port, ipname, where,
               threads);
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
    int rc = serve(node, reduce, svc, (int) threads, seconds, argv[3]);
    nupa_leave(node);
    return rc;
}
