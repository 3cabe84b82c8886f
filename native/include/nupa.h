/*
 * libnupa: a node of a NUPA fabric in C, following docs/fabric-layout.md (the shared memory: header,
 * node table, rings, doorbells, liveness) and docs/link-layer.md (link frames, the neighbor directory).
 *
 * A node maps the fabric file, joins an address (section 5.3.1), heartbeats on a thread of its own, which
 * also watches the other addresses and reclaims a dead holder's (section 8), sends link frames into peers' rings (6.3) and takes frames from its own (6.4), sleeping
 * on its doorbell when idle (section 7). One thread polls and waits; any thread may send.
 */
#ifndef NUPA_H
#define NUPA_H

#include <stddef.h>
#include <stdint.h>

#include "nupa_wqe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Link protocols (EtherTypes, docs/link-layer.md section 1). */
#define NUPA_PROTO_IPV4 0x0800
#define NUPA_PROTO_RDMA 0x8915
#define NUPA_LINK_HEADER 8

/* nupa_send's results. */
#define NUPA_OK 0
#define NUPA_BACK_PRESSURED -1 /* the peer's ring is full: try again later */
#define NUPA_PEER_DOWN -2      /* no node is UP at that address */
#define NUPA_LATE -3           /* the consumer skipped the claim as stalled: the frame is lost */
#define NUPA_TOO_BIG -4        /* the frame does not fit the fabric's max_frame */
#define NUPA_BAD_ADDRESS -5    /* the address is outside the fabric */
#define NUPA_EVICTED -6        /* this node no longer holds its address */

typedef struct nupa_node nupa_node;

/* A frame taken from a ring: the link header's source and protocol and the payload, valid during the call only. */
typedef void (*nupa_frame_fn)(void *ctx, int source, uint16_t protocol, const uint8_t *payload, uint32_t length);

/*
 * Maps the fabric file at path and joins address (or, with -1, the lowest FREE one). Returns NULL with a
 * one-line reason in err (errlen bytes) if the file is not a fabric, the address is held, or the system
 * refuses a step. A file any user may write, or another user's, is refused unless NUPA_TRUST_FABRIC=1.
 */
nupa_node *nupa_join(const char *path, int address, char *err, size_t errlen);

/* Leaves: stops the heartbeat, wakes the node's own sleeper, reclaims the address (5.3.2), unmaps. */
void nupa_leave(nupa_node *node);

int nupa_address(const nupa_node *node);
uint32_t nupa_generation(const nupa_node *node);
int nupa_max_nodes(const nupa_node *node);
uint32_t nupa_max_frame(const nupa_node *node);

/* Sends [link header][payload] to ring 0 of node dest; NUPA_OK or one of the results above. */
int nupa_send(nupa_node *node, int dest, uint16_t protocol, const void *payload, uint32_t length);

/*
 * Hands at most limit frames from the node's rings to fn; returns how many. Frames whose link header is
 * short, names another destination or another source than the slot, or overruns the slot are dropped.
 */
int nupa_poll(nupa_node *node, nupa_frame_fn fn, void *ctx, int limit);

/* Sleeps on the doorbell until a frame may be ready or timeout_ns passes; returns 1 if frames are ready. */
int nupa_wait(nupa_node *node, long timeout_ns);

/*
 * Publishes this node's IPv4 address (host order) and prefix length in its entry's attributes, as the neighbor
 * directory reads them (docs/link-layer.md section 2). Returns 0, or -1 if the node was evicted.
 */
int nupa_publish_ipv4(nupa_node *node, uint32_t address, int prefix_length);

/* The fabric address of the UP node that published IPv4 address (host order), or -1. */
int nupa_lookup_ipv4(nupa_node *node, uint32_t address);

/* Whether the node still holds its address (0 once another node judged it dead and reclaimed it). */
int nupa_is_up(const nupa_node *node);

/* A window another node exported (docs/fabric-layout.md section 9), as nupa_window_open found it. */
struct nupa_window {
    uint8_t *memory; /* length bytes in the fabric mapping; only read it unless access has REMOTE_WRITE (2) */
    uint64_t length;
    uint32_t access; /* 1 REMOTE_READ, 2 REMOTE_WRITE, 4 DIRECTORY, 8 COUNTERS, 16 WORK_RING */
    uint32_t id, key, owner, owner_gen;
};

/*
 * Opens window id under key (section 9.4): it must be ACTIVE with that key and grant remote access. Returns 0, or -1
 * with a one-line reason in err (which may be NULL).
 */
int nupa_window_open(nupa_node *node, uint32_t id, uint32_t key, struct nupa_window *window, char *err, size_t errlen);

/* Whether the window is still exported under the same key by the same incarnation of a node that is UP (9.4). */
int nupa_window_valid(nupa_node *node, const struct nupa_window *window);

/*
 * Opens work ring index of the proxy at address owner (docs/work-rings.md): finds its WORK_RING window (section 9.4)
 * and views it in *ring. Returns 0, or -1 with a one-line reason in err.
 */
int nupa_ring_open(nupa_node *node, int owner, int index, struct nupa_wr *ring, char *err, size_t errlen);

/*
 * Whether the proxy still serves the ring: its window is still exported under the same key by the same incarnation
 * of a node that is UP (section 9.4), and the ring is not CLOSED. A poster that finds no completion checks this, so
 * that a proxy's death ends its wait instead of hanging it.
 */
int nupa_ring_served(nupa_node *node, const struct nupa_wr *ring);

/*
 * After posting: wakes the proxy's node if it sleeps (its doorbell, section 7 of fabric-layout.md), so that an idle
 * proxy takes the WQEs now rather than at its next poll. Cheap when it is awake: one load. A post that races with the
 * proxy going to sleep waits at most the proxy's poll interval (--proxy-poll-us). Not for GPUs, which cannot wake a
 * sleeping thread; their proxies poll.
 */
void nupa_ring_doorbell(nupa_node *node, const struct nupa_wr *ring);

/*
 * Rings the proxy's doorbell (nupa_ring_doorbell), then waits up to timeout_ns for the ring's next completion: 1 with
 * it in *c, 0 once the proxy no longer serves the ring (nupa_ring_served, looked at every 1,024 empty polls), -1 when
 * the time passed. The ring's one consumer only.
 */
int nupa_ring_wait(nupa_node *node, struct nupa_wr *ring, struct nupa_cqe *c, long timeout_ns);

/* A completion status's libibverbs name, as ibv_wc_status_str gives it. */
const char *nupa_wc_status_str(int status);

/* The mapped fabric: for registering it with a GPU (cudaHostRegister) so that kernels post into rings. */
void *nupa_fabric_memory(nupa_node *node, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
