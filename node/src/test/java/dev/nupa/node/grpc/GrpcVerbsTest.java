package dev.nupa.node.grpc;

import dev.nupa.node.NodeConfig;
import dev.nupa.node.NupaNode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import dev.nupa.node.admin.AdminGrpcClient;
import dev.nupa.node.admin.Connections;
import dev.nupa.node.admin.ConnectionsRequest;
import dev.nupa.node.verbs.Accept;
import dev.nupa.node.verbs.Connect;
import dev.nupa.node.verbs.CreateCq;
import dev.nupa.node.verbs.CreateQp;
import dev.nupa.node.verbs.Destroy;
import dev.nupa.node.verbs.PostRecv;
import dev.nupa.node.verbs.PostSend;
import dev.nupa.node.verbs.ReadMemory;
import dev.nupa.node.verbs.RegMr;
import dev.nupa.node.verbs.Sge;
import dev.nupa.node.verbs.VerbsEvent;
import dev.nupa.node.verbs.VerbsRequest;
import dev.nupa.node.verbs.WorkCompletion;
import dev.nupa.node.verbs.WriteMemory;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WrOpcode;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.vertx.core.Vertx;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientRequest;
import io.vertx.grpc.common.GrpcMessageDecoder;
import io.vertx.grpc.common.GrpcMessageEncoder;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.ServiceMethod;
import io.vertx.grpc.common.ServiceName;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Verbs service, driven as a program in another process would: two nodes on one fabric, each with its gRPC
 * endpoint, and a verbs session on each that connects through the CM and moves data with RDMA.
 */
class GrpcVerbsTest {
    private static final int RW = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;

    private Path fabric;
    private NupaNode a;
    private NupaNode b;
    private GrpcEndpoint atA;
    private GrpcEndpoint atB;
    private Vertx tool;
    private GrpcClient grpc;
    /** The nodes are traced: the work requests' spans land here. */
    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private OpenTelemetrySdk otel;

    @BeforeEach
    void start() throws Exception {
        fabric = Path.of("/dev/shm/nupa-test-grpc-verbs-" + UUID.randomUUID());
        otel = OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build()).build();
        a = NupaNode.create(NodeConfig.defaults(fabric, 0).withOpenTelemetry(otel)).await(30, TimeUnit.SECONDS);
        b = NupaNode.create(NodeConfig.defaults(fabric, 1).withOpenTelemetry(otel)).await(30, TimeUnit.SECONDS);
        atA = GrpcEndpoint.start(a, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        atB = GrpcEndpoint.start(b, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        tool = Vertx.vertx();
        grpc = GrpcClient.client(tool);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            atA.close().await(10, TimeUnit.SECONDS);
            atB.close().await(10, TimeUnit.SECONDS);
            tool.close().await(10, TimeUnit.SECONDS);
            b.closeAndWait();
            a.closeAndWait();
            otel.close();
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    /** A verbs session's client side: requests numbered, answers matched by id, completions queued apart. */
    private final class Session {
        final GrpcClientRequest<VerbsRequest, VerbsEvent> request;
        final ConcurrentHashMap<Long, CompletableFuture<VerbsEvent>> answers = new ConcurrentHashMap<>();
        final LinkedBlockingQueue<WorkCompletion> completions = new LinkedBlockingQueue<>();
        final CompletableFuture<GrpcStatus> status = new CompletableFuture<>();
        final AtomicLong ids = new AtomicLong();

        Session(GrpcEndpoint endpoint) throws Exception {
            ServiceMethod<VerbsEvent, VerbsRequest> m = ServiceMethod.client(ServiceName.create("nupa.verbs.v1", "Verbs"), "Session",
                    GrpcMessageEncoder.encoder(), GrpcMessageDecoder.decoder(VerbsEvent.newBuilder()));
            request = grpc.request(SocketAddress.inetSocketAddress(endpoint.port(), "127.0.0.1"), m).await(10, TimeUnit.SECONDS);
            request.response().onComplete(ar -> {
                if (ar.failed()) {
                    status.completeExceptionally(ar.cause());
                    return;
                }
                ar.result().handler(e -> {
                    if (e.getKindCase() == VerbsEvent.KindCase.COMPLETION) {
                        completions.add(e.getCompletion());
                    } else {
                        answers.computeIfAbsent(e.getId(), k -> new CompletableFuture<>()).complete(e);
                    }
                });
                ar.result().endHandler(v -> status.complete(ar.result().status()));
                ar.result().exceptionHandler(status::completeExceptionally);
            });
        }

        /** Sends a request and waits for its answer. */
        VerbsEvent call(VerbsRequest.Builder r) throws Exception {
            return sent(r).get(10, TimeUnit.SECONDS);
        }

        /** Sends a request; its answer comes later (Connect, Accept). */
        CompletableFuture<VerbsEvent> sent(VerbsRequest.Builder r) {
            long id = ids.incrementAndGet();
            CompletableFuture<VerbsEvent> answer = answers.computeIfAbsent(id, k -> new CompletableFuture<>());
            request.write(r.setId(id).build());
            return answer;
        }

        VerbsEvent ok(VerbsRequest.Builder r) throws Exception {
            VerbsEvent e = call(r);
            assertTrue(e.getKindCase() != VerbsEvent.KindCase.FAILED, "answered with a failure: " + e);
            return e;
        }

        WorkCompletion completion() throws InterruptedException {
            WorkCompletion wc = completions.poll(10, TimeUnit.SECONDS);
            if (wc == null) {
                throw new AssertionError("no work completion in 10 s");
            }
            return wc;
        }

        /** A region, a queue and an RC QP on it. */
        int[] resources(int length) throws Exception {
            VerbsEvent mr = ok(VerbsRequest.newBuilder().setRegMr(RegMr.newBuilder().setLength(length).setAccess(RW)));
            int cq = ok(VerbsRequest.newBuilder().setCreateCq(CreateCq.newBuilder().setCqe(64))).getCq();
            int qp = ok(VerbsRequest.newBuilder().setCreateQp(CreateQp.newBuilder().setSendCq(cq).setRecvCq(cq))).getQpNum();
            return new int[] {mr.getMr().getLkey(), cq, qp};
        }
    }

    private static VerbsRequest.Builder postRecv(int qp, long wrId) {
        return VerbsRequest.newBuilder().setPostRecv(PostRecv.newBuilder().setQpNum(qp).setWrId(wrId));
    }

    private static Connections listed(GrpcEndpoint endpoint, GrpcClient grpc) throws Exception {
        return AdminGrpcClient.create(grpc, SocketAddress.inetSocketAddress(endpoint.port(), "127.0.0.1"))
                .listConnections(ConnectionsRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
    }

    @Test
    void aWriteWithImmediateThroughTheVerbsServiceLandsAndCompletesOnBothSides() throws Exception {
        Session server = new Session(atA);
        Session client = new Session(atB);
        VerbsEvent serverMr = server.ok(VerbsRequest.newBuilder().setRegMr(RegMr.newBuilder().setLength(8192).setAccess(RW)));
        int serverCq = server.ok(VerbsRequest.newBuilder().setCreateCq(CreateCq.newBuilder().setCqe(16))).getCq();
        int serverQp = server.ok(VerbsRequest.newBuilder().setCreateQp(CreateQp.newBuilder().setSendCq(serverCq).setRecvCq(serverCq)))
                .getQpNum();
        server.ok(postRecv(serverQp, 70)); // WRITE_WITH_IMM consumes a receive
        CompletableFuture<VerbsEvent> accepted = server.sent(VerbsRequest.newBuilder().setAccept(Accept.newBuilder()
                .setQpNum(serverQp).setPort(4791).setPrivateData(ByteString.copyFromUtf8("from A"))));

        int[] c = client.resources(4096);
        byte[] data = new byte[1000];
        new Random(3).nextBytes(data);
        client.ok(VerbsRequest.newBuilder().setWriteMemory(WriteMemory.newBuilder().setLkey(c[0]).setOffset(24)
                .setData(ByteString.copyFrom(data))));
        VerbsEvent connected = client.call(VerbsRequest.newBuilder().setConnect(Connect.newBuilder().setQpNum(c[2])
                .setHost("10.0.0.1").setPort(4791).setPrivateData(ByteString.copyFromUtf8("from B"))));
        assertEquals(VerbsEvent.KindCase.CONNECTED, connected.getKindCase(), connected.toString());
        assertEquals(0, connected.getConnected().getPeerNode());
        assertEquals(serverQp, connected.getConnected().getPeerQpNum());
        assertEquals("from A", text(connected.getConnected().getPrivateData()));
        assertEquals(196, connected.getConnected().getPrivateData().size(), "the REP's whole area, as rdma_cm gives it");
        assertEquals("10.0.0.1", connected.getConnected().getPeerIp());
        VerbsEvent acc = accepted.get(10, TimeUnit.SECONDS);
        assertEquals(VerbsEvent.KindCase.CONNECTED, acc.getKindCase(), acc.toString());
        assertEquals(1, acc.getConnected().getPeerNode());
        assertEquals(c[2], acc.getConnected().getPeerQpNum());
        assertEquals("from B", text(acc.getConnected().getPrivateData()));

        client.ok(VerbsRequest.newBuilder().setPostSend(PostSend.newBuilder().setQpNum(c[2]).setWrId(9)
                .setOpcode(WrOpcode.RDMA_WRITE_WITH_IMM).setSendFlags(SendFlags.SIGNALED).setImmData(0xC0FFEE)
                .addSg(Sge.newBuilder().setLkey(c[0]).setOffset(24).setLength(data.length))
                .setRemoteAddr(serverMr.getMr().getAddr() + 100).setRkey(serverMr.getMr().getRkey())));

        WorkCompletion sent = client.completion();
        assertEquals(9, sent.getWrId());
        assertEquals(WcStatus.SUCCESS, sent.getStatus(), sent.getStatusName());
        assertEquals(WcOpcode.RDMA_WRITE, sent.getOpcode());
        assertEquals(c[1], sent.getCq());
        WorkCompletion received = server.completion();
        assertEquals(70, received.getWrId());
        assertEquals(WcStatus.SUCCESS, received.getStatus(), received.getStatusName());
        assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, received.getOpcode());
        assertTrue(received.getWithImm());
        assertEquals(0xC0FFEE, received.getImmData());
        assertEquals(data.length, received.getByteLen());
        assertEquals(serverQp, received.getQpNum());

        VerbsEvent landed = server.ok(VerbsRequest.newBuilder().setReadMemory(ReadMemory.newBuilder()
                .setLkey(serverMr.getMr().getLkey()).setOffset(100).setLength(data.length)));
        assertArrayEquals(data, landed.getData().toByteArray(), "the WRITE's bytes in the server's region");
        VerbsEvent before = server.ok(VerbsRequest.newBuilder().setReadMemory(ReadMemory.newBuilder()
                .setLkey(serverMr.getMr().getLkey()).setOffset(0).setLength(100)));
        assertArrayEquals(new byte[100], before.getData().toByteArray(), "nothing written before the remote address");

        // The WRITE's span, from post to completion, is a child of the client's Session call on node B.
        SpanData write = spans.getFinishedSpanItems().stream().filter(s -> s.getName().startsWith("verbs ")).findFirst()
                .orElseThrow(() -> new AssertionError("no work request span in " + spans.getFinishedSpanItems()));
        assertEquals("verbs " + WrOpcode.name(WrOpcode.RDMA_WRITE_WITH_IMM), write.getName());
        assertEquals(List.of("posted", "completed"), write.getEvents().stream().map(e -> e.getName()).toList());
        assertEquals("IBV_WC_SUCCESS", write.getAttributes().get(NodeVerbs.STATUS));
        assertEquals(9L, write.getAttributes().get(NodeVerbs.WR_ID));
        assertEquals((long) data.length, write.getAttributes().get(NodeVerbs.BYTES));
        assertTrue(write.getParentSpanContext().isValid(), "the Session call's span is its parent");

        Connections conns = listed(atA, grpc);
        assertEquals(1, conns.getQpsCount(), conns.toString());
        assertEquals("RTS", conns.getQps(0).getState());
        assertEquals(1, conns.getQps(0).getPeerNode());
        assertEquals(c[2], conns.getQps(0).getPeerQpNum());

        client.request.end();
        server.request.end();
        assertEquals(GrpcStatus.OK, client.status.get(10, TimeUnit.SECONDS));
        assertEquals(GrpcStatus.OK, server.status.get(10, TimeUnit.SECONDS));
    }

    @Test
    void requestsThatCannotBeDoneAreAnsweredWithWhyAndTheSessionGoesOn() throws Exception {
        atA.verbsSessionMemory(64 * 1024);
        Session s = new Session(atA);
        int[] r = s.resources(4096);
        String[][] cases = {
            {"no queue pair 999", "post"},
            {"no region with lkey", "read"},
            {"outside region", "range"},
            {"registers 1 byte to 65536 in all and holds 4096", "over the session's memory"},
            {"still feeds", "cq"},
            {"carries none", "empty"},
            {"not an IPv4 address", "host"},
            {"after its Connect or Accept", "send on a QP not connected"},
        };
        VerbsRequest.Builder[] requests = {
            VerbsRequest.newBuilder().setPostSend(PostSend.newBuilder().setQpNum(999)),
            VerbsRequest.newBuilder().setReadMemory(ReadMemory.newBuilder().setLkey(r[0] + 1).setLength(1)),
            VerbsRequest.newBuilder().setReadMemory(ReadMemory.newBuilder().setLkey(r[0]).setOffset(4000).setLength(200)),
            VerbsRequest.newBuilder().setRegMr(RegMr.newBuilder().setLength(64 * 1024 - 4095).setAccess(RW)),
            VerbsRequest.newBuilder().setDestroy(Destroy.newBuilder().setCq(r[1])),
            VerbsRequest.newBuilder(),
            VerbsRequest.newBuilder().setConnect(Connect.newBuilder().setQpNum(r[2]).setHost("10.0.0").setPort(1)),
            VerbsRequest.newBuilder().setPostSend(PostSend.newBuilder().setQpNum(r[2]).setOpcode(WrOpcode.SEND)
                    .setSendFlags(SendFlags.SIGNALED)),
        };
        for (int i = 0; i < cases.length; i++) {
            VerbsEvent e = s.call(requests[i]);
            assertEquals(VerbsEvent.KindCase.FAILED, e.getKindCase(), cases[i][1] + ": " + e);
            assertTrue(e.getFailed().getMessage().contains(cases[i][0]), cases[i][1] + ": " + e.getFailed().getMessage());
        }
        // The session still works: what fits the limit registers, and the objects are destroyed in order, a QP before its queue.
        s.ok(VerbsRequest.newBuilder().setRegMr(RegMr.newBuilder().setLength(64 * 1024 - 4096).setAccess(RW)));
        s.ok(VerbsRequest.newBuilder().setDestroy(Destroy.newBuilder().setQpNum(r[2])));
        s.ok(VerbsRequest.newBuilder().setDestroy(Destroy.newBuilder().setCq(r[1])));
        s.ok(VerbsRequest.newBuilder().setDestroy(Destroy.newBuilder().setLkey(r[0])));
        assertEquals(0, listed(atA, grpc).getQpsCount());
        s.request.end();
        assertEquals(GrpcStatus.OK, s.status.get(10, TimeUnit.SECONDS));
    }

    @Test
    void sessionsTogetherRegisterNoMoreThanTheNodesLimitAndWhatOneFreesOthersMayTake() throws Exception {
        atA.verbsSessionMemory(64 * 1024).verbsNodeMemory(100 * 1024);
        Session first = new Session(atA);
        Session second = new Session(atA);
        first.ok(VerbsRequest.newBuilder().setRegMr(RegMr.newBuilder().setLength(64 * 1024).setAccess(RW)));
        // Within its own session's limit, but past what the node has left.
        VerbsEvent refused = second.call(VerbsRequest.newBuilder().setRegMr(RegMr.newBuilder().setLength(40 * 1024).setAccess(RW)));
        assertEquals(VerbsEvent.KindCase.FAILED, refused.getKindCase(), refused.toString());
        assertTrue(refused.getFailed().getMessage().contains("register 102400 bytes in all and hold 65536")
                && refused.getFailed().getMessage().contains("--grpc-verbs-node-memory"), refused.getFailed().getMessage());
        assertEquals(64 * 1024, atA.verbs().nodeMemoryUsed(), "a refused registration counts nothing");
        second.ok(VerbsRequest.newBuilder().setRegMr(RegMr.newBuilder().setLength(36 * 1024).setAccess(RW)));
        // The first session ends: what it held is the node's again.
        first.request.end();
        assertEquals(GrpcStatus.OK, first.status.get(10, TimeUnit.SECONDS));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (atA.verbs().nodeMemoryUsed() != 36 * 1024 && System.nanoTime() < deadline) {
            Thread.sleep(5); // a look every 5 ms until the session's release ran on the datapath
        }
        assertEquals(36 * 1024, atA.verbs().nodeMemoryUsed(), "an ended session's regions no longer count");
        second.ok(VerbsRequest.newBuilder().setRegMr(RegMr.newBuilder().setLength(64 * 1024 - 36 * 1024).setAccess(RW)));
        second.request.end();
        assertEquals(GrpcStatus.OK, second.status.get(10, TimeUnit.SECONDS));
    }

    @Test
    void aClientThatGoesAwayLeavesNothingBehindAndItsPeerIsDisconnected() throws Exception {
        Session server = new Session(atA);
        Session client = new Session(atB);
        int[] srv = server.resources(4096);
        server.ok(postRecv(srv[2], 5));
        CompletableFuture<VerbsEvent> accepted = server.sent(VerbsRequest.newBuilder().setAccept(Accept.newBuilder()
                .setQpNum(srv[2]).setPort(7000)));
        int[] cl = client.resources(1 << 20);
        assertEquals(VerbsEvent.KindCase.CONNECTED, client.call(VerbsRequest.newBuilder().setConnect(Connect.newBuilder()
                .setQpNum(cl[2]).setHost("10.0.0.1").setPort(7000))).getKindCase());
        assertEquals(VerbsEvent.KindCase.CONNECTED, accepted.get(10, TimeUnit.SECONDS).getKindCase());
        client.ok(postRecv(cl[2], 6));
        assertEquals(1, listed(atB, grpc).getQpsCount());
        assertEquals(2, atB.verbs().sessions() + atA.verbs().sessions());

        client.request.cancel(); // the client goes away without ending its call

        long deadline = System.nanoTime() + 10_000_000_000L;
        while ((atB.verbs().sessions() > 0 || listed(atB, grpc).getQpsCount() > 0) && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, atB.verbs().sessions(), "the session is over");
        assertEquals(0, listed(atB, grpc).getQpsCount(), "its QP is destroyed");
        // The node's CM told the peer: the server's QP moved to ERR and its posted receive completed flushed.
        WorkCompletion flushed = server.completion();
        assertEquals(5, flushed.getWrId());
        assertEquals(WcStatus.WR_FLUSH_ERR, flushed.getStatus(), flushed.getStatusName());
        assertEquals("ERR", listed(atA, grpc).getQps(0).getState());
        server.request.end();
        assertEquals(GrpcStatus.OK, server.status.get(10, TimeUnit.SECONDS));
    }

    /** Private data arrive zero-padded to their message's area: the text before the first zero. */
    private static String text(ByteString privateData) {
        String s = privateData.toStringUtf8();
        int nul = s.indexOf('\0');
        return nul >= 0 ? s.substring(0, nul) : s;
    }
}
