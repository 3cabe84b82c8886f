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

#endif
