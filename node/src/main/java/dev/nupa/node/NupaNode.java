package dev.nupa.node;

import dev.nupa.node.telemetry.RdmaTelemetry;
import dev.nupa.node.telemetry.TcpTelemetry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;

import dev.nupa.gateway.Gateway;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.l2.Link;
import dev.nupa.l2.PcapWriter;
import dev.nupa.roce.vertx.NodeRdma;
import dev.nupa.tcp.TcpLayer;
import dev.nupa.transport.NupaStack;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.opentelemetry.api.OpenTelemetry;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.tracing.opentelemetry.OpenTelemetryTracingFactory;

/**
 * A node, assembled: the node's builder ({@link NupaStack}) makes the link (fabric, neighbor directory), IP (IPv4,
 * ICMP, UDP) and TCP of each event loop, then RDMA (verbs context and connection manager, {@link NodeRdma}) and the
 * gateway if asked for; a Vert.x instance runs it (the Vert.x transport, {@link NupaVertx}: its event loops are the
 * node's datapaths), with a local capture if asked for (`nupa capture`
 * observers are served by the fabric node itself, docs/fabric-layout.md 12). Applications use
 * the node through that Vert.x instance, unmodified:
 *
 * <pre>{@code
 * NupaNode node = NupaNode.create(NodeConfig.defaults(Path.of("/dev/shm/f1"), 0)).await();
 * DatagramSocket s = node.vertx().createDatagramSocket();
 * s.handler(p -> s.send(p.data(), p.sender().port(), p.sender().host()));
 * s.listen(7, "0.0.0.0");
 * }</pre>
 */
public final class NupaNode {
    private final Vertx vertx;
    private final Link link;
    private final Ipv4Stack ip;
    private final TcpLayer tcp;
    private final NodeRdma rdma;
    private final Gateway gateway;
    private final PcapWriter pcap;
    private final OpenTelemetry openTelemetry;
    private TcpTelemetry tcpTelemetry;
    private RdmaTelemetry rdmaTelemetry;

    private NupaNode(Vertx vertx, NupaStack node, PcapWriter pcap, OpenTelemetry openTelemetry) {
        this.openTelemetry = openTelemetry;
        this.vertx = vertx;
        this.link = node.primary().link();
        this.ip = node.primary().ip();
        this.tcp = node.primary().tcp();
        this.rdma = node.layer(RdmaLayer.class).rdma();
        GatewayLayer g = node.layer(GatewayLayer.class);
        this.gateway = g == null ? null : g.gateway();
        this.pcap = pcap;
    }

    /**
     * Starts Vert.x on a node of its own (the Vert.x transport, {@link NupaVertx}): the node's event
     * loop is its datapath, so the sockets, verbs and handlers of the node all run on that one
     * thread, with no hand-over. {@link #close()} closes that Vert.x instance and the node leaves
     * the fabric. The Future fails with the reason (fabric, address, IP, route, capture file).
     */
    public static Future<NupaNode> create(NodeConfig config) {
        PcapWriter pcap = null;
        try {
            if (config.capture() != null) { // first: a capture that cannot be written starts nothing
                pcap = PcapWriter.open(config.capture());
            }
            StackConfig stack = new StackConfig(config.fabric(), config.address(), config.geometry(), config.mtu(),
                    config.idle(), config.ip(), config.routes(), config.tcp(), config.tcpBufferMemory(),
                    config.gateway() == null ? 1 : config.gateway().queues(), config.linkFaults(), config.access()); // a loop per TAP queue
            NupaStack.Builder builder = NupaStack.builder(stack).layer(RdmaLayer::open);
            if (config.gateway() != null) {
                builder.layer(GatewayLayer.factory(config.gateway()));
            }
            NupaStack built = builder.open();
            if (pcap != null) {
                built.primary().link().setCapture(pcap);
            }
            Vertx vertx = config.openTelemetry() == null ? NupaVertx.create(built, new VertxOptions(), null)
                    : NupaVertx.create(built, tracingOptions(), new OpenTelemetryTracingFactory(config.openTelemetry()));
            NupaNode node = new NupaNode(vertx, built, pcap, config.openTelemetry());
            if (config.openTelemetry() != null) {
                node.tcpTelemetry().tracer(config.openTelemetry().getTracer("dev.nupa.node.tcp"));
                node.rdmaTelemetry().tracer(config.openTelemetry().getTracer("dev.nupa.node.rdma"));
            }
            LinkFaultTable.publish(node.link());
            return Future.succeededFuture(node);
        } catch (IOException e) {
            return Future.failedFuture(new UncheckedIOException("cannot write capture " + config.capture() + ": "
                    + e.getMessage(), e));
        } catch (RuntimeException e) {
            closeQuietly(pcap);
            return Future.failedFuture(e);
        }
    }

    public Vertx vertx() {
        return vertx;
    }

    public Ipv4Stack ip() {
        return ip;
    }

    public Link link() {
        return link;
    }

    public TcpLayer tcp() {
        return tcp;
    }

    /**
     * The node's RDMA: its verbs context and connection manager live on the datapath thread; reach them
     * with {@code rdma().execute(ctx -> ...)} (docs/rdma.md, docs/embedding.md).
     */
    public NodeRdma rdma() {
        return rdma;
    }

    /**
     * The node's TCP as spans and histograms ({@link TcpTelemetry}): started, and made the TCP layer's observer, on
     * first use (a traced node, or {@link NodeMetrics}); until then the layer calls nothing. The loop has the observer
     * when this returns: a connection opened afterwards is observed from its first event (a handed-over task would
     * run after the loop's next poll of the ring, which may already establish it).
     */
    synchronized TcpTelemetry tcpTelemetry() {
        if (tcpTelemetry == null) {
            TcpTelemetry t = new TcpTelemetry();
            link.call(() -> {
                tcp.setObserver(t);
                return null;
            });
            tcpTelemetry = t;
        }
        return tcpTelemetry;
    }

    /**
     * The node's RDMA work requests as spans and a histogram ({@link RdmaTelemetry}): started, and made the verbs
     * context's observer, on first use (a traced node, or {@link NodeMetrics}).
     */
    synchronized RdmaTelemetry rdmaTelemetry() {
        if (rdmaTelemetry == null) {
            RdmaTelemetry t = new RdmaTelemetry();
            link.call(() -> { // in place when this returns, as the TCP observer
                rdma.context().setObserver(t);
                return null;
            });
            rdmaTelemetry = t;
        }
        return rdmaTelemetry;
    }

    /** Where the node's spans go, or null when it is not traced ({@link NodeConfig#withOpenTelemetry}). */
    public OpenTelemetry openTelemetry() {
        return openTelemetry;
    }

    /** Tracing on for Vert.x; each server and client then follows its own tracing policy (PROPAGATE by default). */
    static VertxOptions tracingOptions() {
        return new VertxOptions().setTracingOptions(new io.vertx.core.tracing.TracingOptions());
    }

    /** The gateway's Ethernet side, or null when the node is no gateway. */
    public Gateway gateway() {
        return gateway;
    }

    /** Takes the node down: closes its Vert.x instance; the node leaves the fabric, its capture is flushed and closed. */
    public Future<Void> close() {
        if (pcap != null && link.capture() == pcap) {
            link.setCapture(null); // the file is closed below; frames sent meanwhile are not written to it
        }
        return vertx.close().andThen(v -> {
            closeQuietly(pcap);
            TcpTelemetry t;
            RdmaTelemetry r;
            synchronized (this) {
                t = tcpTelemetry;
                r = rdmaTelemetry;
            }
            if (t != null) {
                t.close(); // what the loop recorded before it stopped becomes spans and histogram points
            }
            if (r != null) {
                r.close();
            }
        });
    }

    private static void closeQuietly(PcapWriter pcap) {
        if (pcap != null) {
            try {
                pcap.close();
            } catch (RuntimeException e) {
                // reported by the capture's lost count; the node is down either way
            }
        }
    }

    /** Closes and waits (for command-line use). */
    public void closeAndWait() {
        try {
            close().await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("node did not close cleanly: " + e.getMessage(), e);
        }
    }

    @Override
    public String toString() {
        return "node " + link().address() + " " + ip().config() + " mtu " + link().mtu();
    }
}
