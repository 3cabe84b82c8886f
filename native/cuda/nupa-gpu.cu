/*
 * nupa-gpu: CUDA kernels post RDMA work through a proxy's work ring (docs/work-rings.md, native/cuda/README.md).
 *
 *   nupa-gpu FABRIC PROXY RING tensor BYTES SHARD THREADS   a kernel of THREADS threads generates a tensor of BYTES
 *                                                          bytes (nupa-wr's pattern) shard by shard into the ring's
 *                                                          data area and WRITEs each SHARD into the target's region
 *                                                          (wrapping around it); prints the FNV-1a 64 the target's
 *                                                          region must then hold, as nupa-wr write does
 *   nupa-gpu FABRIC PROXY RING lat N                       one thread: an 8-byte signaled WRITE and its completion,
 *                                                          N times after N/10 warm-up; latency percentiles in ns
 *   nupa-gpu FABRIC PROXY RING bw SIZE COUNT               32 threads post COUNT WRITEs of SIZE bytes, as many in
 *                                                          flight as the data area holds; payload Gbit/s
 *   nupa-gpu FABRIC PROXY RING cpu-bw SIZE COUNT           the same work posted by one CPU thread through the same
 *                                                          ring (nupa_wqe.h on the host), for comparison
 *
 * The host joins the fabric as a node (the lowest free address), registers the whole fabric mapping with CUDA, and
 * while a kernel runs watches the ring every millisecond: if the proxy stops serving it, the host raises an abort flag
 * the kernel reads between its bounded waits. One result line; exit 0 when everything came back as expected, 1 when
 * the run failed, 2 for bad arguments or a setup that failed.
 */
#include <cuda_runtime.h>

#include "nupa.h"
#include "nupa_cuda.cuh"
#include "wr_stream.h"

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vector>

static nupa_node *node;
static struct nupa_wr ring;
static int ring_index;

/* How long a kernel or the CPU poster waits for one completion, or for room to post, before it gives up. */
static constexpr uint64_t WAIT_NS = 10ull * 1000 * 1000 * 1000;
/* The slice of a kernel's wait between looks at the host's abort flag. */
static constexpr uint64_t SLICE_NS = 1000 * 1000;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000ull + (uint64_t) t.tv_nsec;
}

/* The byte a WRITE stream carries at stream offset i (nupa-wr.c's pattern). */
static __host__ __device__ inline uint8_t pattern(uint64_t i) { return (uint8_t) ((i >> 8) * 31 + i); }

/* What a kernel reports, in mapped host memory. */
enum {
    K_OK = 0,
    K_TIMEOUT,     /* no completion within WAIT_NS */
    K_FULL,        /* no room to post within WAIT_NS */
    K_CLOSED,      /* the proxy closed the ring */
    K_ABORTED,     /* the host saw the proxy stop serving the ring */
    K_STATUS,      /* a completion in error */
    K_WR_ID,       /* a completion for a WQE this run did not post, or one already completed */
};

struct result {
    int32_t code;
    uint32_t status;  /* K_STATUS: the completion's status */
    uint64_t wr_id;   /* K_STATUS, K_WR_ID: the completion's wr_id */
    uint64_t done;    /* WQEs completed (in order: all below this one) */
    uint64_t posted;  /* WQEs posted */
};

struct control {
    uint32_t abort; /* set by the host, read (volatile) by the kernel */
    uint32_t pad[15];
    struct result res;
};

/* ---- the kernels ---- */

/* Waits for the next completion in slices, looking at the host's abort flag between them: 1, or a K_* code. */
static __device__ int wait_completion(struct nupa_wr *r, struct nupa_cqe *c, const struct control *ctl) {
    uint64_t start = nupa_globaltimer();
    for (;;) {
        int got = nupa_wait_cq(r, c, SLICE_NS);
        if (got == 1) {
            return 1;
        }
        if (got < 0) {
            return K_CLOSED;
        }
        if (*(const volatile uint32_t *) &ctl->abort) {
            return K_ABORTED;
        }
        if (nupa_globaltimer() - start >= WAIT_NS) {
            return K_TIMEOUT;
        }
    }
}

/* Whether a poster that found the ring full since start should give up: a K_* code, or 0 to retry. */
static __device__ int give_up(uint64_t start, const struct control *ctl) {
    if (*(const volatile uint32_t *) &ctl->abort) {
        return K_ABORTED;
    }
    if (nupa_globaltimer() - start >= WAIT_NS) {
        return K_FULL;
    }
    __nanosleep(200);
    return 0;
}

/* Fills the staging slot at dst with the len bytes at stream offset at, spread over the block's threads. */
static __device__ void fill_shard(uint8_t *dst, uint64_t at, uint32_t len, int vec) {
    uint32_t head = 0;
    if (vec) {
        /* at and dst are 16-byte aligned: the 16 bytes at x share x >> 8, so byte j is pattern(x) + j. */
        uint32_t chunks = len / 16;
        for (uint32_t k = threadIdx.x; k < chunks; k += blockDim.x) {
            uint64_t x = at + (uint64_t) k * 16;
            uint32_t b = pattern(x) * 0x01010101u;
            uint4 v;
            v.x = __vadd4(b, 0x03020100u);
            v.y = __vadd4(b, 0x07060504u);
            v.z = __vadd4(b, 0x0b0a0908u);
            v.w = __vadd4(b, 0x0f0e0d0cu);
            *(uint4 *) (dst + (uint64_t) k * 16) = v;
        }
        head = chunks * 16;
    }
    for (uint32_t j = head + threadIdx.x; j < len; j += blockDim.x) {
        dst[j] = pattern(at + j);
    }
}

/*
 * The stream: WQE s (s < wqes) WRITEs len(s) = min(chunk, total - s * chunk) bytes from staging slot s % slots of the
 * data area to remote offset (s % (region / chunk)) * chunk, signaled, wr_id s. With fill, the block first writes the
 * stream's bytes into the slot (tensor); without, it sends what the slot holds (bw).
 *
 * One block. Each round:
 *   A. thread 0, the completion ring's only consumer, takes what completed and marks it; "low" is the first WQE not
 *      completed, and every slot of the WQEs in [low, low + slots) is free once their predecessors there completed,
 *      which all below low did. If nothing can be posted (posted == min(wqes, low + slots)) it waits, bounded, for one
 *      completion. The other threads wait at the barrier meanwhile; thread 0 needs nothing from them, so it gets there.
 *   B. every thread fills its share of WQEs [posted, end), end = min(wqes, low + slots), then fences (system scope)
 *      so the data is visible before any of those WQEs is published;
 *   C. the WQEs are posted: by thread 0 (one thread), or by each thread its own, warp-aggregated.
 * Completions come back in position order, which is not wr_id order when warps claim concurrently; the marks (by
 * slot: the wr_id + 1 that last completed there) let "low" advance past out-of-order completions.
 * Every barrier is reached by all threads: the loop's bounds come from shared memory read after a barrier.
 */
struct stream_args {
    uint64_t total;  /* bytes */
    uint64_t wqes;
    uint64_t region; /* the target region's length */
    uint32_t chunk;
    uint32_t slots;
    int fill;
    int vec; /* 16-byte stores: chunk and the data area 16-byte aligned */
};

/* Up to 1,024 threads a block: the compiler keeps each thread within the registers that allows. */
__global__ void __launch_bounds__(1024) stream_kernel(struct nupa_wr ring_arg, struct stream_args a, struct control *ctl,
        uint64_t *marks) {
    struct nupa_wr r = ring_arg;
    __shared__ uint64_t s_low;
    __shared__ int s_err;
    __shared__ struct nupa_cqe s_bad;
    __shared__ struct nupa_cqe cs[NUPA_WR_POLL_MAX]; /* thread 0's batch of completions: shared, not each thread's registers */
    const uint64_t wraps = a.region / a.chunk;
    uint64_t posted = 0;
    uint64_t low = 0; /* thread 0's */
    if (threadIdx.x == 0) {
        s_err = K_OK;
        s_bad.status = 0;
        s_bad.wr_id = 0;
    }
    __syncthreads();
    for (;;) {
        /* A */
        if (threadIdx.x == 0) {
            int err = s_err; /* a poster's failure in the last round */
            while (err == K_OK && low < a.wqes) {
                int got;
                if (posted < a.wqes && posted < low + a.slots) {
                    got = nupa_wr_poll_many(&r, cs, NUPA_WR_POLL_MAX); /* one round trip for a batch */
                    if (got == 0) {
                        break; /* nothing more now; go post */
                    }
                } else {
                    got = wait_completion(&r, &cs[0], ctl);
                    if (got != 1) {
                        err = got;
                        break;
                    }
                }
                for (int i = 0; i < got && err == K_OK; i++) {
                    const struct nupa_cqe c = cs[i];
                    uint64_t *m = &marks[c.wr_id % a.slots];
                    if (c.status != NUPA_WC_SUCCESS) {
                        err = K_STATUS;
                        s_bad = c;
                    } else if (c.wr_id < low || c.wr_id >= posted || *m == c.wr_id + 1) {
                        err = K_WR_ID;
                        s_bad = c;
                    } else {
                        *m = c.wr_id + 1;
                        while (low < posted && marks[low % a.slots] == low + 1) {
                            low++;
                        }
                    }
                }
            }
            s_low = low;
            s_err = err;
        }
        __syncthreads();
        const uint64_t l = s_low;
        const int err = s_err;
        if (err != K_OK || l >= a.wqes) {
            break; /* uniform: every thread read the same words */
        }
        const uint64_t end = min(a.wqes, l + a.slots);
        /* B */
        if (a.fill) {
            for (uint64_t s = posted; s < end; s++) {
                uint64_t at = s * a.chunk;
                uint32_t len = (uint32_t) min((uint64_t) a.chunk, a.total - at);
                fill_shard(r.data + (uint64_t) (s % a.slots) * a.chunk, at, len, a.vec);
            }
            __threadfence_system();
        }
        __syncthreads();
        /* C */
        if (blockDim.x == 1) {
            for (uint64_t s = posted; s < end && s_err == K_OK; s++) {
                uint64_t at = s * a.chunk;
                uint32_t len = (uint32_t) min((uint64_t) a.chunk, a.total - at);
                uint64_t start = nupa_globaltimer();
                while (nupa_post_write(&r, s, (s % a.slots) * a.chunk, len, (s % wraps) * a.chunk, NUPA_WQE_SIGNALED) < 0) {
                    int e = give_up(start, ctl);
                    if (e != 0) {
                        s_err = e;
                        break;
                    }
                }
            }
        } else {
            for (uint64_t first = posted; first < end && *(volatile int *) &s_err == K_OK; first += blockDim.x) {
                uint64_t s = first + threadIdx.x;
                if (s < end) { /* the active lanes of a warp are a prefix of it */
                    uint64_t at = s * a.chunk;
                    uint32_t len = (uint32_t) min((uint64_t) a.chunk, a.total - at);
                    uint64_t start = nupa_globaltimer();
                    while (nupa_post_write_warp(&r, s, (s % a.slots) * a.chunk, len, (s % wraps) * a.chunk, NUPA_WQE_SIGNALED) < 0) {
                        int e = give_up(start, ctl);
                        if (e != 0) {
                            atomicCAS(&s_err, K_OK, e);
                            break;
                        }
                    }
                }
            }
        }
        posted = end;
        __syncthreads(); /* the posts (and any failure in s_err) before thread 0 looks again */
    }
    if (threadIdx.x == 0) {
        ctl->res.code = s_err;
        ctl->res.status = s_bad.status;
        ctl->res.wr_id = s_bad.wr_id;
        ctl->res.done = low;
        ctl->res.posted = posted;
        __threadfence_system();
    }
}

/* One thread: warm + n times an 8-byte signaled WRITE and its completion, each timed with %globaltimer. */
__global__ void lat_kernel(struct nupa_wr ring_arg, uint32_t warm, uint32_t n, uint64_t *samples, struct control *ctl) {
    struct nupa_wr r = ring_arg;
    int err = K_OK;
    struct nupa_cqe c;
    c.status = 0;
    c.wr_id = 0;
    uint32_t i = 0, posted = 0;
    for (; i < warm + n; i++) {
        uint64_t t0 = nupa_globaltimer();
        while (nupa_post_write_exclusive(&r, i, 0, 8, 0, NUPA_WQE_SIGNALED) < 0 && err == K_OK) {
            err = give_up(t0, ctl);
        }
        if (err != K_OK) {
            break;
        }
        posted++;
        int got = wait_completion(&r, &c, ctl);
        uint64_t t1 = nupa_globaltimer();
        if (got != 1) {
            err = got;
            break;
        }
        if (c.status != NUPA_WC_SUCCESS) {
            err = K_STATUS;
            break;
        }
        if (c.wr_id != i) {
            err = K_WR_ID;
            break;
        }
        if (i >= warm) {
            samples[i - warm] = t1 - t0;
        }
    }
    ctl->res.code = err;
    ctl->res.status = c.status;
    ctl->res.wr_id = c.wr_id;
    ctl->res.done = i;
    ctl->res.posted = posted;
    __threadfence_system();
}

/* ---- the host ---- */

#define CUDA_OR_FAIL(call)                                                                                              \
    do {                                                                                                                \
        cudaError_t e_ = (call);                                                                                        \
        if (e_ != cudaSuccess) {                                                                                        \
            fprintf(stderr, "nupa-gpu: %s failed: %s\n", #call, cudaGetErrorString(e_));                                \
            return 2;                                                                                                   \
        }                                                                                                               \
    } while (0)

/* The GPU's view of the fabric and the ring; filled by gpu_setup. */
static char *host_base, *dev_base;
static struct nupa_wr dring;
static struct control *ctl, *dctl;

static int gpu_setup(void) {
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        fprintf(stderr, "nupa-gpu: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return 2;
    }
    size_t size = 0;
    host_base = (char *) nupa_fabric_memory(node, &size);
    e = cudaHostRegister(host_base, size, cudaHostRegisterMapped);
    if (e != cudaSuccess) {
        fprintf(stderr, "nupa-gpu: cannot register the fabric's %zu bytes with CUDA (cudaHostRegister: %s)\n", size, cudaGetErrorString(e));
        host_base = NULL;
        return 2;
    }
    CUDA_OR_FAIL(cudaHostGetDevicePointer((void **) &dev_base, host_base, 0));
    dring = nupa_cuda_ring(&ring, host_base, dev_base);
    CUDA_OR_FAIL(cudaHostAlloc((void **) &ctl, sizeof *ctl, cudaHostAllocMapped));
    memset(ctl, 0, sizeof *ctl);
    CUDA_OR_FAIL(cudaHostGetDevicePointer((void **) &dctl, ctl, 0));
    return 0;
}

static void gpu_teardown(void) {
    if (host_base != NULL) {
        cudaHostUnregister(host_base);
    }
}

/*
 * Waits for the kernel on stream, looking every millisecond whether the proxy still serves the ring; if it stops,
 * raises the abort flag and gives the kernel WAIT_NS to notice. 0 when the kernel ended (its result in ctl->res),
 * 1 after printing why not.
 */
static int watch(cudaStream_t stream) {
    uint64_t aborted_at = 0;
    for (;;) {
        cudaError_t q = cudaStreamQuery(stream);
        if (q == cudaSuccess) {
            return 0;
        }
        if (q != cudaErrorNotReady) {
            printf("nupa-gpu: the kernel failed: %s\n", cudaGetErrorString(q));
            return 1;
        }
        if (aborted_at == 0 && !nupa_ring_served(node, &ring)) {
            fprintf(stderr, "nupa-gpu: proxy %u stopped serving ring %d while the kernel ran; stopping the kernel\n", ring.owner, ring_index);
            __atomic_store_n(&ctl->abort, 1, __ATOMIC_RELEASE);
            aborted_at = now_ns();
        }
        if (aborted_at != 0 && now_ns() - aborted_at > WAIT_NS + 5000000000ull) {
            printf("nupa-gpu: proxy %u stopped serving ring %d, and the kernel did not stop within %llu s\n", ring.owner, ring_index,
                (unsigned long long) (WAIT_NS / 1000000000ull + 5));
            fflush(stdout);
            _exit(1); /* not nupa_leave: it would unmap memory the kernel still reads; exiting ends the kernel and the heartbeat */
        }
        usleep(1000);
    }
}

/* Prints why a kernel's run failed; 0 if it did not. */
static int report(const struct result *res, const char *what) {
    const char *why;
    switch (res->code) {
    case K_OK: return 0;
    case K_TIMEOUT: why = "no completion within 10 s"; break;
    case K_FULL: why = "no room in the ring within 10 s"; break;
    case K_CLOSED: why = "the proxy closed the ring"; break;
    case K_ABORTED: why = "the proxy stopped serving the ring"; break;
    case K_STATUS:
        printf("nupa-gpu: %s: WRITE %llu completed with %s after %llu of them completed\n", what, (unsigned long long) res->wr_id,
            nupa_wc_status_str((int) res->status), (unsigned long long) res->done);
        return 1;
    case K_WR_ID:
        printf("nupa-gpu: %s: a completion for wr_id %llu, which this run did not post or had completed (%llu posted); does another"
            " poster use ring %d?\n", what, (unsigned long long) res->wr_id, (unsigned long long) res->posted, ring_index);
        return 1;
    default: why = "an unknown failure"; break;
    }
    printf("nupa-gpu: %s: %s after %llu of %llu posted WRITEs completed\n", what, why, (unsigned long long) res->done,
        (unsigned long long) res->posted);
    return 1;
}

/* Checks size against the ring; 0, or 2 after printing why it does not fit. slots: the staging slots it gets. */
static int check_chunk(uint64_t chunk, int divide, uint32_t *slots) {
    uint64_t data = ring.h->data_length, region = ring.h->remote_length;
    if (chunk == 0 || chunk > data || chunk > region || chunk > 0xFFFFFFFFull || (divide && region % chunk != 0)) {
        fprintf(stderr, "nupa-gpu: the size must %sfit the ring's %llu data bytes and the target's %llu bytes\n",
            divide ? "divide the target's region and " : "", (unsigned long long) data, (unsigned long long) region);
        return 2;
    }
    uint64_t n = data / chunk;
    *slots = (uint32_t) (n < ring.h->sq_entries ? n : ring.h->sq_entries);
    return 0;
}

/* Runs stream_kernel with threads threads; 0 with the kernel's time in *seconds, else 1 or 2 after printing why. */
static int run_stream(struct stream_args a, int threads, double *seconds, const char *what) {
    int rc = gpu_setup();
    if (rc != 0) {
        return rc;
    }
    a.vec = a.chunk % 16 == 0 && (uintptr_t) dring.data % 16 == 0;
    uint64_t *marks;
    CUDA_OR_FAIL(cudaMalloc((void **) &marks, (size_t) a.slots * sizeof(uint64_t)));
    CUDA_OR_FAIL(cudaMemset(marks, 0, (size_t) a.slots * sizeof(uint64_t)));
    cudaStream_t stream;
    cudaEvent_t start, stop;
    CUDA_OR_FAIL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_OR_FAIL(cudaEventCreate(&start));
    CUDA_OR_FAIL(cudaEventCreate(&stop));
    CUDA_OR_FAIL(cudaEventRecord(start, stream));
    void *args[] = {&dring, &a, &dctl, &marks};
    CUDA_OR_FAIL(cudaLaunchKernel(stream_kernel, dim3(1), dim3(threads), args, 0, stream)); /* not <<<>>>: sim/ runs it too */
    CUDA_OR_FAIL(cudaEventRecord(stop, stream));
    if (watch(stream) != 0) {
        return 1;
    }
    float ms = 0;
    CUDA_OR_FAIL(cudaEventElapsedTime(&ms, start, stop));
    *seconds = ms / 1000.0;
    cudaFree(marks);
    return report(&ctl->res, what);
}

/* The FNV-1a 64 of the region after a stream of total bytes wrapped around it: at r, the last byte written there. */
static uint64_t expected_fnv(uint64_t total, uint64_t region) {
    uint64_t h = 0xcbf29ce484222325ULL;
    uint64_t last = total - 1, m = last % region, q = last / region; /* (total - 1 - r) / region is q for r <= m, else q - 1 */
    for (uint64_t r = 0; r < region; r++) {
        uint8_t b = 0;
        if (r < total) {
            b = pattern(r + region * (r <= m ? q : q - 1));
        }
        h = (h ^ b) * 0x100000001b3ULL;
    }
    return h;
}

static int tensor(uint64_t total, uint64_t shard, int threads) {
    uint32_t slots;
    if (total == 0 || check_chunk(shard, 1, &slots) != 0) {
        if (total == 0) {
            fprintf(stderr, "nupa-gpu: BYTES must be positive\n");
        }
        return 2;
    }
    if (threads < 1 || threads > 1024) {
        fprintf(stderr, "nupa-gpu: THREADS must be 1 to 1024 (1, 32 or 1024 for the comparison)\n");
        return 2;
    }
    struct stream_args a = {};
    a.total = total;
    a.chunk = (uint32_t) shard;
    a.wqes = (total + shard - 1) / shard;
    a.region = ring.h->remote_length;
    a.slots = slots;
    a.fill = 1;
    double s = 0;
    int rc = run_stream(a, threads, &s, "tensor");
    if (rc != 0) {
        return rc;
    }
    uint64_t region = ring.h->remote_length;
    printf("nupa-gpu: wrote %llu bytes in %llu WRITEs of %llu through ring %u in %.0f ms; target fnv1a64=0x%llx over %llu bytes;"
        " threads=%d slots=%u bytes_per_s=%.0f\n",
        (unsigned long long) total, (unsigned long long) a.wqes, (unsigned long long) shard, ring.h->ring_index, s * 1000,
        (unsigned long long) expected_fnv(total, region), (unsigned long long) region, threads, slots, s > 0 ? total / s : 0.0);
    return 0;
}

/* The arguments of bw and cpu-bw: 0 with the staging slots in *slots, else -1 after printing why. */
static int check_bw(uint64_t size, uint64_t count, uint32_t *slots) {
    if (count == 0) {
        fprintf(stderr, "nupa-gpu: COUNT must be positive\n");
        return -1;
    }
    return check_chunk(size, 0, slots);
}

/* One line of bw or cpu-bw: payload Gbit/s over seconds s. */
static void print_bw(const char *what, uint64_t size, uint64_t count, double s) {
    printf("%s size=%llu count=%llu seconds=%.6f gbps=%.3f\n", what, (unsigned long long) size, (unsigned long long) count, s,
        s > 0 ? (double) size * count * 8 / s / 1e9 : 0.0);
}

static int bw(uint64_t size, uint64_t count) {
    uint32_t slots;
    if (check_bw(size, count, &slots) != 0) {
        return 2;
    }
    struct stream_args a = {};
    a.total = size * count;
    a.chunk = (uint32_t) size;
    a.wqes = count;
    a.region = ring.h->remote_length;
    a.slots = slots;
    a.fill = 0;
    double s = 0;
    int rc = run_stream(a, 32, &s, "bw");
    if (rc != 0) {
        return rc;
    }
    print_bw("gpu_write_bw", size, count, s);
    return 0;
}

static int cpu_bw(uint64_t size, uint64_t count) {
    uint32_t slots;
    if (check_bw(size, count, &slots) != 0) {
        return 2;
    }
    uint64_t t0 = now_ns();
    if (nupa_wr_stream(node, &ring, size * count, (uint32_t) size, slots, NULL, (long) WAIT_NS, "nupa-gpu: cpu-bw") != 0) {
        return 1;
    }
    double s = (now_ns() - t0) / 1e9;
    print_bw("cpu_write_bw", size, count, s);
    return 0;
}

static int lat(uint32_t n) {
    if (n == 0 || n > 100000000) {
        fprintf(stderr, "nupa-gpu: N must be 1 to 100000000\n");
        return 2;
    }
    if (ring.h->data_length < 8 || ring.h->remote_length < 8) {
        fprintf(stderr, "nupa-gpu: the ring's data area and the target's region must hold 8 bytes\n");
        return 2;
    }
    int rc = gpu_setup();
    if (rc != 0) {
        return rc;
    }
    uint32_t warm = n / 10;
    uint64_t *samples;
    CUDA_OR_FAIL(cudaMalloc((void **) &samples, (size_t) n * sizeof(uint64_t)));
    cudaStream_t stream;
    CUDA_OR_FAIL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    uint32_t count = n;
    void *args[] = {&dring, &warm, &count, &samples, &dctl};
    CUDA_OR_FAIL(cudaLaunchKernel(lat_kernel, dim3(1), dim3(1), args, 0, stream));
    if (watch(stream) != 0) {
        return 1;
    }
    if (report(&ctl->res, "lat") != 0) {
        return 1;
    }
    std::vector<uint64_t> v(n);
    CUDA_OR_FAIL(cudaMemcpy(v.data(), samples, (size_t) n * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    cudaFree(samples);
    std::sort(v.begin(), v.end());
    printf("gpu_write_lat p50=%llu p99=%llu min=%llu n=%u\n", (unsigned long long) v[n / 2], (unsigned long long) v[(size_t) n * 99 / 100],
        (unsigned long long) v[0], n);
    return 0;
}

/*
 * The runs below assume the ring to themselves: every completion is theirs. First, without taking anything (a live
 * poster is the ring's one consumer), wait up to 2 s for 50 ms in which no one claims a slot or takes a completion.
 * Then every WQE claimed must have been taken (else a poster died holding a slot it never filled, which stops the ring
 * until the proxy restarts). Last, completions a dead poster left are taken until none came for 50 ms. Returns 0, or
 * 2 if the ring is not READY or busy.
 */
static int ring_idle(void) {
    uint32_t state = nupa_wr_load32(&ring.h->state);
    if (state != NUPA_WR_READY) {
        fprintf(stderr, "nupa-gpu: ring %d is %s; restart the proxy\n", ring_index,
            state == NUPA_WR_SETUP ? "not served yet (SETUP)" : state == NUPA_WR_ERROR ? "in ERROR after a failed WQE" : "CLOSED");
        return 2;
    }
    uint64_t claim = nupa_wr_load64(&ring.h->sq_claim), taken = nupa_wr_load64(&ring.h->cq_head);
    for (int i = 0;; i++) {
        usleep(50000);
        uint64_t c2 = nupa_wr_load64(&ring.h->sq_claim), t2 = nupa_wr_load64(&ring.h->cq_head);
        if (c2 == claim && t2 == taken) {
            break;
        }
        if (i == 40) {
            fprintf(stderr, "nupa-gpu: another poster is using ring %d (it claims slots and takes completions); nupa-gpu needs the ring"
                " to itself\n", ring_index);
            return 2;
        }
        claim = c2;
        taken = t2;
    }
    if (claim != nupa_wr_load64(&ring.h->sq_head)) {
        fprintf(stderr, "nupa-gpu: ring %d is stuck: a poster died holding a slot it never filled; restart the proxy\n", ring_index);
        return 2;
    }
    struct nupa_cqe c;
    uint64_t stale = 0, quiet = now_ns();
    while (now_ns() - quiet < 50000000) {
        if (nupa_wr_poll(&ring, &c) == 1) {
            stale++;
            quiet = now_ns();
        } else {
            usleep(100);
        }
    }
    if (stale > 0) {
        fprintf(stderr, "nupa-gpu: took %llu stale completions an earlier poster left in ring %d\n", (unsigned long long) stale, ring_index);
    }
    return 0;
}

static void usage(FILE *f) {
    fprintf(f,
        "usage: nupa-gpu FABRIC PROXY RING MODE ARGS...\n"
        "  FABRIC: the fabric file; PROXY: the proxy node's address; RING: its work ring's index (docs/work-rings.md)\n"
        "  tensor BYTES SHARD THREADS  a kernel of THREADS threads (1, 32 or 1024; warp-aggregated posting above 1)\n"
        "                              generates BYTES bytes of nupa-wr's pattern shard by shard into the ring's data area\n"
        "                              and WRITEs each SHARD (which must divide the target's region) into the region,\n"
        "                              wrapping; prints the fnv1a64 the target's region must hold, as nupa-wr write does\n"
        "  lat N                       one GPU thread: an 8-byte signaled WRITE and its completion, N times after N/10\n"
        "                              warm-up; gpu_write_lat p50 p99 min in ns\n"
        "  bw SIZE COUNT               32 GPU threads post COUNT signaled WRITEs of SIZE bytes from the data area, as many\n"
        "                              in flight as it holds (at most the ring's entries); gpu_write_bw in Gbit/s\n"
        "  cpu-bw SIZE COUNT           the same work posted by one CPU thread through the same ring; cpu_write_bw\n"
        "Exit status: 0 success, 1 the run failed (one line says why), 2 bad arguments or setup.\n");
}

int main(int argc, char **argv) {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc < 5) {
        usage(stderr);
        return 2;
    }
    const char *mode = argv[4];
    int want = strcmp(mode, "tensor") == 0 ? 8 : strcmp(mode, "lat") == 0 ? 6 : strcmp(mode, "bw") == 0 || strcmp(mode, "cpu-bw") == 0 ? 7 : 0;
    if (want == 0 || argc != want) {
        fprintf(stderr, "nupa-gpu: unknown mode or wrong arguments: %s (see nupa-gpu --help)\n", mode);
        return 2;
    }
    char err[256];
    node = nupa_join(argv[1], -1, err, sizeof err);
    if (node == NULL) {
        fprintf(stderr, "nupa-gpu: %s\n", err);
        return 2;
    }
    ring_index = atoi(argv[3]);
    int status = 2;
    if (nupa_ring_open(node, atoi(argv[2]), ring_index, &ring, err, sizeof err) != 0) {
        fprintf(stderr, "nupa-gpu: %s\n", err);
    } else if (ring_idle() == 0) {
        if (strcmp(mode, "tensor") == 0) {
            status = tensor(strtoull(argv[5], NULL, 0), strtoull(argv[6], NULL, 0), atoi(argv[7]));
        } else if (strcmp(mode, "lat") == 0) {
            status = lat((uint32_t) strtoul(argv[5], NULL, 0));
        } else if (strcmp(mode, "bw") == 0) {
            status = bw(strtoull(argv[5], NULL, 0), strtoull(argv[6], NULL, 0));
        } else {
            status = cpu_bw(strtoull(argv[5], NULL, 0), strtoull(argv[6], NULL, 0));
        }
    }
    gpu_teardown();
    nupa_leave(node);
    return status;
}
