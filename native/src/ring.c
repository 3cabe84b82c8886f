/* libnupa: work rings (docs/work-rings.md), found as windows of their proxies (docs/fabric-layout.md section 9.4). */
#include "internal.h"

int nupa_ring_open(nupa_node *n, int owner, int index, struct nupa_wr *r, char *err, size_t errlen) {
    if (owner < 0 || owner >= (int) n->max_nodes) {
        nupa_fail(err, errlen, "address %d is outside 0..%u of this fabric", owner, n->max_nodes - 1);
        return -1;
    }
    uint64_t owner_word = atomic_load_explicit(u64(n, entry(n, owner) + N_STATE), memory_order_acquire);
    int rings = 0;
    for (uint32_t i = 0; i < n->max_windows; i++) {
        uint64_t we = n->window_table + (uint64_t) i * 64;
        struct nupa_window w;
        if (atomic_load_explicit(u32(n, we + W_STATE), memory_order_acquire) != W_ACTIVE
            || *(uint32_t *) (n->mem + we + W_OWNER) != (uint32_t) owner
            || owner_word != word(UP, *(uint32_t *) (n->mem + we + W_OWNER_GEN))
            || (*(uint32_t *) (n->mem + we + W_ACCESS) & W_WORK_RING) == 0
            || nupa_window_open(n, i, *(uint32_t *) (n->mem + we + W_KEY), &w, NULL, 0) != 0 /* withdrawn meanwhile */
            || w.length < 512 || nupa_wr_view(r, w.memory) != 0) {
            continue;
        }
        rings++;
        if (r->h->ring_index == (uint32_t) index) {
            r->window_id = w.id;
            r->window_key = w.key;
            r->owner = w.owner;
            r->owner_gen = w.owner_gen;
            return 0;
        }
    }
    nupa_fail(err, errlen, "node %d serves no work ring %d (it serves %d rings); start a proxy there (nupa node --proxy A.B.C.D:PORT)", owner,
        index, rings);
    return -1;
}

int nupa_ring_served(nupa_node *n, const struct nupa_wr *r) {
    struct nupa_window w = {.id = r->window_id, .key = r->window_key, .owner = r->owner, .owner_gen = r->owner_gen};
    return nupa_window_valid(n, &w) && nupa_wr_load32(&r->h->state) != NUPA_WR_CLOSED;
}


int nupa_ring_wait(nupa_node *n, struct nupa_wr *r, struct nupa_cqe *c, long timeout_ns) {
    uint64_t end = now_ns() + (uint64_t) timeout_ns;
    nupa_ring_doorbell(n, r); /* what was posted before the wait, if the proxy sleeps */
    for (unsigned spins = 0;; spins++) {
        if (nupa_wr_poll(r, c) == 1) {
            return 1;
        }
        if ((spins & 1023) == 0) { /* the liveness check reads the proxy's lines: not at every empty poll */
            if (!nupa_ring_served(n, r)) {
                return nupa_wr_poll(r, c) == 1 ? 1 : 0;
            }
            if (now_ns() > end) {
                return -1;
            }
        }
    }
}

const char *nupa_wc_status_str(int status) {
    switch (status) {
    case NUPA_WC_SUCCESS: return "IBV_WC_SUCCESS";
    case NUPA_WC_LOC_LEN_ERR: return "IBV_WC_LOC_LEN_ERR";
    case NUPA_WC_LOC_QP_OP_ERR: return "IBV_WC_LOC_QP_OP_ERR";
    case NUPA_WC_LOC_PROT_ERR: return "IBV_WC_LOC_PROT_ERR";
    case NUPA_WC_WR_FLUSH_ERR: return "IBV_WC_WR_FLUSH_ERR";
    case NUPA_WC_REM_INV_REQ_ERR: return "IBV_WC_REM_INV_REQ_ERR";
    case NUPA_WC_REM_ACCESS_ERR: return "IBV_WC_REM_ACCESS_ERR";
    case NUPA_WC_REM_OP_ERR: return "IBV_WC_REM_OP_ERR";
    case NUPA_WC_RETRY_EXC_ERR: return "IBV_WC_RETRY_EXC_ERR";
    case NUPA_WC_RNR_RETRY_EXC_ERR: return "IBV_WC_RNR_RETRY_EXC_ERR";
    default: return "IBV_WC_(another status)";
    }
}

void nupa_ring_doorbell(nupa_node *n, const struct nupa_wr *r) {
    /* The add first (after the WQEs, as the seq_cst add orders them): a proxy that took its sleep token before it
     * does not sleep; one that takes it after looks at its rings before sleeping. Then a wake if it sleeps armed. */
    uint64_t peer = entry(n, (int) r->owner);
    atomic_fetch_add(u32(n, peer + N_DOORBELL), 1);
    wake(n, peer);
}
