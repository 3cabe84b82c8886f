package dev.nupa.examples;

import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

import dev.nupa.examples.grpc.GreeterGrpcService;
import dev.nupa.examples.grpc.GreeterService;
import dev.nupa.examples.grpc.HelloReply;
import dev.nupa.examples.grpc.HelloRequest;
import dev.nupa.ip.Route;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.net.NetServerOptions;
import io.vertx.core.streams.ReadStream;
import io.vertx.core.streams.WriteStream;
import io.vertx.grpc.server.GrpcServer;

/**
 * Plain Vert.x services on a fabric node; nothing here knows about the fabric except the one line
 * that creates the Vert.x instance. Run with a fabric file, a node address (default 0, which is
 * 10.0.0.1) and routes beyond the fabric's subnet if any (to peers behind a gateway, docs/gateway.md);
 * stops on Ctrl-C, and the node leaves the fabric.
 * <ul>
 *   <li>HTTP on 8080 (HTTP/1.1 and h2c): {@code GET /hello} answers a line of text; {@code POST /sha256}
 *       answers the SHA-256 of the body it received (chunked or not, any size); {@code /ws} is a
 *       WebSocket echo.</li>
 *   <li>TCP echo on 7 (NetSocket.pipeTo), on 8 a server that resets every connection once it
 *       has read something (SO_LINGER 0), TCP discard on 9, and TCP chargen on 19 (RFC 864: text
 *       until the client closes, written as fast as the connection takes it).</li>
 *   <li>UDP echo on 9 (DatagramSocket).</li>
 *   <li>gRPC on 50051: the {@code Greeter} service of {@code src/main/proto/hello.proto}, a unary
 *       call and a bidirectional stream that answers every request (with back-pressure: the
 *       requests are paused while the replies cannot be written).</li>
 * </ul>
 */
public final class HelloServer {
    private HelloServer() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: HelloServer FABRIC_FILE [NODE_ADDRESS [ROUTE...]]   (e.g. /dev/shm/f1 0,"
                    + " or /dev/shm/f1 1 \"192.168.77.0/24 via 10.0.0.1\" behind a gateway)");
            System.exit(2);
        }
        int node = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        List<Route> routes = new java.util.ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            routes.add(Route.parse(args[i]));
        }
        Vertx vertx = NupaVertx.create(StackConfig.defaults(Path.of(args[0]), node).withRoutes(routes));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> vertx.close().await()));
        String me = NupaVertx.stack(vertx).ip().config().toString();
        start(vertx).await();
        System.out.println("READY " + me + ": HTTP 8080 (/hello, /sha256, /ws), TCP echo 7, TCP reset 8, TCP discard 9, TCP chargen 19, UDP echo 9, gRPC 50051");
        Thread.currentThread().join(); // the event loop serves until Ctrl-C
    }

    /** Starts the services on {@code vertx}; the Future completes once all of them listen. */
    public static Future<?> start(Vertx vertx) {
        Future<?> http = vertx.createHttpServer()
                .webSocketHandler(ws -> {
                    ws.textMessageHandler(ws::writeTextMessage);
                    ws.binaryMessageHandler(ws::writeBinaryMessage);
                })
                .requestHandler(req -> {
                    if (req.method() == HttpMethod.GET && req.path().equals("/hello")) {
                        req.response().putHeader("content-type", "text/plain").end("hello over the fabric\n");
                    } else if (req.method() == HttpMethod.POST && req.path().equals("/sha256")) {
                        MessageDigest sha = sha256();
                        long[] bytes = {0};
                        req.handler(b -> {
                            sha.update(b.getBytes());
                            bytes[0] += b.length();
                        });
                        req.endHandler(v -> req.response().end(HexFormat.of().formatHex(sha.digest()) + " " + bytes[0]));
                    } else {
                        req.response().setStatusCode(404).end();
                    }
                })
                .listen(8080, "0.0.0.0");
        Future<?> echo = vertx.createNetServer().connectHandler(s -> s.pipeTo(s)).listen(7, "0.0.0.0");
        Future<?> reset = vertx.createNetServer(new NetServerOptions().setSoLinger(0))
                .connectHandler(s -> s.handler(b -> s.close())).listen(8, "0.0.0.0");
        DatagramSocket udp = vertx.createDatagramSocket();
        udp.handler(p -> udp.send(p.data(), p.sender().port(), p.sender().host()));
        Future<?> datagrams = udp.listen(9, "0.0.0.0");
        // TCP discard (RFC 863): reads everything, answers nothing, ends when the client ends.
        Future<?> discard = vertx.createNetServer().connectHandler(s -> s.handler(b -> { }).endHandler(v -> s.end()))
                .listen(9, "0.0.0.0");
        Future<?> chargen = vertx.createNetServer().connectHandler(HelloServer::chargen).listen(19, "0.0.0.0");
        return Future.all(List.of(http, echo, reset, datagrams, discard, chargen, startGreeter(vertx, GRPC_PORT)));
    }

    /** RFC 864's pattern: lines of 72 of the 95 printable characters, each line starting one character further on. */
    private static final io.vertx.core.buffer.Buffer CHARGEN = chargenPattern();

    private static io.vertx.core.buffer.Buffer chargenPattern() {
        StringBuilder period = new StringBuilder();
        for (int line = 0; line < 95; line++) {
            for (int i = 0; i < 72; i++) {
                period.append((char) (' ' + (line + i) % 95));
            }
            period.append("\r\n");
        }
        // Whole periods (95 lines) fill about 64 KiB, so buffer after buffer continues the pattern.
        return io.vertx.core.buffer.Buffer.buffer(period.toString().repeat(65_536 / period.length()));
    }

    /** Writes the pattern while the connection takes it, again when it drains, until the client closes; reads are discarded. */
    private static void chargen(io.vertx.core.net.NetSocket s) {
        s.handler(b -> { });
        Runnable[] fill = new Runnable[1];
        fill[0] = () -> {
            while (!s.writeQueueFull()) {
                s.write(CHARGEN).onFailure(e -> s.close());
            }
            s.drainHandler(v -> fill[0].run());
        };
        s.endHandler(v -> s.close());
        fill[0].run();
    }

    /** The gRPC Greeter alone, on {@code port} of every address. */
    public static Future<?> startGreeter(Vertx vertx, int port) {
        return startGreeter(vertx, io.vertx.core.net.SocketAddress.inetSocketAddress(port, "0.0.0.0"));
    }

    /** The same on {@code address} (a Unix domain socket's too, on a native transport). */
    public static Future<?> startGreeter(Vertx vertx, io.vertx.core.net.SocketAddress address) {
        GrpcServer grpc = GrpcServer.server(vertx);
        grpc.addService(GreeterGrpcService.of(new Greeter()));
        return vertx.createHttpServer().requestHandler(grpc).listen(address);
    }

    /** The gRPC port of {@link #start}. */
    public static final int GRPC_PORT = 50051;

    /** The Greeter service (generated from hello.proto). */
    static final class Greeter extends GreeterService {
        @Override
        public Future<HelloReply> sayHello(HelloRequest request) {
            return Future.succeededFuture(HelloReply.newBuilder().setMessage("hello " + request.getName())
                    .setPayload(request.getPayload()).build());
        }

        @Override
        protected void chat(ReadStream<HelloRequest> requests, WriteStream<HelloReply> replies) {
            requests.handler(r -> {
                replies.write(HelloReply.newBuilder().setMessage("hello " + r.getName()).setPayload(r.getPayload()).build());
                if (replies.writeQueueFull()) { // a slow reader of replies slows the requests down
                    requests.pause();
                    replies.drainHandler(v -> requests.resume());
                }
            });
            requests.endHandler(v -> replies.end());
        }
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK always has SHA-256", e);
        }
    }
}
