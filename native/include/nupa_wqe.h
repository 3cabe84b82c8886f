/*
 * Work rings: one work-request format for host and device code (docs/work-rings.md).
 *
 * A proxy node exports, per queue pair it serves, a fabric window holding a header, a submission ring of 64-byte
 * WQEs, a completion ring of 32-byte CQEs and a data area. Posters (C threads, CUDA threads, Java through
 * dev.nupa.roce.ring.WorkRing) claim slots with a CAS, fill them and publish each by storing its sequence word
 * last; the proxy executes the WQEs in order on its RC queue pair and writes completions back the same way.
 * Nothing here makes a system call, so the same inline functions serve C on the host and CUDA kernels on a GPU
 * that maps the fabric (cudaHostRegister). All fields are little-endian.
 *
 * The offsets are the ones dev.nupa.roce.ring.WorkRingLayout uses; a test checks that both agree.
 */
#ifndef NUPA_WQE_H
#define NUPA_WQE_H

#include <stdint.h>

#if defined(__CUDACC__)
#define NUPA_HD __host__ __device__ static inline
#else
#define NUPA_HD static inline
#endif

#define NUPA_WR_MAGIC 0x4B52574Eu /* "NWRK" */
#define NUPA_WR_VERSION 1

/* Ring states (header word state). */
#define NUPA_WR_SETUP 0
#define NUPA_WR_READY 1
#define NUPA_WR_ERROR 2  /* the QP broke: every later WQE completes with IBV_WC_WR_FLUSH_ERR */
#define NUPA_WR_CLOSED 3 /* the proxy stopped serving the ring */

/* Opcodes, numbered like enum ibv_wr_opcode. */
#define NUPA_OP_WRITE 0
#define NUPA_OP_WRITE_WITH_IMM 1
#define NUPA_OP_SEND 2
#define NUPA_OP_SEND_WITH_IMM 3
#define NUPA_OP_READ 4

/* WQE flags: a successful WQE completes only when SIGNALED (errors always do). */
#define NUPA_WQE_SIGNALED 1
#define NUPA_WQE_SOLICITED 2

/* Completion statuses: the values of enum ibv_wc_status that a ring reports. */
#define NUPA_WC_SUCCESS 0
#define NUPA_WC_LOC_LEN_ERR 1
#define NUPA_WC_LOC_QP_OP_ERR 2 /* a malformed WQE: unknown version or opcode */
#define NUPA_WC_LOC_PROT_ERR 4  /* the local window, key or range is wrong */
#define NUPA_WC_WR_FLUSH_ERR 5  /* the ring is in ERROR, or the proxy stopped */
#define NUPA_WC_REM_INV_REQ_ERR 9
#define NUPA_WC_REM_ACCESS_ERR 10 /* the target refused the rkey or range */
#define NUPA_WC_REM_OP_ERR 11
#define NUPA_WC_RETRY_EXC_ERR 12
#define NUPA_WC_RNR_RETRY_EXC_ERR 13

/* Results of the poster's calls. */
#define NUPA_RING_FULL -1 /* no free slot: poll completions and try again */
#define NUPA_RING_EMPTY 0 /* no completion yet */
#define NUPA_WR_POLL_MAX 16 /* the most completions nupa_wr_poll_many takes at once */

/* The header: 512 bytes; words each side writes lie on cache lines of their own. */
struct nupa_wr_header {
    uint32_t magic;          /* 0: stored last at setup, with release */
    uint16_t version;        /* 4 */
    uint16_t wqe_size;       /* 6: 64 */
    uint16_t cqe_size;       /* 8: 32 */
    uint16_t ring_index;     /* 10 */
    uint32_t sq_entries;     /* 12: a power of two */
    uint32_t cq_entries;     /* 16: a power of two, at least sq_entries */
    uint32_t state;          /* 20: NUPA_WR_* */
    uint64_t data_offset;    /* 24: from the window's start, page aligned */
    uint64_t data_length;    /* 32 */
    uint64_t remote_addr;    /* 40: the target's region: base address, */
    uint64_t remote_length;  /* 48: length */
    uint32_t remote_key;     /* 56: and rkey */
    uint32_t qpn;            /* 60: the proxy's QP */
    uint32_t peer_node;      /* 64 */
    uint32_t peer_qpn;       /* 68 */
    uint32_t window_id;      /* 72: this window, to name the data area as a WQE's local window */
    uint32_t window_key;     /* 76 */
    uint8_t pad0[48];
    uint64_t sq_claim;       /* 128: posters: positions claimed */
    uint8_t pad1[56];
    uint64_t sq_head;        /* 192: proxy: positions taken (slots below may be written again) */
    uint64_t executed;       /* 200: proxy: WQEs that succeeded */
    uint64_t failed;         /* 208: proxy: WQEs that completed in error */
    uint8_t pad2[40];
    uint64_t cq_head;        /* 256: the completion consumer: completions taken */
    uint8_t pad3[56];
    uint64_t cq_tail;        /* 320: proxy: completions written */
    uint8_t pad4[184];
};

/* A work request: 64 bytes. */
struct nupa_wqe {
    uint32_t seq;            /* 0: the slot's position + 1 (low 32 bits), stored last with release */
    uint8_t version;         /* 4: NUPA_WR_VERSION */
    uint8_t opcode;          /* 5: NUPA_OP_* */
    uint16_t flags;          /* 6: NUPA_WQE_* */
    uint64_t wr_id;          /* 8: returned in the completion */
    uint32_t local_window;   /* 16: the fabric window the data lies in (the ring's own: header window_id) */
    uint32_t local_key;      /* 20: its key */
    uint64_t local_offset;   /* 24: from the window's start */
    uint32_t length;         /* 32 */
    uint32_t imm;            /* 36: immediate data for *_WITH_IMM */
    uint64_t remote_addr;    /* 40: as the target's region names it (remote_addr + offset) */
    uint32_t remote_key;     /* 48 */
    uint32_t reserved0;      /* 52 */
    uint64_t reserved1;      /* 56 */
};

/* A completion: 32 bytes. */
struct nupa_cqe {
    uint32_t seq;            /* 0: the completion's position + 1, stored last with release */
    uint8_t status;          /* 4: NUPA_WC_* (enum ibv_wc_status) */
    uint8_t opcode;          /* 5: the WQE's opcode */
    uint16_t reserved0;
    uint64_t wr_id;          /* 8 */
    uint32_t byte_len;       /* 16 */
    uint32_t sq_position;    /* 20: low 32 bits of the WQE's position */
    uint64_t reserved1;      /* 24 */
};

#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
#ifdef __cplusplus
#define NUPA_STATIC_ASSERT static_assert
#else
#define NUPA_STATIC_ASSERT _Static_assert
#endif
NUPA_STATIC_ASSERT(sizeof(struct nupa_wr_header) == 512, "work ring header is 512 bytes");
NUPA_STATIC_ASSERT(sizeof(struct nupa_wqe) == 64, "a WQE is 64 bytes");
NUPA_STATIC_ASSERT(sizeof(struct nupa_cqe) == 32, "a CQE is 32 bytes");
#endif

/* ---- the memory-order primitives, for the host and for a GPU ---- */
#if defined(__CUDA_ARCH__)
/*
 * Device code: the ring lives in host memory the GPU maps, so ordering must hold at system scope. Acquire loads and
 * release stores (sm_70 and later) order what they must without the full system fence that a volatile access and
 * __threadfence_system() would cost on every poll.
 */
NUPA_HD uint64_t nupa_wr_load64(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
NUPA_HD uint32_t nupa_wr_load32(const uint32_t *p) {
    uint32_t v;
    asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
NUPA_HD uint32_t nupa_wr_load32_relaxed(const uint32_t *p) {
    uint32_t v;
    asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
NUPA_HD uint64_t nupa_wr_load64_relaxed(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
NUPA_HD void nupa_wr_fence_acquire(void) { asm volatile("fence.acq_rel.sys;" : : : "memory"); }
NUPA_HD void nupa_wr_store32(uint32_t *p, uint32_t v) { asm volatile("st.release.sys.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory"); }
NUPA_HD void nupa_wr_store64(uint64_t *p, uint64_t v) { asm volatile("st.release.sys.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory"); }
/* Returns the value *p held: expect when the swap happened. */
NUPA_HD uint64_t nupa_wr_cas64(uint64_t *p, uint64_t expect, uint64_t v) {
    return (uint64_t) atomicCAS_system((unsigned long long *) p, (unsigned long long) expect, (unsigned long long) v);
}
#else
NUPA_HD uint64_t nupa_wr_load64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
NUPA_HD uint32_t nupa_wr_load32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
NUPA_HD uint32_t nupa_wr_load32_relaxed(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
NUPA_HD uint64_t nupa_wr_load64_relaxed(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
NUPA_HD void nupa_wr_fence_acquire(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
NUPA_HD void nupa_wr_store32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
NUPA_HD void nupa_wr_store64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
/* Returns the value *p held: expect when the swap happened. */
NUPA_HD uint64_t nupa_wr_cas64(uint64_t *p, uint64_t expect, uint64_t v) {
    __atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
    return expect;
}
#endif

/* ---- a ring as a poster sees it ---- */
/*
 * The header's constant words are copied here when the ring is viewed: a post then reads nothing back from the ring
 * but the sequence words, which matters where every read crosses PCIe (a GPU) or another CPU's cache.
 */
struct nupa_wr {
    struct nupa_wr_header *h;
    struct nupa_wqe *sq;
    struct nupa_cqe *cq;
    uint8_t *data;
    uint32_t sq_entries, cq_entries;
    uint64_t data_offset, data_length;
    uint64_t remote_addr, remote_length;
    uint32_t remote_key;
    /* The ring's own window (the local window of WQEs whose data lies in the data area); nupa_ring_open also sets
     * which incarnation of its owner the ring was found in. */
    uint32_t window_id, window_key, owner, owner_gen;
    /* The proxy's sq_head as this poster last read it: a lower bound, read again only when the ring looks full. */
    uint64_t known_head;
    /* What this poster expects sq_claim to hold (its own last claim's end): the CAS is tried with it first, so a
     * poster alone on its ring claims in one atomic, without reading sq_claim first. */
    uint64_t claim_guess;
    /* The completion consumer's position (it alone writes cq_head), so that a poll reads only the CQE. */
    uint64_t cq_next;
};

/* Views the ring whose window starts at base; returns 0, or -1 if base holds no version-1 work ring. */
NUPA_HD int nupa_wr_view(struct nupa_wr *r, void *base) {
    struct nupa_wr_header *h = (struct nupa_wr_header *) base;
    r->h = h;
    if (nupa_wr_load32(&h->magic) != NUPA_WR_MAGIC || h->version != NUPA_WR_VERSION || h->wqe_size != 64 || h->cqe_size != 32) {
        return -1;
    }
    r->sq_entries = h->sq_entries;
    r->cq_entries = h->cq_entries;
    r->data_offset = h->data_offset;
    r->data_length = h->data_length;
    r->remote_addr = h->remote_addr;
    r->remote_length = h->remote_length;
    r->remote_key = h->remote_key;
    r->window_id = h->window_id;
    r->window_key = h->window_key;
    r->sq = (struct nupa_wqe *) ((uint8_t *) base + 512);
    r->cq = (struct nupa_cqe *) ((uint8_t *) base + 512 + (uint64_t) r->sq_entries * 64);
    r->data = (uint8_t *) base + r->data_offset;
    r->known_head = 0;
    r->claim_guess = nupa_wr_load64(&h->sq_claim);
    r->cq_next = nupa_wr_load64(&h->cq_head);
    return 0;
}

/* Claims n consecutive slots; returns the first position, or NUPA_RING_FULL as a position below 0 (cast it). */
NUPA_HD int64_t nupa_wr_claim(struct nupa_wr *r, uint32_t n) {
    uint64_t c = r->claim_guess;
    for (;;) {
        /* Sums, not differences: a stale guess may lie below the head, and then only the CAS can tell. */
        if (c + n > r->known_head + r->sq_entries) {
            r->known_head = nupa_wr_load64(&r->h->sq_head); /* the proxy's line: read only when needed */
            if (c + n > r->known_head + r->sq_entries) {
                r->claim_guess = c;
                return NUPA_RING_FULL;
            }
        }
        uint64_t was = nupa_wr_cas64(&r->h->sq_claim, c, c + n);
        if (was == c) {
            r->claim_guess = c + n;
            return (int64_t) c;
        }
        c = was; /* another poster claimed meanwhile: try again from where it left the count */
    }
}

/*
 * Claims n slots for a poster that is its ring's only one (its own thread, or a kernel's one posting thread): no
 * atomic, so no round trip to where the ring lives. It still stores sq_claim, plainly, so that tools and a later
 * shared poster see the count. Mixing it with nupa_wr_claim on one ring at the same time corrupts the ring.
 */
NUPA_HD int64_t nupa_wr_claim_exclusive(struct nupa_wr *r, uint32_t n) {
    uint64_t c = r->claim_guess;
    if (c + n > r->known_head + r->sq_entries) {
        r->known_head = nupa_wr_load64(&r->h->sq_head);
        if (c + n > r->known_head + r->sq_entries) {
            return NUPA_RING_FULL;
        }
    }
    r->claim_guess = c + n;
    r->h->sq_claim = c + n;
    return (int64_t) c;
}

/* Fills the slot at position p and publishes it (the sequence word last). */
NUPA_HD void nupa_wr_fill(struct nupa_wr *r, uint64_t p, uint8_t opcode, uint16_t flags, uint64_t wr_id, uint64_t local_offset,
        uint32_t length, uint64_t remote_offset, uint32_t imm) {
    struct nupa_wqe *w = &r->sq[p & (r->sq_entries - 1)];
    w->version = NUPA_WR_VERSION;
    w->opcode = opcode;
    w->flags = flags;
    w->wr_id = wr_id;
    w->local_window = r->window_id;
    w->local_key = r->window_key;
    w->local_offset = r->data_offset + local_offset;
    w->length = length;
    w->imm = imm;
    w->remote_addr = r->remote_addr + remote_offset;
    w->remote_key = r->remote_key;
    nupa_wr_store32(&w->seq, (uint32_t) (p + 1));
}

/*
 * Posts one WQE whose data lies in the ring's data area at local_offset and, for WRITE and READ, at remote_offset of
 * the target's region; returns its position, or NUPA_RING_FULL.
 */
NUPA_HD int64_t nupa_wr_post(struct nupa_wr *r, uint8_t opcode, uint16_t flags, uint64_t wr_id, uint64_t local_offset,
        uint32_t length, uint64_t remote_offset, uint32_t imm) {
    int64_t p = nupa_wr_claim(r, 1);
    if (p >= 0) {
        nupa_wr_fill(r, (uint64_t) p, opcode, flags, wr_id, local_offset, length, remote_offset, imm);
    }
    return p;
}

/* nupa_wr_post for a ring's only poster (nupa_wr_claim_exclusive). */
NUPA_HD int64_t nupa_wr_post_exclusive(struct nupa_wr *r, uint8_t opcode, uint16_t flags, uint64_t wr_id, uint64_t local_offset,
        uint32_t length, uint64_t remote_offset, uint32_t imm) {
    int64_t p = nupa_wr_claim_exclusive(r, 1);
    if (p >= 0) {
        nupa_wr_fill(r, (uint64_t) p, opcode, flags, wr_id, local_offset, length, remote_offset, imm);
    }
    return p;
}

/* Takes the next completion into *c: 1, or NUPA_RING_EMPTY. One consumer at a time, through one struct nupa_wr. */
NUPA_HD int nupa_wr_poll(struct nupa_wr *r, struct nupa_cqe *c) {
    uint64_t h = r->cq_next;
    struct nupa_cqe *e = &r->cq[h & (r->cq_entries - 1)];
    if (nupa_wr_load32(&e->seq) != (uint32_t) (h + 1)) {
        return NUPA_RING_EMPTY;
    }
    *c = *e;
    r->cq_next = h + 1;
    nupa_wr_store64(&r->h->cq_head, h + 1);
    return 1;
}

/*
 * Takes up to max (at most NUPA_WR_POLL_MAX) completions, in order, into c[]: how many. The sequence words of all of
 * them are read before one acquire fence, so where the ring is far (a GPU polling host memory) one round trip serves
 * them all, and the consumer's position is stored once. One consumer at a time, as nupa_wr_poll.
 */
NUPA_HD int nupa_wr_poll_many(struct nupa_wr *r, struct nupa_cqe *c, int max) {
    uint64_t h = r->cq_next;
    uint32_t seq[NUPA_WR_POLL_MAX];
    if (max > NUPA_WR_POLL_MAX) {
        max = NUPA_WR_POLL_MAX;
    }
    for (int i = 0; i < max; i++) {
        seq[i] = nupa_wr_load32_relaxed(&r->cq[(h + i) & (r->cq_entries - 1)].seq);
    }
    nupa_wr_fence_acquire();
    int n = 0;
    while (n < max && seq[n] == (uint32_t) (h + n + 1)) {
        c[n] = r->cq[(h + n) & (r->cq_entries - 1)];
        n++;
    }
    if (n > 0) {
        r->cq_next = h + n;
        nupa_wr_store64(&r->h->cq_head, h + n);
    }
    return n;
}

#endif
