package dev.nupa.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.nupa.ip.IpCounter;
import dev.nupa.tcp.TcpCounter;
import io.opentelemetry.sdk.metrics.data.LongPointData;
import io.opentelemetry.sdk.metrics.data.MetricData;
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.UUID;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The node's counters as OpenTelemetry metrics: collected in memory and exported over OTLP/HTTP to a listener. */
class NodeMetricsTest {
    private Path fabric;
    private NupaNode node;
    private NupaNode peer;

    @BeforeEach
    void start() throws Exception {
        fabric = Path.of("/dev/shm/nupa-test-metrics-" + UUID.randomUUID());
        node = NupaNode.create(NodeConfig.defaults(fabric, 0)).await(30, TimeUnit.SECONDS);
        peer = NupaNode.create(NodeConfig.defaults(fabric, 1)).await(30, TimeUnit.SECONDS);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            peer.closeAndWait();
            node.closeAndWait();
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    /** Datagrams from the peer to the node and back, so the node's IP counters move. */
    private void exchange(int count) throws Exception {
        DatagramSocket echo = node.vertx().createDatagramSocket();
        echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
        echo.listen(9, "0.0.0.0").await(10, TimeUnit.SECONDS);
        DatagramSocket s = peer.vertx().createDatagramSocket();
        LinkedBlockingQueue<Buffer> back = new LinkedBlockingQueue<>();
        s.handler(p -> back.add(p.data()));
        s.listen(0, "0.0.0.0").await(10, TimeUnit.SECONDS);
        for (int i = 0; i < count; i++) {
            s.send(Buffer.buffer("m" + i), 9, "10.0.0.1").await(10, TimeUnit.SECONDS);
            assertTrue(back.poll(10, TimeUnit.SECONDS) != null, "echo " + i);
        }
        s.close().await(10, TimeUnit.SECONDS);
        echo.close().await(10, TimeUnit.SECONDS);
    }

    /** One TCP connection from the peer to an echo on the node, {@code rounds} requests on it, then closed. */
    private void tcpEcho(int rounds) throws Exception {
        node.vertx().createNetServer().connectHandler(s -> s.pipeTo(s)).listen(7, "0.0.0.0").await(10, TimeUnit.SECONDS);
        io.vertx.core.net.NetSocket s = peer.vertx().createNetClient().connect(7, "10.0.0.1").await(10, TimeUnit.SECONDS);
        LinkedBlockingQueue<Buffer> back = new LinkedBlockingQueue<>();
        s.handler(back::add);
        for (int i = 0; i < rounds; i++) {
            s.write(Buffer.buffer("r" + i)).await(10, TimeUnit.SECONDS);
            assertTrue(back.poll(10, TimeUnit.SECONDS) != null, "echo " + i);
        }
        s.close().await(10, TimeUnit.SECONDS);
        // The telemetry's thread records what the loop queued.
        CaptureUdpLoadTest.waitUntil("the TCP telemetry is drained", 10, () -> node.tcpTelemetry().drained(), () -> "not drained");
    }

    private static long point(Collection<MetricData> metrics, String name, String counter) {
        MetricData m = metrics.stream().filter(d -> d.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no metric " + name + " in " + metrics));
        return m.getLongSumData().getPoints().stream().filter(p -> counter.equals(p.getAttributes().get(NodeMetrics.COUNTER)))
                .map(LongPointData::getValue).findFirst().orElseThrow(() -> new AssertionError("no point " + counter + " in " + m));
    }

    @Test
    void everyLayersCountersArePointsOfItsMetric() throws Exception {
        InMemoryMetricReader reader = InMemoryMetricReader.create();
        try (NodeMetrics metrics = NodeMetrics.start(node, reader)) {
            exchange(20);
            long before = node.link().call(() -> node.ip().counter(IpCounter.UDP_IN_DATAGRAMS));
            Collection<MetricData> collected = reader.collectAllMetrics();
            long after = node.link().call(() -> node.ip().counter(IpCounter.UDP_IN_DATAGRAMS));
            long reported = point(collected, "nupa.ip", "udp_in_datagrams");
            assertTrue(reported >= before && reported <= after && reported >= 20, reported + " between " + before + " and " + after);
            assertTrue(point(collected, "nupa.link", "ipv4_frames_in") >= 20);
            for (TcpCounter c : TcpCounter.values()) {
                point(collected, "nupa.tcp", c.name().toLowerCase()); // every TCP counter has its point
            }
            MetricData ip = collected.stream().filter(d -> d.getName().equals("nupa.ip")).findFirst().orElseThrow();
            assertTrue(ip.getLongSumData().isMonotonic(), "counters only grow");
            assertEquals("nupa-node", ip.getResource().getAttribute(io.opentelemetry.api.common.AttributeKey.stringKey("service.name")));
            assertEquals("10.0.0.1", ip.getResource().getAttribute(io.opentelemetry.api.common.AttributeKey.stringKey("nupa.ipv4")));
        }
    }

    @Test
    void tcpRoundTripsAndHandshakesAreHistograms() throws Exception {
        InMemoryMetricReader reader = InMemoryMetricReader.create();
        try (NodeMetrics metrics = NodeMetrics.start(node, reader)) {
            tcpEcho(50);
            Collection<MetricData> collected = reader.collectAllMetrics();
            MetricData rtt = collected.stream().filter(d -> d.getName().equals("nupa.tcp.rtt")).findFirst()
                    .orElseThrow(() -> new AssertionError("no nupa.tcp.rtt in " + collected));
            var points = rtt.getHistogramData().getPoints();
            long count = points.stream().mapToLong(p -> p.getCount()).sum();
            assertTrue(count >= 40, "the node's round trips measured: " + count); // the server side times its echoes
            double max = points.stream().mapToDouble(p -> p.getMax()).max().orElseThrow();
            assertTrue(max > 0 && max < 1, "seconds: " + max);
            assertEquals("s", rtt.getUnit());
            MetricData hs = collected.stream().filter(d -> d.getName().equals("nupa.tcp.handshake.duration")).findFirst().orElseThrow();
            assertEquals(1, hs.getHistogramData().getPoints().stream().mapToLong(p -> p.getCount()).sum(), "the one accepted connection");
        }
    }

    @Test
    void theFileExporterWritesOtlpJsonLines() throws Exception {
        Path file = Files.createTempFile("nupa-metrics-", ".jsonl");
        try {
            try (NodeMetrics metrics = NodeMetrics.start(node, NodeMetrics.exportingReader("file=" + file, java.time.Duration.ofHours(1)))) {
                exchange(5);
                tcpEcho(5);
            } // closing exports once more
            String line = Files.readAllLines(file).getLast();
            // One ExportMetricsServiceRequest in OTLP/JSON: the node's resource, then its scopes' metrics.
            io.vertx.core.json.JsonObject rm = new io.vertx.core.json.JsonObject(line).getJsonArray("resourceMetrics").getJsonObject(0);
            String resource = rm.getJsonObject("resource").getJsonArray("attributes").encode();
            assertTrue(resource.contains("{\"key\":\"service.name\",\"value\":{\"stringValue\":\"nupa-node\"}}"), resource);
            java.util.Map<String, io.vertx.core.json.JsonObject> byName = new java.util.HashMap<>();
            for (Object sm : rm.getJsonArray("scopeMetrics")) {
                for (Object m : ((io.vertx.core.json.JsonObject) sm).getJsonArray("metrics")) {
                    byName.put(((io.vertx.core.json.JsonObject) m).getString("name"), (io.vertx.core.json.JsonObject) m);
                }
            }
            io.vertx.core.json.JsonObject ipSum = byName.get("nupa.ip").getJsonObject("sum");
            assertEquals(2, ipSum.getInteger("aggregationTemporality"), "cumulative");
            long udpIn = ipSum.getJsonArray("dataPoints").stream().map(io.vertx.core.json.JsonObject.class::cast)
                    .filter(p -> p.getJsonArray("attributes").encode().contains("\"udp_in_datagrams\""))
                    .mapToLong(p -> Long.parseLong(p.getValue("asInt").toString())).findFirst().orElseThrow();
            assertTrue(udpIn >= 5, "the exchange's datagrams counted: " + udpIn);
            io.vertx.core.json.JsonObject rtt = byName.get("nupa.tcp.rtt");
            assertEquals("s", rtt.getString("unit"));
            assertEquals(2, rtt.getJsonObject("histogram").getInteger("aggregationTemporality"), "cumulative");
            assertTrue(rtt.getJsonObject("histogram").getJsonArray("dataPoints").getJsonObject(0).containsKey("bucketCounts"),
                    rtt.encode());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void otlpExportsReachACollectorOverHttp() throws Exception {
        HttpServer collector = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        LinkedBlockingQueue<String> posts = new LinkedBlockingQueue<>();
        collector.createContext("/v1/metrics", x -> {
            byte[] body = x.getRequestBody().readAllBytes();
            posts.add(x.getRequestMethod() + " " + x.getRequestHeaders().getFirst("Content-Type") + " "
                    + new String(body, StandardCharsets.ISO_8859_1));
            x.sendResponseHeaders(200, -1);
            x.close();
        });
        collector.start();
        try (NodeMetrics metrics = NodeMetrics.start(node, NodeMetrics.exportingReader(
                "otlp=http://127.0.0.1:" + collector.getAddress().getPort() + "/v1/metrics", Duration.ofMillis(200)))) {
            String post = posts.poll(20, TimeUnit.SECONDS);
            assertTrue(post != null, "an export arrived");
            assertTrue(post.startsWith("POST application/x-protobuf "), post.substring(0, Math.min(80, post.length())));
            assertTrue(post.contains("nupa.ip") && post.contains("udp_in_datagrams") && post.contains("nupa-node"),
                    "the export carries the node's metrics");
        } finally {
            collector.stop(0);
        }
    }

    @Test
    void anUnknownExporterIsRefusedWithTheChoices() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> NodeMetrics.exportingReader("prometheus", Duration.ofSeconds(1)));
        assertTrue(e.getMessage().contains("logging, otlp, otlp=URL, file=PATH"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> NodeMetrics.exportingReader("otlp=ftp://x", Duration.ofSeconds(1)));
        assertThrows(IllegalArgumentException.class, () -> NodeMetrics.exportingReader("logging", Duration.ZERO));
    }
}
