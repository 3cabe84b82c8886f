/*
 * What nupa-gpu-node's kernels share (native/cuda/README.md, "A GPU node"): their counters and the host's control
 * block, the service they run, and thread 0's steps around nupa_gpu_node.cuh: waiting for frames, claiming room for a
 * reply, checking a datagram's IPv4 and UDP headers, writing a reply's headers.
 */
#ifndef NUPA_GPU_SERVICE_CUH
#define NUPA_GPU_SERVICE_CUH

#include "nupa_gpu_node.cuh"

#define BATCH NUPA_GPU_LOOK_MAX
/* How long a reply waits for room in its peer's ring before it is dropped and counted. */
static constexpr uint64_t SEND_WAIT_NS = 1000ull * 1000 * 1000;
/* After this long without frames the kernel naps between polls (fewer PCIe reads when idle). */
static constexpr uint64_t SPIN_NS = 1000ull * 1000;

/* What the kernel counts, in shared memory; stored into the control block the host reads when the kernel stops. */
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
    /* echo: the frames that came alone (echo_lone), the time thread 0 waited for them (from the end of the last frame's
     * work to this one's find), and their slot's read alone (of the first step) */
    uint64_t lone, lone_wait_ns, lone_read_ns;
};

struct control {
    uint32_t stop; /* set by the host */
    /* ... and the kernel's counters (store_counts, when it stops): stores only, so that a count costs no read across PCIe */
    uint32_t pad[15];
    struct counters c;
};

struct service {
    uint32_t ip;
    uint16_t port;
    uint32_t senders, elements, chunk; /* reduce */
};

static __device__ int stop_asked(const struct control *ctl) { return *(const volatile uint32_t *) &ctl->stop != 0; }

/* Thread 0: the counters into the host's control block, which the host reads once the kernel has ended (posted writes). */
static __device__ void store_counts(struct control *ctl, const struct counters *cnt) {
    volatile uint64_t *to = (volatile uint64_t *) &ctl->c;
    for (unsigned k = 0; k < sizeof *cnt / 8; k++) {
        to[k] = ((const uint64_t *) cnt)[k];
    }
}

/* Thread 0: the rest of a doorbell whose load of armed was in flight (bell: the peer's address + 1, 0 for none). */
static __device__ void wake_if_armed(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t bell, uint32_t armed) {
    if (bell != 0 && armed != 0) {
        nupa_gpu_wake(f, st, bell - 1);
    }
}

/*
 * Thread 0: waits for frames in any of the node's idle rings, looking at every ring's head at once. Returns how many
 * slots it took (0 when asked to stop), with their ring and where its head goes once they are done with. Spins for
 * SPIN_NS after the last frame, then naps; looks at the stop flag and runs the stall check every millisecond while idle.
 * bell: a peer (address + 1; 0 for none) whose armed word is loaded as armed (nupa_gpu_armed), woken once the first
 * look is in flight.
 */
static __device__ int wait_frames(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, const struct control *ctl,
        const uint8_t **slots, uint32_t *ring, uint64_t *next, int *stop, uint32_t bell, uint32_t armed) {
    uint64_t idle_since = nupa_globaltimer(), last_look = idle_since;
    const int acquire = f->rings_per_node == 1; /* nupa_gpu_rx_peek */
    for (uint32_t turn = 0;; turn++) {
        uint64_t peek[NUPA_G_MAX_RINGS]; /* the rings' heads read at once: one round trip for all */
        for (uint32_t r = 0; r < f->rings_per_node; r++) {
            peek[r] = nupa_gpu_rx_peek(f, st, r, acquire);
        }
        wake_if_armed(f, st, bell, armed);
        bell = 0;
        for (uint32_t r = 0; r < f->rings_per_node; r++) {
            int n = nupa_gpu_rx_ready(f, st, r, peek[r], acquire, slots, BATCH, next);
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

/* A batch of received frames, in the block's shared memory: their slots, their ring and where its head goes after them. */
struct rx_batch {
    const uint8_t *slots[BATCH];
    uint32_t ring;
    uint64_t next;
    int n, stop, found;
    uint64_t accepted; /* frames taken for the service; the others were counted as dropped */
    uint64_t ctrl[NUPA_GPU_LOOK_MAX]; /* a busy ring's look: the ctrl words from look_h on, a thread a word */
    uint64_t look_h;
    uint32_t look_k;
    uint64_t waited_ns; /* how long thread 0's last wait_frames took */
    /* a look read ahead by the service while it served the last batch (pre_k ctrl words of ring pre_ring from position
     * pre_h on, in ctrl, read with acquire; 0: none), and whether next_batch takes it instead of looking (use_pre) */
    uint64_t pre_h;
    uint32_t pre_k, pre_ring;
    int use_pre;
};

/*
 * Thread 0, after publishes to dest: its doorbell (6.3 step 6) is rung by the next look (next_batch), whose round trip
 * its load of armed shares; one still due to another peer is rung now.
 */
static __device__ void ring_later(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t dest) {
    if (st->bell_due != 0 && st->bell_due != dest + 1) {
        nupa_gpu_ring_doorbell(f, st, st->bell_due - 1);
    }
    st->bell_due = dest + 1;
}

/*
 * Thread 0: publishes a claimed reply (nupa_gpu_publish_slot, nupa_gpu_published) and leaves its doorbell to the next
 * look (ring_later). NUPA_OK, or NUPA_LATE when the consumer had skipped the claim.
 */
static __device__ int publish_reply(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, const struct nupa_gpu_claim *c) {
    int rc = nupa_gpu_published(st, c, nupa_gpu_publish_slot(f, c, 0), 0);
    ring_later(f, st, c->dest);
    return rc;
}

/* The lanes of warp 0 (the whole block when it has fewer than 32 threads). */
static __device__ unsigned warp0_mask(void) {
    return nupa_gpu_lanes_mask(blockDim.x);
}

/* A service without a path of its own for a lone frame (next_batch): the block takes every frame. */
struct no_lone {
    __device__ int operator()(struct rx_batch *) const { return 0; }
};

/*
 * The whole block: the next batch of frames. A ring that had frames at the last look (st->look > 1) is looked at by the
 * block, a thread a ctrl word (nupa_gpu_rx_look, nupa_gpu_rx_take), or taken from the look the service read ahead beside
 * its last batch's reads (b->pre_k, one round trip fewer a batch); when none has, warp 0 waits on every ring
 * (wait_frames, its thread 0) while the other warps wait at the barrier, and hands each lone frame it finds to lone
 * (called by every lane of warp 0 with the batch of that one frame: 1 once it served the frame and gave its slot back,
 * 0 to have the block take it). A frame that came to an idle ring is alone by construction (the look read one ctrl
 * word), so a service that answers it on one warp spares it the block's barriers. The doorbell of the last publishes
 * (st->bell_due, ring_later) is rung here, its load of armed in flight with the look's. 0 once the host asked the
 * kernel to stop (counters stored).
 */
template <typename Lone>
static __device__ int next_batch(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, struct control *ctl,
        const struct counters *cnt, struct rx_batch *b, const Lone &lone) {
    const unsigned mask = warp0_mask();
    uint32_t bell = 0, armed = 0; /* thread 0's */
    for (;;) {
        if (threadIdx.x < 32) {
            for (;;) {
                if (threadIdx.x == 0) {
                    bell = st->bell_due;
                    armed = bell != 0 ? nupa_gpu_armed(f, bell - 1) : 0;
                    st->bell_due = 0;
                    b->look_k = 0;
                    for (uint32_t r = 0; r < f->rings_per_node && b->look_k == 0; r++) {
                        if (st->look[r] > 1) {
                            b->ring = r;
                            b->look_h = st->head[r];
                            b->look_k = st->look[r] < BATCH ? st->look[r] : BATCH;
                        }
                    }
                    b->use_pre = b->look_k != 0 && b->pre_k != 0 && b->pre_ring == b->ring && b->pre_h == b->look_h;
                    if (b->use_pre) {
                        b->look_k = min(b->look_k, b->pre_k);
                    }
                    b->pre_k = 0;
                    if (b->look_k == 0) {
                        int stop = 0;
                        uint64_t t = nupa_globaltimer();
                        b->n = wait_frames(f, st, ctl, b->slots, &b->ring, &b->next, &stop, bell, armed);
                        bell = 0;
                        b->stop = stop;
                        b->waited_ns = nupa_globaltimer() - t;
                    }
                    b->accepted = 0;
                }
                __syncwarp(mask);
                if (b->look_k != 0 || b->stop || b->n != 1 || !lone(b)) {
                    break;
                }
            }
        }
        __syncthreads();
        if (b->look_k == 0) {
            break;
        }
        if (!b->use_pre) {
            for (uint32_t j = threadIdx.x; j < b->look_k; j += blockDim.x) {
                b->ctrl[j] = nupa_gpu_rx_look(f, b->ring, b->look_h, j);
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            wake_if_armed(f, st, bell, armed);
            bell = 0;
            b->n = nupa_gpu_rx_take(f, st, b->ring, b->ctrl, b->look_k, 1, b->slots, BATCH, &b->next);
            b->stop = 0;
            b->found = b->n > 0 || b->next != st->head[b->ring];
        }
        __syncthreads();
        if (b->found) {
            break; /* else the ring's look is 1 again: thread 0 waits on every ring */
        }
    }
    if (b->stop) {
        if (threadIdx.x == 0) {
            nupa_gpu_flush(f, st);
            store_counts(ctl, cnt);
        }
        return 0;
    }
    return 1;
}

/* Thread 0: the batch's slots go back to their ring; the node's counts to the host once a millisecond (nupa_gpu_flush). */
static __device__ void release_batch(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, const struct rx_batch *b) {
    nupa_gpu_rx_release(f, st, b->ring, b->next, b->accepted);
    uint64_t now = nupa_globaltimer();
    if (now - st->flushed_at >= 1000000) {
        st->flushed_at = now;
        nupa_gpu_flush(f, st);
    }
}

/* The whole block: release_batch, then a barrier. */
static __device__ void end_batch(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, const struct rx_batch *b) {
    if (threadIdx.x == 0) {
        release_batch(f, st, b);
    }
    __syncthreads();
}

/*
 * Thread 0, after a claim in dest's ring found it full: 1 to try again (after a nap), 0 to give up (SEND_WAIT_NS since
 * *waited, or the host asked to stop). *waited: when the waiting began (0: now).
 */
static __device__ int wait_for_room(const struct control *ctl, uint64_t *waited) {
    uint64_t now = nupa_globaltimer();
    *waited = *waited == 0 ? now : *waited;
    if (now - *waited >= SEND_WAIT_NS || stop_asked(ctl)) {
        return 0;
    }
    __nanosleep(500);
    return 1;
}

/* Thread 0: claims room for a frame of length bytes in ring 0 of dest, waiting while it is full. NUPA_OK or why not. */
static __device__ int claim_reply(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t dest, uint32_t length, struct nupa_gpu_claim *c,
        const struct control *ctl) {
    uint64_t waited = 0;
    for (;;) {
        int rc = nupa_gpu_claim(f, st, dest, 0, length, c);
        if (rc != NUPA_BACK_PRESSURED || !wait_for_room(ctl, &waited)) {
            return rc;
        }
    }
}

/*
 * Thread 0: claims up to want positions for replies in ring 0 of dest at once (nupa_gpu_claim_n), waiting while it is
 * full, up to SEND_WAIT_NS from *waited (0: from now on; kept across calls for one batch's replies). How many, the
 * first in *first; 0 when the sender is down or its ring stayed full.
 */
static __device__ int claim_replies(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, const struct control *ctl, uint32_t dest,
        uint32_t want, uint64_t *first, uint64_t *waited) {
    for (;;) {
        int rc = NUPA_OK;
        int got = nupa_gpu_claim_n(f, st, dest, 0, want, first, &rc);
        if (got > 0 || rc != NUPA_BACK_PRESSURED || !wait_for_room(ctl, waited)) {
            return got;
        }
    }
}

/* A datagram's IPv4 header and UDP ports and length, as check_udp found them. */
struct udp_seen {
    struct nupa_g_ip ip;
    uint16_t sport;
    uint32_t len; /* data bytes */
    uint64_t sum; /* the data's ones'-complement sum, as take_datagram found it */
};

/* Any thread: whether the datagram in hdr (its first 28 bytes at least) is UDP to port for this node (counted atomically if not). */
static __device__ int check_udp(const struct nupa_gpu_frame *fr, const uint8_t *hdr, uint32_t my_ip, uint16_t port,
        struct udp_seen *u, struct counters *cnt) {
    if (fr->protocol != NUPA_PROTO_IPV4 || fr->length < 28 || nupa_g_ipv4_parse(hdr, fr->length, my_ip, &u->ip) != NUPA_G_IP_OK
            || u->ip.proto != 17) {
        nupa_g_add(&cnt->not_udp, 1);
        return 0;
    }
    uint32_t ulen = nupa_g_get16(hdr + 24);
    if (ulen < 8 || ulen > u->ip.total - 20) {
        nupa_g_add(&cnt->not_udp, 1);
        return 0;
    }
    if (nupa_g_get16(hdr + 22) != port) {
        nupa_g_add(&cnt->no_port, 1);
        return 0;
    }
    u->sport = nupa_g_get16(hdr + 20);
    u->len = ulen - 8;
    return 1;
}

/*
 * The whole block: reads the headers of the batch's frame i (the slot's and the datagram's in one round trip, into
 * words), thread 0 checks them (the frame into *fr, the datagram's headers into *u; dropped ones counted), and the block
 * sums the data into staging as it checks the UDP checksum; *ok says whether the datagram is good. Thread 0 returns the
 * time the headers took in *header_ns, unless it is null.
 */
static __device__ void take_datagram(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, const struct service *svc,
        struct counters *cnt, struct rx_batch *b, int i, uint32_t *words, struct nupa_gpu_frame *fr, struct udp_seen *u,
        uint8_t *staging, uint64_t *scratch, int *ok, uint64_t *header_ns) {
    uint64_t t0 = threadIdx.x == 0 ? nupa_globaltimer() : 0;
    nupa_gpu_rx_load(b->slots[i], words);
    const uint8_t *hdr = (const uint8_t *) (words + 4);
    if (threadIdx.x == 0) {
        *ok = nupa_gpu_rx_frame(f, st, b->slots[i], words, fr) && check_udp(fr, hdr, svc->ip, svc->port, u, cnt);
        b->accepted += *ok;
        if (header_ns) {
            *header_ns = nupa_globaltimer() - t0;
        }
    }
    __syncthreads();
    if (!*ok) {
        return;
    }
    uint64_t sum = nupa_gpu_block_sum(fr->payload + 28, staging, u->len, scratch);
    if (threadIdx.x == 0) {
        u->sum = sum;
        if (!nupa_g_udp_valid(hdr + 20, u->ip.src, u->ip.dst, sum)) {
            cnt->bad_checksum++;
            *ok = 0;
        }
    }
    __syncthreads();
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

#endif
