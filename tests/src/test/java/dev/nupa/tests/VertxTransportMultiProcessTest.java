package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.examples.HelloServer;
import dev.nupa.examples.grpc.GreeterGrpcClient;
import dev.nupa.examples.grpc.HelloReply;
import dev.nupa.examples.grpc.HelloRequest;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetSocket;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import java.net.ConnectException;
import java.net.SocketException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Unmodified Vert.x code over the fabric between two JVMs: {@link HelloServer} (HTTP/1.1 and h2c,
 * WebSocket, TCP echo, a resetting TCP server, UDP echo) runs in a child JVM on node 0, and this
 * JVM's Vert.x, on node 1, uses it with Vert.x's own clients.
 */
@Tag("process")
class VertxTransportMultiProcessTest {
    private static final String SERVER = "10.0.0.1";
    private static final long UPLOAD = 1L << 30; // 1 GiB, chunked
    private static Path fabric;
    private static ChildJvm server;
    private static Vertx vertx;

    @BeforeAll
    static void start() {
        fabric = ChildJvm.newFabricPath();
        server = ChildJvm.start("hello-server", HelloServer.class, fabric, 0);
        server.awaitLine("READY", 30_000);
        vertx = NupaVertx.create(StackConfig.defaults(fabric, 1));
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (vertx != null) {
                vertx.close().await(10, TimeUnit.SECONDS);
            }
        } finally {
            if (server != null) {
                server.close();
            }
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void http1KeepAliveAndPipelinedRequests() throws Exception {
        HttpClient keepAlive = vertx.createHttpClient(new PoolOptions().setHttp1MaxSize(1));
        for (int i = 0; i < 200; i++) {
            assertEquals("hello over the fabric\n", get(keepAlive, "/hello"));
        }
        keepAlive.close().await(10, TimeUnit.SECONDS);
        HttpClient pipelined = vertx.createHttpClient(new HttpClientOptions().setPipelining(true).setPipeliningLimit(16),
                new PoolOptions().setHttp1MaxSize(1));
        List<Future<String>> all = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            all.add(pipelined.request(HttpMethod.GET, 8080, SERVER, "/hello")
                    .compose(req -> req.send().compose(HttpClientResponse::body)).map(Buffer::toString));
        }
        Future.all(all).await(30, TimeUnit.SECONDS);
        for (Future<String> f : all) {
            assertEquals("hello over the fabric\n", f.result());
        }
        pipelined.close().await(10, TimeUnit.SECONDS);
    }

    @Test
    void http2CleartextWithManyStreams() throws Exception {
        HttpClient h2 = vertx.createHttpClient(new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2)
                .setHttp2ClearTextUpgrade(false));
        List<Future<String>> all = new ArrayList<>();
        for (int i = 0; i < 200; i++) { // streams of one connection, all at once
            all.add(h2.request(HttpMethod.GET, 8080, SERVER, "/hello").compose(req -> req.send())
                    .compose(resp -> resp.body().map(b -> resp.version() + " " + b)));
        }
        Future.all(all).await(30, TimeUnit.SECONDS);
        for (Future<String> f : all) {
            assertEquals("HTTP_2 hello over the fabric\n", f.result());
        }
        h2.close().await(10, TimeUnit.SECONDS);
    }

    @Test
    void aChunkedUploadOfOneGibArrivesWhole() throws Exception {
        HttpClient client = vertx.createHttpClient();
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        byte[] chunk = new byte[256 * 1024];
        Promise<String> answer = Promise.promise();
        vertx.runOnContext(v -> client.request(HttpMethod.POST, 8080, SERVER, "/sha256").onComplete(ar -> {
            if (ar.failed()) {
                answer.fail(ar.cause());
                return;
            }
            var req = ar.result().setChunked(true);
            req.response().compose(HttpClientResponse::body).map(Buffer::toString).onComplete(answer);
            long[] sent = {0};
            Runnable[] pump = new Runnable[1];
            pump[0] = () -> {
                while (!req.writeQueueFull() && sent[0] < UPLOAD) {
                    for (int i = 0; i < chunk.length; i += 8) { // bytes that follow from their offset
                        long at = sent[0] + i;
                        chunk[i] = (byte) at;
                        chunk[i + 1] = (byte) (at >>> 8);
                        chunk[i + 2] = (byte) (at >>> 16);
                        chunk[i + 3] = (byte) (at >>> 24);
                    }
                    sha.update(chunk);
                    req.write(Buffer.buffer(chunk));
                    sent[0] += chunk.length;
                }
                if (sent[0] < UPLOAD) {
                    req.drainHandler(x -> pump[0].run());
                } else {
                    req.end();
                }
            };
            pump[0].run();
        }));
        String got = answer.future().await(120, TimeUnit.SECONDS);
        assertEquals(HexFormat.of().formatHex(sha.digest()) + " " + UPLOAD, got, "the server's SHA-256 and byte count");
        client.close().await(10, TimeUnit.SECONDS);
    }

    @Test
    void aWebSocketEchoes() throws Exception {
        WebSocketClient wsc = vertx.createWebSocketClient();
        WebSocket ws = wsc.connect(8080, SERVER, "/ws").await(10, TimeUnit.SECONDS);
        Promise<String> back = Promise.promise();
        StringBuilder got = new StringBuilder();
        ws.textMessageHandler(t -> {
            got.append(t);
            if (got.length() == 5 * "frame over the fabric".length()) {
                back.complete(got.toString());
            }
        });
        for (int i = 0; i < 5; i++) {
            ws.writeTextMessage("frame over the fabric");
        }
        assertEquals("frame over the fabric".repeat(5), back.future().await(10, TimeUnit.SECONDS));
        ws.close().await(10, TimeUnit.SECONDS);
        wsc.close().await(10, TimeUnit.SECONDS);
    }

    @Test
    void aNetSocketPipeToEchoOfOneGibComesBackWhole() throws Exception {
        NetClient nc = vertx.createNetClient();
        NetSocket socket = nc.connect(7, SERVER).await(10, TimeUnit.SECONDS);
        MessageDigest sent = MessageDigest.getInstance("SHA-256");
        MessageDigest received = MessageDigest.getInstance("SHA-256");
        long total = 1L << 30;
        byte[] chunk = new byte[64 * 1024];
        Promise<Long> done = Promise.promise();
        vertx.runOnContext(v -> {
            long[] in = {0};
            socket.handler(b -> {
                received.update(b.getBytes());
                in[0] += b.length();
                if (in[0] == total) {
                    done.complete(in[0]);
                }
            });
            long[] out = {0};
            Runnable[] pump = new Runnable[1];
            pump[0] = () -> {
                while (!socket.writeQueueFull() && out[0] < total) {
                    chunk[(int) (out[0] >>> 16) % chunk.length] ^= (byte) (out[0] >>> 16); // no two chunks alike
                    sent.update(chunk);
                    socket.write(Buffer.buffer(chunk));
                    out[0] += chunk.length;
                }
                if (out[0] < total) {
                    socket.drainHandler(x -> pump[0].run());
                }
            };
            pump[0].run();
        });
        assertEquals(total, done.future().await(120, TimeUnit.SECONDS));
        assertEquals(HexFormat.of().formatHex(sent.digest()), HexFormat.of().formatHex(received.digest()));
        socket.close().await(10, TimeUnit.SECONDS);
        nc.close().await(10, TimeUnit.SECONDS);
    }

    @Test
    void datagramsAreEchoed() throws Exception {
        DatagramSocket socket = vertx.createDatagramSocket();
        int count = 1000;
        Promise<Void> all = Promise.promise();
        int[] got = {0};
        socket.handler(p -> {
            if (p.data().toString().startsWith("datagram ") && ++got[0] == count) {
                all.tryComplete();
            }
        });
        socket.listen(0, "0.0.0.0").await(10, TimeUnit.SECONDS);
        for (int i = 0; i < count; i++) {
            socket.send(Buffer.buffer("datagram " + i), 9, SERVER).await(10, TimeUnit.SECONDS);
        }
        all.future().await(10, TimeUnit.SECONDS);
        socket.close().await(10, TimeUnit.SECONDS);
    }

    @Test
    void refusedAndResetConnectionsRaiseWhatVertxUsersExpect() throws Exception {
        NetClient nc = vertx.createNetClient();
        Future<NetSocket> refused = nc.connect(4444, SERVER);
        Exception e = assertThrows(Exception.class, () -> refused.await(10, TimeUnit.SECONDS));
        assertInstanceOf(ConnectException.class, e, e.toString());

        NetSocket socket = nc.connect(8, SERVER).await(10, TimeUnit.SECONDS);
        AtomicReference<Throwable> error = new AtomicReference<>();
        Promise<Void> closed = Promise.promise();
        socket.exceptionHandler(error::set);
        socket.closeHandler(v -> closed.complete());
        socket.write("anything");
        closed.future().await(10, TimeUnit.SECONDS);
        assertInstanceOf(SocketException.class, error.get(), String.valueOf(error.get()));
        assertTrue(error.get().getMessage().contains("reset"), error.get().getMessage());
        nc.close().await(10, TimeUnit.SECONDS);
    }

    @Test
    void grpcUnaryAndBidirectionalStreamingWithFlowControl() throws Exception {
        GrpcClient grpc = GrpcClient.client(vertx);
        GreeterGrpcClient greeter = GreeterGrpcClient.create(grpc, SocketAddress.inetSocketAddress(HelloServer.GRPC_PORT, SERVER));
        for (int i = 0; i < 100; i++) {
            HelloReply r = greeter.sayHello(HelloRequest.newBuilder().setName("call " + i).build()).await(10, TimeUnit.SECONDS);
            assertEquals("hello call " + i, r.getMessage());
        }
        // A stream of 2,000 requests of 16 KiB (32 MiB) whose replies are read slowly at first: the
        // client may only write while its stream takes more, and every reply comes back, in order.
        int count = 2_000;
        byte[] payload = new byte[16 * 1024];
        Promise<Integer> replies = Promise.promise();
        long[] writesRefused = {0};
        vertx.runOnContext(v -> greeter.chat((requests, failure) -> {
            if (failure != null) {
                replies.tryFail(failure);
                return;
            }
            int[] sent = {0};
            Runnable[] pump = new Runnable[1];
            pump[0] = () -> {
                while (sent[0] < count) {
                    if (requests.writeQueueFull()) {
                        writesRefused[0]++;
                        requests.drainHandler(x -> pump[0].run());
                        return;
                    }
                    requests.write(HelloRequest.newBuilder().setName("m" + sent[0]++)
                            .setPayload(com.google.protobuf.ByteString.copyFrom(payload)).build());
                }
                requests.end();
            };
            pump[0].run();
        }).onComplete(ar -> {
            if (ar.failed()) {
                replies.tryFail(ar.cause());
                return;
            }
            var stream = ar.result();
            int[] got = {0};
            stream.pause(); // a slow reader: nothing is read for 200 ms
            vertx.setTimer(200, t -> stream.resume());
            stream.handler(r -> {
                if (!r.getMessage().equals("hello m" + got[0]) || r.getPayload().size() != payload.length) {
                    replies.tryFail("reply " + got[0] + " was " + r.getMessage());
                }
                got[0]++;
            });
            stream.endHandler(x -> replies.tryComplete(got[0]));
            stream.exceptionHandler(replies::tryFail);
        }));
        assertEquals(count, replies.future().await(60, TimeUnit.SECONDS));
        assertTrue(writesRefused[0] > 0, "the stream pushed back at least once while its replies were not read");
        grpc.close().await(10, TimeUnit.SECONDS);
    }

    /** One GET's body as text. */
    private static String get(HttpClient client, String path) throws Exception {
        return client.request(HttpMethod.GET, 8080, SERVER, path)
                .compose(req -> req.send().compose(HttpClientResponse::body)).await(10, TimeUnit.SECONDS).toString();
    }
}
