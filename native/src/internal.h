/* libnupa's insides, shared by its files: the layout's offsets (docs/fabric-layout.md), the node, small helpers. */
#ifndef NUPA_INTERNAL_H
#define NUPA_INTERNAL_H
#define _GNU_SOURCE
#include "nupa.h"

#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Header (section 3). */
#define MAGIC 0x314241464150554EULL
#define H_VERSION 8
#define H_TOTAL_BYTES 16
#define H_MAX_NODES 24
#define H_RINGS_PER_NODE 28
#define H_RING_SLOTS 32
#define H_SLOT_BYTES 36
#define H_MAX_FRAME 40
#define H_MAX_WINDOWS 44
#define H_NODE_TABLE 56
#define H_RINGS 64
#define H_WINDOW_TABLE 72
#define H_HEARTBEAT_PERIOD 88
#define H_HEARTBEAT_TIMEOUT 96
#define H_STALL_TIMEOUT 104
#define H_NODE_BYTES 120
#define H_RING_BYTES 128
#define H_LOCK 192
#define H_EPOCH 256
#define LAYOUT_VERSION 2
#define WATCHED 2
/* Node table entry (5.1). */
#define N_STATE 0
#define N_PID 8
#define N_HOST_ID 16
#define N_JOINED_MILLIS 24
#define N_HEARTBEAT 64
#define N_ARMED 128
#define N_DOORBELL 132
#define N_IVSHMEM_PEER 136
#define N_FRAMES_SENT 192
#define N_BYTES_SENT 200
#define N_BACK_PRESSURED 208
#define N_PEER_DOWN 216
#define N_LATE_DROPS 224
#define N_FRAMES_RECEIVED 256
#define N_BYTES_RECEIVED 264
#define N_STALL_SKIPS 272
#define N_WAKEUPS 280
#define N_DISCARDED 288
#define N_CORRUPT 304
#define N_ATTR_VERSION 320
#define N_ATTRS 328
#define ATTR_BYTES 184
/* States (5.2). */
#define FREE 0
#define JOINING 1
#define UP 2
#define RECLAIMING 3
/* Rings (6.1). */
#define R_TAIL 0
#define R_HEAD 64
#define R_SLOTS 256
#define PADDING 1
#define SKIPPED 2
/* Window table entry (9.1). */
#define W_STATE 0
#define W_OWNER 4
#define W_OWNER_GEN 8
#define W_KEY 12
#define W_OFFSET 16
#define W_LENGTH 24
#define W_ACCESS 32
#define W_ACTIVE 1
#define W_REMOTE_READ 1
#define W_REMOTE_WRITE 2
#define W_WORK_RING 16
#define H_WINDOW_AREA 80
/* The neighbor directory's record (docs/link-layer.md section 2). */
#define DIR_MAGIC 0x4E42

struct nupa_node {
    uint8_t *mem;
    size_t size;
    int fd;
    int address;
    uint32_t generation;
    uint32_t max_nodes, rings_per_node, ring_slots, slot_bytes, max_frame;
    uint64_t node_table, rings, ring_bytes, window_table, heartbeat_period_ns, heartbeat_timeout_ns, stall_timeout_ns;
    uint32_t max_windows;
    uint64_t window_area;
    uint64_t host_id;
    /* What the heartbeat thread last saw of each address (section 8): the state word, the heartbeat, and when either moved. */
    uint64_t *watched_word, *watched_beat, *watched_since, *watched_tick;
    uint64_t ticks;
    uint64_t *heads;          /* the consumer's own copy of each ring's head */
    uint64_t *stall_position; /* the head whose claim a stall timer runs for, per ring (UINT64_MAX: none) */
    uint64_t *stall_since;
    uint64_t *stall_tail;
    uint64_t frames_received, bytes_received;
    pthread_t heartbeat;
    atomic_int stop;
    atomic_int evicted;
};

static inline _Atomic uint64_t *u64(nupa_node *n, uint64_t off) { return (_Atomic uint64_t *) (n->mem + off); }
static inline _Atomic uint32_t *u32(nupa_node *n, uint64_t off) { return (_Atomic uint32_t *) (n->mem + off); }
static inline uint64_t entry(const nupa_node *n, int a) { return n->node_table + (uint64_t) a * 512; }
static inline uint64_t ring(const nupa_node *n, int a, int r) { return n->rings + ((uint64_t) a * n->rings_per_node + r) * n->ring_bytes; }
static inline uint8_t *slot(nupa_node *n, uint64_t ring_off, uint64_t p) {
    return n->mem + ring_off + R_SLOTS + (p & (n->ring_slots - 1)) * (uint64_t) n->slot_bytes;
}
static inline uint64_t word(uint32_t state, uint32_t gen) { return ((uint64_t) gen << 32) | state; }

static inline void futex_wake(_Atomic uint32_t *word_, int n) { syscall(SYS_futex, word_, FUTEX_WAKE, n, NULL, NULL, 0); }

/* Rings the doorbell of the node whose entry is at peer if it sleeps armed (section 7): one wake per sleep. */
static inline void wake(nupa_node *n, uint64_t peer) {
    _Atomic uint32_t *armed = u32(n, peer + N_ARMED);
    uint32_t one = 1;
    if (atomic_load(armed) != 0 && atomic_compare_exchange_strong(armed, &one, 0)) {
        atomic_fetch_add(u32(n, peer + N_DOORBELL), 1);
        futex_wake(u32(n, peer + N_DOORBELL), 1);
    }
}

static inline uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000ULL + (uint64_t) t.tv_nsec;
}

/* Puts a one-line reason into err (len bytes; err may be NULL). */
void nupa_fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
