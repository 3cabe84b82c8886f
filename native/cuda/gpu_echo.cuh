/* nupa-gpu-node's UDP echo kernel (native/cuda/README.md, "nupa-gpu-node: the two examples"). */
#ifndef NUPA_GPU_ECHO_CUH
#define NUPA_GPU_ECHO_CUH

#include "gpu_service.cuh"

/* Words of each frame's slot the echo reads at once from offset 8: headers and the data of a datagram of up to 212 bytes. */
#define ECHO_LOAD_WORDS 64
/* Words each lane of a warp loads before it sums them (the rest of a larger datagram): in registers, of which
 * 1,024 threads a block have 64 each. */
#define ECHO_LOADS 16
#if defined(__CUDACC__)
#define ECHO_UNROLL _Pragma("unroll") /* the loads in registers: a loop over local memory would wait for each */
#else
#define ECHO_UNROLL
#endif

/*
 * A warp's lanes: the ones'-complement sum of len bytes of datagram data at src (4-byte aligned; in a slot or in
 * shared memory), each lane's part (the warp adds them up), each word copied to dst on the way unless dst is NULL.
 * ECHO_LOADS loads a lane in flight before any is used: one round trip for each 2 KiB, not each 128 bytes.
 */
static __device__ uint64_t echo_warp_sum(const uint8_t *src, uint8_t *dst, uint32_t len, uint32_t lane, uint32_t lanes) {
    uint64_t part = 0;
    const uint32_t words = (len + 3) / 4;
    for (uint32_t base = 0; base < words; base += ECHO_LOADS * lanes) {
        uint32_t w[ECHO_LOADS];
ECHO_UNROLL
        for (uint32_t u = 0; u < ECHO_LOADS; u++) {
            uint32_t k = base + u * lanes + lane;
            w[u] = k < words ? *(const volatile uint32_t *) (src + 4 * k) : 0;
        }
ECHO_UNROLL
        for (uint32_t u = 0; u < ECHO_LOADS; u++) {
            uint32_t k = base + u * lanes + lane;
            if (k >= words) {
                break;
            }
            if (dst != NULL) {
                *(uint32_t *) (dst + 4 * k) = w[u];
            }
            uint32_t left = len - 4 * k;
            if (left < 4) {
                w[u] &= (1u << (8 * left)) - 1; /* little-endian: the bytes past the data are the high ones */
            }
            part += nupa_g_sum_word(w[u]);
        }
    }
    return part;
}

/*
 * A warp's lanes: len bytes of data from (4-byte aligned, device or shared memory) into a reply's frame at to, 4-byte
 * aligned in its slot; the last bytes alone: a slot may end right after the frame, and the next slot's ctrl follows.
 */
static __device__ void echo_warp_copy(const uint8_t *from, uint8_t *to, uint32_t len, uint32_t lane, uint32_t lanes) {
    for (uint32_t k = lane; k < (len + 3) / 4; k += lanes) {
        uint32_t w = ((const uint32_t *) from)[k];
        if (4 * k + 4 <= len) {
            ((volatile uint32_t *) to)[k] = w;
        } else {
            for (uint32_t b = 0; 4 * k + b < len; b++) {
                ((volatile uint8_t *) to)[4 * k + b] = (uint8_t) (w >> (8 * b));
            }
        }
    }
}

/*
 * The echo of a lone frame, on warp 0 (next_batch's lone): a frame that came to an idle ring, answered without the
 * block's barriers (1.0-1.7 us less a 64-byte round trip than through the batch's steps, on the H200). The slot's first words, 8 bytes
 * a lane, with the next slot's ctrl beside them (one round trip; published already: the block looks next); lane 0
 * checks the headers, the lanes sum the data (what the first read did not hold staged on the way) and add it up by
 * shuffles; lane 0 checks the UDP checksum, claims the reply's slot and writes its headers, the lanes copy the data in,
 * and lane 0 publishes, gives the slot back and leaves the doorbell to the next look (ring_later). Its memory is the
 * block's for frame 0 of a batch, which no other warp touches meanwhile.
 */
struct echo_lone {
    const struct nupa_gpu_fabric *f;
    struct nupa_gpu_state *st;
    const struct service *svc;
    const struct control *ctl;
    struct counters *cnt;
    uint32_t *words; /* ECHO_LOAD_WORDS, 8-byte aligned */
    struct nupa_gpu_frame *fr;
    struct udp_seen *u;
    struct nupa_gpu_claim *c;
    int *ok;
    uint16_t *id;
    uint8_t *staging;
    uint32_t load_words, held;

    __device__ int operator()(struct rx_batch *b) const {
        const uint32_t lane = threadIdx.x, lanes = min(32u, blockDim.x);
        const unsigned mask = warp0_mask();
        const uint8_t *slot = b->slots[0];
        uint64_t t0 = lane == 0 ? nupa_globaltimer() : 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0;
        uint64_t after = 0;
        if (lane == 0) { /* a hint only: the block's look reads it again with acquire */
            after = nupa_wr_load64_relaxed((const uint64_t *) nupa_g_slot(f, nupa_g_ring(f, f->address, b->ring), b->next));
        }
        const uint32_t pairs = load_words / 2; /* load_words is even: slot_bytes is a multiple of 64 */
        for (uint32_t k = lane; k < pairs; k += 2 * lanes) {
            uint32_t k2 = k + lanes; /* two loads in flight before either is stored */
            uint64_t x = *(const volatile uint64_t *) (slot + 8 + 8 * k);
            uint64_t y = k2 < pairs ? *(const volatile uint64_t *) (slot + 8 + 8 * k2) : 0;
            ((uint64_t *) words)[k] = x;
            if (k2 < pairs) {
                ((uint64_t *) words)[k2] = y;
            }
        }
        __syncwarp(mask);
        if (lane == 0) {
            cnt->lone++;
            cnt->lone_wait_ns += b->waited_ns < 1000000 ? b->waited_ns : 0; /* not the idle gaps between runs */
            cnt->lone_read_ns += nupa_globaltimer() - t0;
            *ok = nupa_gpu_rx_frame(f, st, slot, words, fr) && check_udp(fr, (const uint8_t *) (words + 4), svc->ip, svc->port, u, cnt);
            b->accepted = *ok;
            st->look[b->ring] = (after >> 2) == b->next + 1 ? 2 : 1;
            t1 = nupa_globaltimer();
        }
        __syncwarp(mask);
        int sent = 0;
        if (*ok) {
            const uint32_t len = u->len;
            const int whole = len <= held;
            uint64_t part = echo_warp_sum(whole ? (const uint8_t *) (words + 11) : fr->payload + 28, whole ? NULL : staging, len, lane, lanes);
            uint64_t sum = nupa_gpu_warp_total(part, lane, lanes);
            if (lane == 0) {
                *ok = 0;
                t2 = nupa_globaltimer();
                if (!nupa_g_udp_valid((const uint8_t *) (words + 4) + 20, u->ip.src, u->ip.dst, sum)) {
                    cnt->bad_checksum++;
                } else if (claim_reply(f, st, fr->source, 36 + len, c, ctl) != NUPA_OK) {
                    cnt->send_failed++;
                } else {
                    t3 = nupa_globaltimer();
                    reply_headers(f, c, svc->ip, u->ip.src, svc->port, u->sport, len, sum, ++*id);
                    *ok = 1;
                }
            }
            __syncwarp(mask);
            if (*ok) {
                echo_warp_copy(whole ? (const uint8_t *) (words + 11) : staging, c->frame + 36, len, lane, lanes);
                __syncwarp(mask); /* every lane's writes before the publish, which releases them */
                if (lane == 0) {
                    t4 = nupa_globaltimer();
                    sent = publish_reply(f, st, c) == NUPA_OK;
                    if (!sent) {
                        cnt->send_failed++;
                    }
                }
            }
        }
        if (lane == 0) {
            release_batch(f, st, b);
            if (sent) {
                uint64_t t5 = nupa_globaltimer();
                cnt->served++;
                cnt->step_ns[0] += t1 - t0;
                cnt->step_ns[1] += t2 - t1;
                cnt->step_ns[2] += t3 - t2;
                cnt->step_ns[3] += t4 - t3;
                cnt->step_ns[4] += t5 - t4;
            }
        }
        __syncwarp(mask); /* lane 0 writes the batch again only after every lane read it */
        return 1;
    }
};

/*
 * The UDP echo: a lone frame on warp 0 (echo_lone), else a batch of frames at a time so that each step's PCIe round
 * trips serve the whole batch: the block reads the first ECHO_LOAD_WORDS words of every frame at once (a small datagram
 * whole) and the next look beside them, a thread a frame checks the headers, each warp sums the data of its frames
 * (warp w: frames w, w + warps, ...), staging what the first read did not hold, its lane 0 checks the checksum, and a
 * thread a frame finds its rank; thread 0 claims the replies' slots, those for one sender
 * at once (nupa_gpu_claim_n); a thread a frame takes its position (by rank when the batch answers one sender), writes
 * its reply's headers (with CASes: after reading its slot's ctrl), the warps copy the data in, and after a barrier a
 * thread a frame publishes and counts; thread 0 rings each sender's doorbell once (one sender's in flight with the next
 * look, ring_later); then the batch's slots are released.
 * One thread's loop over a batch costs about 0.3 us a frame, so no step has one but the claim's.
 */
__global__ void __launch_bounds__(1024) echo_kernel(struct nupa_gpu_fabric f, struct service svc, struct control *ctl, uint8_t *staging) {
    __shared__ struct rx_batch s_batch;
    __shared__ __align__(16) uint32_t s_words[BATCH][ECHO_LOAD_WORDS];
    __shared__ struct nupa_gpu_frame s_frame[BATCH];
    __shared__ struct udp_seen s_udp[BATCH];
    __shared__ struct nupa_gpu_claim s_claim[BATCH];
    __shared__ uint64_t s_pos[BATCH], s_before[BATCH], s_guess, s_claimed_at;
    __shared__ uint64_t s_seg_first[BATCH]; /* one sender's claims: segment k starts at position s_seg_first[k] ... */
    __shared__ uint32_t s_seg_rank[BATCH];  /* ... for the good frames of rank s_seg_rank[k] on */
    __shared__ uint32_t s_rank[BATCH], s_segs, s_claimed_n, s_good, s_id_base;
    __shared__ int s_mixed, s_first_good;
    __shared__ uint32_t s_guess_dest, s_guess_n;
    __shared__ int s_ok[BATCH], s_claimed[BATCH];
    __shared__ uint64_t s_served; /* this batch's replies published */
    __shared__ uint16_t s_id[BATCH];
    const uint32_t tid = threadIdx.x, lane = tid % 32, warp = tid / 32, warps = (blockDim.x + 31) / 32;
    const uint32_t lanes = min(32u, blockDim.x - 32 * warp); /* the threads of this warp (the last may be short) */
    const size_t stride = (f.max_frame + 63) & ~(size_t) 63; /* each frame's staging: BATCH of them (nupa-gpu-node.cu) */
    /* within the slot (slot_bytes >= 16 + max_frame >= 80 holds NUPA_GPU_LOAD_WORDS; past the frame they are the slot's) */
    const uint32_t load_words = min((uint32_t) ECHO_LOAD_WORDS, (f.slot_bytes - 8) / 4);
    const uint32_t held = 4 * load_words - 44; /* data bytes the first read holds: after slot, link, IPv4 and UDP headers */
    __shared__ uint16_t s_next_id; /* the last reply's IPv4 identification */
    uint16_t &id = s_next_id; /* thread 0's */
    /* the node's state and the counts in shared memory: the block's threads add to the counts at once (atomics) */
    __shared__ struct nupa_gpu_state s_state;
    __shared__ struct counters s_counts;
    struct nupa_gpu_state *st = &s_state;
    struct counters *cnt = &s_counts;
    if (tid == 0) {
        nupa_gpu_init(&f, st);
        memset(cnt, 0, sizeof *cnt);
        s_served = 0;
        id = 0;
        s_batch.pre_k = 0;
    }
    const struct echo_lone lone = {&f, st, &svc, ctl, cnt, s_words[0], &s_frame[0], &s_udp[0], &s_claim[0], &s_ok[0], &id,
                                   staging, load_words, held};
    while (next_batch(&f, st, ctl, cnt, &s_batch, lone)) {
        const int n = s_batch.n;
        uint64_t t0 = tid == 0 ? nupa_globaltimer() : 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0;
        /* the batch's slots, 8 bytes a thread, two loads in flight before either is stored (one round trip for the batch
         * on 1,024 threads), and beside them the next look (next_batch): ctrl word j after the batch read by thread j */
        const uint32_t pairs = load_words / 2, total = (uint32_t) n * pairs; /* load_words is even: slot_bytes is a multiple of 64 */
        const uint32_t look = st->look[s_batch.ring], pre_k = look > 1 ? min(min(look, (uint32_t) BATCH), blockDim.x) : 0; /* as next_batch's */
        const uint64_t pre_h = s_batch.next;
        uint64_t pre = 0;
        for (uint32_t x = tid, turn = 0; x < total || turn == 0; x += 2 * blockDim.x, turn++) {
            uint32_t y = x + blockDim.x;
            uint64_t a = x < total ? *(const volatile uint64_t *) (s_batch.slots[x / pairs] + 8 + 8 * (x % pairs)) : 0;
            uint64_t b = y < total ? *(const volatile uint64_t *) (s_batch.slots[y / pairs] + 8 + 8 * (y % pairs)) : 0;
            if (turn == 0 && tid < pre_k) {
                pre = nupa_gpu_rx_look(&f, s_batch.ring, pre_h, tid); /* an acquire: after the loads above */
            }
            if (x < total) {
                ((uint64_t *) s_words[x / pairs])[x % pairs] = a;
            }
            if (y < total) {
                ((uint64_t *) s_words[y / pairs])[y % pairs] = b;
            }
        }
        if (tid < pre_k) {
            s_batch.ctrl[tid] = pre;
        }
        /* it stands in for the next look only where every word it read was published: where it found fewer, frames
         * published since would wait a batch more, and a fresh look is worth its round trip */
        const int published = __syncthreads_count(tid < pre_k && (pre >> 2) == pre_h + tid + 1);
        if (tid == 0) {
            s_batch.pre_k = published == (int) pre_k ? pre_k : 0;
            s_batch.pre_h = pre_h;
            s_batch.pre_ring = s_batch.ring;
        }
        for (int i = tid; i < n; i += blockDim.x) { /* a thread a frame: one thread's checks cost about 0.3 us a frame */
            s_ok[i] = nupa_gpu_rx_frame(&f, st, s_batch.slots[i], s_words[i], &s_frame[i])
                    && check_udp(&s_frame[i], (const uint8_t *) (s_words[i] + 4), svc.ip, svc.port, &s_udp[i], cnt);
            if (s_ok[i]) {
                nupa_g_add(&s_batch.accepted, 1);
            }
        }
        __syncthreads();
        if (tid == 0) {
            s_mixed = 0; /* set by the rank step below, after two barriers; the last batch's readers are past it */
            t1 = nupa_globaltimer();
        }
        /* a warp a frame: the data summed (staged where the first read did not hold it), added up in its lane 0, which
         * checks the UDP checksum */
        for (int i = warp; i < n; i += warps) {
            if (s_ok[i]) {
                uint32_t len = s_udp[i].len;
                int whole = len <= held; /* in s_words already: summed there, copied from there */
                uint64_t part = echo_warp_sum(whole ? (const uint8_t *) (s_words[i] + 11) : s_frame[i].payload + 28,
                        whole ? NULL : staging + i * stride, len, lane, lanes);
                uint64_t sum = nupa_gpu_warp_total(part, lane, lanes);
                if (lane == 0) {
                    s_udp[i].sum = sum;
                    s_ok[i] = nupa_g_udp_valid((const uint8_t *) (s_words[i] + 4) + 20, s_udp[i].ip.src, s_udp[i].ip.dst, sum) ? 1 : -1;
                }
            }
        }
        __syncthreads();
        /* a thread a frame: its rank among the good ones, and whether they all go to one sender (then the block places
         * their claims: one thread's loop over the batch costs about 0.3 us a frame) */
        for (int i = tid; i < n; i += blockDim.x) {
            s_claimed[i] = 0;
            if (s_ok[i] < 0) {
                nupa_g_add(&cnt->bad_checksum, 1);
            }
            uint32_t rank = 0;
            int first = -1;
            for (int j = 0; j < i; j++) {
                if (s_ok[j] == 1) {
                    first = first < 0 ? j : first;
                    rank++;
                }
            }
            s_rank[i] = rank;
            if (s_ok[i] == 1 && first < 0) {
                s_first_good = i;
            }
            if (s_ok[i] == 1 && first >= 0 && s_frame[first].source != s_frame[i].source) {
                s_mixed = 1;
            }
            if (i == n - 1) {
                s_good = rank + (s_ok[i] == 1);
            }
        }
        if (tid == 0) {
            /* with CASes, where the first sender's replies will most likely go: their slots' ctrl words are read meanwhile */
            s_guess = UINT64_MAX;
            s_guess_n = 0;
            for (int i = 0; i < n && !f.sole_producer; i++) {
                if (s_ok[i] == 1 && s_guess_n == 0) {
                    s_guess_dest = s_frame[i].source;
                    s_guess = nupa_gpu_claim_guess(st, s_guess_dest, 0);
                }
                s_guess_n += s_ok[i] == 1 && s_frame[i].source == s_guess_dest;
            }
            s_guess_n = min(s_guess_n, blockDim.x - 1); /* a thread each, thread 0 apart */
        }
        __syncthreads();
        if (!f.sole_producer && s_guess != UINT64_MAX && tid > 0 && tid <= s_guess_n) { /* while thread 0 claims; a wrong guess is read again */
            s_before[tid - 1] = nupa_wr_load64((const uint64_t *) nupa_g_slot(&f, nupa_g_ring(&f, s_guess_dest, 0), s_guess + tid - 1));
        }
        if (tid == 0) {
            t2 = nupa_globaltimer();
            s_claimed_at = t2;
            s_id_base = id;
            s_claimed_n = 0;
            if (!s_mixed && s_good > 0) {
                /* one sender: its replies claimed at once (in segments if its ring has room for fewer), placed below */
                uint32_t dest = s_frame[s_first_good].source, want = s_good, segs = 0;
                uint64_t waited = 0;
                while (want > 0) {
                    uint64_t first = 0;
                    int got = claim_replies(&f, st, ctl, dest, want, &first, &waited);
                    if (got == 0) {
                        break; /* the sender down, or its ring full for SEND_WAIT_NS: the rest fail */
                    }
                    s_seg_first[segs] = first;
                    s_seg_rank[segs++] = s_claimed_n;
                    s_claimed_n += got;
                    want -= got;
                }
                s_segs = segs;
                id += s_claimed_n;
            }
            /* several senders: the replies to each, in the batch's order, claimed together */
            for (int i = 0; i < n && s_mixed;) {
                if (s_ok[i] != 1) {
                    i++;
                    continue;
                }
                uint32_t dest = s_frame[i].source, k = 0;
                while (i + (int) k < n && (s_ok[i + k] != 1 || s_frame[i + k].source == dest)) {
                    k += 1;
                }
                uint32_t want = 0;
                for (uint32_t j = 0; j < k; j++) {
                    want += s_ok[i + j] == 1;
                }
                uint64_t waited = 0;
                while (want > 0) {
                    uint64_t first = 0;
                    int got = claim_replies(&f, st, ctl, dest, want, &first, &waited);
                    int failed = got == 0; /* the sender down, or its ring full for SEND_WAIT_NS */
                    for (uint32_t j = 0; j < k && want > 0 && (got > 0 || failed); j++) {
                        if (s_ok[i + j] != 1 || s_claimed[i + j]) {
                            continue;
                        }
                        if (failed) {
                            s_ok[i + j] = 0;
                            cnt->send_failed++;
                        } else {
                            s_claimed[i + j] = 1;
                            s_pos[i + j] = first++;
                            s_id[i + j] = ++id;
                            got--;
                        }
                        want--;
                    }
                }
                i += k;
            }
            t3 = nupa_globaltimer();
        }
        __syncthreads();
        for (int i = tid; i < n; i += blockDim.x) {
            if (!s_mixed && s_ok[i] == 1) { /* one sender: rank r's reply takes the r-th position claimed */
                uint32_t r = s_rank[i], seg = 0;
                if (r < s_claimed_n) {
                    while (seg + 1 < s_segs && s_seg_rank[seg + 1] <= r) {
                        seg++;
                    }
                    s_pos[i] = s_seg_first[seg] + (r - s_seg_rank[seg]);
                    s_id[i] = (uint16_t) (s_id_base + r + 1);
                    s_claimed[i] = 1;
                } else {
                    s_ok[i] = 0;
                    nupa_g_add(&cnt->send_failed, 1);
                }
            }
            if (s_claimed[i]) {
                uint32_t dest = s_frame[i].source;
                uint64_t before = s_guess != UINT64_MAX && dest == s_guess_dest && s_pos[i] - s_guess < s_guess_n
                        ? s_before[s_pos[i] - s_guess] : UINT64_MAX;
                nupa_gpu_claim_at(&f, dest, 0, s_pos[i], 36 + s_udp[i].len, before, s_claimed_at, &s_claim[i]);
                reply_headers(&f, &s_claim[i], svc.ip, s_udp[i].ip.src, svc.port, s_udp[i].sport, s_udp[i].len, s_udp[i].sum, s_id[i]);
            }
        }
        __syncthreads();
        for (int i = warp; i < n; i += warps) {
            if (!s_claimed[i]) {
                continue;
            }
            /* data at frame + 36, 4-byte aligned in the slot; the last bytes alone: a slot may end right after the frame,
             * and the next slot's ctrl follows */
            echo_warp_copy(s_udp[i].len <= held ? (const uint8_t *) (s_words[i] + 11) : staging + i * stride, s_claim[i].frame + 36,
                    s_udp[i].len, lane, lanes);
        }
        __syncthreads(); /* every write before the publishes, which release them (nupa_gpu_node.cuh's rule) */
        for (int i = tid; i < n; i += blockDim.x) { /* a thread a frame publishes and counts */
            if (s_claimed[i]) {
                if (nupa_gpu_published(st, &s_claim[i], nupa_gpu_publish_slot(&f, &s_claim[i], 0), 0) == NUPA_OK) {
                    nupa_g_add(&s_served, 1);
                } else {
                    nupa_g_add(&cnt->send_failed, 1);
                }
            }
        }
        __syncthreads();
        if (tid == 0) {
            t4 = nupa_globaltimer();
            if (!s_mixed) { /* one sender: one doorbell */
                if (s_claimed_n > 0) {
                    ring_later(&f, st, s_frame[s_first_good].source);
                }
            } else {
                uint32_t rung = UINT32_MAX;
                for (int i = 0; i < n; i++) {
                    if (s_claimed[i] && s_claim[i].dest != rung) {
                        rung = s_claim[i].dest;
                        nupa_gpu_ring_doorbell(&f, st, rung);
                    }
                }
            }
            uint64_t t5 = nupa_globaltimer();
            uint64_t served = s_served;
            s_served = 0; /* for the next batch, whose publishes come after several barriers */
            cnt->served += served;
            /* the batch's steps, once for each datagram echoed (each spent them all) */
            cnt->step_ns[0] += (t1 - t0) * served;
            cnt->step_ns[1] += (t2 - t1) * served;
            cnt->step_ns[2] += (t3 - t2) * served;
            cnt->step_ns[3] += (t4 - t3) * served;
            cnt->step_ns[4] += (t5 - t4) * served;
        }
        end_batch(&f, st, &s_batch);
    }
}

#endif
