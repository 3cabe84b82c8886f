package dev.nupa.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServer;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetServer;
import io.vertx.core.net.NetSocket;
import java.net.ConnectException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Unmodified Vert.x code over the fabric: two Vert.x instances, each on its own fabric node (one
 * file, one JVM), talk TCP (NetServer/NetClient), HTTP/1.1 and UDP (DatagramSocket) to each other.
 */
class NupaVertxTest {
    private Path fabric;
    private Vertx server;
    private Vertx client;

    @BeforeEach
    void start() {
        fabric = Path.of("/dev/shm/nupa-test-vertx-" + UUID.randomUUID());
        server = NupaVertx.create(StackConfig.defaults(fabric, 0)); // 10.0.0.1
        client = NupaVertx.create(StackConfig.defaults(fabric, 1)); // 10.0.0.2
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (client != null) {
                client.close().await(10, TimeUnit.SECONDS);
            }
            if (server != null) {
                server.close().await(10, TimeUnit.SECONDS);
            }
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void netSocketEchoesWithPipeToAndTheStackRunsOnTheEventLoop() throws Exception {
        AtomicReference<String> serverThread = new AtomicReference<>();
        NetServer echo = server.createNetServer().connectHandler(s -> {
            serverThread.set(Thread.currentThread().getName() + " owner=" + NupaVertx.stack(server).link().isOwner());
            s.pipeTo(s);
        });
        echo.listen(7, "0.0.0.0").await(10, TimeUnit.SECONDS);
        assertEquals(7, echo.actualPort());

        byte[] data = new byte[8 << 20];
        new Random(7).nextBytes(data);
        NetClient nc = client.createNetClient();
        NetSocket socket = nc.connect(7, "10.0.0.1").await(10, TimeUnit.SECONDS);
        assertEquals("10.0.0.1:7", socket.remoteAddress().toString());
        Buffer received = Buffer.buffer(data.length);
        Promise<Void> all = Promise.promise();
        socket.handler(b -> {
            received.appendBuffer(b);
            if (received.length() == data.length) {
                all.tryComplete();
            }
        });
        for (int at = 0; at < data.length; at += 64 * 1024) {
            socket.write(Buffer.buffer(java.util.Arrays.copyOfRange(data, at, Math.min(data.length, at + 64 * 1024))));
        }
        all.future().await(30, TimeUnit.SECONDS);
        assertArrayEquals(data, received.getBytes());
        assertTrue(serverThread.get().endsWith("owner=true"), "the handler ran on the node's owner thread: " + serverThread.get());
        Promise<Void> closed = Promise.promise();
        socket.closeHandler(v -> closed.complete());
        socket.close();
        closed.future().await(10, TimeUnit.SECONDS); // at once, not after TIME-WAIT
    }

    @Test
    void httpRequestsGetTheirAnswers() throws Exception {
        HttpServer http = server.createHttpServer().requestHandler(req -> req.body().onSuccess(body ->
                req.response().putHeader("content-type", "text/plain").end(req.method() + " " + req.path() + " " + body.length())));
        http.listen(8080, "0.0.0.0").await(10, TimeUnit.SECONDS);
        HttpClient hc = client.createHttpClient();
        for (int i = 0; i < 50; i++) { // keep-alive: one connection, many requests
            Buffer upload = Buffer.buffer(new byte[i * 1000]);
            String body = hc.request(HttpMethod.POST, 8080, "10.0.0.1", "/echo/" + i)
                    .compose(req -> req.send(upload).compose(HttpClientResponse::body))
                    .await(10, TimeUnit.SECONDS).toString();
            assertEquals("POST /echo/" + i + " " + (i * 1000), body);
        }
    }

    @Test
    void datagramsAreEchoed() throws Exception {
        DatagramSocket echo = server.createDatagramSocket();
        echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
        echo.listen(9, "0.0.0.0").await(10, TimeUnit.SECONDS);
        DatagramSocket socket = client.createDatagramSocket();
        int count = 200;
        Promise<Void> all = Promise.promise();
        int[] got = {0};
        socket.handler(p -> {
            if (++got[0] == count) {
                all.tryComplete();
            }
        });
        socket.listen(0, "0.0.0.0").await(10, TimeUnit.SECONDS);
        for (int i = 0; i < count; i++) {
            socket.send(Buffer.buffer("datagram " + i), 9, "10.0.0.1").await(10, TimeUnit.SECONDS);
        }
        all.future().await(10, TimeUnit.SECONDS);
        assertEquals(count, got[0]);
    }

    @Test
    void aClosedPortRefusesTheConnection() {
        Future<NetSocket> f = client.createNetClient().connect(4444, "10.0.0.1");
        Exception e = assertThrows(Exception.class, () -> f.await(10, TimeUnit.SECONDS));
        assertInstanceOf(ConnectException.class, e, e.toString());
    }
}
