package dev.nupa.node;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import dev.nupa.ip.IpConfig;
import dev.nupa.ip.IpVerticle;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.UdpSocket;
import dev.nupa.l2.CaptureMirror;
import dev.nupa.l2.Link;
import dev.nupa.l2.LinkVerticle;
import dev.nupa.l2.PcapWriter;
import dev.nupa.roce.RoceVerticle;
import dev.nupa.tcp.TcpConfig;
import dev.nupa.tcp.TcpLayer;
import dev.nupa.tcp.TcpServer;
import dev.nupa.tcp.TcpSocket;
import dev.nupa.tcp.TcpVerticle;
import dev.nupa.transport.FabricStack;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

/**
 * A node, assembled: four verticles deployed on an application's Vert.x, the link (fabric, datapath
 * loop, neighbor directory), IP (IPv4, ICMP, UDP), TCP and RDMA (verbs context and connection
 * manager), and remote capture. Usable in-process:
 *
 * <pre>{@code
 * NupaNode node = NupaNode.start(vertx, NodeConfig.defaults(Path.of("/dev/shm/f1"), 0)).await();
 * UdpSocket s = node.createUdpSocket();
 * s.handler(d -> s.send(d.data(), d.senderPort(), d.senderHost()));
 * s.listen(7, "0.0.0.0");
 * }</pre>
 */
public final class NupaNode {
    private final Vertx vertx;
    private final Link link;
    private final Ipv4Stack ip;
    private final TcpLayer tcp;
    private final RoceVerticle roceVerticle;
    private final CaptureMirror mirror;
    private final PcapWriter pcap;
    /** Takes the node down: undeploys its verticles, or closes the Vert.x instance it runs under. */
    private final Supplier<Future<Void>> shutdown;

    private NupaNode(Vertx vertx, Link link, Ipv4Stack ip, TcpLayer tcp, RoceVerticle roce, CaptureMirror mirror, PcapWriter pcap,
                     Supplier<Future<Void>> shutdown) {
        this.vertx = vertx;
        this.link = link;
        this.ip = ip;
        this.tcp = tcp;
        this.roceVerticle = roce;
        this.mirror = mirror;
        this.pcap = pcap;
        this.shutdown = shutdown;
    }

    /**
     * Starts Vert.x on a node of its own (the Vert.x transport, {@link NupaVertx}): the node's event
     * loop is its datapath, so the sockets, verbs and handlers of the node all run on that one
     * thread, with no hand-over. {@link #close()} closes that Vert.x instance and the node leaves
     * the fabric. The Future fails with the reason (fabric, address, IP, route, capture file).
     */
    public static Future<NupaNode> create(NodeConfig config) {
        Vertx vertx;
        try {
            vertx = NupaVertx.create(new StackConfig(config.fabric(), config.address(), config.geometry(), config.mtu(),
                    config.idle(), config.ip(), config.routes(), config.tcp(), config.tcpBufferMemory(), 1));
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
        FabricStack stack = NupaVertx.stack(vertx);
        RoceVerticle roce = new RoceVerticle(stack.link(), stack.neighbors());
        return vertx.deployVerticle(roce).compose(id -> {
            CaptureMirror mirror = new CaptureMirror(stack.link());
            PcapWriter pcap = null;
            try {
                if (config.capture() != null) {
                    pcap = PcapWriter.open(config.capture());
                    mirror.setLocal(pcap);
                }
            } catch (IOException e) {
                return Future.failedFuture(new UncheckedIOException("cannot write capture " + config.capture() + ": "
                        + e.getMessage(), e));
            }
            return Future.succeededFuture(new NupaNode(vertx, stack.link(), stack.ip(), stack.tcp(), roce, mirror, pcap,
                    vertx::close));
        }).recover(e -> vertx.close().transform(v -> Future.failedFuture(e)));
    }

    /** Deploys the node's verticles; the Future fails with the reason (fabric, address, IP, route). */
    public static Future<NupaNode> start(Vertx vertx, NodeConfig config) {
        LinkVerticle link = new LinkVerticle(config.fabric(), config.address(), config.mtu(), config.geometry(),
                config.idle());
        return vertx.deployVerticle(link).compose(linkId -> {
            IpVerticle ip;
            try {
                IpConfig ipc = config.ip() != null ? config.ip() : NodeConfig.defaultIp(link.link().address());
                ip = new IpVerticle(link, ipc, config.routes());
            } catch (RuntimeException e) {
                return vertx.undeploy(linkId).transform(v -> Future.failedFuture(e));
            }
            TcpVerticle tcp = config.tcpBufferMemory() > 0
                    ? new TcpVerticle(link, ip, config.tcpOrDefault(), config.tcpBufferMemory())
                    : new TcpVerticle(link, ip, config.tcpOrDefault());
            RoceVerticle roce = new RoceVerticle(link);
            return vertx.deployVerticle(ip).transform(ar -> {
                if (ar.failed()) {
                    return vertx.undeploy(linkId).transform(v -> Future.failedFuture(ar.cause()));
                }
                return vertx.deployVerticle(tcp).compose(tcpId -> vertx.deployVerticle(roce)
                        .map(roceId -> new String[] {ar.result(), tcpId, roceId}));
            }).transform(ar -> {
                if (ar.failed()) {
                    return vertx.undeploy(linkId).transform(v -> Future.failedFuture(ar.cause()));
                }
                String ipId = ar.result()[0];
                String tcpId = ar.result()[1];
                String roceId = ar.result()[2];
                PcapWriter pcap = null;
                CaptureMirror mirror = new CaptureMirror(link.link());
                try {
                    if (config.capture() != null) {
                        pcap = PcapWriter.open(config.capture());
                        mirror.setLocal(pcap);
                    }
                } catch (IOException e) {
                    return vertx.undeploy(roceId).compose(v -> vertx.undeploy(tcpId)).compose(v -> vertx.undeploy(ipId))
                            .compose(v -> vertx.undeploy(linkId))
                            .transform(v -> Future.failedFuture(new UncheckedIOException("cannot write capture "
                                    + config.capture() + ": " + e.getMessage(), e)));
                }
                return Future.succeededFuture(new NupaNode(vertx, link.link(), ip.stack(), tcp.layer(), roce, mirror, pcap,
                        () -> vertx.undeploy(roceId).compose(v -> vertx.undeploy(tcpId)).compose(v -> vertx.undeploy(ipId))
                                .compose(v -> vertx.undeploy(linkId))));
            });
        });
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

    public CaptureMirror mirror() {
        return mirror;
    }

    public TcpLayer tcp() {
        return tcp;
    }

    /**
     * The node's RDMA: its verbs context and connection manager live on the datapath thread; reach them
     * with {@code rdma().execute(ctx -> ...)} (docs/rdma.md, docs/embedding.md).
     */
    public RoceVerticle rdma() {
        return roceVerticle;
    }

    /** A TCP server (in the manner of Vert.x's NetServer) whose handlers run on the caller's context. */
    public TcpServer createTcpServer() {
        return createTcpServer(tcp().defaults());
    }

    /** A TCP server whose connections use {@code config} (socket options) instead of the node's defaults. */
    public TcpServer createTcpServer(TcpConfig config) {
        return TcpServer.create(vertx, tcp(), config);
    }

    /** Connects to {@code host}:{@code port} over the fabric; fails with the reason (refused, timed out). */
    public Future<TcpSocket> connectTcp(int port, String host) {
        return connectTcp(port, host, tcp().defaults());
    }

    /** Connects with {@code config} (socket options) instead of the node's defaults. */
    public Future<TcpSocket> connectTcp(int port, String host, TcpConfig config) {
        return TcpSocket.connect(vertx, tcp(), port, host, config);
    }

    /** A UDP socket whose handlers run on the caller's Vert.x context. */
    public UdpSocket createUdpSocket() {
        return UdpSocket.create(vertx, ip());
    }

    /**
     * Takes the node down: undeploys its verticles (or, for a node from {@link #create}, closes its
     * Vert.x instance); the node leaves the fabric, its capture is flushed and closed.
     */
    public Future<Void> close() {
        mirror.close();
        Future<Void> f = shutdown.get();
        if (pcap != null) {
            f = f.andThen(v -> {
                try {
                    pcap.close();
                } catch (RuntimeException e) {
                    // reported by the capture's lost count; the node is down either way
                }
            });
        }
        return f;
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
