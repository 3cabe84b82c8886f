/*
 * nupa-wr: posts RDMA work through a proxy's work ring (docs/work-rings.md) from C, on libnupa alone.
 *
 *   nupa-wr FABRIC PROXY RING write BYTES CHUNK   WRITEs BYTES in all, CHUNK bytes a WQE, from the ring's data area
 *                                                  into the target's region (wrapping around it), every one signaled;
 *                                                  prints the FNV-1a 64 the target's region must then hold
 *   nupa-wr FABRIC PROXY RING bad-offset           a WRITE from outside the data area (IBV_WC_LOC_PROT_ERR), then a
 *                                                  good one, which must still succeed
 *   nupa-wr FABRIC PROXY RING bad-key              a WRITE under a wrong rkey (IBV_WC_REM_ACCESS_ERR from the target),
 *                                                  then one that must complete flushed, the ring in ERROR
 *   nupa-wr FABRIC PROXY RING full                 posts without polling until the ring says full, then takes every
 *                                                  completion
 *   nupa-wr FABRIC PROXY RING stream SECONDS       posts and polls until the proxy stops serving the ring (exit 0)
 *                                                  or SECONDS pass (exit 1)
 *
 *   nupa-wr FABRIC PROXY RING window ID KEY         opens window ID under KEY (section 9.4 of fabric-layout.md) and
 *                                                  prints its size, access and owner
 *   nupa-wr --layout                                prints the offsets of nupa_wqe.h's fields, NAME=OFFSET, for the test
 *                                                  that checks them against the Java flyweight's
 *
 * The poster joins the fabric as a node (the lowest free address), so its heartbeat thread watches the proxy and
 * reclaims it if it dies. Prints one result line; exits 0 when everything came back as expected.
 */
#define _GNU_SOURCE
#include "nupa.h"
#include "wr_stream.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a poster waits for one completion before it calls the run failed. */
#define WAIT_NS 10000000000L

static nupa_node *node;
static struct nupa_wr ring;

static uint64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000 + (uint64_t) t.tv_nsec / 1000000;
}

/* The byte a WRITE stream carries at stream offset i. */
static uint8_t pattern(uint64_t i) { return (uint8_t) ((i >> 8) * 31 + i); }

static void fill_pattern(uint8_t *dst, uint64_t at, uint32_t len) {
    for (uint32_t i = 0; i < len; i++) {
        dst[i] = pattern(at + i);
    }
}

static int write_stream(uint64_t total, uint32_t chunk) {
    uint64_t data = ring.h->data_length, region = ring.h->remote_length;
    if (chunk == 0 || chunk > data || chunk > region || region % chunk != 0) {
        fprintf(stderr, "nupa-wr: CHUNK must divide the target's %llu bytes and fit the ring's %llu data bytes\n",
            (unsigned long long) region, (unsigned long long) data);
        return 2;
    }
    uint32_t slots = (uint32_t) (data / chunk);
    if (slots > ring.h->sq_entries) {
        slots = ring.h->sq_entries;
    }
    uint64_t wqes = (total + chunk - 1) / chunk, t0 = now_ms();
    if (nupa_wr_stream(node, &ring, total, chunk, slots, fill_pattern, WAIT_NS, "nupa-wr") != 0) {
        return 1;
    }
    uint64_t ms = now_ms() - t0;
    /* The region holds, at r, the last byte the stream wrote there. */
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint64_t r = 0; r < region; r++) {
        uint8_t b = 0;
        if (r < total) {
            b = pattern(r + region * ((total - 1 - r) / region));
        }
        h = (h ^ b) * 0x100000001b3ULL;
    }
    printf("nupa-wr: wrote %llu bytes in %llu WRITEs of %u through ring %u in %llu ms; target fnv1a64=0x%llx over %llu bytes\n",
        (unsigned long long) total, (unsigned long long) wqes, chunk, ring.h->ring_index, (unsigned long long) ms, (unsigned long long) h,
        (unsigned long long) region);
    return 0;
}

/* Posts one WQE and reports its completion's status, or -1. */
static int one(uint8_t op, uint64_t wr_id, uint64_t local_offset, uint32_t len, uint64_t remote_offset) {
    if (nupa_wr_post(&ring, op, NUPA_WQE_SIGNALED, wr_id, local_offset, len, remote_offset, 0) < 0) {
        return -1;
    }
    struct nupa_cqe c;
    if (nupa_ring_wait(node, &ring, &c, WAIT_NS) != 1 || c.wr_id != wr_id) {
        return -1;
    }
    return c.status;
}

/* Posts a WRITE whose rkey is not the target's. */
static int64_t post_bad_key(uint64_t wr_id) {
    int64_t p = nupa_wr_claim(&ring, 1);
    if (p < 0) {
        return p;
    }
    struct nupa_wqe *w = &ring.sq[(uint64_t) p & (ring.h->sq_entries - 1)];
    w->version = NUPA_WR_VERSION;
    w->opcode = NUPA_OP_WRITE;
    w->flags = NUPA_WQE_SIGNALED;
    w->wr_id = wr_id;
    w->local_window = ring.h->window_id;
    w->local_key = ring.h->window_key;
    w->local_offset = ring.h->data_offset;
    w->length = 64;
    w->imm = 0;
    w->remote_addr = ring.h->remote_addr;
    w->remote_key = ring.h->remote_key ^ 0x100;
    nupa_wr_store32(&w->seq, (uint32_t) (p + 1));
    return p;
}

#define FIELD(prefix, type, field) printf("%s%s=%zu\n", prefix, #field, offsetof(struct type, field))

static void layout(void) {
    FIELD("H_", nupa_wr_header, magic); FIELD("H_", nupa_wr_header, version); FIELD("H_", nupa_wr_header, wqe_size);
    FIELD("H_", nupa_wr_header, cqe_size); FIELD("H_", nupa_wr_header, ring_index); FIELD("H_", nupa_wr_header, sq_entries);
    FIELD("H_", nupa_wr_header, cq_entries); FIELD("H_", nupa_wr_header, state); FIELD("H_", nupa_wr_header, data_offset);
    FIELD("H_", nupa_wr_header, data_length); FIELD("H_", nupa_wr_header, remote_addr); FIELD("H_", nupa_wr_header, remote_length);
    FIELD("H_", nupa_wr_header, remote_key); FIELD("H_", nupa_wr_header, qpn); FIELD("H_", nupa_wr_header, peer_node);
    FIELD("H_", nupa_wr_header, peer_qpn); FIELD("H_", nupa_wr_header, window_id); FIELD("H_", nupa_wr_header, window_key);
    FIELD("H_", nupa_wr_header, sq_claim); FIELD("H_", nupa_wr_header, sq_head); FIELD("H_", nupa_wr_header, executed);
    FIELD("H_", nupa_wr_header, failed); FIELD("H_", nupa_wr_header, cq_head); FIELD("H_", nupa_wr_header, cq_tail);
    FIELD("W_", nupa_wqe, seq); FIELD("W_", nupa_wqe, version); FIELD("W_", nupa_wqe, opcode); FIELD("W_", nupa_wqe, flags);
    FIELD("W_", nupa_wqe, wr_id); FIELD("W_", nupa_wqe, local_window); FIELD("W_", nupa_wqe, local_key);
    FIELD("W_", nupa_wqe, local_offset); FIELD("W_", nupa_wqe, length); FIELD("W_", nupa_wqe, imm); FIELD("W_", nupa_wqe, remote_addr);
    FIELD("W_", nupa_wqe, remote_key);
    FIELD("C_", nupa_cqe, seq); FIELD("C_", nupa_cqe, status); FIELD("C_", nupa_cqe, opcode); FIELD("C_", nupa_cqe, wr_id);
    FIELD("C_", nupa_cqe, byte_len); FIELD("C_", nupa_cqe, sq_position);
    printf("HEADER_BYTES=%zu\nWQE_BYTES=%zu\nCQE_BYTES=%zu\nMAGIC=%u\nVERSION=%d\n", sizeof(struct nupa_wr_header),
        sizeof(struct nupa_wqe), sizeof(struct nupa_cqe), NUPA_WR_MAGIC, NUPA_WR_VERSION);
    printf("OP_WRITE=%d\nOP_WRITE_WITH_IMM=%d\nOP_SEND=%d\nOP_SEND_WITH_IMM=%d\nOP_READ=%d\nF_SIGNALED=%d\nF_SOLICITED=%d\n", NUPA_OP_WRITE,
        NUPA_OP_WRITE_WITH_IMM, NUPA_OP_SEND, NUPA_OP_SEND_WITH_IMM, NUPA_OP_READ, NUPA_WQE_SIGNALED, NUPA_WQE_SOLICITED);
    printf("READY=%d\nERROR=%d\nCLOSED=%d\n", NUPA_WR_READY, NUPA_WR_ERROR, NUPA_WR_CLOSED);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--layout") == 0) {
        layout();
        return 0;
    }
    if (argc < 5) {
        fprintf(stderr, "usage: nupa-wr FABRIC PROXY RING write BYTES CHUNK | bad-offset | bad-key | full | stream SECONDS | window ID KEY\n");
        return 2;
    }
    char err[256];
    node = nupa_join(argv[1], -1, err, sizeof err);
    if (node == NULL) {
        fprintf(stderr, "nupa-wr: %s\n", err);
        return 2;
    }
    int status = 2;
    if (nupa_ring_open(node, atoi(argv[2]), atoi(argv[3]), &ring, err, sizeof err) != 0) {
        fprintf(stderr, "nupa-wr: %s\n", err);
    } else if (strcmp(argv[4], "window") == 0 && argc == 7) {
        struct nupa_window w;
        if (nupa_window_open(node, (uint32_t) strtoul(argv[5], NULL, 0), (uint32_t) strtoul(argv[6], NULL, 0), &w, err, sizeof err) != 0) {
            printf("nupa-wr: %s\n", err);
            status = 1;
        } else {
            printf("nupa-wr: window %u: %llu bytes, access %u, owner %u, valid %d\n", w.id, (unsigned long long) w.length, w.access, w.owner,
                nupa_window_valid(node, &w));
            status = 0;
        }
    } else if (strcmp(argv[4], "write") == 0 && argc == 7) {
        status = write_stream(strtoull(argv[5], NULL, 0), (uint32_t) strtoul(argv[6], NULL, 0));
    } else if (strcmp(argv[4], "bad-offset") == 0) {
        int a = one(NUPA_OP_WRITE, 1, ring.h->data_length - 32, 64, 0);
        int b = one(NUPA_OP_WRITE, 2, 0, 64, 0);
        printf("nupa-wr: out of range %s, then %s; ring state %u\n", nupa_wc_status_str(a), nupa_wc_status_str(b), nupa_wr_load32(&ring.h->state));
        status = a == NUPA_WC_LOC_PROT_ERR && b == NUPA_WC_SUCCESS && ring.h->state == NUPA_WR_READY ? 0 : 1;
    } else if (strcmp(argv[4], "bad-key") == 0) {
        struct nupa_cqe c1, c2;
        int ok = post_bad_key(1) >= 0 && nupa_ring_wait(node, &ring, &c1, WAIT_NS) == 1;
        ok = ok && nupa_wr_post(&ring, NUPA_OP_WRITE, NUPA_WQE_SIGNALED, 2, 0, 64, 0, 0) >= 0 && nupa_ring_wait(node, &ring, &c2, WAIT_NS) == 1;
        printf("nupa-wr: bad key %s, then %s; ring state %u\n", ok ? nupa_wc_status_str(c1.status) : "-", ok ? nupa_wc_status_str(c2.status) : "-",
            nupa_wr_load32(&ring.h->state));
        status = ok && c1.status == NUPA_WC_REM_ACCESS_ERR && c2.status == NUPA_WC_WR_FLUSH_ERR && ring.h->state == NUPA_WR_ERROR ? 0 : 1;
    } else if (strcmp(argv[4], "full") == 0) {
        uint64_t posted = 0;
        uint64_t end = now_ms() + 10000;
        while (now_ms() < end && nupa_wr_post(&ring, NUPA_OP_WRITE, NUPA_WQE_SIGNALED, posted, 0, 8, 0, 0) >= 0) {
            posted++;
        }
        uint64_t got = 0;
        struct nupa_cqe c;
        while (got < posted && nupa_ring_wait(node, &ring, &c, WAIT_NS) == 1 && c.status == NUPA_WC_SUCCESS && c.wr_id == got) {
            got++;
        }
        printf("nupa-wr: the ring took %llu WQEs before it said full (%u entries); %llu completed in order\n", (unsigned long long) posted,
            ring.h->sq_entries, (unsigned long long) got);
        status = posted >= ring.h->sq_entries && got == posted ? 0 : 1;
    } else if (strcmp(argv[4], "stream") == 0 && argc == 6) {
        uint64_t end = now_ms() + (uint64_t) atoi(argv[5]) * 1000, posted = 0, done = 0;
        struct nupa_cqe c;
        int got = 1;
        status = 1;
        while (now_ms() < end) {
            if (posted - done < 16 && nupa_wr_post(&ring, NUPA_OP_WRITE, NUPA_WQE_SIGNALED, posted, 0, 4096, 0, 0) >= 0) {
                posted++;
            }
            got = nupa_ring_wait(node, &ring, &c, 200000000L);
            if (got == 1) {
                done++;
            } else if (got == 0) {
                status = 0;
                break;
            }
        }
        printf("nupa-wr: %s after %llu completions (%llu posted)\n", status == 0 ? "the proxy stopped serving the ring" : "still served",
            (unsigned long long) done, (unsigned long long) posted);
    } else {
        fprintf(stderr, "nupa-wr: unknown mode or arguments: %s\n", argv[4]);
    }
    nupa_leave(node);
    return status;
}
