/*
 * mw-check HOST PORT: memory windows (type 2, IBA 10.6.7) and SEND_WITH_INVALIDATE between Linux's verbs (the
 * guest's Soft-RoCE) and a peer that serves rdma_cm on HOST:PORT (tests' MwPeerMain on a fabric node). Two
 * connections, each ending with a WRITE the target must refuse (a remote access error puts the QP in ERROR):
 *
 *   1. the peer's window: the peer binds a window and SENDs {be64 addr, be32 rkey, be32 len}; we WRITE pattern 1
 *      through it and SEND_WITH_INV its rkey; the peer binds it again (a new key) and SENDs that; we WRITE pattern 2,
 *      SEND "written"; the peer invalidates it locally (LOCAL_INV) and SENDs "invalidated"; our WRITE through it
 *      must then complete with IBV_WC_REM_ACCESS_ERR.
 *   2. our window: we bind a window on our region and SEND where it is; the peer WRITEs pattern 3 and
 *      SEND_WITH_INVs its rkey: our receive must say IBV_WC_WITH_INV with that rkey, and the bytes be there; we SEND
 *      "checked"; the peer's next WRITE through it must fail on its side, and ours stays as it was once the peer
 *      disconnects.
 *
 * Prints "mw-check: ..." per step and "mw-check: all checks passed" at the end; exits 1 with a line on the first
 * failure. Pattern k: byte i is (i * 7 + k) & 0xff. Every wait is bounded.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEN 4096
#define MSG 64
#define WAIT_MS 60000
#define KERNEL_WC_WITH_INVALIDATE (1 << 2) /* include/rdma/ib_verbs.h, IB_WC_WITH_INVALIDATE */

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("mw-check: FAILED: ", stdout);
    vprintf(fmt, ap);
    fputs("\n", stdout);
    va_end(ap);
    fflush(stdout);
    exit(1);
}

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void fill(unsigned char *p, int k) {
    for (int i = 0; i < LEN; i++) p[i] = (unsigned char) (i * 7 + k);
}

static int matches(const unsigned char *p, int k) {
    for (int i = 0; i < LEN; i++) {
        if (p[i] != (unsigned char) (i * 7 + k)) return 0;
    }
    return 1;
}

struct conn {
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_mr *mr; /* recv [0, MSG), send [MSG, 2 MSG), data [4096, 8192) */
    unsigned char *buf;
};

static struct rdma_cm_event *expect_event(struct conn *c, enum rdma_cm_event_type type) {
    struct pollfd p = {.fd = c->ch->fd, .events = POLLIN};
    if (poll(&p, 1, WAIT_MS) != 1) die("no rdma_cm event within %d ms (waiting for %s)", WAIT_MS, rdma_event_str(type));
    struct rdma_cm_event *e;
    if (rdma_get_cm_event(c->ch, &e)) die("rdma_get_cm_event: %m");
    if (e->event != type) die("rdma_cm event %s (status %d), expected %s", rdma_event_str(e->event), e->status, rdma_event_str(type));
    return e;
}

static void wait_wc(struct conn *c, struct ibv_wc *wc) {
    long long end = now_ms() + WAIT_MS;
    int n;
    while ((n = ibv_poll_cq(c->cq, 1, wc)) == 0) {
        if (now_ms() > end) die("no completion within %d ms", WAIT_MS);
    }
    if (n < 0) die("ibv_poll_cq failed");
}

/* The next completion: it must be wr_id's with the given status. */
static void expect_wc(struct conn *c, uint64_t wr_id, enum ibv_wc_status status, struct ibv_wc *wc) {
    wait_wc(c, wc);
    if (wc->wr_id != wr_id || wc->status != status) {
        die("completion of wr %llu is %s, expected wr %llu with %s", (unsigned long long) wc->wr_id,
            ibv_wc_status_str(wc->status), (unsigned long long) wr_id, ibv_wc_status_str(status));
    }
}

static void post_recv(struct conn *c) {
    struct ibv_sge sge = {.addr = (uintptr_t) c->buf, .length = MSG, .lkey = c->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 100, .sg_list = &sge, .num_sge = 1}, *bad;
    if (ibv_post_recv(c->id->qp, &wr, &bad)) die("ibv_post_recv: %m");
}

static void post(struct conn *c, struct ibv_send_wr *wr) {
    struct ibv_send_wr *bad;
    if (ibv_post_send(c->id->qp, wr, &bad)) die("ibv_post_send (opcode %d): %m", wr->opcode);
}

/* SENDs a message of MSG bytes from the send slot (opcode SEND or SEND_WITH_INV) and waits for its completion. */
static void send_msg(struct conn *c, const void *msg, enum ibv_wr_opcode op, uint32_t inv) {
    memset(c->buf + MSG, 0, MSG);
    memcpy(c->buf + MSG, msg, strlen(msg) < MSG ? strlen(msg) : MSG);
    struct ibv_sge sge = {.addr = (uintptr_t) c->buf + MSG, .length = MSG, .lkey = c->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 200, .sg_list = &sge, .num_sge = 1, .opcode = op, .send_flags = IBV_SEND_SIGNALED};
    if (op == IBV_WR_SEND_WITH_INV) wr.invalidate_rkey = inv;
    post(c, &wr);
    struct ibv_wc wc;
    expect_wc(c, 200, IBV_WC_SUCCESS, &wc);
}

/* Waits for a message; its bytes stay in the receive slot, and the next receive is posted after reading them. */
static void recv_msg(struct conn *c, struct ibv_wc *wc) {
    expect_wc(c, 100, IBV_WC_SUCCESS, wc);
    if (wc->opcode != IBV_WC_RECV) die("a receive completed with opcode %d", wc->opcode);
}

/* A WRITE of pattern k from the data area through (addr, rkey); returns its completion's status. */
static enum ibv_wc_status write_through(struct conn *c, uint64_t addr, uint32_t rkey, int k) {
    fill(c->buf + 4096, k);
    struct ibv_sge sge = {.addr = (uintptr_t) c->buf + 4096, .length = LEN, .lkey = c->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = 300, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED};
    wr.wr.rdma.remote_addr = addr;
    wr.wr.rdma.rkey = rkey;
    post(c, &wr);
    struct ibv_wc wc;
    wait_wc(c, &wc);
    if (wc.wr_id != 300) die("completion of wr %llu while a WRITE was awaited", (unsigned long long) wc.wr_id);
    return wc.status;
}

static void window_of(struct conn *c, uint64_t *addr, uint32_t *rkey, uint32_t *len) {
    uint64_t a;
    uint32_t k, l;
    memcpy(&a, c->buf, 8);
    memcpy(&k, c->buf + 8, 4);
    memcpy(&l, c->buf + 12, 4);
    *addr = be64toh(a);
    *rkey = ntohl(k);
    *len = ntohl(l);
    if (*len != LEN) die("the peer's window is %u bytes, expected %d", *len, LEN);
}

static void open_conn(struct conn *c, const char *host, const char *port, int mw_access) {
    memset(c, 0, sizeof *c);
    c->ch = rdma_create_event_channel();
    if (!c->ch) die("rdma_create_event_channel: %m");
    if (rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP)) die("rdma_create_id: %m");
    struct addrinfo *ai;
    if (getaddrinfo(host, port, NULL, &ai)) die("cannot resolve %s:%s", host, port);
    if (rdma_resolve_addr(c->id, NULL, ai->ai_addr, 5000)) die("rdma_resolve_addr: %m");
    freeaddrinfo(ai);
    rdma_ack_cm_event(expect_event(c, RDMA_CM_EVENT_ADDR_RESOLVED));
    if (rdma_resolve_route(c->id, 5000)) die("rdma_resolve_route: %m");
    rdma_ack_cm_event(expect_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED));
    c->pd = ibv_alloc_pd(c->id->verbs);
    c->cq = ibv_create_cq(c->id->verbs, 16, NULL, NULL, 0);
    if (!c->pd || !c->cq) die("ibv_alloc_pd / ibv_create_cq: %m");
    struct ibv_qp_init_attr qa = {.send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};
    if (rdma_create_qp(c->id, c->pd, &qa)) die("rdma_create_qp: %m");
    if (posix_memalign((void **) &c->buf, 4096, 2 * 4096)) die("out of memory");
    memset(c->buf, 0, 2 * 4096);
    c->mr = ibv_reg_mr(c->pd, c->buf, 2 * 4096, IBV_ACCESS_LOCAL_WRITE | mw_access);
    if (!c->mr) die("ibv_reg_mr: %m");
    post_recv(c);
    struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7};
    if (rdma_connect(c->id, &p)) die("rdma_connect: %m");
    rdma_ack_cm_event(expect_event(c, RDMA_CM_EVENT_ESTABLISHED));
}

static void close_conn(struct conn *c) {
    rdma_disconnect(c->id);
    rdma_destroy_qp(c->id);
    ibv_dereg_mr(c->mr);
    ibv_destroy_cq(c->cq);
    ibv_dealloc_pd(c->pd);
    rdma_destroy_id(c->id);
    rdma_destroy_event_channel(c->ch);
    free(c->buf);
}

static void peers_window(const char *host, const char *port) {
    struct conn c;
    struct ibv_wc wc;
    uint64_t addr;
    uint32_t rkey, rkey2, len;
    open_conn(&c, host, port, 0);
    recv_msg(&c, &wc);
    window_of(&c, &addr, &rkey, &len);
    post_recv(&c);
    if (write_through(&c, addr, rkey, 1) != IBV_WC_SUCCESS) die("a WRITE through the peer's bound window failed");
    printf("mw-check: wrote %d bytes through the peer's window (rkey 0x%08x)\n", LEN, rkey);
    send_msg(&c, "invalidate", IBV_WR_SEND_WITH_INV, rkey);
    printf("mw-check: sent SEND_WITH_INV for rkey 0x%08x\n", rkey);
    recv_msg(&c, &wc);
    window_of(&c, &addr, &rkey2, &len);
    post_recv(&c);
    if (rkey2 == rkey) die("the peer bound its window again with the same rkey 0x%08x", rkey);
    if (write_through(&c, addr, rkey2, 2) != IBV_WC_SUCCESS) die("a WRITE through the peer's rebound window failed");
    printf("mw-check: wrote through the rebound window (rkey 0x%08x)\n", rkey2);
    send_msg(&c, "written", IBV_WR_SEND, 0);
    recv_msg(&c, &wc);
    if (strncmp((char *) c.buf, "invalidated", 11) != 0) die("expected \"invalidated\" from the peer");
    enum ibv_wc_status s = write_through(&c, addr, rkey2, 4);
    if (s != IBV_WC_REM_ACCESS_ERR) die("a WRITE through a locally invalidated window completed with %s, expected %s",
                                        ibv_wc_status_str(s), ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR));
    printf("mw-check: the peer refused a WRITE through its invalidated window: %s\n", ibv_wc_status_str(s));
    close_conn(&c);
}

static void our_window(const char *host, const char *port) {
    struct conn c;
    struct ibv_wc wc;
    open_conn(&c, host, port, IBV_ACCESS_MW_BIND); /* remote access only through the window */
    struct ibv_mw *mw = ibv_alloc_mw(c.pd, IBV_MW_TYPE_2);
    if (!mw) die("ibv_alloc_mw(type 2): %m");
    uint32_t rkey = ibv_inc_rkey(mw->rkey);
    struct ibv_send_wr bind = {.wr_id = 400, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED};
    bind.bind_mw.mw = mw;
    bind.bind_mw.rkey = rkey;
    bind.bind_mw.bind_info.mr = c.mr;
    bind.bind_mw.bind_info.addr = (uintptr_t) c.buf + 4096;
    bind.bind_mw.bind_info.length = LEN;
    bind.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
    post(&c, &bind);
    expect_wc(&c, 400, IBV_WC_SUCCESS, &wc);
    printf("mw-check: bound a type 2 window (rkey 0x%08x)\n", rkey);
    unsigned char msg[16];
    uint64_t a = htobe64((uintptr_t) c.buf + 4096);
    uint32_t k = htonl(rkey), l = htonl(LEN);
    memcpy(msg, &a, 8);
    memcpy(msg + 8, &k, 4);
    memcpy(msg + 12, &l, 4);
    memset(c.buf + MSG, 0, MSG);
    memcpy(c.buf + MSG, msg, 16);
    struct ibv_sge sge = {.addr = (uintptr_t) c.buf + MSG, .length = MSG, .lkey = c.mr->lkey};
    struct ibv_send_wr adv = {.wr_id = 200, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
    post(&c, &adv);
    expect_wc(&c, 200, IBV_WC_SUCCESS, &wc);
    recv_msg(&c, &wc);
    /* rxe's user CQ carries the kernel's ib_wc_flags, where WITH_INVALIDATE is bit 2 (libibverbs' bit 2 is
     * IBV_WC_IP_CSUM_OK, which an RC receive never has): either bit says the SEND came with an IETH. */
    if (!(wc.wc_flags & (IBV_WC_WITH_INV | KERNEL_WC_WITH_INVALIDATE)))
        die("the peer's SEND arrived without IBV_WC_WITH_INV (wc_flags 0x%x)", wc.wc_flags);
    if (wc.invalidated_rkey != rkey) die("the receive invalidated rkey 0x%08x, expected 0x%08x", wc.invalidated_rkey, rkey);
    if (!matches(c.buf + 4096, 3)) die("the peer's WRITE through our window did not land whole");
    printf("mw-check: the peer's WRITE landed and its SEND_WITH_INV invalidated rkey 0x%08x\n", rkey);
    post_recv(&c);
    send_msg(&c, "checked", IBV_WR_SEND, 0);
    /* The peer WRITEs through the invalidated key (refused by our rxe), then disconnects. */
    struct rdma_cm_event *e = expect_event(&c, RDMA_CM_EVENT_DISCONNECTED);
    rdma_ack_cm_event(e);
    if (!matches(c.buf + 4096, 3)) die("a WRITE through our invalidated window changed our memory");
    printf("mw-check: our memory kept the peer's first WRITE after its WRITE through the invalidated window\n");
    ibv_dealloc_mw(mw);
    close_conn(&c);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 3) {
        fprintf(stderr, "usage: mw-check HOST PORT\n");
        return 2;
    }
    peers_window(argv[1], argv[2]);
    our_window(argv[1], argv[2]);
    printf("mw-check: all checks passed\n");
    return 0;
}
