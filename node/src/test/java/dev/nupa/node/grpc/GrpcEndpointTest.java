package dev.nupa.node.grpc;

import dev.nupa.node.NodeConfig;
import dev.nupa.node.NupaNode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.MessageLite;
import dev.nupa.node.admin.AdminGrpcClient;
import dev.nupa.node.admin.Connections;
import dev.nupa.node.admin.ConnectionsRequest;
import dev.nupa.node.admin.Counter;
import dev.nupa.node.admin.Counters;
import dev.nupa.node.admin.CountersRequest;
import dev.nupa.node.admin.InfoRequest;
import dev.nupa.node.admin.Neighbors;
import dev.nupa.node.admin.NeighborsRequest;
import dev.nupa.node.admin.NodeInfo;
import dev.nupa.node.admin.Routes;
import dev.nupa.node.admin.RoutesRequest;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetSocket;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.InvalidStatusException;
import io.vertx.grpc.common.GrpcMessageDecoder;
import io.vertx.grpc.common.GrpcMessageEncoder;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.ServiceMethod;
import io.vertx.grpc.common.ServiceName;
import io.vertx.grpc.health.v1.HealthCheckRequest;
import io.vertx.grpc.health.v1.HealthCheckResponse;
import io.vertx.grpc.reflection.v1.ServerReflectionRequest;
import io.vertx.grpc.reflection.v1.ServerReflectionResponse;
import io.vertx.grpc.reflection.v1.ServiceResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The node's management endpoint, called as a tool in another process would: over Linux TCP with Vert.x's
 * gRPC client, the Admin service's answers checked against the node, the standard health and reflection
 * services, and the bearer token enforced.
 */
class GrpcEndpointTest {
    private Path fabric;
    private NupaNode node;
    private NupaNode peer;
    private GrpcEndpoint endpoint;
    private Vertx tool;
    private GrpcClient grpc;

    @BeforeEach
    void start() throws Exception {
        fabric = Path.of("/dev/shm/nupa-test-grpc-" + UUID.randomUUID());
        node = NupaNode.create(NodeConfig.defaults(fabric, 0)).await(30, TimeUnit.SECONDS);
        peer = NupaNode.create(NodeConfig.defaults(fabric, 1)).await(30, TimeUnit.SECONDS);
        tool = Vertx.vertx();
        grpc = GrpcClient.client(tool);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (endpoint != null) {
                endpoint.close().await(10, TimeUnit.SECONDS);
            }
            tool.close().await(10, TimeUnit.SECONDS);
            peer.closeAndWait();
            node.closeAndWait();
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    private SocketAddress at() {
        return SocketAddress.inetSocketAddress(endpoint.port(), "127.0.0.1");
    }

    private static final ServiceName ADMIN = ServiceName.create("nupa.admin.v1", "Admin");

    /** One unary call through Vert.x's generic client, with {@code authorization} if not null. */
    private <Req extends MessageLite, Resp> Future<Resp> call(ServiceName service, String method, Req request,
                                                               GrpcMessageDecoder<Resp> decoder, String authorization) {
        ServiceMethod<Resp, Req> m = ServiceMethod.client(service, method, GrpcMessageEncoder.encoder(), decoder);
        return grpc.request(at(), m).compose(req -> {
            if (authorization != null) {
                req.headers().set("authorization", authorization);
            }
            req.end(request);
            return req.response().compose(resp -> resp.last());
        });
    }

    @Test
    void theAdminServiceAnswersWithTheNodesState() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        AdminGrpcClient admin = AdminGrpcClient.create(grpc, at());

        NodeInfo info = admin.getInfo(InfoRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        assertEquals(fabric.toString(), info.getFabric());
        assertEquals(0, info.getFabricAddress());
        assertEquals("10.0.0.1", info.getIpv4());
        assertEquals(24, info.getPrefixLength());
        assertEquals(node.link().mtu(), info.getMtu());
        assertEquals(1, info.getEventLoops());
        assertEquals(ProcessHandle.current().pid(), info.getPid());

        // A TCP connection from the peer node, seen by the Admin service with its addresses and state.
        node.vertx().createNetServer().connectHandler(s -> { }).listen(7, "0.0.0.0").await(10, TimeUnit.SECONDS);
        NetClient nc = peer.vertx().createNetClient();
        NetSocket s = nc.connect(7, "10.0.0.1").await(10, TimeUnit.SECONDS);
        // The client's connect completes on the SYN-ACK; the server's side is established once the ACK is in.
        Connections conns = admin.listConnections(ConnectionsRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        for (long end = System.nanoTime() + 10_000_000_000L; conns.getTcpCount() == 1 && !conns.getTcp(0).getState().equals("ESTABLISHED")
                && System.nanoTime() < end; ) {
            Thread.sleep(1);
            conns = admin.listConnections(ConnectionsRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        }
        assertEquals(1, conns.getTcpCount(), conns.toString());
        assertEquals("10.0.0.1:7", conns.getTcp(0).getLocal());
        assertEquals("10.0.0.2:" + s.localAddress().port(), conns.getTcp(0).getRemote());
        assertEquals("ESTABLISHED", conns.getTcp(0).getState());
        assertEquals(1, conns.getTcpStatesOrThrow("ESTABLISHED"));
        Connections none = admin.listConnections(ConnectionsRequest.newBuilder().setLimit(0).build()).await(10, TimeUnit.SECONDS);
        assertEquals(false, none.getTruncated());

        Counters tcp = admin.getCounters(CountersRequest.newBuilder().setLayer("tcp").build()).await(10, TimeUnit.SECONDS);
        assertEquals(node.tcp().counters().size(), tcp.getCountersCount(), "every TCP counter, and only those");
        assertEquals(1, value(tcp.getCountersList(), "tcp", "connections_accepted"));
        Counters all = admin.getCounters(CountersRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        for (String layer : List.of("fabric", "link", "ip", "tcp", "rdma")) {
            assertTrue(all.getCountersList().stream().anyMatch(c -> c.getLayer().equals(layer)), "counters of " + layer);
        }
        assertTrue(value(all.getCountersList(), "ip", "in_receives") > 0);
        assertTrue(value(all.getCountersList(), "fabric", "frames_received") > 0, "the fabric device's own counters");
        InvalidStatusException bad = assertInstanceOf(InvalidStatusException.class, assertThrows(Exception.class,
                () -> admin.getCounters(CountersRequest.newBuilder().setLayer("udp").build()).await(10, TimeUnit.SECONDS)));
        assertEquals(GrpcStatus.INVALID_ARGUMENT, bad.actualStatus());

        Neighbors neighbors = admin.listNeighbors(NeighborsRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        assertTrue(neighbors.getNeighborsList().stream().anyMatch(n -> n.getIpv4().equals("10.0.0.2") && n.getFabricAddress() == 1),
                "the peer node is a neighbor: " + neighbors);
        dev.nupa.node.admin.Peers peers = admin.listPeers(dev.nupa.node.admin.PeersRequest.getDefaultInstance())
                .await(10, TimeUnit.SECONDS);
        assertEquals(2, peers.getPeersCount(), peers.toString());
        for (dev.nupa.node.admin.Peer p : peers.getPeersList()) {
            assertEquals("UP", p.getState(), p.toString());
            assertEquals(ProcessHandle.current().pid(), p.getPid(), "both nodes run in this process");
            assertEquals(p.getFabricAddress() == 0, p.getSelf());
            assertEquals(List.of(p.getFabricAddress() == 0 ? "10.0.0.1" : "10.0.0.2"), p.getIpv4List());
            assertTrue(p.getFramesSent() > 0 && p.getFramesReceived() > 0, "the TCP connection's frames: " + p);
        }
        Routes routes = admin.listRoutes(RoutesRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        assertTrue(routes.getRoutesList().stream().anyMatch(r -> r.getPrefix().equals("10.0.0.0") && r.getPrefixLength() == 24
                && r.getGateway().isEmpty()), "the on-link route of the subnet: " + routes);
        s.close().await(10, TimeUnit.SECONDS);
        nc.close().await(10, TimeUnit.SECONDS);
    }

    private static long value(List<Counter> counters, String layer, String name) {
        return counters.stream().filter(c -> c.getLayer().equals(layer) && c.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no counter " + layer + "." + name)).getValue();
    }

    @Test
    void healthAndReflectionAnswerAsTheStandardServices() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        HealthCheckResponse health = call(ServiceName.create("grpc.health.v1", "Health"), "Check",
                HealthCheckRequest.newBuilder().setService(GrpcEndpoint.ADMIN_SERVICE).build(),
                GrpcMessageDecoder.<HealthCheckResponse>decoder(HealthCheckResponse.newBuilder()), null).await(10, TimeUnit.SECONDS);
        assertEquals(HealthCheckResponse.ServingStatus.SERVING, health.getStatus());

        ServerReflectionResponse listed = call(ServiceName.create("grpc.reflection.v1", "ServerReflection"),
                "ServerReflectionInfo", ServerReflectionRequest.newBuilder().setListServices("").build(),
                GrpcMessageDecoder.<ServerReflectionResponse>decoder(ServerReflectionResponse.newBuilder()), null).await(10, TimeUnit.SECONDS);
        List<String> names = listed.getListServicesResponse().getServiceList().stream().map(ServiceResponse::getName).toList();
        assertTrue(names.contains(GrpcEndpoint.ADMIN_SERVICE), "reflection lists the Admin service: " + names);
    }

    @Test
    void withATokenACallWithoutItIsRefusedAndOneWithItAnswered() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, "s3cret-token").await(10, TimeUnit.SECONDS);
        for (String wrong : new String[] {null, "Bearer guess", "s3cret-token"}) {
            Exception e = assertThrows(Exception.class, () -> call(ADMIN, "GetInfo", InfoRequest.getDefaultInstance(),
                    GrpcMessageDecoder.<NodeInfo>decoder(NodeInfo.newBuilder()), wrong).await(10, TimeUnit.SECONDS));
            assertEquals(GrpcStatus.UNAUTHENTICATED, assertInstanceOf(InvalidStatusException.class, e).actualStatus(),
                    "refused with " + wrong);
        }
        assertEquals(3, endpoint.refused());
        NodeInfo info = call(ADMIN, "GetInfo", InfoRequest.getDefaultInstance(), GrpcMessageDecoder.<NodeInfo>decoder(NodeInfo.newBuilder()),
                "Bearer s3cret-token").await(10, TimeUnit.SECONDS);
        assertEquals("10.0.0.1", info.getIpv4());
    }

    @Test
    void withMutualTlsOnlyAClientWithACertificateOfTheTrustedAuthorityIsAnswered() throws Exception {
        io.vertx.core.net.SelfSignedCertificate server = io.vertx.core.net.SelfSignedCertificate.create("localhost");
        io.vertx.core.net.SelfSignedCertificate client = io.vertx.core.net.SelfSignedCertificate.create("client");
        io.vertx.core.net.SelfSignedCertificate stranger = io.vertx.core.net.SelfSignedCertificate.create("stranger");
        try {
            // With mutual TLS the endpoint may listen beyond loopback, as with a token.
            endpoint = GrpcEndpoint.start(node, fabric.toString(), "0.0.0.0", 0, null, new GrpcEndpoint.MutualTls(
                    Path.of(server.certificatePath()), Path.of(server.privateKeyPath()), Path.of(client.certificatePath())))
                    .await(10, TimeUnit.SECONDS);
            java.util.function.Function<io.vertx.core.net.PemKeyCertOptions, GrpcClient> tlsClient = cert -> {
                io.vertx.core.http.HttpClientOptions o = new io.vertx.core.http.HttpClientOptions().setSsl(true).setUseAlpn(true)
                        .setProtocolVersion(io.vertx.core.http.HttpVersion.HTTP_2).setTrustOptions(server.trustOptions())
                        .setVerifyHost(false);
                return GrpcClient.client(tool, cert != null ? o.setKeyCertOptions(cert) : o);
            };
            NodeInfo info = AdminGrpcClient.create(tlsClient.apply(client.keyCertOptions()), at())
                    .getInfo(InfoRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
            assertEquals("10.0.0.1", info.getIpv4(), "a client with a certificate the endpoint trusts is answered");
            Exception none = assertThrows(Exception.class, () -> AdminGrpcClient.create(tlsClient.apply(null), at())
                    .getInfo(InfoRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS));
            assertEquals(GrpcStatus.UNAUTHENTICATED, assertInstanceOf(InvalidStatusException.class, none).actualStatus());
            assertEquals(1, endpoint.refused());
            assertThrows(Exception.class, () -> AdminGrpcClient.create(tlsClient.apply(stranger.keyCertOptions()), at())
                    .getInfo(InfoRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS), "another authority's client fails its handshake");
            // Plain text is not spoken at all.
            assertThrows(Exception.class, () -> call(ADMIN, "GetInfo", InfoRequest.getDefaultInstance(),
                    GrpcMessageDecoder.<NodeInfo>decoder(NodeInfo.newBuilder()), null).await(10, TimeUnit.SECONDS));
        } finally {
            server.delete();
            client.delete();
            stranger.delete();
        }
    }

    @Test
    void overTheFabricAnotherNodesVertxCallsTheSameServicesWithTheSameToken() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, "fabric-token").await(10, TimeUnit.SECONDS);
        int port = endpoint.listenOnFabric(0).await(10, TimeUnit.SECONDS);
        // A client on the peer node's Vert.x: the call goes over the fabric through the transport, not Linux TCP.
        GrpcClient overFabric = GrpcClient.client(peer.vertx());
        SocketAddress node0 = SocketAddress.inetSocketAddress(port, "10.0.0.1");
        ServiceMethod<NodeInfo, InfoRequest> getInfo = ServiceMethod.client(ADMIN, "GetInfo", GrpcMessageEncoder.encoder(),
                GrpcMessageDecoder.decoder(NodeInfo.newBuilder()));
        java.util.function.Function<String, Future<NodeInfo>> call = auth -> overFabric.request(node0, getInfo).compose(req -> {
            if (auth != null) {
                req.headers().set("authorization", auth);
            }
            req.end(InfoRequest.getDefaultInstance());
            return req.response().compose(r -> r.last());
        });
        long before = node.link().call(() -> node.tcp().counter(dev.nupa.tcp.TcpCounter.CONNECTIONS_ACCEPTED));
        assertEquals("10.0.0.1", call.apply("Bearer fabric-token").await(10, TimeUnit.SECONDS).getIpv4());
        assertTrue(node.link().call(() -> node.tcp().counter(dev.nupa.tcp.TcpCounter.CONNECTIONS_ACCEPTED)) > before, "the node's own TCP accepted the call");
        Exception e = assertThrows(Exception.class, () -> call.apply(null).await(10, TimeUnit.SECONDS));
        assertEquals(GrpcStatus.UNAUTHENTICATED, assertInstanceOf(InvalidStatusException.class, e).actualStatus());
        assertThrows(IllegalStateException.class, () -> endpoint.listenOnFabric(0).await(10, TimeUnit.SECONDS));
        overFabric.close().await(10, TimeUnit.SECONDS);
    }

    @Test
    void withoutATokenTheEndpointListensOnLoopbackOnly() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> GrpcEndpoint.start(node, fabric.toString(), "0.0.0.0", 0, null).await(10, TimeUnit.SECONDS));
        assertTrue(e.getMessage().contains("bearer token"), e.getMessage());
    }
    // ---- the Sockets service ----------------------------------------------------------------

    /** The client side of a Sockets stream: messages written, answers collected. */
    private static final class Stream<Req, Resp> {
        final io.vertx.grpc.client.GrpcClientRequest<Req, Resp> request;
        final java.util.concurrent.LinkedBlockingQueue<Resp> answers = new java.util.concurrent.LinkedBlockingQueue<>();
        final java.util.concurrent.CompletableFuture<io.vertx.grpc.common.GrpcStatus> status = new java.util.concurrent.CompletableFuture<>();
        final java.util.concurrent.CompletableFuture<io.vertx.grpc.client.GrpcClientResponse<Req, Resp>> response =
                new java.util.concurrent.CompletableFuture<>();
        volatile io.vertx.core.Context context;

        /** Reads the answers of a stream opened paused, on the client's context. */
        void resume() throws Exception {
            io.vertx.grpc.client.GrpcClientResponse<Req, Resp> r = response.get(10, TimeUnit.SECONDS);
            context.runOnContext(v -> r.resume());
        }

        Stream(io.vertx.grpc.client.GrpcClientRequest<Req, Resp> request, boolean paused) {
            this.request = request;
            request.response().onComplete(ar -> {
                if (ar.failed()) {
                    status.completeExceptionally(ar.cause());
                    response.completeExceptionally(ar.cause());
                    return;
                }
                if (paused) {
                    ar.result().pause();
                }
                context = Vertx.currentContext();
                response.complete(ar.result());
                ar.result().handler(answers::add);
                ar.result().endHandler(v -> status.complete(ar.result().status()));
                ar.result().exceptionHandler(status::completeExceptionally);
            });
        }

        Resp next() throws InterruptedException {
            Resp r = answers.poll(10, TimeUnit.SECONDS);
            if (r == null) {
                throw new AssertionError("no answer in 10 s; status " + status);
            }
            return r;
        }
    }

    private <Req extends MessageLite, Resp> Stream<Req, Resp> open(String method, GrpcMessageDecoder<Resp> decoder) throws Exception {
        return open(method, decoder, false);
    }

    /** A Sockets call; with {@code paused}, its answers are not read until the test resumes them. */
    private <Req extends MessageLite, Resp> Stream<Req, Resp> open(String method, GrpcMessageDecoder<Resp> decoder, boolean paused)
            throws Exception {
        ServiceMethod<Resp, Req> m = ServiceMethod.client(ServiceName.create("nupa.sockets.v1", "Sockets"), method,
                GrpcMessageEncoder.encoder(), decoder);
        return new Stream<>(grpc.request(at(), m).await(10, TimeUnit.SECONDS), paused);
    }

    private static dev.nupa.node.sockets.TcpClientMessage data(byte[] b) {
        return dev.nupa.node.sockets.TcpClientMessage.newBuilder().setData(com.google.protobuf.ByteString.copyFrom(b)).build();
    }

    /** Reads data answers until {@code n} bytes came. */
    private static byte[] read(Stream<?, dev.nupa.node.sockets.TcpServerMessage> s, int n) throws Exception {
        java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
        while (got.size() < n) {
            dev.nupa.node.sockets.TcpServerMessage m;
            try {
                m = s.next();
            } catch (AssertionError e) {
                throw new AssertionError("after " + got.size() + " B: " + e.getMessage(), e);
            }
            assertEquals(dev.nupa.node.sockets.TcpServerMessage.KindCase.DATA, m.getKindCase(), m.toString());
            got.write(m.getData().toByteArray());
        }
        return got.toByteArray();
    }

    @Test
    void aTcpConnectionThroughTheSocketsServiceEchoesAndLeavesNothingBehind() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        peer.vertx().createNetServer().connectHandler(s -> s.pipeTo(s)).listen(7, "0.0.0.0").await(10, TimeUnit.SECONDS);
        Stream<dev.nupa.node.sockets.TcpClientMessage, dev.nupa.node.sockets.TcpServerMessage> s =
                open("Connect", GrpcMessageDecoder.<dev.nupa.node.sockets.TcpServerMessage>decoder(
                        dev.nupa.node.sockets.TcpServerMessage.newBuilder()));
        s.request.write(dev.nupa.node.sockets.TcpClientMessage.newBuilder()
                .setOpen(dev.nupa.node.sockets.Open.newBuilder().setHost("10.0.0.2").setPort(7)).build());
        dev.nupa.node.sockets.TcpServerMessage opened = s.next();
        assertEquals("10.0.0.2:7", opened.getOpened().getRemote());
        assertTrue(opened.getOpened().getLocal().startsWith("10.0.0.1:"), opened.toString());
        byte[] sent = new byte[1 << 20];
        new java.util.Random(5).nextBytes(sent);
        for (int at = 0; at < sent.length; at += 16 * 1024) {
            s.request.write(data(java.util.Arrays.copyOfRange(sent, at, at + 16 * 1024)));
        }
        org.junit.jupiter.api.Assertions.assertArrayEquals(sent, read(s, sent.length), "1 MiB echoed through the node");
        s.request.end(); // closes the connection
        assertEquals(GrpcStatus.OK, s.status.get(10, TimeUnit.SECONDS));
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (node.tcp().states().getOrDefault(dev.nupa.tcp.TcpState.ESTABLISHED, 0) > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, node.tcp().states().getOrDefault(dev.nupa.tcp.TcpState.ESTABLISHED, 0), "the connection closed");
    }

    @Test
    void aGrpcClientThatDoesNotReadThrottlesThePeerThroughTheNode() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        int total = 32 << 20;
        java.util.concurrent.atomic.AtomicLong written = new java.util.concurrent.atomic.AtomicLong();
        io.vertx.core.buffer.Buffer chunk = io.vertx.core.buffer.Buffer.buffer(new byte[64 * 1024]);
        peer.vertx().createNetServer().connectHandler(s -> { // writes as fast as the connection takes it
            Runnable[] pump = new Runnable[1];
            pump[0] = () -> {
                while (!s.writeQueueFull() && written.get() < total) {
                    s.write(chunk);
                    written.addAndGet(chunk.length());
                }
                if (written.get() < total) {
                    s.drainHandler(v -> pump[0].run());
                }
            };
            pump[0].run();
        }).listen(7, "0.0.0.0").await(10, TimeUnit.SECONDS);
        Stream<dev.nupa.node.sockets.TcpClientMessage, dev.nupa.node.sockets.TcpServerMessage> s =
                open("Connect", GrpcMessageDecoder.<dev.nupa.node.sockets.TcpServerMessage>decoder(
                        dev.nupa.node.sockets.TcpServerMessage.newBuilder()), true);
        s.request.write(dev.nupa.node.sockets.TcpClientMessage.newBuilder()
                .setOpen(dev.nupa.node.sockets.Open.newBuilder().setHost("10.0.0.2").setPort(7)).build());
        Thread.sleep(2000); // the client reads nothing meanwhile
        long held = written.get();
        assertTrue(held > 0 && held < 8 << 20, "the peer was held back, not let write all " + total + " B: " + held + " B written");
        s.resume();
        assertTrue(s.next().hasOpened());
        assertEquals(total, read(s, total).length, "everything arrived once the client read");
        s.request.end();
        assertEquals(GrpcStatus.OK, s.status.get(10, TimeUnit.SECONDS));
    }

    @Test
    void aRefusedConnectionFailsTheCallWithUnavailable() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        Stream<dev.nupa.node.sockets.TcpClientMessage, dev.nupa.node.sockets.TcpServerMessage> s =
                open("Connect", GrpcMessageDecoder.<dev.nupa.node.sockets.TcpServerMessage>decoder(
                        dev.nupa.node.sockets.TcpServerMessage.newBuilder()));
        s.request.write(dev.nupa.node.sockets.TcpClientMessage.newBuilder()
                .setOpen(dev.nupa.node.sockets.Open.newBuilder().setHost("10.0.0.2").setPort(9)).build());
        assertEquals(GrpcStatus.UNAVAILABLE, s.status.get(10, TimeUnit.SECONDS));
    }

    @Test
    void aListenerHandsOutConnectionsToAttachAndClosesWithItsCall() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        Stream<dev.nupa.node.sockets.ListenRequest, dev.nupa.node.sockets.Accepted> listen =
                open("Listen", GrpcMessageDecoder.<dev.nupa.node.sockets.Accepted>decoder(dev.nupa.node.sockets.Accepted.newBuilder()));
        listen.request.write(dev.nupa.node.sockets.ListenRequest.newBuilder().setPort(8000).build());
        // The peer connects and greets before anyone attached: the bytes wait.
        NetSocket c = null;
        for (int i = 0; i < 100 && c == null; i++) { // the listener is up once the call's request was taken
            try {
                c = peer.vertx().createNetClient().connect(8000, "10.0.0.1").await(10, TimeUnit.SECONDS);
            } catch (Exception refused) {
                Thread.sleep(20);
            }
        }
        assertTrue(c != null, "the listener took a connection");
        java.util.concurrent.LinkedBlockingQueue<String> atPeer = new java.util.concurrent.LinkedBlockingQueue<>();
        c.handler(b -> atPeer.add(b.toString()));
        c.write("hello");
        dev.nupa.node.sockets.Accepted a = listen.next();
        assertEquals("10.0.0.1:8000", a.getLocal());
        Stream<dev.nupa.node.sockets.TcpClientMessage, dev.nupa.node.sockets.TcpServerMessage> s =
                open("Attach", GrpcMessageDecoder.<dev.nupa.node.sockets.TcpServerMessage>decoder(
                        dev.nupa.node.sockets.TcpServerMessage.newBuilder()));
        s.request.write(dev.nupa.node.sockets.TcpClientMessage.newBuilder().setAttach(a.getId()).build());
        assertEquals(a.getRemote(), s.next().getOpened().getRemote());
        assertEquals("hello", new String(read(s, 5)));
        s.request.write(data("world".getBytes()));
        assertEquals("world", atPeer.poll(10, TimeUnit.SECONDS));
        assertEquals(0, endpoint.sockets().waitingForAttach());

        Stream<dev.nupa.node.sockets.TcpClientMessage, dev.nupa.node.sockets.TcpServerMessage> unknown =
                open("Attach", GrpcMessageDecoder.<dev.nupa.node.sockets.TcpServerMessage>decoder(
                        dev.nupa.node.sockets.TcpServerMessage.newBuilder()));
        unknown.request.end(dev.nupa.node.sockets.TcpClientMessage.newBuilder().setAttach(12345).build());
        assertEquals(GrpcStatus.NOT_FOUND, unknown.status.get(10, TimeUnit.SECONDS));

        // A second Listen on the port, or one on a port the node's own server holds, is refused, not shared.
        node.vertx().createNetServer().connectHandler(x -> { }).listen(8001, "0.0.0.0").await(10, TimeUnit.SECONDS);
        for (int taken : new int[] {8000, 8001}) {
            Stream<dev.nupa.node.sockets.ListenRequest, dev.nupa.node.sockets.Accepted> again =
                    open("Listen", GrpcMessageDecoder.<dev.nupa.node.sockets.Accepted>decoder(dev.nupa.node.sockets.Accepted.newBuilder()));
            again.request.write(dev.nupa.node.sockets.ListenRequest.newBuilder().setPort(taken).build());
            assertEquals(GrpcStatus.FAILED_PRECONDITION, again.status.get(10, TimeUnit.SECONDS), "port " + taken);
        }

        listen.request.cancel(); // the listener goes with its call: the port is free again
        long deadline = System.nanoTime() + 10_000_000_000L;
        boolean free = false;
        while (!free && System.nanoTime() < deadline) {
            free = !node.link().call(() -> node.tcp().isListening(8000));
            Thread.sleep(10);
        }
        assertTrue(free, "the listener closed when its call was cancelled");
        assertEquals(GrpcStatus.OK, s.status.get(10, TimeUnit.SECONDS), "and the connections it accepted with it");
    }

    @Test
    void aUdpSocketThroughTheSocketsServiceSendsAndReceives() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        io.vertx.core.datagram.DatagramSocket echo = peer.vertx().createDatagramSocket();
        echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
        echo.listen(9, "0.0.0.0").await(10, TimeUnit.SECONDS);
        Stream<dev.nupa.node.sockets.UdpClientMessage, dev.nupa.node.sockets.UdpServerMessage> u =
                open("Udp", GrpcMessageDecoder.<dev.nupa.node.sockets.UdpServerMessage>decoder(
                        dev.nupa.node.sockets.UdpServerMessage.newBuilder()));
        u.request.write(dev.nupa.node.sockets.UdpClientMessage.newBuilder()
                .setBind(dev.nupa.node.sockets.Bind.newBuilder().setPort(0)).build());
        int port = u.next().getBound();
        assertTrue(port >= 49152, "an ephemeral port: " + port);
        for (int i = 0; i < 5; i++) {
            u.request.write(dev.nupa.node.sockets.UdpClientMessage.newBuilder().setDatagram(dev.nupa.node.sockets.Datagram.newBuilder()
                    .setHost("10.0.0.2").setPort(9).setData(com.google.protobuf.ByteString.copyFromUtf8("d" + i))).build());
            dev.nupa.node.sockets.Datagram back = u.next().getDatagram();
            assertEquals("10.0.0.2", back.getHost());
            assertEquals(9, back.getPort());
            assertEquals("d" + i, back.getData().toStringUtf8());
        }
        u.request.end();
        assertEquals(GrpcStatus.OK, u.status.get(10, TimeUnit.SECONDS));
        // The port went with the call: it can be bound again.
        peer.vertx().createDatagramSocket(); // (the peer is unrelated; the node's port is checked next)
        io.vertx.core.datagram.DatagramSocket again = node.vertx().createDatagramSocket();
        again.listen(port, "0.0.0.0").await(10, TimeUnit.SECONDS);
        again.close().await(10, TimeUnit.SECONDS);
    }

    /** A Capture call with {@code request} sent, its chunks read as they come. */
    private Stream<dev.nupa.node.admin.CaptureRequest, dev.nupa.node.admin.CaptureChunk> capture(
            dev.nupa.node.admin.CaptureRequest request) throws Exception {
        ServiceMethod<dev.nupa.node.admin.CaptureChunk, dev.nupa.node.admin.CaptureRequest> m = ServiceMethod.client(ADMIN, "Capture",
                GrpcMessageEncoder.encoder(), GrpcMessageDecoder.decoder(dev.nupa.node.admin.CaptureChunk.newBuilder()));
        Stream<dev.nupa.node.admin.CaptureRequest, dev.nupa.node.admin.CaptureChunk> s =
                new Stream<>(grpc.request(at(), m).await(10, TimeUnit.SECONDS), false);
        s.request.end(request);
        return s;
    }

    @Test
    void aLiveCaptureStreamsTheMatchingFramesAsPcapAndEndsAfterItsCount() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        var s = capture(dev.nupa.node.admin.CaptureRequest.newBuilder().setProtocol("udp").setPort(4444).setCount(3).build());
        java.io.ByteArrayOutputStream pcap = new java.io.ByteArrayOutputStream();
        pcap.write(s.next().getPcap().toByteArray()); // the file header: the capture is on
        assertEquals(24, pcap.size(), "a pcap file header first");
        var second = capture(dev.nupa.node.admin.CaptureRequest.getDefaultInstance());
        assertEquals(GrpcStatus.FAILED_PRECONDITION, second.status.get(10, TimeUnit.SECONDS), "one live capture at a time");
        var bad = capture(dev.nupa.node.admin.CaptureRequest.newBuilder().setProtocol("sctp").build());
        assertEquals(GrpcStatus.INVALID_ARGUMENT, bad.status.get(10, TimeUnit.SECONDS));
        io.vertx.core.datagram.DatagramSocket sender = peer.vertx().createDatagramSocket();
        sender.send(io.vertx.core.buffer.Buffer.buffer("other port"), 5555, "10.0.0.1").await(10, TimeUnit.SECONDS);
        for (int i = 0; i < 5; i++) { // the node answers each with port unreachable (ICMP, not captured)
            sender.send(io.vertx.core.buffer.Buffer.buffer("datagram " + i), 4444, "10.0.0.1").await(10, TimeUnit.SECONDS);
        }
        long records = 0;
        while (!s.status.isDone() || !s.answers.isEmpty()) {
            dev.nupa.node.admin.CaptureChunk c = s.answers.poll(100, TimeUnit.MILLISECONDS);
            if (c != null) {
                pcap.write(c.getPcap().toByteArray());
                records = c.getRecords();
            }
        }
        assertEquals(GrpcStatus.OK, s.status.get(10, TimeUnit.SECONDS), "the call ends once 3 frames were captured");
        assertEquals(3, records);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(pcap.toByteArray()).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        assertEquals(dev.nupa.l2.PcapWriter.MAGIC_NANOS, b.getInt(0));
        int at = 24;
        for (int i = 0; i < 3; i++) {
            int included = b.getInt(at + 8);
            java.nio.ByteBuffer frame = java.nio.ByteBuffer.wrap(pcap.toByteArray(), at + 16, included).slice();
            assertEquals(0x0800, frame.getShort(12) & 0xFFFF, "IPv4");
            assertEquals(17, frame.get(14 + 9), "UDP");
            assertEquals(4444, frame.getShort(14 + 20 + 2) & 0xFFFF, "to the port asked for");
            assertEquals("datagram " + i, new String(pcap.toByteArray(), at + 16 + 14 + 28, included - 14 - 28,
                    java.nio.charset.StandardCharsets.US_ASCII));
            at += 16 + included;
        }
        assertEquals(pcap.size(), at, "three records, nothing else");
        // The capture went with its call: another may start.
        var again = capture(dev.nupa.node.admin.CaptureRequest.newBuilder().setCount(1).build());
        again.next();
        sender.send(io.vertx.core.buffer.Buffer.buffer("any"), 4444, "10.0.0.1").await(10, TimeUnit.SECONDS);
        assertEquals(GrpcStatus.OK, again.status.get(10, TimeUnit.SECONDS));
    }

    /** Parses a pcap stream and answers how many whole records it holds (and fails on a torn one). */
    private static long pcapRecords(byte[] pcap) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(pcap).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        assertEquals(dev.nupa.l2.PcapWriter.MAGIC_NANOS, b.getInt(0));
        long n = 0;
        int at = 24;
        while (at < pcap.length) {
            assertTrue(at + 16 <= pcap.length, "a whole record header at " + at);
            int included = b.getInt(at + 8);
            assertTrue(included >= 14 && at + 16 + included <= pcap.length, "a whole record at " + at);
            at += 16 + included;
            n++;
        }
        return n;
    }

    @Test
    void aLiveCaptureUnderLoadCountsWhatItsStreamHoldsAndFreesItselfWhenTheClientGoes() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        ServiceMethod<dev.nupa.node.admin.CaptureChunk, dev.nupa.node.admin.CaptureRequest> m = ServiceMethod.client(ADMIN, "Capture",
                GrpcMessageEncoder.encoder(), GrpcMessageDecoder.decoder(dev.nupa.node.admin.CaptureChunk.newBuilder()));
        var s = new Stream<>(grpc.request(at(), m).await(10, TimeUnit.SECONDS), false);
        s.request.end(dev.nupa.node.admin.CaptureRequest.newBuilder().setProtocol("udp").setPort(4444).build());
        s.response.get(10, TimeUnit.SECONDS); // the call is answered: the capture is on
        int sent = 20_000;
        io.vertx.core.datagram.DatagramSocket sender = peer.vertx().createDatagramSocket();
        io.vertx.core.buffer.Buffer payload = io.vertx.core.buffer.Buffer.buffer(new byte[1000]);
        for (int i = 0; i < sent; i++) { // as fast as the peer can: the node captures or drops and counts each
            sender.send(payload, 4444, "10.0.0.1").await(10, TimeUnit.SECONDS);
        }
        java.io.ByteArrayOutputStream pcap = new java.io.ByteArrayOutputStream();
        long records = 0;
        long dropped = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (records + dropped < sent && System.nanoTime() < deadline) { // every frame either delivered or dropped
            dev.nupa.node.admin.CaptureChunk c = s.answers.poll(100, TimeUnit.MILLISECONDS);
            if (c != null) {
                pcap.write(c.getPcap().toByteArray());
                records = c.getRecords();
                dropped = c.getDropped();
            }
        }
        assertEquals(sent, records + dropped, "each frame sent is captured or counted dropped (" + records + " + " + dropped + "); the node's link: "
                + node.link().counters());
        assertEquals(records, pcapRecords(pcap.toByteArray()), "the count the stream gives is what it holds");
        s.context.runOnContext(v -> s.request.cancel()); // the client goes away
        // The capture went with its call: another may start, and it streams.
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Stream<dev.nupa.node.admin.CaptureRequest, dev.nupa.node.admin.CaptureChunk> again;
        dev.nupa.node.admin.CaptureChunk first = null;
        do { // the node learns of the cancel shortly after it
            again = capture(dev.nupa.node.admin.CaptureRequest.newBuilder().setProtocol("udp").setPort(4444).setCount(1).build());
            long t = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (first == null && !again.status.isDone() && System.nanoTime() < t) {
                first = again.answers.poll(50, TimeUnit.MILLISECONDS);
            }
            if (first == null) {
                first = again.answers.poll();
            }
        } while (first == null && again.status.getNow(null) == GrpcStatus.FAILED_PRECONDITION && System.nanoTime() < until);
        assertTrue(first != null, "a second capture starts once the first one's client went away; status "
                + again.status.getNow(null));
        sender.send(io.vertx.core.buffer.Buffer.buffer("any"), 4444, "10.0.0.1").await(10, TimeUnit.SECONDS);
        assertEquals(GrpcStatus.OK, again.status.get(10, TimeUnit.SECONDS));
    }

    /**
     * A client that stops reading makes the capture drop frames; the drops after the last chunk with bytes still reach
     * it once it reads again (no frame is captured after them to carry them).
     */
    @Test
    void framesDroppedWhileTheReaderLagsAreReportedOnceItReadsAgain() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        ServiceMethod<dev.nupa.node.admin.CaptureChunk, dev.nupa.node.admin.CaptureRequest> m = ServiceMethod.client(ADMIN, "Capture",
                GrpcMessageEncoder.encoder(), GrpcMessageDecoder.decoder(dev.nupa.node.admin.CaptureChunk.newBuilder()));
        var s = new Stream<>(grpc.request(at(), m).await(10, TimeUnit.SECONDS), true); // the client reads nothing yet
        s.request.end(dev.nupa.node.admin.CaptureRequest.newBuilder().setProtocol("udp").setPort(4445).build());
        s.response.get(10, TimeUnit.SECONDS);
        int sent = 20_000; // 20 MB of pcap: far past what a paused stream's flow-control window and write queue hold
        io.vertx.core.datagram.DatagramSocket sender = peer.vertx().createDatagramSocket();
        io.vertx.core.buffer.Buffer payload = io.vertx.core.buffer.Buffer.buffer(new byte[1000]);
        for (int i = 0; i < sent; i++) {
            sender.send(payload, 4445, "10.0.0.1").await(10, TimeUnit.SECONDS);
        }
        s.resume();
        long records = 0;
        long dropped = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (records + dropped < sent && System.nanoTime() < deadline) {
            dev.nupa.node.admin.CaptureChunk c = s.answers.poll(100, TimeUnit.MILLISECONDS);
            if (c != null) {
                records = c.getRecords();
                dropped = c.getDropped();
            }
        }
        assertTrue(dropped > 0, "the paused reader made the capture drop frames (" + records + " captured)");
        assertEquals(sent, records + dropped, "each frame sent is captured or counted dropped (" + records + " + " + dropped + ")");
        s.context.runOnContext(v -> s.request.cancel());
    }
}
