package dev.nupa.node;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;

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
import io.vertx.core.Future;
import io.vertx.core.Vertx;

/**
 * A node, assembled: the link verticle (fabric, datapath loop, neighbor directory), the IP verticle
 * (IPv4, ICMP, UDP), and remote capture, deployed on an application's Vert.x. Usable in-process:
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
    private final LinkVerticle linkVerticle;
    private final IpVerticle ipVerticle;
    private final TcpVerticle tcpVerticle;
    private final RoceVerticle roceVerticle;
    private final CaptureMirror mirror;
    private final PcapWriter pcap;
    private final String linkId;
    private final String ipId;
    private final String tcpId;
    private final String roceId;

    private NupaNode(Vertx vertx, LinkVerticle link, IpVerticle ip, TcpVerticle tcp, RoceVerticle roce, CaptureMirror mirror,
                     PcapWriter pcap, String linkId, String ipId, String tcpId, String roceId) {
        this.vertx = vertx;
        this.linkVerticle = link;
        this.ipVerticle = ip;
        this.tcpVerticle = tcp;
        this.roceVerticle = roce;
        this.tcpId = tcpId;
        this.roceId = roceId;
        this.mirror = mirror;
        this.pcap = pcap;
        this.linkId = linkId;
        this.ipId = ipId;
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
                return Future.succeededFuture(new NupaNode(vertx, link, ip, tcp, roce, mirror, pcap, linkId, ipId, tcpId, roceId));
            });
        });
    }

    public Vertx vertx() {
        return vertx;
    }

    public Ipv4Stack ip() {
        return ipVerticle.stack();
    }

    public Link link() {
        return linkVerticle.link();
    }

    public CaptureMirror mirror() {
        return mirror;
    }

    public TcpLayer tcp() {
        return tcpVerticle.layer();
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

    /** Undeploys the verticles: the node leaves the fabric, its capture is flushed and closed. */
    public Future<Void> close() {
        mirror.close();
        Future<Void> f = vertx.undeploy(roceId).compose(v -> vertx.undeploy(tcpId)).compose(v -> vertx.undeploy(ipId))
                .compose(v -> vertx.undeploy(linkId));
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
