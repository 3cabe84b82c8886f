package dev.nupa.node.perftest;

import dev.nupa.node.NupaNode;
import dev.nupa.node.options.CommandNode;
import dev.nupa.node.options.NodeOptions;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.cm.RdmaCm;
import io.vertx.core.Promise;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `nupa rping -s | -c -a HOST`: rdma-core's rping on a node, connected through the CM (the InfiniBand CM over
 * RoCEv2 to an IP peer, so Linux's rping is a peer both ways): the client sends where its buffers are, the server
 * READs one and WRITEs the other, {@code -C} times ({@link RpingSession}). The server serves one client and ends
 * when it disconnects, as rping's does.
 */
@Command(name = "rping", mixinStandardHelpOptions = true, sortOptions = false,
        description = "rping over the node's RDMA: connect through the connection manager (to Linux's rdma_cm too), then READ and WRITE a ping buffer -C times.")
public final class RpingCommand implements Callable<Integer> {
    static final class Role {
        @Option(names = "-s", description = "Be the server: listen, serve one client until it disconnects.")
        boolean server;

        @Option(names = "-c", description = "Be the client (with -a).")
        boolean client;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Role role;

    @Option(names = "-a", paramLabel = "ADDR", description = "Client: the server's IPv4 address. Server: the address to listen on (the node's).")
    String address;

    @Option(names = "-p", paramLabel = "PORT", defaultValue = "7174", description = "Port (default: ${DEFAULT-VALUE}, rping's).")
    int port;

    @Option(names = "-C", paramLabel = "COUNT", defaultValue = "10", description = "Client: pings (default: ${DEFAULT-VALUE}).")
    long count;

    @Option(names = "-S", paramLabel = "SIZE", defaultValue = "64", description = "Ping buffer size, " + RpingSession.MIN_SIZE
            + "..65536 (default: ${DEFAULT-VALUE}); a server's must hold the client's.")
    int size;

    @Option(names = "-v", description = "Print each ping's data.")
    boolean verbose;

    @Option(names = "-V", description = "Client: check each ping came back as sent.")
    boolean validate;

    @Option(names = "--timeout", paramLabel = "SECONDS", defaultValue = "120", description = "Seconds allowed for the whole run (default: ${DEFAULT-VALUE}).")
    int timeout;

    @Option(names = "--wait", paramLabel = "SECONDS", defaultValue = "0",
            description = "Client: keep trying to connect for this long while the server refuses or does not answer (one that is starting; default: ${DEFAULT-VALUE}, one try as rping).")
    int wait;

    @Mixin
    NodeOptions options;

    /**
     * Connects, its REQ resent while unanswered until {@code deadline}, and again every half second while refused,
     * each time with a fresh QP (a peer may still hold the last try's QP: a REQ from it would collide as a stale
     * connection); on the datapath thread.
     */
    private void connect(NupaNode node, RdmaCm cm, RpingSession[] session, int peer, long deadline, Promise<Long> done) {
        RpingSession s = session[0];
        cm.connect(peer, port, s.qp, new byte[0], deadline - System.nanoTime()).onComplete(ar -> {
            if (ar.succeeded()) {
                s.start(done);
            } else if (System.nanoTime() - deadline < 0) {
                System.out.println("rping: " + ar.cause().getMessage() + "; trying again");
                s.close();
                node.vertx().setTimer(500, id -> node.rdma().execute(ctx -> {
                    session[0] = newSession(ctx, node);
                    connect(node, cm, session, peer, deadline, done);
                }));
            } else {
                done.tryFail(ar.cause());
            }
        });
    }

    private RpingSession newSession(dev.nupa.roce.RdmaContext ctx, NupaNode node) {
        return new RpingSession(ctx, node.link().datapath(), role.server, size, count, verbose, validate, System.out::println);
    }

    @Override
    public Integer call() throws Exception {
        if (size < RpingSession.MIN_SIZE || size > 65_536) {
            throw new IllegalArgumentException("-S must be " + RpingSession.MIN_SIZE + "..65536 bytes, not " + size);
        }
        if (count < 1 || port < 1 || port > 65_535 || timeout < 1 || wait < 0) {
            throw new IllegalArgumentException("-C must be at least 1, -p 1..65535, --timeout at least 1 s and --wait not negative");
        }
        if (role.client && address == null) {
            throw new IllegalArgumentException("a client needs the server's address: -a HOST");
        }
        int peer = address == null ? 0 : Ipv4Address.parse(address);
        if (role.client) {
            options.requireExistingFabric("rping -c"); // a server is a node others join; a client needs one to reach
        }
        return CommandNode.run(options, (vertx, node) -> {
            if (role.server && peer != 0 && peer != node.ip().address()) {
                throw new IllegalArgumentException("-a " + address + " is not this node's address "
                        + Ipv4Address.toString(node.ip().address()) + " (give --ip, or leave -a out)");
            }
            CompletableFuture<Long> result = new CompletableFuture<>();
            RpingSession[] session = new RpingSession[1];
            node.rdma().execute(ctx -> {
                try {
                    RpingSession s = newSession(ctx, node);
                    session[0] = s;
                    RdmaCm cm = node.rdma().cm();
                    cm.onDisconnect(q -> {
                        if (q == session[0].qp) {
                            session[0].peerLeft();
                        }
                    });
                    Promise<Long> done = Promise.promise();
                    done.future().onComplete(ar -> {
                        if (ar.failed()) {
                            result.completeExceptionally(ar.cause());
                        } else {
                            result.complete(ar.result());
                        }
                    });
                    if (role.server) {
                        cm.listen(port, req -> {
                            cm.unlisten(port); // one client, as rping's server
                            System.out.println("rping: connection from " + Ipv4Address.toString(req.peerIp()));
                            req.accept(s.qp, new byte[0]).onComplete(ar -> {
                                if (ar.failed()) {
                                    done.tryFail(ar.cause());
                                } else {
                                    s.start(done);
                                }
                            });
                        });
                        System.out.println("rping: listening on " + Ipv4Address.toString(node.ip().address()) + " port " + port);
                    } else {
                        connect(node, cm, session, peer, System.nanoTime() + TimeUnit.SECONDS.toNanos(wait), done);
                    }
                } catch (RuntimeException e) {
                    result.completeExceptionally(e);
                }
            });
            long pings;
            try {
                pings = result.get(timeout, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new IllegalStateException("rping did not end within " + timeout + " s");
            } catch (ExecutionException e) {
                throw e.getCause() instanceof Exception x ? x : new IllegalStateException(e.getCause());
            } finally {
                CompletableFuture<Void> closed = new CompletableFuture<>();
                node.rdma().execute(ctx -> {
                    try {
                        RpingSession s = session[0];
                        if (s != null) {
                            node.rdma().cm().release(s.qp); // a client's DREQ, as rping's rdma_disconnect
                            s.close();
                        }
                    } finally {
                        closed.complete(null);
                    }
                });
                closed.get(10, TimeUnit.SECONDS);
                Thread.sleep(200); // the DREQ's DREP, before the node leaves
            }
            var c = node.rdma().context();
            System.out.println("rping: " + pings + " pings done; rocev2_sent=" + c.counter(RdmaCounter.ROCEV2_SENT)
                    + " rocev2_received=" + c.counter(RdmaCounter.ROCEV2_RECEIVED) + " bad_icrc=" + c.counter(RdmaCounter.BAD_ICRC));
            return 0;
        });
    }
}
