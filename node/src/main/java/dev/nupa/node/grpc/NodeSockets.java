package dev.nupa.node.grpc;

import dev.nupa.node.NupaNode;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import com.google.protobuf.ByteString;
import dev.nupa.node.sockets.Accepted;
import dev.nupa.node.sockets.Datagram;
import dev.nupa.node.sockets.ListenRequest;
import dev.nupa.node.sockets.Opened;
import dev.nupa.node.sockets.SocketsService;
import dev.nupa.node.sockets.TcpClientMessage;
import dev.nupa.node.sockets.TcpServerMessage;
import dev.nupa.node.sockets.UdpClientMessage;
import dev.nupa.node.sockets.UdpServerMessage;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;
import io.vertx.core.streams.ReadStream;
import io.vertx.core.streams.WriteStream;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.GrpcServerResponse;

/**
 * The Sockets service of {@code sockets.proto}: TCP connections and UDP sockets of the node, opened with
 * Vert.x's own NetClient, NetServer and DatagramSocket on the node's event loop (over the fabric), their bytes
 * carried by gRPC streams of the endpoint. Each socket belongs to its call: it closes when the call ends,
 * fails or is cancelled. Back-pressure holds both ways: a full gRPC stream pauses the socket, a full socket
 * pauses the gRPC stream.
 *
 * <p>Threading: socket handlers run on the node's loop and stream handlers on the endpoint's; each side's
 * calls are handed to its own context, never made from the other.
 */
final class NodeSockets extends SocketsService {
    /** How long an accepted connection waits for an Attach. */
    static final long ATTACH_TIMEOUT_MS = 10_000;

    private final NupaNode nupaNode;
    private final Vertx node;
    private final Context nodeContext;
    /** TCP ports that Listen calls hold, so that a second call is refused rather than sharing (as Vert.x servers would). */
    private final java.util.Set<Integer> listening = ConcurrentHashMap.newKeySet();
    private final NetClient client;
    private final Map<Long, NetSocket> waiting = new ConcurrentHashMap<>();
    /** The listeners and UDP sockets of calls under way, closed with the endpoint if their calls are not over. */
    private final java.util.Set<NetServer> servers = ConcurrentHashMap.newKeySet();
    private final java.util.Set<DatagramSocket> datagramSockets = ConcurrentHashMap.newKeySet();
    private final AtomicLong ids = new AtomicLong();

    NodeSockets(NupaNode node) {
        this.nupaNode = node;
        this.node = node.vertx();
        this.nodeContext = this.node.getOrCreateContext();
        this.client = this.node.createNetClient();
    }

    /** A call's answers, ended once: with OK, or with a status and why. On the endpoint's context only. */
    private static final class Answers {
        final WriteStream<?> stream;
        boolean ended;

        Answers(WriteStream<?> stream) {
            this.stream = stream;
        }

        void fail(GrpcStatus status, String why) {
            if (!ended) {
                ended = true;
                ((GrpcServerResponse<?, ?>) stream).status(status).statusMessage(why).end();
            }
        }

        void end() {
            if (!ended) {
                ended = true;
                stream.end();
            }
        }

        /** The call broke or was cancelled: nothing more can be answered. */
        void gone() {
            ended = true;
        }
    }

    private static String address(io.vertx.core.net.SocketAddress a) {
        return a.hostAddress() + ":" + a.port();
    }

    // ---- TCP -------------------------------------------------------------------------------

    @Override
    protected void connect(ReadStream<TcpClientMessage> request, WriteStream<TcpServerMessage> response) {
        Context endpoint = Vertx.currentContext();
        Answers answers = new Answers(response);
        first(request, answers, m -> m.getKindCase() == TcpClientMessage.KindCase.OPEN, "Connect", "open {host, port}",
                TcpClientMessage::getKindCase, first -> {
            String host = first.getOpen().getHost();
            int port = first.getOpen().getPort();
            if (port < 1 || port > 65535) {
                answers.fail(GrpcStatus.INVALID_ARGUMENT, "TCP port " + port + " is outside 1..65535");
                return;
            }
            nodeContext.runOnContext(v -> client.connect(port, host).onComplete(ar -> {
                if (ar.succeeded()) {
                    ar.result().pause(); // a socket with no handler drops what arrives: its bytes wait for the bridge
                }
                endpoint.runOnContext(x -> {
                    if (ar.failed()) {
                        answers.fail(GrpcStatus.UNAVAILABLE, "cannot connect to " + host + ":" + port + ": "
                                + ar.cause().getMessage());
                        return;
                    }
                    bridge(ar.result(), request, response, answers, endpoint);
                });
            }));
        });
    }

    @Override
    protected void listen(ReadStream<ListenRequest> requests, WriteStream<Accepted> response) {
        Context endpoint = Vertx.currentContext();
        Answers answers = new Answers(response);
        requests.pause();
        requests.handler(request -> {
            requests.handler(extra -> answers.fail(GrpcStatus.INVALID_ARGUMENT, "Listen takes one ListenRequest"));
            listen(request, requests, answers, endpoint);
        });
        requests.fetch(1);
    }

    private void listen(ListenRequest request, ReadStream<ListenRequest> requests, Answers answers, Context endpoint) {
        @SuppressWarnings("unchecked")
        WriteStream<Accepted> response = (WriteStream<Accepted>) answers.stream;
        int port = request.getPort();
        if (port < 1 || port > 65535) {
            answers.fail(GrpcStatus.INVALID_ARGUMENT, "TCP port " + port + " is outside 1..65535");
            return;
        }
        nodeContext.runOnContext(v -> {
            // Vert.x shares a port among its servers: a port the node listens on already, through another call or
            // its own servers, is refused here instead, as a socket's listen(2) would (EADDRINUSE).
            if (nupaNode.tcp().isListening(port) || !listening.add(port)) {
                endpoint.runOnContext(x -> answers.fail(GrpcStatus.FAILED_PRECONDITION, "TCP port " + port
                        + " is already listening on the node; close what holds it or choose another port"));
                return;
            }
            NetServer server = node.createNetServer(new io.vertx.core.net.NetServerOptions()
                    .setAcceptBacklog(request.getBacklog() > 0 ? request.getBacklog() : -1));
            server.connectHandler(s -> {
                s.pause(); // its bytes wait in its buffers until a client attaches
                long id = ids.incrementAndGet();
                waiting.put(id, s);
                node.setTimer(ATTACH_TIMEOUT_MS, t -> {
                    NetSocket unclaimed = waiting.remove(id);
                    if (unclaimed != null) {
                        unclaimed.close();
                    }
                });
                Accepted a = Accepted.newBuilder().setId(id).setLocal(address(s.localAddress()))
                        .setRemote(address(s.remoteAddress())).build();
                endpoint.runOnContext(x -> {
                    if (!answers.ended) {
                        response.write(a);
                    }
                });
            });
            server.listen(port, "0.0.0.0").onComplete(ar -> endpoint.runOnContext(x -> {
                if (ar.failed()) {
                    listening.remove(port);
                    answers.fail(GrpcStatus.FAILED_PRECONDITION, "cannot listen on TCP port " + port + ": "
                            + ar.cause().getMessage());
                    return;
                }
                // The listener lives as long as the call: a cancelled or failed call closes it.
                servers.add(server);
                Runnable stop = () -> nodeContext.runOnContext(y -> {
                    servers.remove(server);
                    server.close().onComplete(c -> listening.remove(port));
                });
                requests.endHandler(y -> {
                    stop.run();
                    answers.end();
                });
                onGone(requests, () -> {
                    answers.gone();
                    stop.run();
                });
                requests.resume();
            }));
        });
    }

    @Override
    protected void attach(ReadStream<TcpClientMessage> request, WriteStream<TcpServerMessage> response) {
        Context endpoint = Vertx.currentContext();
        Answers answers = new Answers(response);
        first(request, answers, m -> m.getKindCase() == TcpClientMessage.KindCase.ATTACH, "Attach", "attach {id}",
                TcpClientMessage::getKindCase, first -> {
            NetSocket s = waiting.remove(first.getAttach());
            if (s == null) {
                answers.fail(GrpcStatus.NOT_FOUND, "no accepted connection " + first.getAttach()
                        + " waits (each waits " + ATTACH_TIMEOUT_MS / 1000 + " s for its Attach)");
                return;
            }
            bridge(s, request, response, answers, endpoint);
        });
    }

    /**
     * Carries {@code s}'s bytes both ways on the endpoint's context: answers {@code opened}, then the socket's
     * bytes; the request's {@code data} goes to the socket; the request's end closes the socket once its bytes
     * are out; the peer's close ends the answers; a reset or a cancelled call ends both.
     */
    private void bridge(NetSocket s, ReadStream<TcpClientMessage> request, WriteStream<TcpServerMessage> response,
                        Answers answers, Context endpoint) {
        response.write(TcpServerMessage.newBuilder().setOpened(Opened.newBuilder().setLocal(address(s.localAddress()))
                .setRemote(address(s.remoteAddress()))).build());
        nodeContext.runOnContext(v -> {
            Outstanding out = new Outstanding(s);
            s.handler(b -> {
                TcpServerMessage m = TcpServerMessage.newBuilder().setData(ByteString.copyFrom(b.getBytes())).build();
                endpoint.runOnContext(x -> out.write(response, m, b.length()));
            });
            s.exceptionHandler(e -> endpoint.runOnContext(x -> answers.fail(GrpcStatus.UNAVAILABLE,
                    "the connection failed: " + e.getMessage())));
            s.closeHandler(x -> endpoint.runOnContext(y -> answers.end()));
            s.resume(); // paused since it was opened or accepted, so nothing arrived before its handler
        });
        request.handler(m -> {
            if (m.getKindCase() != TcpClientMessage.KindCase.DATA) {
                answers.fail(GrpcStatus.INVALID_ARGUMENT, "after the first message, Connect and Attach take data only, not "
                        + m.getKindCase());
                nodeContext.runOnContext(v -> s.close());
                return;
            }
            Buffer b = Buffer.buffer(m.getData().toByteArray());
            nodeContext.runOnContext(v -> {
                s.write(b);
                if (s.writeQueueFull()) {
                    endpoint.runOnContext(x -> request.pause());
                    s.drainHandler(x -> endpoint.runOnContext(y -> request.resume()));
                }
            });
        });
        request.endHandler(v -> nodeContext.runOnContext(x -> s.end()));
        onGone(request, () -> {
            answers.gone();
            nodeContext.runOnContext(x -> s.close());
        });
        request.resume();
    }

    /**
     * The bytes a connection handed to its answer stream that are not yet written out: past {@link #HIGH} the
     * socket pauses, and it resumes once they drop to {@link #LOW}. Counted by the writes' own completions, so
     * it holds whatever gRPC's flow control does; on the endpoint's context.
     */
    private final class Outstanding {
        static final int HIGH = 1 << 20;
        static final int LOW = 256 << 10;
        private final NetSocket socket;
        private long bytes;
        private boolean paused;

        Outstanding(NetSocket socket) {
            this.socket = socket;
        }

        void write(WriteStream<TcpServerMessage> response, TcpServerMessage m, int length) {
            bytes += length;
            response.write(m).onComplete(ar -> {
                bytes -= length;
                if (paused && bytes <= LOW) {
                    paused = false;
                    nodeContext.runOnContext(v -> socket.resume());
                }
            });
            if (!paused && bytes >= HIGH) {
                paused = true;
                nodeContext.runOnContext(v -> socket.pause());
            }
        }
    }

    // ---- UDP -------------------------------------------------------------------------------

    @Override
    protected void udp(ReadStream<UdpClientMessage> request, WriteStream<UdpServerMessage> response) {
        Context endpoint = Vertx.currentContext();
        Answers answers = new Answers(response);
        first(request, answers, m -> m.getKindCase() == UdpClientMessage.KindCase.BIND, "Udp", "bind {port}",
                UdpClientMessage::getKindCase, first -> {
            int port = first.getBind().getPort();
            if (port > 65535) {
                answers.fail(GrpcStatus.INVALID_ARGUMENT, "UDP port " + port + " is outside 0..65535");
                return;
            }
            nodeContext.runOnContext(v -> {
                DatagramSocket socket = node.createDatagramSocket();
                datagramSockets.add(socket);
                socket.handler(p -> {
                    UdpServerMessage m = UdpServerMessage.newBuilder().setDatagram(Datagram.newBuilder()
                            .setHost(p.sender().hostAddress()).setPort(p.sender().port())
                            .setData(ByteString.copyFrom(p.data().getBytes()))).build();
                    endpoint.runOnContext(x -> {
                        if (!response.writeQueueFull()) { // UDP: a reader that keeps up gets them, as from a socket buffer
                            response.write(m);
                        }
                    });
                });
                socket.listen(port, "0.0.0.0").onComplete(ar -> endpoint.runOnContext(x -> {
                    if (ar.failed()) {
                        answers.fail(GrpcStatus.FAILED_PRECONDITION, "cannot bind UDP port " + port + ": " + ar.cause().getMessage());
                        return;
                    }
                    response.write(UdpServerMessage.newBuilder().setBound(socket.localAddress().port()).build());
                    request.handler(m -> {
                        if (m.getKindCase() != UdpClientMessage.KindCase.DATAGRAM) {
                            answers.fail(GrpcStatus.INVALID_ARGUMENT, "after bind, Udp takes datagrams only");
                            nodeContext.runOnContext(y -> closeUdp(socket));
                            return;
                        }
                        Datagram d = m.getDatagram();
                        Buffer b = Buffer.buffer(d.getData().toByteArray());
                        nodeContext.runOnContext(y -> socket.send(b, d.getPort(), d.getHost()));
                    });
                    request.endHandler(y -> nodeContext.runOnContext(z -> closeUdp(socket).onComplete(c ->
                            endpoint.runOnContext(w -> answers.end()))));
                    onGone(request, () -> {
                        answers.gone();
                        nodeContext.runOnContext(z -> closeUdp(socket));
                    });
                    request.resume();
                }));
            });
        });
    }

    /**
     * Takes the first message of a call, which must be {@code what} ({@code isWhat}), and gives it to {@code then};
     * any other fails the call with INVALID_ARGUMENT, naming what came ({@code kind}).
     */
    private static <T> void first(ReadStream<T> request, Answers answers, java.util.function.Predicate<T> isWhat, String call,
                                  String what, java.util.function.Function<T, Object> kind, java.util.function.Consumer<T> then) {
        request.pause();
        request.handler(m -> {
            if (!isWhat.test(m)) {
                answers.fail(GrpcStatus.INVALID_ARGUMENT, "the first message of " + call + " is " + what + ", not " + kind.apply(m));
                return;
            }
            then.accept(m);
        });
        request.fetch(1);
    }

    /** Runs {@code gone} once if the call is cancelled (a gRPC error from the client) or its stream breaks. */
    static void onGone(ReadStream<?> request, Runnable gone) {
        boolean[] once = {false};
        Runnable r = () -> {
            if (!once[0]) {
                once[0] = true;
                gone.run();
            }
        };
        ((io.vertx.grpc.server.GrpcServerRequest<?, ?>) request).errorHandler(e -> r.run());
        request.exceptionHandler(e -> r.run());
    }

    private io.vertx.core.Future<Void> closeUdp(DatagramSocket socket) {
        datagramSockets.remove(socket);
        return socket.close();
    }

    /** Accepted connections waiting for an Attach (for tests and counters). */
    int waitingForAttach() {
        return waiting.size();
    }

    /** Closes what calls still hold: connections (the client's and those waiting), listeners, UDP sockets. */
    io.vertx.core.Future<?> close() {
        java.util.List<io.vertx.core.Future<?>> all = new java.util.ArrayList<>();
        all.add(client.close());
        waiting.values().forEach(s -> all.add(s.close()));
        waiting.clear();
        servers.forEach(s -> all.add(s.close()));
        datagramSockets.forEach(d -> all.add(d.close()));
        return io.vertx.core.Future.join(all);
    }
}
