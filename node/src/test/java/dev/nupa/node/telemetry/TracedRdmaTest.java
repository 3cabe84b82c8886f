package dev.nupa.node.telemetry;

import dev.nupa.node.NodeConfig;
import dev.nupa.node.NupaNode;
import dev.nupa.perf.TraceLog;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.Trace;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import dev.nupa.roce.cm.RdmaCm;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.vertx.core.Promise;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Tracing through the layers (this module's tests run with {@code -Dnupa.trace=true}): an RDMA WRITE with immediate
 * between two nodes, traced on the client's datapath from post to completion, becomes one span whose events are the
 * layers it crossed, in order; recording a trace allocates nothing.
 */
class TracedRdmaTest {
    private static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;

    private static final class Side {
        ProtectionDomain pd;
        CompletionQueue cq;
        MemoryRegion mr;
        QueuePair qp;

        /** A region and an RC QP in packet mode, on the context's thread. */
        void open(dev.nupa.roce.RdmaContext ctx) {
            pd = ctx.allocPd();
            cq = ctx.createCq(16);
            mr = pd.allocMr(4096, ALL);
            qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq));
        }
    }

    @Test
    void aTracedWriteWithImmediateIsOneSpanWithTheLayersInOrder() throws Exception {
        assertTrue(Trace.ENABLED, "the node's tests run with -Dnupa.trace=true (node/pom.xml)");
        Path fabric = Path.of("/dev/shm/nupa-traced-rdma-" + UUID.randomUUID());
        NupaNode server = NupaNode.create(NodeConfig.defaults(fabric, 0)).await(10, TimeUnit.SECONDS);
        NupaNode client = NupaNode.create(NodeConfig.defaults(fabric, 1)).await(10, TimeUnit.SECONDS);
        try {
            Side s = new Side();
            Side c = new Side();
            Promise<Void> listening = Promise.promise();
            server.rdma().execute(ctx -> {
                s.open(ctx);
                RdmaCm.toInit(s.qp);
                s.qp.postRecv(new RecvWorkRequest().wrId(5));
                server.rdma().cm().listen(7472, req -> req.accept(s.qp, new byte[0]));
                listening.complete();
            });
            listening.future().await(10, TimeUnit.SECONDS);
            TraceLog log = new TraceLog("rdma write with immediate", 4);
            Promise<Integer> traced = Promise.promise();
            client.rdma().execute(ctx -> {
                c.open(ctx);
                client.rdma().cm().connect(0x0A000001, 7472, c.qp, new byte[0]).onComplete(ar -> {
                    if (ar.failed()) {
                        traced.fail(ar.cause());
                        return;
                    }
                    WorkCompletion wc = new WorkCompletion();
                    c.cq.onEvent(() -> client.vertx().runOnContext(v -> { // after the push, on the same loop
                        if (c.cq.poll(wc)) {
                            log.record(); // the application sees the completion: the operation is done
                            traced.complete(wc.status);
                        }
                    }));
                    c.cq.requestNotify(false);
                    Trace.begin();
                    c.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).sendFlags(SendFlags.SIGNALED)
                            .immData(7).local(c.mr, 0, 64).remote(s.mr.addr(), s.mr.rkey()));
                });
            });
            assertEquals(WcStatus.SUCCESS, traced.future().await(10, TimeUnit.SECONDS));
            assertEquals(1, log.count());

            InMemorySpanExporter exporter = InMemorySpanExporter.create();
            List<SpanData> spans;
            try (SdkTracerProvider provider = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build()) {
                log.emit(provider.get("test"), TraceLog.epochMinusNano());
                spans = exporter.getFinishedSpanItems(); // before the provider's close, which empties the exporter
            }
            assertEquals(1, spans.size());
            SpanData span = spans.get(0);
            assertEquals("rdma write with immediate", span.getName());
            List<String> events = span.getEvents().stream().map(EventData::getName).toList();
            // Down the client's stack, over the fabric, and the ACK up again to the completion.
            List<String> expected = List.of("user", "rdma_out", "link_out", "device_out", "fabric", "device_in", "link_in",
                    "rdma_in", "callback", "done");
            int at = 0;
            for (String e : events) {
                if (at < expected.size() && e.equals(expected.get(at))) {
                    at++;
                }
            }
            assertEquals(expected.size(), at, "the layers in order within " + events);
            assertEquals("user", events.get(0));
            assertEquals("done", events.get(events.size() - 1));
            long previous = 0;
            for (EventData e : span.getEvents()) {
                assertTrue(e.getEpochNanos() >= previous, "events in time order: " + span.getEvents());
                previous = e.getEpochNanos();
            }
            assertEquals(span.getStartEpochNanos(), span.getEvents().get(0).getEpochNanos());
            assertEquals(span.getEndEpochNanos(), previous);

            TraceLog.Breakdown b = log.breakdown();
            double layers = b.rows().stream().mapToDouble(TraceLog.Row::meanNs).sum();
            assertEquals(span.getEndEpochNanos() - span.getStartEpochNanos(), layers, 0.5, "the layers add up to the operation");
            assertTrue(b.rows().stream().anyMatch(r -> r.layer().equals("peer and fabric")), b.toString());
        } finally {
            client.close().await(10, TimeUnit.SECONDS);
            server.close().await(10, TimeUnit.SECONDS);
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void recordingATraceAllocatesNothing() {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        TraceLog log = new TraceLog("marks", 100_000);
        for (int i = 0; i < 20_000; i++) { // warm up
            traceOne(log);
        }
        // Steady state: some round allocates nothing (an early one may meet the JIT's work, as the other
        // zero-allocation tests say).
        long allocated = -1;
        int rounds = 0;
        for (; rounds < 20 && allocated != 0; rounds++) {
            long before = mx.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 50_000; i++) {
                traceOne(log);
            }
            allocated = mx.getCurrentThreadAllocatedBytes() - before;
        }
        assertEquals(0, allocated, "bytes allocated by 50,000 traced operations of 10 points, after 20 tries");
        long traced = 20_000 + 50_000L * rounds;
        assertEquals(Math.min(traced, 100_000), log.count(), "kept up to the log's capacity");
        assertEquals(traced - log.count(), log.overflow(), "the rest counted");
    }

    private static void traceOne(TraceLog log) {
        Trace.begin();
        for (int p = Trace.TCP_OUT; p <= Trace.CALLBACK; p += 2) {
            Trace.mark(p);
        }
        Trace.mark(Trace.FABRIC);
        log.record();
    }
}
