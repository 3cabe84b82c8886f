/*
 * nupa-gpu-node's inline reduction kernel (native/cuda/README.md, "nupa-gpu-node: the two examples"): datagrams of
 * float vectors from several senders, summed per round, each round's sum sent back to every sender.
 */
#ifndef NUPA_GPU_REDUCE_CUH
#define NUPA_GPU_REDUCE_CUH

#include "gpu_service.cuh"

#define RED_MAGIC 0x4E524544u /* "NRED" */
#define MAX_SENDERS 64

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
__global__ void __launch_bounds__(1024) reduce_kernel(struct nupa_gpu_fabric f, struct service svc, struct control *ctl, uint8_t *staging, struct reduce_state *rs) {
    __shared__ struct rx_batch s_batch;
    __shared__ uint32_t s_words[NUPA_GPU_LOAD_WORDS];
    __shared__ struct nupa_gpu_frame s_frame;
    __shared__ int s_ok, s_valid, s_sender, s_done; /* s_valid apart from s_ok: thread 0 writes it while the others may read s_ok */
    __shared__ uint32_t s_first, s_count;
    __shared__ struct udp_seen s_udp;
    __shared__ struct nupa_gpu_claim s_claim;
    __shared__ uint32_t s_order[MAX_SENDERS];
    __shared__ uint64_t s_scratch[32];
    const uint32_t chunks = (svc.elements + svc.chunk - 1) / svc.chunk;
    uint16_t id = 0;
    /* thread 0's state and counts in shared memory: its steps touch them per frame, a few cycles an access where device
     * memory costs hundreds, in chains that set the batch's time */
    __shared__ struct nupa_gpu_state s_state;
    __shared__ struct counters s_counts;
    struct nupa_gpu_state *st = &s_state;
    struct counters *cnt = &s_counts;
    if (threadIdx.x == 0) {
        nupa_gpu_init(&f, st);
        memset(cnt, 0, sizeof *cnt);
        s_batch.pre_k = 0;
    }
    while (next_batch(&f, st, ctl, cnt, &s_batch, no_lone())) {
        for (int i = 0; i < s_batch.n; i++) {
            take_datagram(&f, st, &svc, cnt, &s_batch, i, s_words, &s_frame, &s_udp, staging, s_scratch, &s_ok, nullptr);
            if (!s_ok) {
                continue;
            }
            if (threadIdx.x == 0) {
                const uint8_t *d = (const uint8_t *) (s_words + 4) + 28;
                s_valid = 0;
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
                    s_valid = 1;
                    s_sender = s;
                    s_first = first;
                    s_count = count;
                }
            }
            __syncthreads();
            if (!s_valid) {
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
                    __syncthreads(); /* every write before the publish, which releases them (nupa_gpu_node.cuh's rule) */
                    if (threadIdx.x == 0) {
                        /* a sender's doorbell once for its chunks, not once a chunk */
                        if (publish_reply(&f, st, &s_claim) == NUPA_OK) {
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
        end_batch(&f, st, &s_batch);
    }
}

#endif
