/*
 * nupa_gpu_node.cuh: a fabric node whose data path runs in a CUDA kernel (native/cuda/README.md, "A GPU node").
 *
 * The host joins the fabric with libnupa (address, heartbeat, liveness, the neighbor directory's record) and registers
 * the fabric mapping with CUDA; kernels then take frames from the node's own receive rings and put frames into peers'
 * rings themselves, with the bytes and steps of docs/fabric-layout.md sections 6 and 7, as a CPU node does:
 *   - receive (6.4): poll ctrl at the head, read frames in place, release the slots in order by storing head; the
 *     stall check and repair of 6.5 run on the GPU too, so a producer that died mid-claim never blocks the ring;
 *   - send (6.3): admit (the peer is UP), claim a position with a CAS on tail, write the frame, check ctrl, write the
 *     slot header, publish with a CAS on ctrl, then load the peer's armed word (7). The rest of the doorbell step
 *     (armed CASed from 1 to 0, doorbell + 1, FUTEX_WAKE) is a system call no kernel can make: the GPU leaves the
 *     peer's address in a mailbox in host memory that a host thread empties (nupa_gpu_host_poll), so a sleeping CPU
 *     peer is woken within that thread's poll interval; a peer that spins takes the frame at once.
 *   - IPv4 (RFC 791) and UDP (RFC 768) headers, with their checksums (RFC 1071), built and checked on the GPU.
 *
 * Every access to the fabric crosses PCIe; ordering is at system scope (nupa_wqe.h's primitives: ld.acquire.sys,
 * st.release.sys, atomicCAS_system). sim/cuda_runtime.h runs the same functions on CPU threads, with C11 atomics.
 *
 * Rules for callers:
 *  - One thread of the grid touches the fabric (the kernels here: thread 0 of their one block); the others read and
 *    write frame bytes it hands them. Frames taken stay valid until it releases them.
 *  - A frame is published after a __syncthreads() that follows every write of its bytes. The publish is a release at
 *    system scope (a fence, then the CAS or the store of ctrl), and by the PTX memory model's causality order (the
 *    barrier synchronizes the block, the release the CPU's acquire) it covers the writes of every thread of the block
 *    made before the barrier: writers need no fence of their own (each costs about half a microsecond).
 *  - Sending, the GPU either claims and publishes with the protocol's two CASes (on the peer's tail and on the slot's
 *    ctrl; f.sole_producer 0), atomic with CPU producers only where the link performs the GPU's system-scope atomics so
 *    (cudaDevAttrHostNativeAtomicSupported; PCIe hosts usually do not, and compute-sanitizer's memcheck reports each
 *    such atomic), or, as the only producer of every ring it sends into (f.sole_producer 1; fabric-layout.md 6.3,
 *    "A ring's only producer"), with stores alone: the tail from its own count, the ctrl word by a release store, a
 *    claim older than half the stall timeout given up as late. Either way a ring the GPU sends into must have no other
 *    producer at the same time where the link has no such atomics. The consumer's repairs of a damaged ring of its own
 *    are its only other read-modify-writes; the counts and the doorbell go through the host (nupa_gpu_host_poll).
 *  - The host keeps the node alive: its heartbeat thread runs while the kernel does; if the host process dies the
 *    kernel dies with its CUDA context and the fabric reclaims the address as any node's (section 8). If the node is
 *    evicted, the host tells the kernel to stop.
 */
#ifndef NUPA_GPU_NODE_CUH
#define NUPA_GPU_NODE_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nupa.h"
#include "nupa_wqe.h"
#include "nupa_cuda.cuh"

/* docs/fabric-layout.md: header (3), node entry (5.1), ring (6.1). */
#define NUPA_G_MAGIC 0x314241464150554EULL
#define NUPA_G_NODE_BYTES 512
#define NUPA_G_STATE_UP 2
#define NUPA_G_E_STATE 0
#define NUPA_G_E_ARMED 128
#define NUPA_G_E_DOORBELL 132
#define NUPA_G_E_FRAMES_SENT 192
#define NUPA_G_E_BYTES_SENT 200
#define NUPA_G_E_BACK_PRESSURED 208
#define NUPA_G_E_PEER_DOWN 216
#define NUPA_G_E_LATE_DROPS 224
#define NUPA_G_E_FRAMES_RECEIVED 256
#define NUPA_G_E_BYTES_RECEIVED 264
#define NUPA_G_E_STALL_SKIPS 272
#define NUPA_G_E_CORRUPT 304
#define NUPA_G_R_TAIL 0
#define NUPA_G_R_HEAD 64
#define NUPA_G_R_SLOTS 256
#define NUPA_G_PADDING 1
#define NUPA_G_SKIPPED 2
#define NUPA_G_MAX_RINGS 16

/* What the kernel counts for the node's entry (5.1); the host adds it there (nupa_gpu_host_poll). */
struct nupa_gpu_counts {
    uint64_t frames_sent, bytes_sent, back_pressured, peer_down, late_drops;
    uint64_t frames_received, bytes_received, stall_skips, corrupt;
    uint64_t wakes_lost; /* wakes that found the mailbox full (the peer then wakes at its sleep's end) */
    uint64_t tails_moved; /* sole producer: a peer's tail found where this GPU had not put it (another producer, or a repair) */
};

/*
 * Host memory the kernel writes and the host reads (cudaHostAlloc, mapped): the wake mailbox, where the GPU leaves the
 * addresses of peers it found armed, and a snapshot of its counts. The kernel only stores here, the host only loads
 * (but for head): no atomic crosses the link.
 */
#define NUPA_GPU_WAKES 256
#define NUPA_GPU_PEERS 64
struct nupa_gpu_shared {
    uint32_t head; /* host: mailbox entries taken */
    uint32_t pad0[15];
    struct nupa_gpu_counts counts; /* GPU: stored after every batch */
    uint32_t pad1[10];
    uint32_t entry[NUPA_GPU_WAKES]; /* GPU: address + 1; the host zeroes what it took */
};

/* The fabric as a kernel sees it: the header's geometry, copied once, and this node's identity. Pass it by value. */
struct nupa_gpu_fabric {
    uint8_t *base; /* the mapping: the device's view in kernels */
    uint64_t size, node_table, rings, ring_bytes, stall_timeout_ns;
    uint32_t max_nodes, rings_per_node, ring_slots, slot_bytes, max_frame;
    uint32_t address, generation;
    uint32_t sole_producer; /* 1: this GPU is the only producer of every ring it sends into (claims and publishes by stores) */
    struct nupa_gpu_shared *shared; /* the device's view */
};

/* What a sender knows of a ring it sent to (nupa_gpu_claim). */
struct nupa_gpu_peer {
    uint32_t dest, ring; /* dest + 1 (0: unused) */
    uint64_t tail, head; /* the tail to CAS from, the head last read */
    uint64_t up_at;      /* when the peer's state word was last seen UP (0: look) */
};

/* The device's own state (one thread's): the consumer's heads and stall timers (6.4, 6.5), the counts, the mailbox. */
struct nupa_gpu_state {
    uint64_t head[NUPA_G_MAX_RINGS];
    uint32_t look[NUPA_G_MAX_RINGS]; /* ctrl words the next look reads at once: twice what the last found, 1 when idle */
    uint64_t stall_position[NUPA_G_MAX_RINGS], stall_since[NUPA_G_MAX_RINGS], stall_tail[NUPA_G_MAX_RINGS];
    struct nupa_gpu_counts counts;
    uint64_t dropped;              /* frames the link checks refused (another destination, a forged source, a bad length) */
    uint32_t wake_tail, wake_room; /* entries written; the host's head + NUPA_GPU_WAKES as last read */
    uint64_t flushed_at;           /* when the counts last went to the host (nupa_globaltimer()) */
    uint32_t bell_due;             /* a peer (address + 1) published to, whose doorbell the next look rings (0: none) */
    struct nupa_gpu_peer peers[NUPA_GPU_PEERS]; /* what the sender knows of the rings it sent to: a direct-mapped cache */
};

#if defined(__CUDACC__)
#define NUPA_GD __host__ __device__ static inline
#else
#define NUPA_GD static inline
#endif

/* ---- on the host ---- */

/*
 * Views the fabric of node for kernels that see its mapping at dev_base (cudaHostGetDevicePointer), with the shared
 * block at dev_shared. Refuses, with one line in err, a geometry whose offsets do not hold together (the kernel
 * computes slot addresses from them and must never leave the mapping). Returns 0 or -1.
 */
static inline int nupa_gpu_fabric_view(nupa_node *node, uint8_t *dev_base, struct nupa_gpu_shared *dev_shared,
        struct nupa_gpu_fabric *f, char *err, size_t errlen) {
    size_t size;
    const uint8_t *h = (const uint8_t *) nupa_fabric_memory(node, &size);
    memset(f, 0, sizeof *f);
    f->base = dev_base;
    f->size = size;
    f->max_nodes = *(const uint32_t *) (h + 24);
    f->rings_per_node = *(const uint32_t *) (h + 28);
    f->ring_slots = *(const uint32_t *) (h + 32);
    f->slot_bytes = *(const uint32_t *) (h + 36);
    f->max_frame = *(const uint32_t *) (h + 40);
    f->node_table = *(const uint64_t *) (h + 56);
    f->rings = *(const uint64_t *) (h + 64);
    f->stall_timeout_ns = *(const uint64_t *) (h + 104);
    f->ring_bytes = *(const uint64_t *) (h + 128);
    f->address = (uint32_t) nupa_address(node);
    f->generation = nupa_generation(node);
    f->shared = dev_shared;
    uint64_t slots_end = (uint64_t) NUPA_G_R_SLOTS + (uint64_t) f->ring_slots * f->slot_bytes;
    if (f->max_nodes < 1 || f->max_nodes > 1024 || f->rings_per_node < 1 || f->rings_per_node > NUPA_G_MAX_RINGS
            || f->ring_slots < 2 || (f->ring_slots & (f->ring_slots - 1)) != 0 || f->max_frame < 64
            || f->slot_bytes < 16 + (uint64_t) f->max_frame || f->slot_bytes % 64 != 0 || f->ring_bytes < slots_end
            || f->node_table < 4096 || f->node_table + (uint64_t) f->max_nodes * NUPA_G_NODE_BYTES > f->rings
            || f->rings + (uint64_t) f->max_nodes * f->rings_per_node * f->ring_bytes > size || f->stall_timeout_ns == 0) {
        snprintf(err, errlen, "the fabric's geometry is one a GPU node cannot serve (rings %u x %u slots of %u bytes, max frame %u)",
                 f->rings_per_node, f->ring_slots, f->slot_bytes, f->max_frame);
        return -1;
    }
    return 0;
}

/*
 * The host's part of the GPU's sends and counts, called often (every few tens of microseconds) while a kernel runs:
 * for each peer the GPU found armed, the rest of 6.3 step 6 (armed CASed from 1 to 0; if won, doorbell + 1 and
 * FUTEX_WAKE), which the GPU cannot do (a system call, and atomics on host memory that a PCIe link need not make
 * atomic with the CPUs'); and the counts the kernel published, added to the node's entry (*last: what was added
 * before, zeroed at the start). Returns the peers woken.
 */
static inline int nupa_gpu_host_poll(nupa_node *node, struct nupa_gpu_shared *sh, struct nupa_gpu_counts *last) {
    size_t size;
    uint8_t *base = (uint8_t *) nupa_fabric_memory(node, &size);
    uint64_t table = *(const uint64_t *) (base + 56);
    uint32_t max_nodes = *(const uint32_t *) (base + 24);
    int woken = 0;
    uint32_t head = sh->head;
    for (;;) {
        uint32_t *e = &sh->entry[head % NUPA_GPU_WAKES];
        uint32_t a = __atomic_load_n(e, __ATOMIC_ACQUIRE);
        if (a == 0) {
            break;
        }
        __atomic_store_n(e, 0, __ATOMIC_RELAXED);
        head++;
        __atomic_store_n(&sh->head, head, __ATOMIC_RELEASE); /* after the zero: the GPU reuses the entry only then */
        if (a - 1 < max_nodes) {
            uint8_t *peer = base + table + (uint64_t) (a - 1) * NUPA_G_NODE_BYTES;
            uint32_t one = 1;
            if (__atomic_compare_exchange_n((uint32_t *) (peer + NUPA_G_E_ARMED), &one, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
                __atomic_fetch_add((uint32_t *) (peer + NUPA_G_E_DOORBELL), 1, __ATOMIC_SEQ_CST);
                syscall(SYS_futex, peer + NUPA_G_E_DOORBELL, FUTEX_WAKE, 1, NULL, NULL, 0);
                woken++;
            }
        }
    }
    uint8_t *self = base + table + (uint64_t) nupa_address(node) * NUPA_G_NODE_BYTES;
    const volatile uint64_t *now = (const volatile uint64_t *) &sh->counts;
    uint64_t *was = (uint64_t *) last;
    static const uint32_t added[] = {NUPA_G_E_FRAMES_SENT, NUPA_G_E_BYTES_SENT, NUPA_G_E_BACK_PRESSURED, NUPA_G_E_PEER_DOWN,
                                     NUPA_G_E_LATE_DROPS, 0, 0, NUPA_G_E_STALL_SKIPS, NUPA_G_E_CORRUPT, 0, 0};
    for (int k = 0; k < (int) (sizeof added / sizeof added[0]); k++) {
        uint64_t v = now[k];
        if (v != was[k]) {
            if (added[k] != 0) {
                __atomic_fetch_add((uint64_t *) (self + added[k]), v - was[k], __ATOMIC_SEQ_CST);
            }
            was[k] = v;
        }
    }
    /* frames_received and bytes_received have one writer, the consumer: here, on the GPU's behalf */
    __atomic_store_n((uint64_t *) (self + NUPA_G_E_FRAMES_RECEIVED), last->frames_received, __ATOMIC_RELAXED);
    __atomic_store_n((uint64_t *) (self + NUPA_G_E_BYTES_RECEIVED), last->bytes_received, __ATOMIC_RELAXED);
    return woken;
}

/* ---- on both: the Internet checksum and the headers (RFC 1071, 791, 768); bytes in network order ---- */

NUPA_GD uint16_t nupa_g_get16(const uint8_t *p) { return (uint16_t) ((p[0] << 8) | p[1]); }
NUPA_GD uint32_t nupa_g_get32(const uint8_t *p) { return ((uint32_t) nupa_g_get16(p) << 16) | nupa_g_get16(p + 2); }
NUPA_GD void nupa_g_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t) (v >> 8); p[1] = (uint8_t) v; }
NUPA_GD void nupa_g_put32(uint8_t *p, uint32_t v) { nupa_g_put16(p, (uint16_t) (v >> 16)); nupa_g_put16(p + 2, (uint16_t) v); }

/* The one's complement sum of n bytes (16-bit words, big-endian, an odd last byte padded), added to sum. */
NUPA_GD uint64_t nupa_g_sum(const uint8_t *b, uint32_t n, uint64_t sum) {
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        sum += nupa_g_get16(b + i);
    }
    if (n & 1) {
        sum += (uint32_t) b[n - 1] << 8;
    }
    return sum;
}
NUPA_GD uint16_t nupa_g_fold(uint64_t sum) {
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    return (uint16_t) ~sum;
}
/* The sum of 4 bytes loaded as one little-endian word: its two big-endian 16-bit words. */
NUPA_GD uint32_t nupa_g_sum_word(uint32_t w) {
    return (((w & 0xFF) << 8) | ((w >> 8) & 0xFF)) + (((w >> 16) & 0xFF) << 8 | (w >> 24));
}

/* An IPv4 datagram's fields, as nupa_g_ipv4_parse found them. */
struct nupa_g_ip {
    uint32_t src, dst;
    uint8_t proto;
    uint32_t total; /* the header's total length */
};

/* Reasons a datagram is dropped (counted by the kernels). */
enum { NUPA_G_IP_OK = 0, NUPA_G_IP_SHORT, NUPA_G_IP_VERSION, NUPA_G_IP_OPTIONS, NUPA_G_IP_LENGTH, NUPA_G_IP_CHECKSUM, NUPA_G_IP_FRAGMENT,
       NUPA_G_IP_NOT_MINE };

/*
 * Checks an IPv4 header (no options) at ip, len bytes of link payload: version 4, IHL 5, total length within len, the
 * header checksum, no fragment (MF clear, offset 0: a GPU node does not reassemble), destination mine.
 */
NUPA_GD int nupa_g_ipv4_parse(const uint8_t *ip, uint32_t len, uint32_t mine, struct nupa_g_ip *out) {
    if (len < 20) {
        return NUPA_G_IP_SHORT;
    }
    if ((ip[0] >> 4) != 4) {
        return NUPA_G_IP_VERSION;
    }
    if ((ip[0] & 15) != 5) {
        return NUPA_G_IP_OPTIONS;
    }
    uint32_t total = nupa_g_get16(ip + 2);
    if (total < 20 || total > len) {
        return NUPA_G_IP_LENGTH;
    }
    if (nupa_g_fold(nupa_g_sum(ip, 20, 0)) != 0) {
        return NUPA_G_IP_CHECKSUM;
    }
    if ((nupa_g_get16(ip + 6) & 0x3FFF) != 0) {
        return NUPA_G_IP_FRAGMENT;
    }
    out->src = nupa_g_get32(ip + 12);
    out->dst = nupa_g_get32(ip + 16);
    out->proto = ip[9];
    out->total = total;
    return out->dst == mine ? NUPA_G_IP_OK : NUPA_G_IP_NOT_MINE;
}

/* Writes a 20-byte IPv4 header (DF, TTL 64, no options) with its checksum. */
NUPA_GD void nupa_g_ipv4_build(uint8_t *ip, uint32_t src, uint32_t dst, uint8_t proto, uint32_t payload, uint16_t id) {
    ip[0] = 0x45;
    ip[1] = 0;
    nupa_g_put16(ip + 2, (uint16_t) (20 + payload));
    nupa_g_put16(ip + 4, id);
    nupa_g_put16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = proto;
    nupa_g_put16(ip + 10, 0);
    nupa_g_put32(ip + 12, src);
    nupa_g_put32(ip + 16, dst);
    nupa_g_put16(ip + 10, nupa_g_fold(nupa_g_sum(ip, 20, 0)));
}

/* The pseudo-header's sum (RFC 768): addresses, protocol 17, the UDP length. */
NUPA_GD uint64_t nupa_g_udp_pseudo(uint32_t src, uint32_t dst, uint32_t udp_len) {
    return (uint64_t) (src >> 16) + (src & 0xFFFF) + (dst >> 16) + (dst & 0xFFFF) + 17 + udp_len;
}

/* Writes a UDP header for data_len bytes of data whose sum (nupa_g_sum) is data_sum; a computed 0 goes as all ones. */
NUPA_GD void nupa_g_udp_build(uint8_t *udp, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, uint32_t data_len,
        uint64_t data_sum) {
    uint32_t ulen = 8 + data_len;
    nupa_g_put16(udp, sport);
    nupa_g_put16(udp + 2, dport);
    nupa_g_put16(udp + 4, (uint16_t) ulen);
    nupa_g_put16(udp + 6, 0);
    uint16_t c = nupa_g_fold(nupa_g_udp_pseudo(src, dst, ulen) + nupa_g_sum(udp, 8, 0) + data_sum);
    nupa_g_put16(udp + 6, c == 0 ? 0xFFFF : c);
}

/* Whether a received UDP header and its data's sum check out (a checksum of 0: none sent, RFC 768). */
NUPA_GD int nupa_g_udp_valid(const uint8_t *udp, uint32_t src, uint32_t dst, uint64_t data_sum) {
    if (nupa_g_get16(udp + 6) == 0) {
        return 1;
    }
    return nupa_g_fold(nupa_g_udp_pseudo(src, dst, nupa_g_get16(udp + 4)) + nupa_g_sum(udp, 8, 0) + data_sum) == 0;
}

/* The link header (docs/link-layer.md 1): destination, source, protocol, payload length; big-endian. */
NUPA_GD void nupa_g_link_build(uint8_t *f, uint32_t dest, uint32_t source, uint16_t protocol, uint32_t length) {
    nupa_g_put16(f, (uint16_t) dest);
    nupa_g_put16(f + 2, (uint16_t) source);
    nupa_g_put16(f + 4, protocol);
    nupa_g_put16(f + 6, (uint16_t) length);
}

/* ---- on the device ---- */
#if defined(__CUDACC__) || defined(NUPA_CUDA_SIM)

static __device__ inline uint8_t *nupa_g_entry(const struct nupa_gpu_fabric *f, uint32_t a) {
    return f->base + f->node_table + (uint64_t) a * NUPA_G_NODE_BYTES;
}
static __device__ inline uint8_t *nupa_g_ring(const struct nupa_gpu_fabric *f, uint32_t a, uint32_t r) {
    return f->base + f->rings + ((uint64_t) a * f->rings_per_node + r) * f->ring_bytes;
}
static __device__ inline uint8_t *nupa_g_slot(const struct nupa_gpu_fabric *f, uint8_t *ring, uint64_t p) {
    return ring + NUPA_G_R_SLOTS + (p & (f->ring_slots - 1)) * (uint64_t) f->slot_bytes;
}

/* A frame taken from a ring, in place: valid until its ring's head passes it. */
struct nupa_gpu_frame {
    const uint8_t *payload; /* after the link header */
    uint32_t length;        /* the link header's payload length */
    uint32_t source;        /* the sending node */
    uint16_t protocol;
};

/* The device's start (after the host's join drained the rings): the heads as the rings hold them. */
static __device__ inline void nupa_gpu_init(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st) {
    memset(st, 0, sizeof *st);
    st->wake_room = NUPA_GPU_WAKES;
    for (uint32_t r = 0; r < f->rings_per_node; r++) {
        uint8_t *ring = nupa_g_ring(f, f->address, r);
        st->head[r] = nupa_wr_load64((const uint64_t *) (ring + NUPA_G_R_HEAD));
        st->stall_position[r] = UINT64_MAX;
    }
}

/* Words of a slot nupa_gpu_rx_load reads: the slot's header after ctrl, the link header, 44 bytes of payload. */
#define NUPA_GPU_LOAD_WORDS 15

/*
 * Stores the counts in the shared block for the host to add to the node's entry. Posted writes, but not free to
 * issue: the kernels flush once a millisecond and when they stop, not after every batch.
 */
static __device__ inline void nupa_gpu_flush(const struct nupa_gpu_fabric *f, const struct nupa_gpu_state *st) {
    volatile uint64_t *to = (volatile uint64_t *) &f->shared->counts;
    const uint64_t *from = (const uint64_t *) &st->counts;
    for (unsigned k = 0; k < sizeof st->counts / 8; k++) {
        to[k] = from[k];
    }
}

/* The most ctrl words one look reads at once (nupa_gpu_rx_take). */
#define NUPA_GPU_LOOK_MAX 64

/*
 * Thread 0: up to max slots of ring r, from its head on, that hold published frames (6.4 step 1: laps no producer
 * wrote are skipped and counted; PADDING and SKIPPED passed over), from c[0..k-1], the ctrl words of the k slots from
 * the head on, read beforehand; acquired: whether each was read with acquire (else, when the head's holds anything, an
 * acquire fence comes first). The block then reads each slot (nupa_gpu_rx_load) and checks it (nupa_gpu_rx_frame).
 * Returns how many slots went into slots; *next is where the head goes when they are done with (nupa_gpu_rx_release).
 *
 * Each read is a PCIe round trip, so the ctrl words of a look are read at once: one while the ring is idle (the lone
 * frame's latency; nupa_gpu_rx_ready), and while frames come (st->look[r] > 1) twice as many as the last look found, up
 * to NUPA_GPU_LOOK_MAX, a thread a word (one thread's loads into an array would wait for each other: the array lives
 * in local memory), so a batch costs one round trip rather than one a frame. Slots past the look wait for the next.
 */
static __device__ inline int nupa_gpu_rx_take(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t r, const uint64_t *c,
        uint32_t k, int acquired, const uint8_t **slots, int max, uint64_t *next) {
    uint8_t *ring = nupa_g_ring(f, f->address, r);
    uint64_t h = st->head[r];
    *next = h;
    if (k == 0 || (c[0] >> 2) < h + 1) { /* nothing published at the head: no fence (it costs about half a microsecond) */
        st->look[r] = 1;
        return 0;
    }
    if (!acquired) {
        nupa_wr_fence_acquire(); /* the ctrl word before the slot's bytes (6.4 step 1.1's acquire) */
    }
    int n = 0;
    uint32_t j = 0;
    for (; j < k && n < max; j++, h++) {
        uint8_t *s = nupa_g_slot(f, ring, h);
        if ((c[j] >> 2) > h + 1) {
            /* a lap no producer wrote yet (6.4 step 1.2); at most k such skips a look */
            if (nupa_wr_cas64((uint64_t *) s, c[j], ((h + 1) << 2) | NUPA_G_SKIPPED) != c[j]) {
                break; /* it changed meanwhile: the next look reads it again */
            }
            st->counts.corrupt++;
            continue;
        }
        if ((c[j] >> 2) != h + 1) {
            break;
        }
        if ((c[j] & 3) == 0) {
            slots[n++] = s; /* PADDING or SKIPPED: passed over */
        }
    }
    st->look[r] = j == 0 ? 1 : (2 * j > NUPA_GPU_LOOK_MAX ? NUPA_GPU_LOOK_MAX : 2 * j);
    *next = h;
    return n;
}

/*
 * Thread 0: the idle ring's look, one slot (nupa_gpu_rx_take): first, the head's ctrl word as nupa_gpu_rx_peek read it
 * (several rings peeked at once cost one round trip), or UINT64_MAX to read it here; acquired: whether the peek was an
 * acquire.
 */
static __device__ inline int nupa_gpu_rx_ready(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t r, uint64_t first,
        int acquired, const uint8_t **slots, int max, uint64_t *next) {
    uint64_t c = first;
    if (first == UINT64_MAX) {
        c = nupa_wr_load64_relaxed((const uint64_t *) nupa_g_slot(f, nupa_g_ring(f, f->address, r), st->head[r]));
        acquired = 0;
    }
    return nupa_gpu_rx_take(f, st, r, &c, 1, acquired, slots, max, next);
}

/*
 * Any thread: ctrl word j of ring r's look from position h (nupa_gpu_rx_take), read with acquire: a thread a word, the
 * block's loads in flight together.
 */
static __device__ inline uint64_t nupa_gpu_rx_look(const struct nupa_gpu_fabric *f, uint32_t r, uint64_t h, uint32_t j) {
    return nupa_wr_load64((const uint64_t *) nupa_g_slot(f, nupa_g_ring(f, f->address, r), h + j));
}

/*
 * Thread 0: the ctrl word at ring r's head for nupa_gpu_rx_ready's first. Relaxed where several rings are peeked, so
 * that their loads are in flight together (a frame found then costs an acquire fence); an acquire where acquire says
 * (a node of one ring: the load orders the slot's reads after it, and no fence is needed).
 */
static __device__ inline uint64_t nupa_gpu_rx_peek(const struct nupa_gpu_fabric *f, const struct nupa_gpu_state *st, uint32_t r, int acquire) {
    const uint64_t *ctrl = (const uint64_t *) nupa_g_slot(f, nupa_g_ring(f, f->address, r), st->head[r]);
    return acquire ? nupa_wr_load64(ctrl) : nupa_wr_load64_relaxed(ctrl);
}

/* Adds v to a count that several threads of the block may add to at once (in shared memory: an atomic there is cheap). */
static __device__ inline void nupa_g_add(uint64_t *count, uint64_t v) {
#if defined(__CUDA_ARCH__)
    atomicAdd((unsigned long long *) count, (unsigned long long) v);
#else
    __atomic_fetch_add(count, v, __ATOMIC_RELAXED);
#endif
}

/*
 * The whole block: reads NUPA_GPU_LOAD_WORDS words of a ready slot from offset 8 into words (shared memory), a word a
 * thread, so that the slot's header, the link header and the first 44 bytes of the payload cost one round trip
 * (slot_bytes >= 16 + max_frame >= 80 holds them; past the frame they are the slot's bytes). Every thread calls it.
 */
static __device__ inline void nupa_gpu_rx_load(const uint8_t *slot, uint32_t *words) {
    for (uint32_t k = threadIdx.x; k < NUPA_GPU_LOAD_WORDS; k += blockDim.x) {
        words[k] = *(const volatile uint32_t *) (slot + 8 + 4 * k);
    }
    __syncthreads();
}

/*
 * Any thread: the checks of a loaded slot (6.4 step 1.6; docs/link-layer.md 1): a length past max_frame or a source
 * outside the fabric is corrupt; a truncated frame, another destination, a link source other than the slot's, or a
 * payload past the frame is dropped. 1 with *out filled (the IPv4 datagram's first bytes at words + 4), else 0. The
 * counts are added atomically: a thread per frame checks a batch at once.
 */
static __device__ inline int nupa_gpu_rx_frame(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, const uint8_t *slot,
        const uint32_t *words, struct nupa_gpu_frame *out) {
    int32_t len = (int32_t) words[0];
    uint32_t source = words[1] & 0xFFFF;
    if (len < 0 || (uint32_t) len > f->max_frame || source >= f->max_nodes) {
        nupa_g_add(&st->counts.corrupt, 1);
        return 0;
    }
    const uint8_t *l = (const uint8_t *) (words + 2);
    uint32_t payload = nupa_g_get16(l + 6);
    if (len < NUPA_LINK_HEADER || nupa_g_get16(l) != (uint16_t) f->address || nupa_g_get16(l + 2) != source
            || NUPA_LINK_HEADER + payload > (uint32_t) len) {
        nupa_g_add(&st->dropped, 1);
        return 0;
    }
    out->payload = slot + 16 + NUPA_LINK_HEADER;
    out->length = payload;
    out->source = source;
    out->protocol = nupa_g_get16(l + 4);
    nupa_g_add(&st->counts.bytes_received, (uint64_t) len);
    return 1;
}

/* Hands ring r's slots up to next back to the producers (6.4 step 2). The counts go to the host by nupa_gpu_flush. */
static __device__ inline void nupa_gpu_rx_release(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t r, uint64_t next,
        uint32_t frames) {
    if (next != st->head[r]) {
        uint8_t *ring = nupa_g_ring(f, f->address, r);
        nupa_wr_store64((uint64_t *) (ring + NUPA_G_R_HEAD), next);
        st->head[r] = next;
        st->stall_position[r] = UINT64_MAX;
        st->counts.frames_received += frames;
    }
}

/*
 * The stall check and repair (6.5) of every ring, at time now (nupa_globaltimer): a moved head put back, an impossible
 * tail pulled back, laps no producer wrote repaired while a ring is empty, and claims older than the stall timeout
 * skipped. The consumer runs it from time to time while its rings are empty.
 */
static __device__ inline void nupa_gpu_rx_check(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint64_t now) {
    uint64_t *corrupt = &st->counts.corrupt;
    for (uint32_t r = 0; r < f->rings_per_node; r++) {
        uint8_t *ring = nupa_g_ring(f, f->address, r);
        uint64_t h = st->head[r];
        if (nupa_wr_load64((const uint64_t *) (ring + NUPA_G_R_HEAD)) != h) {
            nupa_wr_store64((uint64_t *) (ring + NUPA_G_R_HEAD), h);
            (*corrupt)++;
        }
        uint64_t t = nupa_wr_load64((const uint64_t *) (ring + NUPA_G_R_TAIL));
        if ((int64_t) (t - h) < 0 || t - h > f->ring_slots) {
            if (nupa_wr_cas64((uint64_t *) (ring + NUPA_G_R_TAIL), t, h) == t) {
                (*corrupt)++;
            }
            st->stall_position[r] = UINT64_MAX;
            continue;
        }
        if (t == h) {
            st->stall_position[r] = UINT64_MAX;
            for (uint64_t q = h; q - h < f->ring_slots; q++) {
                uint64_t *ctrl = (uint64_t *) nupa_g_slot(f, ring, q);
                uint64_t c = nupa_wr_load64(ctrl);
                uint64_t lap = q + 1 > f->ring_slots ? q + 1 - f->ring_slots : 0;
                if ((c >> 2) > q + 1 && nupa_wr_cas64(ctrl, c, lap << 2) == c) {
                    (*corrupt)++;
                }
            }
            continue;
        }
        uint64_t c = nupa_wr_load64((const uint64_t *) nupa_g_slot(f, ring, h));
        if ((c >> 2) == h + 1) {
            continue;
        }
        if (st->stall_position[r] != h) {
            st->stall_position[r] = h;
            st->stall_tail[r] = t;
            st->stall_since[r] = now;
        } else if (now - st->stall_since[r] >= f->stall_timeout_ns) {
            for (uint64_t p = h; p < st->stall_tail[r]; p++) {
                uint64_t *pc = (uint64_t *) nupa_g_slot(f, ring, p);
                uint64_t v = nupa_wr_load64(pc);
                if ((v >> 2) != p + 1 && nupa_wr_cas64(pc, v, ((p + 1) << 2) | NUPA_G_SKIPPED) == v) {
                    st->counts.stall_skips++;
                }
            }
            st->stall_position[r] = UINT64_MAX;
        }
    }
}

/* A position claimed in a peer's ring (6.3 step 2), to be written in place and published. */
struct nupa_gpu_claim {
    uint8_t *slot;
    uint8_t *frame; /* slot + 16: the link header goes here, the payload after it */
    uint64_t position;
    uint64_t before;     /* the slot's ctrl, read with the claim (6.3 step 4; a CAS claim's alone) */
    uint64_t claimed_at; /* nupa_globaltimer() at the claim (a sole producer's publish gives up past half the stall timeout) */
    uint32_t dest, length;
};

/*
 * What this GPU knows of ring r of dest (the direct-mapped cache), once dest's state word says UP (6.3 step 1, read at
 * most once a millisecond); NULL, counted, when it is not. A sole producer reads the ring's tail and head with the state
 * word (one round trip): the tail it then keeps itself, so a tail it did not put there (another producer, the consumer's
 * repair, a new peer at that address) is taken over and counted.
 */
static __device__ inline struct nupa_gpu_peer *nupa_gpu_peer_up(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t dest,
        uint32_t r) {
    struct nupa_gpu_peer *pc = &st->peers[(dest * NUPA_G_MAX_RINGS + r) % NUPA_GPU_PEERS];
    uint64_t now = nupa_globaltimer();
    if (pc->dest != dest + 1 || pc->ring != r) {
        pc->dest = dest + 1;
        pc->ring = r;
        pc->tail = 0;
        pc->head = 0;
        pc->up_at = 0;
    }
    if (pc->up_at == 0 || now - pc->up_at > 1000000) {
        uint8_t *ring = nupa_g_ring(f, dest, r);
        uint64_t t = 0, h = 0;
        if (f->sole_producer) { /* in flight with the state word's load */
            t = *(const volatile uint64_t *) (ring + NUPA_G_R_TAIL);
            h = *(const volatile uint64_t *) (ring + NUPA_G_R_HEAD);
        }
        if ((uint32_t) nupa_wr_load64((const uint64_t *) (nupa_g_entry(f, dest) + NUPA_G_E_STATE)) != NUPA_G_STATE_UP) {
            pc->up_at = 0;
            st->counts.peer_down++;
            return NULL;
        }
        if (f->sole_producer && t != pc->tail && t - h <= f->ring_slots) { /* a tail out of range: the consumer repairs it */
            st->counts.tails_moved += pc->up_at != 0;
            pc->tail = t;
            pc->head = h;
        }
        pc->up_at = now;
    }
    return pc;
}

/*
 * Thread 0: claims up to k consecutive positions in ring r of dest, whose cache entry pc says UP, as many as the ring
 * has room for (6.3 step 2; k at once, 2.3): *first is the first, the return value how many (0 with *rc
 * NUPA_BACK_PRESSURED). Every read here is a PCIe round trip, so pc keeps what this GPU last learned: the head is read
 * again only when the cached one says full (6.3 step 2.2 allows it). With CASes the tail is CASed from its guess (the
 * end of this GPU's last claim there; a wrong guess costs one more try, with the value the CAS returned): one round
 * trip when the guess holds. A sole producer stores the tail it keeps (no round trip), ordered before its publishes.
 */
static __device__ inline int nupa_gpu_claim_in(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, struct nupa_gpu_peer *pc,
        uint32_t dest, uint32_t r, uint32_t k, uint64_t *first, int *rc) {
    uint8_t *ring = nupa_g_ring(f, dest, r);
    uint64_t *tail = (uint64_t *) (ring + NUPA_G_R_TAIL);
    uint64_t p = pc->tail;
    for (;;) {
        uint64_t room = f->ring_slots - (p - pc->head);
        if ((int64_t) (p - pc->head) >= (int64_t) f->ring_slots || room < k) {
            pc->head = nupa_wr_load64((const uint64_t *) (ring + NUPA_G_R_HEAD));
            if ((int64_t) (p - pc->head) >= (int64_t) f->ring_slots) {
                pc->tail = p; /* the tail as last seen: the next try starts there */
                st->counts.back_pressured++;
                *rc = NUPA_BACK_PRESSURED;
                return 0;
            }
            room = f->ring_slots - (p - pc->head);
        }
        if (f->sole_producer && (int64_t) (p - pc->head) < 0) { /* a head past this GPU's tail: only a foreign store */
            st->counts.tails_moved++;
            p = pc->head;
            continue;
        }
        uint32_t n = room < k ? (uint32_t) room : k;
        if (f->sole_producer) {
            *(volatile uint64_t *) tail = p + n;
        } else {
            uint64_t seen = nupa_wr_cas64(tail, p, p + n);
            if (seen != p) {
                p = seen;
                continue;
            }
        }
        pc->tail = p + n;
        *first = p;
        *rc = NUPA_OK;
        return (int) n;
    }
}

/*
 * Position p of ring r of dest, claimed at time at (nupa_globaltimer()), as a claim of length bytes. With CASes, its ctrl
 * as read at or after the claim's guess (6.3 step 4; a value read before the claim only costs the publish one more CAS),
 * or read now when before is UINT64_MAX; a sole producer reads nothing (its publish is a store).
 */
static __device__ inline void nupa_gpu_claim_at(const struct nupa_gpu_fabric *f, uint32_t dest, uint32_t r, uint64_t p, uint32_t length,
        uint64_t before, uint64_t at, struct nupa_gpu_claim *c) {
    c->slot = nupa_g_slot(f, nupa_g_ring(f, dest, r), p);
    c->frame = c->slot + 16;
    c->position = p;
    c->dest = dest;
    c->length = length;
    c->claimed_at = at;
    c->before = f->sole_producer || before != UINT64_MAX ? before : nupa_wr_load64((const uint64_t *) c->slot);
}

/*
 * Claims a slot for a frame of length bytes (link header included) in ring r of node dest: NUPA_OK, NUPA_PEER_DOWN,
 * NUPA_BACK_PRESSURED (full: try again later), NUPA_TOO_BIG or NUPA_BAD_ADDRESS; each refusal counted as a CPU
 * producer counts it. A claim must be published or aborted within the stall timeout. The peer's state word (step 1) is
 * read at most once a millisecond: a peer that died meanwhile gets a frame its reclaim drains.
 */
static __device__ inline int nupa_gpu_claim(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t dest, uint32_t r,
        uint32_t length, struct nupa_gpu_claim *c) {
    if (dest >= f->max_nodes || r >= f->rings_per_node) {
        return NUPA_BAD_ADDRESS;
    }
    if (length > f->max_frame) {
        return NUPA_TOO_BIG;
    }
    struct nupa_gpu_peer *pc = nupa_gpu_peer_up(f, st, dest, r);
    if (pc == NULL) {
        return NUPA_PEER_DOWN;
    }
    uint64_t guess = pc->tail, before = UINT64_MAX, first = 0;
    if (!f->sole_producer) { /* the slot's ctrl in flight with the CAS: read again only if the guess was wrong */
        before = *(const volatile uint64_t *) nupa_g_slot(f, nupa_g_ring(f, dest, r), guess);
    }
    int rc = NUPA_OK;
    if (nupa_gpu_claim_in(f, st, pc, dest, r, 1, &first, &rc) == 0) {
        return rc;
    }
    nupa_gpu_claim_at(f, dest, r, first, length, first == guess ? before : UINT64_MAX, nupa_globaltimer(), c);
    return NUPA_OK;
}

/*
 * Thread 0: claims up to k consecutive positions in ring r of dest at once (nupa_gpu_claim_in): *first is the first,
 * the return value how many (0 with *rc NUPA_BACK_PRESSURED, NUPA_PEER_DOWN or NUPA_BAD_ADDRESS). Each position is then a
 * claim of its own: written, made a claim by nupa_gpu_claim_at and published.
 */
static __device__ inline int nupa_gpu_claim_n(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t dest, uint32_t r,
        uint32_t k, uint64_t *first, int *rc) {
    struct nupa_gpu_peer *pc = dest < f->max_nodes && r < f->rings_per_node ? nupa_gpu_peer_up(f, st, dest, r) : NULL;
    if (pc == NULL) {
        *rc = dest < f->max_nodes && r < f->rings_per_node ? NUPA_PEER_DOWN : NUPA_BAD_ADDRESS;
        return 0;
    }
    return nupa_gpu_claim_in(f, st, pc, dest, r, k, first, rc);
}

/*
 * Where this GPU's next claim in ring r of dest will most likely start (the end of its last claim there), or UINT64_MAX
 * when it knows nothing of that ring: other threads can read the slots' ctrl words from there while thread 0 claims.
 */
static __device__ inline uint64_t nupa_gpu_claim_guess(const struct nupa_gpu_state *st, uint32_t dest, uint32_t r) {
    const struct nupa_gpu_peer *pc = &st->peers[(dest * NUPA_G_MAX_RINGS + r) % NUPA_GPU_PEERS];
    return pc->dest == dest + 1 && pc->ring == r && pc->up_at != 0 ? pc->tail : UINT64_MAX;
}

/* Leaves dest's address in the host's wake mailbox (nupa_gpu_host_poll does the rest of the doorbell). */
static __device__ inline void nupa_gpu_wake(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t dest) {
    struct nupa_gpu_shared *sh = f->shared;
    if (st->wake_tail == st->wake_room) {
        st->wake_room = nupa_wr_load32(&sh->head) + NUPA_GPU_WAKES;
        if (st->wake_tail == st->wake_room) {
            st->counts.wakes_lost++; /* the host is behind: the peer's sleep ends at its timeout */
            return;
        }
    }
    nupa_wr_store32(&sh->entry[st->wake_tail % NUPA_GPU_WAKES], dest + 1);
    st->wake_tail++;
}

/*
 * Any thread: the publish of a claimed frame whose bytes every thread that wrote them fenced (6.3 steps 4-5): the check
 * of ctrl (as the claim read it), the slot header, the CAS on ctrl (to PADDING with abort). 1, or 0 when the consumer had
 * skipped the claim (late). Touches no state: several threads may publish their claims at once.
 *
 * A sole producer (fabric-layout.md 6.3, "A ring's only producer") stores ctrl instead: a consumer skips only a claim it
 * has seen pending for the stall timeout, so one published within half of it cannot have been skipped; an older one
 * is given up as late, its slot published as PADDING (harmless if the consumer has passed it, and it lets the consumer
 * pass at once if not).
 */
static __device__ inline int nupa_gpu_publish_slot(const struct nupa_gpu_fabric *f, const struct nupa_gpu_claim *c, int abort) {
    uint64_t *ctrl = (uint64_t *) c->slot;
    uint64_t word = (uint64_t) c->length | ((uint64_t) (uint16_t) f->address << 32) | ((uint64_t) (uint16_t) f->generation << 48);
    if (f->sole_producer) {
        int late = nupa_globaltimer() - c->claimed_at >= f->stall_timeout_ns / 2;
        if (!late) {
            *(volatile uint64_t *) (c->slot + 8) = word;
        }
        nupa_wr_store64(ctrl, ((c->position + 1) << 2) | (abort || late ? NUPA_G_PADDING : 0)); /* release: after the header */
        return !late;
    }
    uint64_t before = c->before;
    if ((before >> 2) >= c->position + 1) {
        return 0;
    }
    *(volatile uint64_t *) (c->slot + 8) = word;
    __threadfence_system(); /* the frame and the slot header before the publish (a CAS is relaxed on the GPU) */
    uint64_t v = ((c->position + 1) << 2) | (abort ? NUPA_G_PADDING : 0);
    for (;;) {
        uint64_t seen = nupa_wr_cas64(ctrl, before, v);
        if (seen == before) {
            return 1;
        }
        if ((seen >> 2) >= c->position + 1) {
            return 0; /* the consumer skipped the claim */
        }
        before = seen; /* read with the claim before the slot's last lap was published, or repaired since */
    }
}

/*
 * Thread 0: the doorbell's load of dest's armed word after publishes to dest (6.3 step 6), relaxed behind the fence, so
 * that its round trip can overlap other loads before its value is used (nupa_gpu_ring_doorbell takes it at once).
 */
static __device__ inline uint32_t nupa_gpu_armed(const struct nupa_gpu_fabric *f, uint32_t dest) {
    __threadfence_system(); /* the publish before the load of armed (Dekker with the consumer's sleep, section 7) */
    return nupa_wr_load32_relaxed((const uint32_t *) (nupa_g_entry(f, dest) + NUPA_G_E_ARMED));
}

/* Thread 0: the doorbell's first step after publishes to dest (6.3 step 6): if dest is armed, its address goes to the host's mailbox. */
static __device__ inline void nupa_gpu_ring_doorbell(const struct nupa_gpu_fabric *f, struct nupa_gpu_state *st, uint32_t dest) {
    if (nupa_gpu_armed(f, dest) != 0) {
        nupa_gpu_wake(f, st, dest);
    }
}

/* Any thread: counts a publish's outcome (6.3 step 7; a late one as late_drops), atomically. NUPA_OK or NUPA_LATE. */
static __device__ inline int nupa_gpu_published(struct nupa_gpu_state *st, const struct nupa_gpu_claim *c, int ok, int abort) {
    if (!ok) {
        nupa_g_add(&st->counts.late_drops, 1);
        return NUPA_LATE;
    }
    if (!abort) {
        nupa_g_add(&st->counts.frames_sent, 1);
        nupa_g_add(&st->counts.bytes_sent, c->length);
    }
    return NUPA_OK;
}

/* The mask of a warp's first lanes lanes (1..32). */
static __device__ inline unsigned nupa_gpu_lanes_mask(uint32_t lanes) {
    return lanes >= 32 ? 0xFFFFFFFFu : (1u << lanes) - 1;
}

/* A warp's first lanes lanes: the sum of their v, in lane 0, by a tree of shuffles. */
static __device__ inline uint64_t nupa_gpu_warp_total(uint64_t v, uint32_t lane, uint32_t lanes) {
    const unsigned mask = nupa_gpu_lanes_mask(lanes);
    for (uint32_t d = 16; d > 0; d /= 2) {
        if (d < lanes) { /* the same for every lane: a shuffle none of them needs is left out (a block of one thread: none) */
            uint64_t other = __shfl_sync(mask, v, lane + d < lanes ? lane + d : lane);
            v += lane + d < lanes ? other : 0;
        }
    }
    return v;
}

/*
 * The sum (nupa_g_sum) of n bytes at src, by every thread of the block, each copying the words it reads to dst (may be
 * NULL) on the way. src and dst 4-byte aligned; bytes past n within the last word are read (the caller's buffer holds
 * them) but neither summed nor, past n, copied meaningfully. scratch: a word a warp of shared memory. Every thread of
 * the block calls it; every thread gets the sum (each warp's added up by shuffles, then the warps' by every thread: a
 * loop over a word a thread cost 15 us on 1,024 threads).
 */
static __device__ inline uint64_t nupa_gpu_block_sum(const uint8_t *src, uint8_t *dst, uint32_t n, uint64_t *scratch) {
    uint64_t s = 0;
    uint32_t words = (n + 3) / 4;
    for (uint32_t k = threadIdx.x; k < words; k += blockDim.x) {
        uint32_t w = *(const volatile uint32_t *) (src + 4 * k);
        if (dst != NULL) {
            *(uint32_t *) (dst + 4 * k) = w;
        }
        uint32_t left = n - 4 * k;
        if (left < 4) {
            w &= (1u << (8 * left)) - 1; /* little-endian: the bytes past n are the high ones */
        }
        s += nupa_g_sum_word(w);
    }
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
    const uint32_t lanes = min(32u, blockDim.x - 32 * warp);
    s = nupa_gpu_warp_total(s, lane, lanes);
    if (lane == 0) {
        scratch[warp] = s;
    }
    __syncthreads();
    uint64_t total = 0;
    for (uint32_t w = 0; w < warps; w++) {
        total += scratch[w];
    }
    __syncthreads(); /* scratch free again */
    return total;
}

#endif /* __CUDACC__ || NUPA_CUDA_SIM */
#endif
