/*
 * A CPU thread streaming WRITEs through a work ring, for nupa-wr's write mode and nupa-gpu's cpu-bw: WQE s sends
 * min(chunk, total - s * chunk) bytes from staging slot s % slots of the data area to remote offset s * chunk modulo the
 * target's region (chunk divides it), signaled, wr_id s; a slot is filled (fill, when given) and reused only after
 * the WQE before it there completed. Returns 0, or 1 after printing one line about what went wrong.
 */
#ifndef NUPA_WR_STREAM_H
#define NUPA_WR_STREAM_H

#include "nupa.h"

#include <stdio.h>

static inline int nupa_wr_stream(nupa_node *node, struct nupa_wr *ring, uint64_t total, uint32_t chunk, uint32_t slots,
        void (*fill)(uint8_t *dst, uint64_t at, uint32_t len), long wait_ns, const char *who) {
    uint64_t wqes = (total + chunk - 1) / chunk, wraps = ring->remote_length / chunk, posted = 0, done = 0;
    struct nupa_cqe c;
    while (done < wqes) {
        while (posted < wqes && posted - done < slots) {
            uint64_t at = posted * chunk;
            uint32_t len = (uint32_t) (total - at < chunk ? total - at : chunk);
            if (fill != NULL) {
                fill(ring->data + (posted % slots) * chunk, at, len);
            }
            if (nupa_wr_post(ring, NUPA_OP_WRITE, NUPA_WQE_SIGNALED, posted, (posted % slots) * chunk, len, (posted % wraps) * chunk, 0) < 0) {
                break;
            }
            posted++;
        }
        int got = nupa_ring_wait(node, ring, &c, wait_ns);
        if (got != 1) {
            printf("%s: %s after %llu of %llu WRITEs completed\n", who, got == 0 ? "the proxy stopped serving the ring" : "no completion in time",
                (unsigned long long) done, (unsigned long long) wqes);
            return 1;
        }
        if (c.status != NUPA_WC_SUCCESS || c.wr_id != done) {
            printf("%s: WRITE %llu completed with %s (wr_id %llu)\n", who, (unsigned long long) done, nupa_wc_status_str(c.status),
                (unsigned long long) c.wr_id);
            return 1;
        }
        done++;
    }
    return 0;
}

#endif
