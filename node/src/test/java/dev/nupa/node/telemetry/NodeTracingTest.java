package dev.nupa.node.telemetry;

import dev.nupa.node.NodeConfig;
import dev.nupa.node.NodeMetrics;
import dev.nupa.node.NupaNode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import io.vertx.core.Promise;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.tracing.TracingPolicy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Nodes traced through OpenTelemetry ({@link NodeConfig#withOpenTelemetry}): an HTTP call from one node to another over
 * the fabric is a client span and a server span of one trace, the context carried in the request's headers; a TCP
 * connection's opening and closing are spans on both ends; an application's own RDMA work requests are sampled
 * into spans and a histogram.
 */
class NodeTracingTest {
    private Path fabric;
    private InMemorySpanExporter spans;
    private OpenTelemetrySdk otel;
    private NupaNode a;
    private NupaNode b;

    @BeforeEach
    void start() throws Exception {
        fabric = Path.of("/dev/shm/nupa-test-tracing-" + UUID.randomUUID());
        spans = InMemorySpanExporter.create();
        otel = OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build())
                .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance())).build();
        a = NupaNode.create(NodeConfig.defaults(fabric, 0).withOpenTelemetry(otel)).await(30, TimeUnit.SECONDS);
        b = NupaNode.create(NodeConfig.defaults(fabric, 1).withOpenTelemetry(otel)).await(30, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            b.closeAndWait();
            a.closeAndWait();
            otel.close();
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void aTcpConnectionsOpeningsAndClosingsAreSpans() throws Exception {
        a.vertx().createNetServer().connectHandler(s -> s.pipeTo(s)).listen(7, "0.0.0.0").await(10, TimeUnit.SECONDS);
        io.vertx.core.net.NetSocket s = b.vertx().createNetClient().connect(7, "10.0.0.1").await(10, TimeUnit.SECONDS);
        String local = s.localAddress().hostAddress() + ":" + s.localAddress().port();
        s.close().await(10, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (spans.getFinishedSpanItems().stream().filter(x -> x.getName().startsWith("tcp ")).count() < 4 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        List<SpanData> tcp = spans.getFinishedSpanItems().stream().filter(x -> x.getName().startsWith("tcp ")).toList();
        SpanData connect = tcp.stream().filter(x -> x.getName().equals("tcp connect")).findFirst().orElseThrow(() -> new AssertionError(tcp.toString()));
        SpanData accept = tcp.stream().filter(x -> x.getName().equals("tcp accept")).findFirst().orElseThrow(() -> new AssertionError(tcp.toString()));
        assertEquals(SpanKind.CLIENT, connect.getKind());
        assertEquals(local, connect.getAttributes().get(TcpTelemetry.LOCAL));
        assertEquals("10.0.0.1:7", connect.getAttributes().get(TcpTelemetry.REMOTE));
        assertEquals(SpanKind.SERVER, accept.getKind());
        assertEquals("10.0.0.1:7", accept.getAttributes().get(TcpTelemetry.LOCAL));
        assertEquals(local, accept.getAttributes().get(TcpTelemetry.REMOTE));
        assertTrue(connect.getEndEpochNanos() > connect.getStartEpochNanos(), "the handshake took time");
        List<SpanData> closes = tcp.stream().filter(x -> x.getName().equals("tcp close")).toList();
        assertEquals(2, closes.size(), "both ends closed: " + tcp);
        for (SpanData c : closes) {
            assertEquals(null, c.getAttributes().get(TcpTelemetry.ERROR), "an orderly close: " + c);
        }
    }

    @Test
    void anApplicationsOwnWorkRequestsAreSampledIntoSpansAndAHistogram() throws Exception {
        InMemoryMetricReader reader = InMemoryMetricReader.create();
        int writes = 4 * RdmaTelemetry.SAMPLE_EVERY;
        try (NodeMetrics metrics = NodeMetrics.start(b, reader)) {
            Promise<long[]> region = Promise.promise(); // the server's addr and rkey
            a.rdma().execute(ctx -> {
                ProtectionDomain pd = ctx.allocPd();
                CompletionQueue cq = ctx.createCq(16);
                MemoryRegion mr = pd.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
                QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq));
                a.rdma().cm().listen(7473, req -> req.accept(qp, new byte[0]));
                region.complete(new long[] {mr.addr(), mr.rkey()});
            });
            long[] remote = region.future().await(10, TimeUnit.SECONDS);
            Promise<Integer> completed = Promise.promise();
            b.rdma().execute(ctx -> { // an application of node b's, posting on the node's loop as embedded code does
                ProtectionDomain pd = ctx.allocPd();
                CompletionQueue cq = ctx.createCq(writes);
                MemoryRegion mr = pd.allocMr(4096, Access.LOCAL_WRITE);
                QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withCapacity(writes, 16));
                b.rdma().cm().connect(0x0A000001, 7473, qp, new byte[0]).onComplete(ar -> {
                    if (ar.failed()) {
                        completed.fail(ar.cause());
                        return;
                    }
                    int[] seen = {0};
                    WorkCompletion wc = new WorkCompletion();
                    cq.onEvent(() -> b.vertx().runOnContext(v -> {
                        while (cq.poll(wc)) {
                            seen[0] += wc.status == WcStatus.SUCCESS ? 1 : 0;
                        }
                        if (seen[0] == writes) {
                            completed.complete(seen[0]);
                        } else {
                            cq.requestNotify(false);
                        }
                    }));
                    cq.requestNotify(false);
                    SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                            .local(mr, 0, 64).remote(remote[0], (int) remote[1]);
                    for (int i = 0; i < writes; i++) {
                        qp.postSend(wr.wrId(i));
                    }
                });
            });
            assertEquals(writes, completed.future().await(10, TimeUnit.SECONDS));
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (rdmaSpans().size() < 4 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            List<SpanData> sampled = rdmaSpans();
            assertEquals(4, sampled.size(), "one in " + RdmaTelemetry.SAMPLE_EVERY + " of " + writes + ": " + sampled);
            for (SpanData s : sampled) {
                assertEquals("rdma IBV_WR_RDMA_WRITE", s.getName());
                assertEquals("IBV_WC_SUCCESS", s.getAttributes().get(RdmaTelemetry.STATUS));
                assertTrue(s.getEndEpochNanos() > s.getStartEpochNanos(), s.toString());
            }
            var histogram = reader.collectAllMetrics().stream().filter(m -> m.getName().equals("nupa.rdma.work_request.duration"))
                    .findFirst().orElseThrow(() -> new AssertionError("no nupa.rdma.work_request.duration"));
            assertEquals(4, histogram.getHistogramData().getPoints().stream().mapToLong(p -> p.getCount()).sum());
        }
    }

    private List<SpanData> rdmaSpans() {
        return spans.getFinishedSpanItems().stream().filter(s -> s.getName().startsWith("rdma ")).toList();
    }

    @Test
    void anHttpCallBetweenTwoNodesIsOneTraceOfAClientAndAServerSpan() throws Exception {
        a.vertx().createHttpServer().requestHandler(req -> req.response().end("traced"))
                .listen(8080, "0.0.0.0").await(10, TimeUnit.SECONDS);
        var client = b.vertx().createHttpClient(new HttpClientOptions().setTracingPolicy(TracingPolicy.ALWAYS));
        String body = client.request(HttpMethod.GET, 8080, "10.0.0.1", "/hello")
                .compose(req -> req.send().compose(HttpClientResponse::body)).await(10, TimeUnit.SECONDS).toString();
        assertEquals("traced", body);
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (spans.getFinishedSpanItems().stream().filter(s -> !s.getName().startsWith("tcp ")).count() < 2
                && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        List<SpanData> done = spans.getFinishedSpanItems().stream().filter(s -> !s.getName().startsWith("tcp ")).toList();
        SpanData server = done.stream().filter(s -> s.getKind() == SpanKind.SERVER).findFirst().orElseThrow(() -> new AssertionError(done.toString()));
        SpanData clientSpan = done.stream().filter(s -> s.getKind() == SpanKind.CLIENT).findFirst().orElseThrow(() -> new AssertionError(done.toString()));
        assertEquals(clientSpan.getTraceId(), server.getTraceId(), "one trace: the context went over the fabric in the headers");
        assertEquals(clientSpan.getSpanId(), server.getParentSpanId(), "the server's span is the client's child");
        assertTrue(server.getName().contains("GET"), server.getName());
    }
}
