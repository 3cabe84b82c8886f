/* libnupa: opening windows other nodes exported (docs/fabric-layout.md section 9.4). */
#include "internal.h"

#include <stdint.h>

int nupa_window_open(nupa_node *n, uint32_t id, uint32_t key, struct nupa_window *w, char *err, size_t errlen) {
    if (id >= n->max_windows) {
        nupa_fail(err, errlen, "window id %u is outside 0..%u", id, n->max_windows - 1);
        return -1;
    }
    uint64_t we = n->window_table + (uint64_t) id * 64;
    if (atomic_load_explicit(u32(n, we + W_STATE), memory_order_acquire) != W_ACTIVE || *(uint32_t *) (n->mem + we + W_KEY) != key
        || key == 0) {
        nupa_fail(err, errlen, "window %u with key 0x%x is not exported (closed, reclaimed, or a stale key); ask its owner for a fresh id and key",
            id, key);
        return -1;
    }
    uint32_t access = *(uint32_t *) (n->mem + we + W_ACCESS);
    uint64_t off = *(uint64_t *) (n->mem + we + W_OFFSET), len = *(uint64_t *) (n->mem + we + W_LENGTH);
    if ((access & (W_REMOTE_READ | W_REMOTE_WRITE)) == 0) {
        nupa_fail(err, errlen, "window %u grants no remote access; its owner must export it with REMOTE_READ or REMOTE_WRITE", id);
        return -1;
    }
    if (n->window_area + off + len > n->size) {
        nupa_fail(err, errlen, "window %u lies outside the fabric's %zu bytes", id, n->size);
        return -1;
    }
    w->memory = n->mem + n->window_area + off;
    w->length = len;
    w->access = access;
    w->id = id;
    w->key = key;
    w->owner = *(uint32_t *) (n->mem + we + W_OWNER);
    w->owner_gen = *(uint32_t *) (n->mem + we + W_OWNER_GEN);
    return 0;
}

int nupa_window_valid(nupa_node *n, const struct nupa_window *w) {
    uint64_t we = n->window_table + (uint64_t) w->id * 64;
    return atomic_load_explicit(u32(n, we + W_STATE), memory_order_acquire) == W_ACTIVE && *(uint32_t *) (n->mem + we + W_KEY) == w->key
        && atomic_load_explicit(u64(n, entry(n, (int) w->owner) + N_STATE), memory_order_acquire) == word(UP, w->owner_gen);
}

void *nupa_fabric_memory(nupa_node *n, size_t *size) {
    if (size != NULL) {
        *size = n->size;
    }
    return n->mem;
}
