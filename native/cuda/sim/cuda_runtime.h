/*
 * A stand-in for <cuda_runtime.h> that runs nupa-gpu's kernels on CPU threads, for checking their logic (rounds,
 * barriers, slot reuse, warp-aggregated claims, completion handling) against a real proxy on a machine without a GPU,
 * and nupa-gpu-node's (`make -C native sim`; GpuNodeSimTest runs them against Java nodes):
 *
 *   g++ -O2 -std=c++17 -pthread -x c++ -DNUPA_CUDA_SIM -Icuda/sim -Iinclude -Icuda cuda/nupa-gpu.cu build/libnupa.a \
 *       -o build/nupa-gpu-sim                                                      (from native/, after make all)
 *
 * One block, one CPU thread per CUDA thread; __syncthreads is a pthread barrier; a warp's __activemask is the lanes
 * that reach it within a short window (any subset is a legal answer on a GPU too), and __shfl_sync exchanges among
 * exactly the lanes of its mask. Device and host pointers are the same. Nothing here says anything about timing or
 * about the GPU's memory model: the ring's primitives are nupa_wqe.h's host ones.
 */
#ifndef NUPA_CUDA_SIM_RUNTIME_H
#define NUPA_CUDA_SIM_RUNTIME_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static /* one block at a time */
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};

static thread_local dim3 threadIdx(0, 0, 0);
static dim3 blockDim;
static pthread_barrier_t sim_barrier;

static inline void __syncthreads(void) { pthread_barrier_wait(&sim_barrier); }
/* __syncthreads that counts the threads whose pred is non-zero: two counters in turn, one cleared while the other counts. */
static std::atomic<int> sim_counts[2];
static thread_local int sim_count_turn;
static inline int __syncthreads_count(int pred) {
    int t = sim_count_turn;
    sim_count_turn ^= 1;
    if (pred) {
        sim_counts[t]++;
    }
    pthread_barrier_wait(&sim_barrier);
    int n = sim_counts[t].load();
    pthread_barrier_wait(&sim_barrier); /* every thread has read it */
    if (threadIdx.x == 0) {
        sim_counts[t] = 0; /* the other counter is the next call's */
    }
    return n;
}
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
/* A short nap yields; a long one (an idle kernel's backoff) sleeps, so an idle simulated kernel leaves the CPU alone. */
static inline void __nanosleep(unsigned ns) {
    if (ns < 10000) {
        sched_yield();
    } else {
        struct timespec t = {0, (long) ns};
        nanosleep(&t, NULL);
    }
}
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __ffs(unsigned v) { return __builtin_ffs((int) v); }
static inline unsigned __vadd4(unsigned a, unsigned b) {
    unsigned r = 0;
    for (int k = 0; k < 32; k += 8) {
        r |= (((a >> k) + (b >> k)) & 0xFFu) << k;
    }
    return r;
}
static inline int atomicCAS(int *p, int expect, int v) {
    __atomic_compare_exchange_n(p, &expect, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expect;
}
template <typename T> static inline T min(T a, T b) { return a < b ? a : b; }

static inline uint64_t nupa_globaltimer(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000ull + (uint64_t) t.tv_nsec;
}
static inline unsigned nupa_laneid(void) { return threadIdx.x & 31; }
static inline unsigned nupa_lanemask_lt(void) { return (1u << nupa_laneid()) - 1; }

/* ---- warps ---- */
struct sim_exchange {
    long long vals[32];
    int arrived = 0, departed = 0;
    bool draining = false;
};
struct sim_warp {
    std::mutex m;
    std::condition_variable cv;
    /* __activemask: the open gathering, and each closed one's mask by epoch */
    bool open = false;
    uint64_t epoch = 0;
    unsigned gathering = 0;
    std::map<uint64_t, unsigned> masks;
    std::map<unsigned, sim_exchange> exchanges;
};
static sim_warp sim_warps[32];

static inline unsigned __activemask(void) {
    sim_warp &w = sim_warps[threadIdx.x / 32];
    unsigned me = 1u << nupa_laneid();
    std::unique_lock<std::mutex> l(w.m);
    if (!w.open) {
        w.open = true;
        uint64_t e = ++w.epoch;
        w.gathering = me;
        w.cv.wait_for(l, std::chrono::microseconds(rand() % 300)); /* lanes that come meanwhile converge with this one */
        w.open = false;
        w.masks[e] = w.gathering;
        w.cv.notify_all();
        return w.gathering;
    }
    uint64_t e = w.epoch;
    w.gathering |= me;
    w.cv.wait(l, [&] { return w.masks.count(e) != 0; });
    unsigned mask = w.masks[e];
    return mask;
}

/* Every lane of mask calls it with the same mask and src, as on a GPU. */
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src) {
    static_assert(sizeof(T) <= sizeof(long long), "a word");
    sim_warp &w = sim_warps[threadIdx.x / 32];
    int lane = (int) nupa_laneid(), n = __popc(mask);
    std::unique_lock<std::mutex> l(w.m);
    if (!(mask & (1u << lane)) || !(mask & (1u << src))) {
        abort(); /* undefined on a GPU */
    }
    sim_exchange &x = w.exchanges[mask];
    w.cv.wait(l, [&] { return !x.draining; });
    x.vals[lane] = (long long) v;
    if (++x.arrived == n) {
        x.draining = true;
        w.cv.notify_all();
    } else {
        w.cv.wait(l, [&] { return x.draining; });
    }
    T r = (T) x.vals[src];
    if (++x.departed == n) {
        x.arrived = x.departed = 0;
        x.draining = false;
        w.cv.notify_all();
    }
    return r;
}

/* Every lane of mask calls it, as on a GPU: a barrier among them that orders their memory accesses. */
static inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    (void) __shfl_sync(mask, 0, __ffs((int) mask) - 1);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* ---- the runtime ---- */
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorNotReady = 600, cudaErrorSim = 999 };
enum { cudaStreamNonBlocking = 1, cudaHostRegisterMapped = 2, cudaHostAllocMapped = 2, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
typedef int cudaMemcpyKind;

struct sim_event {
    uint64_t t = 0;
};
typedef sim_event *cudaEvent_t;
struct sim_stream {
    std::thread runner;
    std::atomic<bool> busy{false};
    std::vector<sim_event *> pending;
};
typedef sim_stream *cudaStream_t;

static inline const char *cudaGetErrorString(cudaError_t e) { return e == cudaErrorNotReady ? "not ready" : "sim error"; }
static inline cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
enum cudaDeviceAttr { cudaDevAttrHostNativeAtomicSupported = 86 };
/* CPU threads share the host's atomics. */
static inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int) { *v = a == cudaDevAttrHostNativeAtomicSupported; return cudaSuccess; }
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
static inline cudaError_t cudaHostRegister(void *, size_t, unsigned) { return cudaSuccess; }
static inline cudaError_t cudaHostUnregister(void *) { return cudaSuccess; }
static inline cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned) { *d = h; return cudaSuccess; }
static inline cudaError_t cudaHostAlloc(void **p, size_t n, unsigned) { *p = calloc(1, n); return *p ? cudaSuccess : cudaErrorSim; }
static inline cudaError_t cudaMalloc(void **p, size_t n) { *p = calloc(1, n); return *p ? cudaSuccess : cudaErrorSim; }
static inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
static inline cudaError_t cudaMemset(void *p, int v, size_t n) { memset(p, v, n); return cudaSuccess; }
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) { memcpy(d, s, n); return cudaSuccess; }
static inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) { *s = new sim_stream(); return cudaSuccess; }
static inline cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new sim_event(); return cudaSuccess; }
static inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (s->busy) {
        s->pending.push_back(e); /* stamped when the kernel ends */
    } else {
        e->t = nupa_globaltimer();
    }
    return cudaSuccess;
}
static inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) { *ms = (float) ((b->t - a->t) / 1e6); return cudaSuccess; }
static inline cudaError_t cudaStreamQuery(cudaStream_t s) {
    if (s->busy) {
        return cudaErrorNotReady;
    }
    if (s->runner.joinable()) {
        s->runner.join();
    }
    return cudaSuccess;
}

template <typename... A, size_t... I>
static std::tuple<std::decay_t<A>...> sim_args(void **args, std::index_sequence<I...>) {
    return std::tuple<std::decay_t<A>...>(*(std::decay_t<A> *) args[I]...);
}

/* Runs f on block.x threads in the background (one block); the stream is busy until they all return. */
template <typename... A>
static cudaError_t cudaLaunchKernel(void (*f)(A...), dim3 grid, dim3 block, void **args, size_t, cudaStream_t s) {
    if (grid.x != 1 || block.x < 1 || block.x > 1024 || s->busy) {
        return cudaErrorSim;
    }
    auto t = sim_args<A...>(args, std::index_sequence_for<A...>());
    blockDim = block;
    pthread_barrier_init(&sim_barrier, NULL, block.x);
    s->busy = true;
    s->runner = std::thread([=] {
        std::vector<std::thread> threads;
        for (unsigned i = 0; i < block.x; i++) {
            threads.emplace_back([=] {
                threadIdx = dim3(i, 0, 0);
                std::apply(f, t);
            });
        }
        for (auto &th : threads) {
            th.join();
        }
        pthread_barrier_destroy(&sim_barrier);
        for (sim_event *e : s->pending) {
            e->t = nupa_globaltimer();
        }
        s->pending.clear();
        s->busy = false;
    });
    return cudaSuccess;
}

#endif
