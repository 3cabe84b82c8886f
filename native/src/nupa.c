/* libnupa: see include/nupa.h. Section numbers are docs/fabric-layout.md's unless they say otherwise. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t) (v >> 8); p[1] = (uint8_t) v; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t) ((p[0] << 8) | p[1]); }
static uint32_t rd32(const uint8_t *p) { return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16) | ((uint32_t) p[2] << 8) | p[3]; }

void nupa_fail(char *err, size_t len, const char *fmt, ...) {
    if (err != NULL && len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
    }
}


/* Host id (5.4): FNV-1a of the boot id, 0 when unknown. */
static uint64_t host_id(void) {
    char buf[128];
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f == NULL) {
        return 0;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r')) {
        n--;
    }
    size_t s = 0;
    while (s < n && (buf[s] == ' ' || buf[s] == '\t')) {
        s++;
    }
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = s; i < n; i++) {
        h = (h ^ (uint8_t) buf[i]) * 0x100000001b3ULL;
    }
    return h == 0 ? 1 : h;
}

/* Draining a ring (5.3.3): returns the positions dropped. */
static uint64_t drain(nupa_node *n, uint64_t r) {
    uint64_t t = atomic_load_explicit(u64(n, r + R_TAIL), memory_order_acquire);
    uint64_t h = atomic_load_explicit(u64(n, r + R_HEAD), memory_order_acquire);
    atomic_store_explicit(u64(n, r + R_HEAD), t, memory_order_release);
    return t > h ? t - h : 0;
}

/* Provably dead / alive (5.5): same host, a pid, and whether that process exists. */
static int same_host_pid(nupa_node *n, uint64_t e, pid_t *pid) {
    uint64_t host = atomic_load_explicit(u64(n, e + N_HOST_ID), memory_order_acquire);
    *pid = (pid_t) atomic_load_explicit(u64(n, e + N_PID), memory_order_acquire);
    return n->host_id != 0 && host == n->host_id && *pid > 0;
}
static int provably_dead(nupa_node *n, uint64_t e) {
    pid_t pid;
    return same_host_pid(n, e, &pid) && kill(pid, 0) < 0 && errno == ESRCH;
}
static int provably_alive(nupa_node *n, uint64_t e) {
    pid_t pid;
    return same_host_pid(n, e, &pid) && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Reclaiming address a from the word w read (5.3.2); nothing unless the CAS to RECLAIMING is won. */
static void reclaim(nupa_node *n, int a, uint64_t w) {
    uint64_t e = entry(n, a);
    uint32_t g = (uint32_t) (w >> 32);
    uint64_t reclaiming = word(RECLAIMING, g);
    if (!atomic_compare_exchange_strong(u64(n, e + N_STATE), &w, reclaiming)) {
        return;
    }
    uint64_t dropped = 0;
    for (uint32_t r = 0; r < n->rings_per_node; r++) {
        dropped += drain(n, ring(n, a, (int) r));
    }
    atomic_fetch_add(u64(n, e + N_DISCARDED), dropped);
    for (uint32_t i = 0; i < n->max_windows; i++) {
        uint64_t we = n->window_table + (uint64_t) i * 64;
        if (atomic_load_explicit(u32(n, we + W_STATE), memory_order_acquire) == W_ACTIVE
            && *(uint32_t *) (n->mem + we + W_OWNER) == (uint32_t) a && *(uint32_t *) (n->mem + we + W_OWNER_GEN) == g) {
            *(uint32_t *) (n->mem + we + W_KEY) = 0;
            atomic_store_explicit(u32(n, we + W_STATE), 0, memory_order_release);
        }
    }
    uint64_t held = ((uint64_t) g << 32) | (uint64_t) (a + 1);
    atomic_compare_exchange_strong(u64(n, H_LOCK), &held, 0);
    atomic_store_explicit(u64(n, e + N_ATTR_VERSION), 0, memory_order_release);
    atomic_store_explicit(u32(n, e + N_ARMED), 0, memory_order_release);
    atomic_compare_exchange_strong(u64(n, e + N_STATE), &reclaiming, word(FREE, g));
    atomic_fetch_add(u64(n, H_EPOCH), 1);
}

/*
 * Section 8 step 3: the successors of this address in address order (wrapping), FREE ones passed over, up to and
 * including the WATCHED-th one seen live on two ticks in a row; one whose heartbeat stands still is not live, so a
 * run of dead nodes is watched whole by the live node before it. A dead holder is reclaimed.
 */
static void watch(nupa_node *n) {
    uint64_t now = now_ns();
    int live = 0;
    n->ticks++;
    for (int i = 1; i < (int) n->max_nodes && live < WATCHED; i++) {
        int a = (n->address + i) % (int) n->max_nodes;
        uint64_t e = entry(n, a);
        uint64_t w = atomic_load(u64(n, e + N_STATE));
        if ((uint32_t) w == FREE) {
            continue;
        }
        int known = n->watched_tick[a] + 1 == n->ticks;
        n->watched_tick[a] = n->ticks;
        uint64_t b = atomic_load_explicit(u64(n, e + N_HEARTBEAT), memory_order_acquire);
        if (w != n->watched_word[a] || b != n->watched_beat[a]) {
            n->watched_word[a] = w;
            n->watched_beat[a] = b;
            n->watched_since[a] = now;
            live += known;
            continue;
        }
        uint64_t still = now - n->watched_since[a];
        if (still <= 2 * n->heartbeat_period_ns) {
            live += known;
            continue;
        }
        if (((uint32_t) w != RECLAIMING && provably_dead(n, e)) || (still > n->heartbeat_timeout_ns && !provably_alive(n, e))) {
            reclaim(n, a, w);
        }
    }
}

static void *heartbeat(void *arg) {
    nupa_node *n = arg;
    struct timespec period = {(time_t) (n->heartbeat_period_ns / 1000000000ULL), (long) (n->heartbeat_period_ns % 1000000000ULL)};
    uint64_t self = entry(n, n->address);
    while (!atomic_load(&n->stop)) {
        /* Section 8: the only writer of its heartbeat; then, evicted once the word is no longer UP(generation). */
        atomic_fetch_add(u64(n, self + N_HEARTBEAT), 1);
        if (atomic_load(u64(n, self + N_STATE)) != word(UP, n->generation)) {
            atomic_store(&n->evicted, 1);
            break;
        }
        watch(n);
        nanosleep(&period, NULL);
    }
    return NULL;
}

static int try_join(nupa_node *n, int a, char *err, size_t errlen) {
    _Atomic uint64_t *state = u64(n, entry(n, a) + N_STATE);
    for (;;) {
        uint64_t w = atomic_load(state);
        if ((uint32_t) w != FREE) {
            nupa_fail(err, errlen, "address %d of the fabric is held (state %u, generation %u); pick a free one or -1", a, (uint32_t) w,
                 (uint32_t) (w >> 32));
            return 0;
        }
        uint32_t g = (uint32_t) (w >> 32) + 1;
        if (atomic_compare_exchange_strong(state, &w, word(JOINING, g))) {
            n->generation = g;
            return 1;
        }
    }
}

nupa_node *nupa_join(const char *path, int address, char *err, size_t errlen) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        nupa_fail(err, errlen, "cannot open fabric %s: %s (create it with: nupa fabric create --fabric %s)", path, strerror(errno), path);
        return NULL;
    }
    struct stat st;
    /* As the Java node: a file any user may write, or another user's, could let them read and forge frames. */
    const char *trust = getenv("NUPA_TRUST_FABRIC");
    if (fstat(fd, &st) == 0 && !(trust && strcmp(trust, "1") == 0)
            && ((st.st_mode & S_IWOTH) || st.st_uid != geteuid())) {
        nupa_fail(err, errlen, "fabric %s %s; set NUPA_TRUST_FABRIC=1 to join it anyway", path,
                  (st.st_mode & S_IWOTH) ? "may be written by any user" : "belongs to another user");
        close(fd);
        return NULL;
    }
    if (fstat(fd, &st) < 0 || st.st_size < 4096) {
        nupa_fail(err, errlen, "%s is too small to be a NUPA fabric", path);
        close(fd);
        return NULL;
    }
    uint8_t *mem = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) {
        nupa_fail(err, errlen, "cannot map %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    nupa_node *n = calloc(1, sizeof *n);
    n->mem = mem;
    n->size = (size_t) st.st_size;
    n->fd = fd;
    if (atomic_load_explicit(u64(n, 0), memory_order_acquire) != MAGIC || *(uint32_t *) (mem + H_VERSION) != LAYOUT_VERSION
        || *(uint64_t *) (mem + H_NODE_BYTES) != 512 || *(uint64_t *) (mem + H_TOTAL_BYTES) > n->size) {
        nupa_fail(err, errlen, "%s is not a NUPA fabric of layout version %d (magic, version, entry size or size differ)", path, LAYOUT_VERSION);
        goto out;
    }
    n->max_nodes = *(uint32_t *) (mem + H_MAX_NODES);
    n->rings_per_node = *(uint32_t *) (mem + H_RINGS_PER_NODE);
    n->ring_slots = *(uint32_t *) (mem + H_RING_SLOTS);
    n->slot_bytes = *(uint32_t *) (mem + H_SLOT_BYTES);
    n->max_frame = *(uint32_t *) (mem + H_MAX_FRAME);
    n->node_table = *(uint64_t *) (mem + H_NODE_TABLE);
    n->rings = *(uint64_t *) (mem + H_RINGS);
    n->ring_bytes = *(uint64_t *) (mem + H_RING_BYTES);
    n->heartbeat_period_ns = *(uint64_t *) (mem + H_HEARTBEAT_PERIOD);
    n->heartbeat_timeout_ns = *(uint64_t *) (mem + H_HEARTBEAT_TIMEOUT);
    n->window_table = *(uint64_t *) (mem + H_WINDOW_TABLE);
    n->max_windows = *(uint32_t *) (mem + H_MAX_WINDOWS);
    n->window_area = *(uint64_t *) (mem + H_WINDOW_AREA);
    n->stall_timeout_ns = *(uint64_t *) (mem + H_STALL_TIMEOUT);
    if (address < -1 || address >= (int) n->max_nodes) {
        nupa_fail(err, errlen, "address %d is outside 0..%u of this fabric", address, n->max_nodes - 1);
        goto out;
    }
    int joined = 0;
    if (address >= 0) {
        joined = try_join(n, address, err, errlen);
    } else {
        for (int a = 0; a < (int) n->max_nodes && !joined; a++) {
            joined = try_join(n, a, NULL, 0);
            address = a;
        }
        if (!joined) {
            nupa_fail(err, errlen, "every address of the fabric is held");
        }
    }
    if (!joined) {
        goto out;
    }
    n->address = address;
    /* Holding JOINING(g): the entry (5.3.1 step 4). */
    uint64_t self = entry(n, address);
    *(uint64_t *) (mem + self + N_PID) = (uint64_t) getpid();
    n->host_id = host_id();
    *(uint64_t *) (mem + self + N_HOST_ID) = n->host_id;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    *(uint64_t *) (mem + self + N_JOINED_MILLIS) = (uint64_t) wall.tv_sec * 1000 + (uint64_t) wall.tv_nsec / 1000000;
    memset(mem + self + N_FRAMES_SENT, 0, N_ATTRS - N_FRAMES_SENT);
    atomic_store_explicit(u32(n, self + N_ARMED), 0, memory_order_release);
    atomic_store_explicit(u32(n, self + N_IVSHMEM_PEER), 0, memory_order_release); /* no interrupts here */
    n->heads = calloc(n->rings_per_node, sizeof(uint64_t));
    n->stall_position = calloc(n->rings_per_node, sizeof(uint64_t));
    n->stall_since = calloc(n->rings_per_node, sizeof(uint64_t));
    n->stall_tail = calloc(n->rings_per_node, sizeof(uint64_t));
    n->watched_word = calloc(n->max_nodes, sizeof(uint64_t));
    n->watched_beat = calloc(n->max_nodes, sizeof(uint64_t));
    n->watched_since = calloc(n->max_nodes, sizeof(uint64_t));
    n->watched_tick = calloc(n->max_nodes, sizeof(uint64_t));
    uint64_t discarded = 0;
    for (uint32_t r = 0; r < n->rings_per_node; r++) {
        discarded += drain(n, ring(n, address, (int) r));
        n->heads[r] = atomic_load_explicit(u64(n, ring(n, address, (int) r) + R_HEAD), memory_order_acquire);
        if (n->heads[r] > (1ULL << 61)) { /* no ring gets that far: foreign bytes; start over (6.4) */
            n->heads[r] = 0;
            atomic_store_explicit(u64(n, ring(n, address, (int) r) + R_HEAD), 0, memory_order_release);
        }
        n->stall_position[r] = UINT64_MAX;
    }
    *(uint64_t *) (mem + self + N_DISCARDED) = discarded;
    atomic_fetch_add(u64(n, self + N_HEARTBEAT), 1);
    atomic_store_explicit(u64(n, self + N_STATE), word(UP, n->generation), memory_order_release);
    atomic_fetch_add(u64(n, H_EPOCH), 1); /* section 8: a state word changed */
    if (pthread_create(&n->heartbeat, NULL, heartbeat, n) != 0) {
        nupa_fail(err, errlen, "cannot start the heartbeat thread");
        atomic_store(&n->stop, 1);
        nupa_leave(n);
        return NULL;
    }
    return n;
out:
    munmap(mem, n->size);
    close(fd);
    free(n);
    return NULL;
}

void nupa_leave(nupa_node *n) {
    if (n == NULL) {
        return;
    }
    if (!atomic_exchange(&n->stop, 1)) {
        pthread_join(n->heartbeat, NULL);
    }
    uint64_t self = entry(n, n->address);
    if (!atomic_load(&n->evicted)) {
        /* Wake our own sleepers first: once FREE, the doorbell may belong to the next holder (5.3.2). */
        atomic_fetch_add(u32(n, self + N_DOORBELL), 1);
        futex_wake(u32(n, self + N_DOORBELL), 0x7fffffff);
        uint64_t up = word(UP, n->generation);
        uint64_t reclaiming = word(RECLAIMING, n->generation);
        if (atomic_compare_exchange_strong(u64(n, self + N_STATE), &up, reclaiming)) {
            uint64_t dropped = 0;
            for (uint32_t r = 0; r < n->rings_per_node; r++) {
                dropped += drain(n, ring(n, n->address, (int) r));
            }
            atomic_fetch_add(u64(n, self + N_DISCARDED), dropped);
            /* This node exports no windows; a lock it held (it takes none) would be released here. */
            uint64_t mine = ((uint64_t) n->generation << 32) | (uint64_t) (n->address + 1);
            atomic_compare_exchange_strong(u64(n, H_LOCK), &mine, 0);
            atomic_store_explicit(u64(n, self + N_ATTR_VERSION), 0, memory_order_release);
            atomic_store_explicit(u32(n, self + N_ARMED), 0, memory_order_release);
            atomic_compare_exchange_strong(u64(n, self + N_STATE), &reclaiming, word(FREE, n->generation));
            atomic_fetch_add(u64(n, H_EPOCH), 1);
        }
    }
    munmap(n->mem, n->size);
    close(n->fd);
    free(n->heads);
    free(n->stall_position);
    free(n->stall_since);
    free(n->watched_word);
    free(n->watched_beat);
    free(n->watched_since);
    free(n->watched_tick);
    free(n->stall_tail);
    free(n);
}

int nupa_address(const nupa_node *n) { return n->address; }
uint32_t nupa_generation(const nupa_node *n) { return n->generation; }
int nupa_max_nodes(const nupa_node *n) { return (int) n->max_nodes; }
uint32_t nupa_max_frame(const nupa_node *n) { return n->max_frame; }
int nupa_is_up(const nupa_node *n) { return !atomic_load(&((nupa_node *) n)->evicted); }

/* Producer (6.3), to ring 0 of dest. */
int nupa_send(nupa_node *n, int dest, uint16_t protocol, const void *payload, uint32_t length) {
    if (dest < 0 || dest >= (int) n->max_nodes) {
        return NUPA_BAD_ADDRESS;
    }
    if (atomic_load(&n->evicted)) {
        return NUPA_EVICTED;
    }
    uint32_t total = NUPA_LINK_HEADER + length;
    if (length > 0xFFFF || total > n->max_frame) {
        return NUPA_TOO_BIG;
    }
    uint64_t self = entry(n, n->address);
    uint64_t peer = entry(n, dest);
    if ((uint32_t) atomic_load(u64(n, peer + N_STATE)) != UP) {
        atomic_fetch_add(u64(n, self + N_PEER_DOWN), 1);
        return NUPA_PEER_DOWN;
    }
    uint64_t r = ring(n, dest, 0);
    uint64_t p;
    for (;;) {
        p = atomic_load(u64(n, r + R_TAIL));
        if (p - atomic_load_explicit(u64(n, r + R_HEAD), memory_order_acquire) >= n->ring_slots) {
            atomic_fetch_add(u64(n, self + N_BACK_PRESSURED), 1);
            return NUPA_BACK_PRESSURED;
        }
        if (atomic_compare_exchange_strong(u64(n, r + R_TAIL), &p, p + 1)) {
            break;
        }
    }
    uint8_t *s = slot(n, r, p);
    uint8_t *f = s + 16;
    be16(f, (uint16_t) dest);
    be16(f + 2, (uint16_t) n->address);
    be16(f + 4, protocol);
    be16(f + 6, (uint16_t) length);
    memcpy(f + NUPA_LINK_HEADER, payload, length);
    _Atomic uint64_t *ctrl = (_Atomic uint64_t *) s;
    uint64_t before = atomic_load_explicit(ctrl, memory_order_acquire);
    int ok = 0;
    if ((before >> 2) < p + 1) { /* else the consumer skipped p: leave the slot header alone */
        *(uint32_t *) (s + 8) = total;
        *(uint16_t *) (s + 12) = (uint16_t) n->address;
        *(uint16_t *) (s + 14) = (uint16_t) n->generation;
        ok = atomic_compare_exchange_strong(ctrl, &before, (p + 1) << 2);
    }
    wake(n, peer); /* step 6 */
    if (!ok) {
        atomic_fetch_add(u64(n, self + N_LATE_DROPS), 1);
        return NUPA_LATE;
    }
    atomic_fetch_add(u64(n, self + N_FRAMES_SENT), 1);
    atomic_fetch_add(u64(n, self + N_BYTES_SENT), total);
    return NUPA_OK;
}

/* Consumer (6.4), with the link layer's checks (docs/link-layer.md section 1). */
int nupa_poll(nupa_node *n, nupa_frame_fn fn, void *ctx, int limit) {
    if (atomic_load(&n->evicted)) {
        return 0;
    }
    uint64_t self = entry(n, n->address);
    int handled = 0;
    uint64_t bytes = 0;
    for (uint32_t ri = 0; ri < n->rings_per_node && handled < limit; ri++) {
        uint64_t r = ring(n, n->address, (int) ri);
        uint64_t h = n->heads[ri];
        uint64_t start = h;
        int skips = 0;
        while (handled < limit) {
            uint8_t *s = slot(n, r, h);
            uint64_t c = atomic_load_explicit((_Atomic uint64_t *) s, memory_order_acquire);
            if ((c >> 2) > h + 1 && skips < (int) n->ring_slots
                && atomic_compare_exchange_strong((_Atomic uint64_t *) s, &c, ((h + 1) << 2) | SKIPPED)) {
                atomic_fetch_add(u64(n, self + N_CORRUPT), 1); /* a lap no producer wrote yet (6.4 step 1.2) */
                skips++;
                h++;
                continue;
            }
            if ((c >> 2) != h + 1) {
                break;
            }
            h++;
            if (c & 3) {
                continue; /* PADDING or SKIPPED */
            }
            int32_t len = *(int32_t *) (s + 8);
            if (len < 0 || (uint32_t) len > n->max_frame) {
                atomic_fetch_add(u64(n, self + N_CORRUPT), 1);
                continue;
            }
            const uint8_t *f = s + 16;
            if (len < NUPA_LINK_HEADER || rd16(f) != (uint16_t) n->address || rd16(f + 2) != *(uint16_t *) (s + 12)
                || NUPA_LINK_HEADER + (uint32_t) rd16(f + 6) > (uint32_t) len) {
                continue; /* truncated, another destination, a forged source, or a payload past the frame: dropped */
            }
            fn(ctx, rd16(f + 2), rd16(f + 4), f + NUPA_LINK_HEADER, rd16(f + 6));
            handled++;
            bytes += (uint64_t) len;
        }
        if (h != start) {
            atomic_store_explicit(u64(n, r + R_HEAD), h, memory_order_release);
            n->heads[ri] = h;
            n->stall_position[ri] = UINT64_MAX;
        }
    }
    if (handled > 0) {
        n->frames_received += (uint64_t) handled;
        n->bytes_received += bytes;
        atomic_store_explicit(u64(n, self + N_FRAMES_RECEIVED), n->frames_received, memory_order_relaxed);
        atomic_store_explicit(u64(n, self + N_BYTES_RECEIVED), n->bytes_received, memory_order_relaxed);
    }
    return handled;
}

static int any_ready(nupa_node *n) {
    for (uint32_t ri = 0; ri < n->rings_per_node; ri++) {
        uint64_t h = n->heads[ri];
        uint64_t c = atomic_load((_Atomic uint64_t *) slot(n, ring(n, n->address, (int) ri), h));
        if ((c >> 2) == h + 1) {
            return 1;
        }
    }
    return 0;
}

/*
 * Stall check and repair (6.5): the head put back, an impossible tail pulled back, laps no producer wrote repaired
 * while the ring is empty, and after the stall timeout every claim older than it skipped. Returns 1 while a claim is
 * pending at a head, so the caller sleeps less.
 */
static int check_stalls(nupa_node *n) {
    int pending = 0;
    uint64_t now = now_ns();
    _Atomic uint64_t *corrupt = u64(n, entry(n, n->address) + N_CORRUPT);
    for (uint32_t ri = 0; ri < n->rings_per_node; ri++) {
        uint64_t r = ring(n, n->address, (int) ri);
        uint64_t h = n->heads[ri];
        if (atomic_load_explicit(u64(n, r + R_HEAD), memory_order_acquire) != h) {
            atomic_store_explicit(u64(n, r + R_HEAD), h, memory_order_release);
            atomic_fetch_add(corrupt, 1);
        }
        uint64_t t = atomic_load_explicit(u64(n, r + R_TAIL), memory_order_acquire);
        if ((int64_t) (t - h) < 0 || t - h > n->ring_slots) {
            if (atomic_compare_exchange_strong(u64(n, r + R_TAIL), &t, h)) {
                atomic_fetch_add(corrupt, 1);
            }
            n->stall_position[ri] = UINT64_MAX;
            continue;
        }
        if (t == h) {
            n->stall_position[ri] = UINT64_MAX;
            for (uint64_t q = h; q - h < n->ring_slots; q++) {
                _Atomic uint64_t *ctrl = (_Atomic uint64_t *) slot(n, r, q);
                uint64_t c = atomic_load_explicit(ctrl, memory_order_acquire);
                uint64_t lap = q + 1 > n->ring_slots ? q + 1 - n->ring_slots : 0;
                if ((c >> 2) > q + 1 && atomic_compare_exchange_strong(ctrl, &c, lap << 2)) {
                    atomic_fetch_add(corrupt, 1);
                }
            }
            continue;
        }
        _Atomic uint64_t *ctrl = (_Atomic uint64_t *) slot(n, r, h);
        uint64_t c = atomic_load_explicit(ctrl, memory_order_acquire);
        if ((c >> 2) == h + 1) {
            continue;
        }
        pending = 1;
        if (n->stall_position[ri] != h) {
            n->stall_position[ri] = h;
            n->stall_tail[ri] = t;
            n->stall_since[ri] = now;
        } else if (now - n->stall_since[ri] >= n->stall_timeout_ns) {
            for (uint64_t p = h; p < n->stall_tail[ri]; p++) {
                _Atomic uint64_t *pc = (_Atomic uint64_t *) slot(n, r, p);
                uint64_t v = atomic_load_explicit(pc, memory_order_acquire);
                if ((v >> 2) != p + 1 && atomic_compare_exchange_strong(pc, &v, ((p + 1) << 2) | SKIPPED)) {
                    atomic_fetch_add(u64(n, entry(n, n->address) + N_STALL_SKIPS), 1);
                }
            }
            n->stall_position[ri] = UINT64_MAX;
        }
    }
    return pending;
}

/* Sleep (section 7). */
int nupa_wait(nupa_node *n, long timeout_ns) {
    if (atomic_load(&n->evicted)) {
        return 0;
    }
    uint64_t self = entry(n, n->address);
    _Atomic uint32_t *bell = u32(n, self + N_DOORBELL);
    _Atomic uint32_t *armed = u32(n, self + N_ARMED);
    uint32_t seen = atomic_load(bell);
    atomic_store(armed, 1);
    if (any_ready(n)) {
        atomic_store(armed, 0);
        return 1;
    }
    if (check_stalls(n) && (uint64_t) timeout_ns > n->stall_timeout_ns / 4 + 1) {
        timeout_ns = (long) (n->stall_timeout_ns / 4 + 1);
    }
    struct timespec t = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    syscall(SYS_futex, bell, FUTEX_WAIT, seen, &t, NULL, 0);
    atomic_store(armed, 0);
    int ready = any_ready(n);
    if (ready) {
        atomic_store_explicit(u64(n, self + N_WAKEUPS), atomic_load_explicit(u64(n, self + N_WAKEUPS), memory_order_relaxed) + 1,
                              memory_order_relaxed);
    }
    return ready;
}

/* Attributes (5.6): the seqlock writer, then the directory's record. */
int nupa_publish_ipv4(nupa_node *n, uint32_t address, int prefix_length) {
    if (atomic_load(&n->evicted)) {
        return -1;
    }
    uint64_t self = entry(n, n->address);
    _Atomic uint64_t *version = u64(n, self + N_ATTR_VERSION);
    uint64_t v = atomic_load_explicit(version, memory_order_acquire);
    atomic_store(version, v + 1);
    atomic_thread_fence(memory_order_release);
    uint8_t *a = n->mem + self + N_ATTRS;
    memset(a, 0, ATTR_BYTES);
    be16(a, DIR_MAGIC);
    a[2] = 1; /* version */
    a[3] = 1; /* one address */
    a[4] = (uint8_t) (address >> 24);
    a[5] = (uint8_t) (address >> 16);
    a[6] = (uint8_t) (address >> 8);
    a[7] = (uint8_t) address;
    a[8] = (uint8_t) prefix_length;
    atomic_store_explicit(version, v + 2, memory_order_release);
    return 0;
}

int nupa_lookup_ipv4(nupa_node *n, uint32_t address) {
    uint8_t rec[ATTR_BYTES];
    for (int a = 0; a < (int) n->max_nodes; a++) {
        uint64_t e = entry(n, a);
        if ((uint32_t) atomic_load(u64(n, e + N_STATE)) != UP) {
            continue;
        }
        _Atomic uint64_t *version = u64(n, e + N_ATTR_VERSION);
        uint64_t start = now_ns();
        for (;;) { /* the seqlock reader: an odd version for over 100 us means no attributes for now */
            uint64_t v1 = atomic_load_explicit(version, memory_order_acquire);
            if (v1 == 0) {
                rec[0] = 0;
                break;
            }
            if (v1 & 1) {
                if (now_ns() - start > 100000) {
                    rec[0] = 0;
                    break;
                }
                continue;
            }
            memcpy(rec, n->mem + e + N_ATTRS, ATTR_BYTES);
            atomic_thread_fence(memory_order_acquire);
            if (atomic_load_explicit(version, memory_order_acquire) == v1) {
                break;
            }
        }
        if (rd16(rec) != DIR_MAGIC || rec[2] != 1) {
            continue;
        }
        for (int i = 0; i < rec[3] && 4 + 8 * i + 8 <= ATTR_BYTES; i++) {
            if (rd32(rec + 4 + 8 * i) == address) {
                return a;
            }
        }
    }
    return -1;
}
