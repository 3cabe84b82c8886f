/* nupa-gpu-node's UDP echo kernel (native/cuda/README.md, "nupa-gpu-node: the two examples"). */
#ifndef NUPA_GPU_ECHO_CUH
#define NUPA_GPU_ECHO_CUH

#include "gpu_service.cuh"

/*
 * The UDP echo: thread 0 takes a batch of frames; for each, the block reads its headers, thread 0 checks them, the
 * block sums the data (checking the checksum) while copying it to staging, thread 0 claims a slot in the sender's ring,
 * the block copies the data into it, thread 0 writes the headers and publishes; then the batch's slots are released.
 */
__global__ void __launch_bounds__(1024) echo_kernel(struct nupa_gpu_fabric f, struct service svc, struct control *ctl, struct counters *cnt,
        struct nupa_gpu_state *st, uint8_t *staging) {
    __shared__ struct rx_batch s_batch;
    __shared__ uint32_t s_words[NUPA_GPU_LOAD_WORDS];
    __shared__ struct nupa_gpu_frame s_frame;
    __shared__ int s_ok, s_claimed; /* two flags: thread 0 writes the second while the others may still read the first */
    __shared__ struct udp_seen s_udp;
    __shared__ struct nupa_gpu_claim s_claim;
    __shared__ uint64_t s_scratch[1024];
    uint16_t id = 0;
    if (threadIdx.x == 0) {
        nupa_gpu_init(&f, st);
    }
    while (next_batch(&f, st, ctl, cnt, &s_batch)) {
        for (int i = 0; i < s_batch.n; i++) {
            uint64_t t0 = threadIdx.x == 0 ? nupa_globaltimer() : 0, headers = 0, t2 = 0, t3 = 0;
            take_datagram(&f, st, &svc, cnt, &s_batch, i, s_words, &s_frame, &s_udp, staging, s_scratch, &s_ok, &headers);
            if (!s_ok) {
                continue;
            }
            if (threadIdx.x == 0) {
                t2 = nupa_globaltimer();
                s_claimed = claim_reply(&f, st, s_frame.source, 36 + s_udp.len, &s_claim, ctl) == NUPA_OK;
                cnt->send_failed += !s_claimed;
            }
            __syncthreads();
            if (!s_claimed) {
                continue;
            }
            /* Each thread copies the words it staged itself: data at frame + 36, 4-byte aligned in the slot; thread 0
             * writes the headers meanwhile. */
            if (threadIdx.x == 0) {
                t3 = nupa_globaltimer();
                reply_headers(&f, &s_claim, svc.ip, s_udp.ip.src, svc.port, s_udp.sport, s_udp.len, s_udp.sum, ++id);
            }
            for (uint32_t k = threadIdx.x; k < (s_udp.len + 3) / 4; k += blockDim.x) {
                uint32_t w = ((const uint32_t *) staging)[k];
                if (4 * k + 4 <= s_udp.len) {
                    ((volatile uint32_t *) (s_claim.frame + 36))[k] = w;
                } else { /* the last bytes alone: a slot may end right after the frame, and the next slot's ctrl follows */
                    for (uint32_t b = 0; 4 * k + b < s_udp.len; b++) {
                        ((volatile uint8_t *) (s_claim.frame + 36))[4 * k + b] = (uint8_t) (w >> (8 * b));
                    }
                }
            }
            __threadfence_system();
            __syncthreads();
            if (threadIdx.x == 0) {
                uint64_t t4 = nupa_globaltimer();
                if (nupa_gpu_publish(&f, st, &s_claim, 0) == NUPA_OK) {
                    cnt->served++;
                    uint64_t t5 = nupa_globaltimer();
                    cnt->step_ns[0] += headers;
                    cnt->step_ns[1] += t2 - t0 - headers;
                    cnt->step_ns[2] += t3 - t2;
                    cnt->step_ns[3] += t4 - t3;
                    cnt->step_ns[4] += t5 - t4;
                } else {
                    cnt->send_failed++;
                }
            }
            __syncthreads();
        }
        end_batch(&f, st, ctl, cnt, &s_batch);
    }
}

#endif
