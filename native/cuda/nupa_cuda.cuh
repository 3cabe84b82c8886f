/*
 * nupa_cuda.cuh: posting RDMA work from CUDA kernels into a proxy's work ring (docs/work-rings.md), in the style of
 * DOCA GPUNetIO's device functions. Header-only: the ring's format and its memory-order primitives are the inline
 * functions of nupa_wqe.h, compiled here for the device, so that C, Java and CUDA posters share one definition.
 *
 * The ring lives in the fabric file, host memory that the GPU maps: the host registers the whole fabric mapping
 * (cudaHostRegister(base, size, cudaHostRegisterMapped)), asks for its device address (cudaHostGetDevicePointer) and
 * hands kernels the ring translated by nupa_cuda_ring. Every device access to the ring then crosses PCIe, so
 * nupa_wqe.h orders it at system scope: a WQE's or CQE's sequence word is stored after __threadfence_system() and
 * loaded volatile before one.
 *
 * Rules for callers:
 *  - Data a WQE carries must be visible at system scope before the WQE is posted: the thread that wrote it, or every
 *    thread that did, runs __threadfence_system() before the poster publishes (e.g. before a __syncthreads()).
 *  - The completion ring has one consumer: one thread of the whole grid polls it (nupa_poll_cq, nupa_wait_cq).
 *  - Nothing here waits without a bound: a kernel cannot see whether the proxy is alive (the host can, with
 *    nupa_ring_served), so nupa_wait_cq takes a timeout and a kernel gives up when it passes.
 *  - sq_claim is claimed with atomicCAS_system on host memory, atomic among the threads of one GPU; a CPU poster or
 *    another GPU on the same ring at the same time needs a link with native host atomics
 *    (cudaDevAttrHostNativeAtomicSupported; PCIe hosts usually lack them).
 */
#ifndef NUPA_CUDA_CUH
#define NUPA_CUDA_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "nupa_wqe.h"

/* ---- on the host ---- */

/*
 * The ring *host views in the fabric mapping at host_base, as a kernel sees it when the mapping appears at dev_base
 * on the device (cudaHostGetDevicePointer): every pointer moved by the same offset; the window and owner words kept.
 */
static inline struct nupa_wr nupa_cuda_ring(const struct nupa_wr *host, char *host_base, char *dev_base) {
    struct nupa_wr d = *host;
    d.h = (struct nupa_wr_header *) (dev_base + ((char *) host->h - host_base));
    d.sq = (struct nupa_wqe *) (dev_base + ((char *) host->sq - host_base));
    d.cq = (struct nupa_cqe *) (dev_base + ((char *) host->cq - host_base));
    d.data = (uint8_t *) (dev_base + ((char *) host->data - host_base));
    return d;
}

/* ---- on the device ---- */
#if defined(__CUDACC__) || defined(NUPA_CUDA_SIM)

/* Special registers (sim/cuda_runtime.h, which runs these functions on CPU threads for tests, has its own). */
#ifndef NUPA_CUDA_SIM
/* The GPU's nanosecond clock (%globaltimer), for bounding waits and timing. */
static __device__ __forceinline__ uint64_t nupa_globaltimer(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ __forceinline__ unsigned nupa_laneid(void) {
    unsigned v;
    asm("mov.u32 %0, %%laneid;" : "=r"(v));
    return v;
}

/* The lanes below this one. */
static __device__ __forceinline__ unsigned nupa_lanemask_lt(void) {
    unsigned v;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(v));
    return v;
}
#endif

/*
 * Posts a WRITE of length bytes from local_offset of the ring's data area to remote_offset of the target's region;
 * returns the WQE's position, or NUPA_RING_FULL (poll completions, then retry). flags: NUPA_WQE_SIGNALED for a
 * completion on success (errors always complete).
 */
static __device__ inline int64_t nupa_post_write(struct nupa_wr *r, uint64_t wr_id, uint64_t local_offset, uint32_t length,
        uint64_t remote_offset, uint16_t flags) {
    return nupa_wr_post(r, NUPA_OP_WRITE, flags, wr_id, local_offset, length, remote_offset, 0);
}

/*
 * nupa_post_write for a thread that is its ring's only poster: the claim needs no atomic on host memory, which saves a
 * PCIe round trip a post (nupa_wr_claim_exclusive).
 */
static __device__ inline int64_t nupa_post_write_exclusive(struct nupa_wr *r, uint64_t wr_id, uint64_t local_offset,
        uint32_t length, uint64_t remote_offset, uint16_t flags) {
    return nupa_wr_post_exclusive(r, NUPA_OP_WRITE, flags, wr_id, local_offset, length, remote_offset, 0);
}

/* Posts a SEND of length bytes from local_offset of the data area; as nupa_post_write. */
static __device__ inline int64_t nupa_post_send(struct nupa_wr *r, uint64_t wr_id, uint64_t local_offset, uint32_t length,
        uint16_t flags) {
    return nupa_wr_post(r, NUPA_OP_SEND, flags, wr_id, local_offset, length, 0, 0);
}

/*
 * Warp-aggregated posting: every active lane of a warp calls it with its own WQE. The lowest active lane claims as many
 * consecutive slots as there are active lanes with one CAS on sq_claim (one PCIe atomic instead of 32), broadcasts the
 * first position, and each lane fills the slot at that position plus its rank among the active lanes. Returns each
 * lane's position; if the claim failed (the ring had not room for them all), NUPA_RING_FULL for every lane and
 * nothing was posted: the caller polls completions (or lets its consumer thread do so) and calls again, from the same
 * lanes or others. The proxy executes WQEs in position order, so a lane that is slow to fill holds back the others'
 * WQEs until it publishes; it never blocks them for good.
 */
static __device__ inline int64_t nupa_post_warp(struct nupa_wr *r, uint8_t opcode, uint16_t flags, uint64_t wr_id,
        uint64_t local_offset, uint32_t length, uint64_t remote_offset, uint32_t imm) {
    unsigned mask = __activemask();
    int leader = __ffs(mask) - 1;
    long long first = 0;
    if ((int) nupa_laneid() == leader) {
        first = (long long) nupa_wr_claim(r, (uint32_t) __popc(mask));
    }
    first = __shfl_sync(mask, first, leader);
    if (first < 0) {
        return NUPA_RING_FULL;
    }
    uint64_t p = (uint64_t) first + (uint64_t) __popc(mask & nupa_lanemask_lt());
    nupa_wr_fill(r, p, opcode, flags, wr_id, local_offset, length, remote_offset, imm);
    return (int64_t) p;
}

/* nupa_post_write, warp-aggregated (nupa_post_warp). */
static __device__ inline int64_t nupa_post_write_warp(struct nupa_wr *r, uint64_t wr_id, uint64_t local_offset, uint32_t length,
        uint64_t remote_offset, uint16_t flags) {
    return nupa_post_warp(r, NUPA_OP_WRITE, flags, wr_id, local_offset, length, remote_offset, 0);
}

/* nupa_post_send, warp-aggregated (nupa_post_warp). */
static __device__ inline int64_t nupa_post_send_warp(struct nupa_wr *r, uint64_t wr_id, uint64_t local_offset, uint32_t length,
        uint16_t flags) {
    return nupa_post_warp(r, NUPA_OP_SEND, flags, wr_id, local_offset, length, 0, 0);
}

/* Takes the next completion into *c: 1, or NUPA_RING_EMPTY. The ring's single consumer only. */
static __device__ inline int nupa_poll_cq(struct nupa_wr *r, struct nupa_cqe *c) {
    return nupa_wr_poll(r, c);
}

/* Takes up to max completions (NUPA_WR_POLL_MAX at most) with one round trip to the ring: how many. */
static __device__ inline int nupa_poll_cq_many(struct nupa_wr *r, struct nupa_cqe *c, int max) {
    return nupa_wr_poll_many(r, c, max);
}

/*
 * Spins for the next completion: 1 with it in *c; 0 when timeout_ns passed without one; -1 when the proxy closed the
 * ring (state NUPA_WR_CLOSED) and left no completion. A proxy that died without closing leaves the state alone, so
 * the timeout is what ends that wait; the host notices the death sooner (nupa_ring_served) and may tell the kernel
 * through a flag the kernel checks between shorter waits. The ring's single consumer only.
 */
static __device__ inline int nupa_wait_cq(struct nupa_wr *r, struct nupa_cqe *c, uint64_t timeout_ns) {
    uint64_t start = nupa_globaltimer();
    for (uint32_t spins = 0;; spins++) {
        if (nupa_wr_poll(r, c) == 1) {
            return 1;
        }
        if ((spins & 7) == 7) { /* every poll costs PCIe round trips already; look at the state less often */
            if (nupa_wr_load32(&r->h->state) == NUPA_WR_CLOSED) {
                return nupa_wr_poll(r, c) == 1 ? 1 : -1;
            }
            if (nupa_globaltimer() - start >= timeout_ns) {
                return 0;
            }
        }
    }
}

#endif /* __CUDACC__ || NUPA_CUDA_SIM */
#endif
