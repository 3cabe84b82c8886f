package dev.nupa.node.perftest;

import dev.nupa.node.NupaNode;
import java.util.function.Consumer;
import java.util.function.Function;

import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;

/**
 * One perftest test over one side-channel connection, as perftest 6.x runs it (see {@link PerftestWire}): the
 * version, sizes and MTU, the QP details exchanged {@link PerftestRun.Test#handshakesBefore} times (the QP goes to
 * RTS after the first, so it is ready whichever side moves first), the loop, and the test's own end: none for
 * write-lat (both sides just close), one more exchange and {@code "done"} for send-lat, read-lat and atomic-lat, and
 * for write-bw an exchange, the client's report (which the server prints), one more exchange and {@code "done"}.
 * Runs on the socket's context; the verbs run on the node's datapath thread.
 */
final class PerftestSession {
    /**
     * With {@code -R}, how the test's QP gets connected through the CM: {@link #arm} when it exists (a server must
     * accept the data connection's REQ as soon as its answer to the first exchange may have left), {@link #connect}
     * after the first exchange; the Future completes once the connection is made.
     */
    interface DataConnector {
        void arm(QueuePair qp);

        Future<Void> connect(QueuePair qp);
    }

    private final NupaNode node;
    private final PerftestRun.Test test;
    private final boolean server;
    private final PerftestCommand cmd;
    private final PerftestSideChannel ch;
    private final DataConnector data;
    private final Context context;
    private final Consumer<String> out;
    private PerftestRun run;
    private PerftestWire.Dest localDest;
    private PerftestWire.Dest peer;
    private int pathMtu;
    private int cycle;

    /** Over a side channel; {@code data} connects the test's QP with -R (null over TCP, where the QP details do). */
    PerftestSession(NupaNode node, PerftestSideChannel ch, DataConnector data, PerftestRun.Test test, boolean server,
                    PerftestCommand cmd, Consumer<String> out) {
        this.node = node;
        this.test = test;
        this.server = server;
        this.cmd = cmd;
        this.out = out;
        this.ch = ch;
        this.data = data;
        this.context = node.vertx().getOrCreateContext();
    }

    /** Runs the test to its end; the future carries the failure, if any. The QP and region are given back either way. */
    Future<Void> run() {
        cmd.stage(test.perftest + ": exchanging version, sizes and path MTU on the side channel");
        return ch.exchange(PerftestWire.version())
                .compose(v -> {
                    PerftestWire.version(v);
                    return ch.exchange(PerftestWire.int32(PerftestWire.CYCLE_BUFFER));
                })
                .compose(b -> {
                    cycle = Math.max(PerftestWire.CYCLE_BUFFER, b.getInt(0));
                    return ch.exchange(PerftestWire.int32(PerftestWire.CACHE_LINE));
                })
                .compose(b -> ch.exchange(PerftestWire.mtu(cmd.pathMtu)))
                .compose(b -> {
                    pathMtu = PerftestWire.mtu(b, cmd.pathMtu);
                    int ip = node.ip().address();
                    return onDatapath(ctx -> {
                        run = new PerftestRun(ctx, node.link().datapath(), test, server, test == PerftestRun.Test.ATOMIC_LAT ? 8
                                : cmd.size(test), cmd.iterations(test), cmd.txDepth, cmd.cqMod, cmd.firstPsn(), cycle);
                        if (data != null) {
                            data.arm(run.qp);
                        }
                        return run.local(ip);
                    });
                })
                .compose(dest -> {
                    localDest = dest;
                    cmd.stage(test.perftest + ": exchanging QP details on the side channel");
                    return ch.rdmaCm() ? connectThroughCm() : firstHandshake().compose(v -> handshakes(test.handshakesBefore() - 1));
                })
                .compose(v -> loop())
                .compose(this::end)
                .eventually(() -> {
                    PerftestRun r = run;
                    if (r != null) {
                        node.rdma().execute(ctx -> {
                            node.rdma().cm().release(r.qp); // with -R: a DREQ for the data connection
                            r.close();
                        });
                    }
                    ch.close();
                    return Future.succeededFuture();
                });
    }

    /**
     * With -R: an exchange, the data connection through the CM, another exchange (perftest's syncs around it), then
     * the test's exchanges; the CM set the QP up, the last QP details say where to write, read and add.
     */
    private Future<Void> connectThroughCm() {
        return handshakes(1)
                .compose(v -> data.connect(run.qp))
                .compose(v -> {
                    cmd.stage(test.perftest + ": exchanging QP details after the test's connection");
                    return handshakes(1 + test.handshakesBefore());
                })
                .compose(v -> {
                    out.accept(String.format("%s %s over rdma_cm: peer vaddr 0x%x rkey 0x%08x; local qpn 0x%06x", test.perftest,
                            server ? "server" : "client", peer.vaddr(), peer.rkey(), run.qp.qpNum()));
                    PerftestWire.Dest p = peer;
                    return onDatapath(ctx -> {
                        run.target(p);
                        return null;
                    });
                });
    }

    /** The first exchange: the peer's QP details, and RTR and RTS against them. */
    private Future<Void> firstHandshake() {
        return ch.exchange(localDest.encode()).compose(b -> {
            PerftestWire.Dest peer = PerftestWire.Dest.decode(b);
            out.accept(String.format("%s %s: peer %s qpn 0x%06x psn 0x%06x; local qpn 0x%06x psn 0x%06x; path MTU %d",
                    test.perftest, server ? "server" : "client", Ipv4Address.toString(peer.ipv4Address()), peer.qpn(), peer.psn(),
                    run.qp.qpNum(), cmd.firstPsn(), pathMtu));
            return onDatapath(ctx -> {
                run.connect(peer, pathMtu);
                return null;
            });
        });
    }

    /** {@code n} exchanges of QP details (the same each time, as perftest's); the last the peer sent is kept. */
    private Future<Void> handshakes(int n) {
        Future<Void> f = Future.succeededFuture();
        for (int i = 0; i < n; i++) {
            f = f.compose(v -> ch.exchange(ch.rdmaCm() ? localDest.encodeBinary() : localDest.encode()).map(b -> {
                peer = ch.rdmaCm() ? PerftestWire.Dest.decodeBinary(b) : PerftestWire.Dest.decode(b); // a malformed one ends it
                return null;
            }));
        }
        return f;
    }

    /** This side's loop; its result lines (empty for a side that only answers). */
    private Future<String> loop() {
        cmd.stage(test.perftest + ": running its loop");
        Promise<String> done = Promise.promise();
        node.rdma().execute(ctx -> run.start(done));
        return onContext(done.future());
    }

    private Future<Void> end(String result) {
        cmd.stage(test.perftest + ": ending it on the side channel");
        if (!result.isEmpty()) {
            out.accept(result);
        }
        return switch (test) {
            case WRITE_LAT -> server && ch instanceof PerftestChannel tcp
                    ? tcp.read(1).<Void>map((Void) null).recover(e -> Future.succeededFuture()) // its end of stream
                    : Future.succeededFuture();
            case SEND_LAT, READ_LAT -> handshakes(1).compose(v -> ch.finish());
            case ATOMIC_LAT -> handshakes(1).compose(v -> server ? onDatapath(ctx -> run.targetValue()).map(value -> {
                out.accept(test.perftest + " server: the peer's FETCH_AND_ADDs of 1 left " + value + " at our vaddr");
                return null;
            }) : Future.<Void>succeededFuture()).compose(v -> ch.finish());
            case WRITE_BW -> handshakes(1).compose(v -> reports()).compose(v -> handshakes(1)).compose(v -> ch.finish());
        };
    }

    /**
     * ib_write_bw's report: the client's size, iterations, peak and average MB/s and message rate, which the server
     * prints; the server's own fields are not read by the client (it measured nothing), so it sends zeros.
     */
    private Future<Void> reports() {
        Buffer[] mine = server
                ? new Buffer[] {PerftestWire.long64(0), PerftestWire.long64(0), PerftestWire.double64(0), PerftestWire.double64(0),
                        PerftestWire.double64(0)}
                : new Buffer[] {PerftestWire.long64(run.size), PerftestWire.long64(run.iterations), PerftestWire.double64(run.peakMBps()),
                        PerftestWire.double64(run.averageMBps()), PerftestWire.double64(run.messageRate())};
        Buffer[] theirs = new Buffer[mine.length];
        Future<Void> f = Future.succeededFuture();
        for (int i = 0; i < mine.length; i++) {
            int k = i;
            f = f.compose(v -> ch.exchange(mine[k]).map(b -> {
                theirs[k] = b;
                return null;
            }));
        }
        return f.map(v -> {
            if (server) {
                out.accept(String.format(java.util.Locale.ROOT, "%8s %12s %16s %19s %15s%n%8d %12d %16.2f %19.2f %15.6f"
                                + "%n(the client's report)", "#bytes", "#iterations", "BW peak[MB/sec]", "BW average[MB/sec]",
                        "MsgRate[Mpps]", theirs[0].getLong(0), theirs[1].getLong(0), theirs[2].getDouble(0),
                        theirs[3].getDouble(0), theirs[4].getDouble(0)));
            }
            return null;
        });
    }

    /** Runs {@code f} with the RDMA context on the datapath thread; its result comes back on this context. */
    private <T> Future<T> onDatapath(Function<RdmaContext, T> f) {
        Promise<T> p = Promise.promise();
        node.rdma().execute(ctx -> {
            try {
                p.complete(f.apply(ctx));
            } catch (RuntimeException e) {
                p.fail(e);
            }
        });
        return onContext(p.future());
    }

    private <T> Future<T> onContext(Future<T> f) {
        Promise<T> p = Promise.promise();
        f.onComplete(ar -> context.runOnContext(v -> p.handle(ar)));
        return p.future();
    }
}
