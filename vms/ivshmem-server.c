/*
 * An ivshmem server for guests whose ivshmem-doorbell device shares the fabric file (QEMU's
 * docs/specs/ivshmem-spec.txt, "The ivshmem Client-Server Protocol"; Debian's QEMU ships no server).
 *
 *   ivshmem-server SOCKET FABRIC_FILE [VECTORS]
 *
 * Each client (a QEMU ivshmem-doorbell device) gets: the protocol version 0, its ID, -1 with the fabric
 * file's descriptor, then for every other client its ID once per vector with that vector's eventfd, then
 * its own ID once per vector with its own eventfds. The others hear of it the same way, and of its leaving
 * by its ID alone. Every message is one little-endian int64, with at most one descriptor (SCM_RIGHTS).
 * Runs until SIGTERM or SIGINT, or until the process that started it ends, then removes SOCKET.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_CLIENTS 64
#define MAX_VECTORS 8

struct client {
    int sock; /* -1: a free slot */
    int id;
    int efd[MAX_VECTORS];
};

static struct client clients[MAX_CLIENTS];
static int vectors = 1;
static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void) sig;
    stop = 1;
}

/* One message: an int64 (little-endian, as x86-64 stores it) and, unless fd < 0, a descriptor. */
static int send_msg(int sock, int64_t value, int fd) {
    struct iovec iov = {.iov_base = &value, .iov_len = sizeof value};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&control, 0, sizeof control);
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof control.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t) sizeof value ? 0 : -1;
}

static int free_id(void) {
    for (int id = 0; id < 65536; id++) {
        int used = 0;
        for (int i = 0; i < MAX_CLIENTS; i++) {
            used |= clients[i].sock >= 0 && clients[i].id == id;
        }
        if (!used) {
            return id;
        }
    }
    return -1;
}

static void drop(struct client *c) {
    close(c->sock);
    c->sock = -1;
    for (int v = 0; v < vectors; v++) {
        close(c->efd[v]);
    }
    for (int i = 0; i < MAX_CLIENTS; i++) {
        if (clients[i].sock >= 0) {
            send_msg(clients[i].sock, c->id, -1); /* its ID alone: it left */
        }
    }
    printf("ivshmem-server: peer %d left\n", c->id);
}

static void join(int sock, int shm) {
    struct client *c = NULL;
    for (int i = 0; i < MAX_CLIENTS && c == NULL; i++) {
        if (clients[i].sock < 0) {
            c = &clients[i];
        }
    }
    int id = free_id();
    if (c == NULL || id < 0) {
        fprintf(stderr, "ivshmem-server: no room for another peer (at most %d)\n", MAX_CLIENTS);
        close(sock);
        return;
    }
    c->id = id;
    for (int v = 0; v < vectors; v++) {
        c->efd[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->efd[v] < 0) {
            perror("ivshmem-server: eventfd");
            for (int w = 0; w < v; w++) {
                close(c->efd[w]);
            }
            close(sock);
            return;
        }
    }
    c->sock = sock;
    int bad = send_msg(sock, 0, -1) || send_msg(sock, id, -1) || send_msg(sock, -1, shm);
    for (int i = 0; i < MAX_CLIENTS && !bad; i++) {
        struct client *o = &clients[i];
        if (o != c && o->sock >= 0) {
            for (int v = 0; v < vectors && !bad; v++) {
                bad |= send_msg(sock, o->id, o->efd[v]);
                send_msg(o->sock, id, c->efd[v]); /* the others learn how to ring it */
            }
        }
    }
    for (int v = 0; v < vectors && !bad; v++) {
        bad |= send_msg(sock, id, c->efd[v]);
    }
    if (bad) {
        fprintf(stderr, "ivshmem-server: peer %d: %s\n", id, strerror(errno));
        drop(c);
        return;
    }
    printf("ivshmem-server: peer %d joined\n", id);
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: ivshmem-server SOCKET FABRIC_FILE [VECTORS, 1..%d, default 1]\n", MAX_VECTORS);
        return 2;
    }
    if (argc == 4) {
        vectors = atoi(argv[3]);
        if (vectors < 1 || vectors > MAX_VECTORS) {
            fprintf(stderr, "ivshmem-server: VECTORS must be 1..%d, not %s\n", MAX_VECTORS, argv[3]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    int shm = open(argv[2], O_RDWR | O_CLOEXEC);
    if (shm < 0) {
        fprintf(stderr, "ivshmem-server: cannot open %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(argv[1]) >= sizeof addr.sun_path) {
        fprintf(stderr, "ivshmem-server: socket path %s is longer than %zu bytes\n", argv[1], sizeof addr.sun_path - 1);
        return 1;
    }
    strcpy(addr.sun_path, argv[1]);
    int lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(argv[1]);
    if (lsock < 0 || bind(lsock, (struct sockaddr *) &addr, sizeof addr) < 0 || listen(lsock, 16) < 0) {
        fprintf(stderr, "ivshmem-server: cannot listen on %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    /* The signals stay blocked but inside ppoll, so one that comes between the check of stop and the wait
       still ends the wait. */
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigset_t blocked, waiting;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGTERM);
    sigaddset(&blocked, SIGINT);
    sigprocmask(SIG_BLOCK, &blocked, &waiting);
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* ends with whatever started it, even one killed outright */
    for (int i = 0; i < MAX_CLIENTS; i++) {
        clients[i].sock = -1;
    }
    printf("ivshmem-server: serving %s on %s, %d vector(s) a peer\n", argv[2], argv[1], vectors);
    while (!stop) {
        struct pollfd p[MAX_CLIENTS + 1];
        struct client *who[MAX_CLIENTS + 1];
        int n = 0;
        p[n].fd = lsock;
        p[n].events = POLLIN;
        who[n++] = NULL;
        for (int i = 0; i < MAX_CLIENTS; i++) {
            if (clients[i].sock >= 0) {
                p[n].fd = clients[i].sock;
                p[n].events = POLLIN;
                who[n++] = &clients[i];
            }
        }
        if (ppoll(p, n, NULL, &waiting) < 0) {
            if (errno == EINTR) {
                continue;
            }
            perror("ivshmem-server: poll");
            break;
        }
        for (int i = 1; i < n; i++) {
            if (p[i].revents) { /* clients send nothing: readable means closed */
                char b;
                if (recv(p[i].fd, &b, 1, MSG_DONTWAIT) <= 0) {
                    drop(who[i]);
                }
            }
        }
        if (p[0].revents & POLLIN) {
            int s = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
            if (s >= 0) {
                join(s, shm);
            }
        }
    }
    unlink(argv[1]);
    return 0;
}
