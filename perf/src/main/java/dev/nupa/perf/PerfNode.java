package dev.nupa.perf;

import dev.nupa.device.Affinity;
import dev.nupa.device.Fabric;
import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;
import java.nio.file.Path;

/**
 * One side of an IP-level perf test: a node whose stack is polled in line by the test's own thread
 * (no datapath thread, so no thread hop on either side). The server may create the fabric; a client
 * only joins one, so a typo in --fabric fails fast.
 */
final class PerfNode implements AutoCloseable {
    final FabricNode node;
    final Link link;
    final Ipv4Stack ip;

    PerfNode(PerfOptions o, boolean server, boolean checksums) {
        this(o, o.fabric, server, checksums, Link.DEFAULT_MTU);
    }

    /** As above, with a link MTU of {@code mtu}. */
    PerfNode(PerfOptions o, boolean server, boolean checksums, int mtu) {
        this(o, o.fabric, server, checksums, mtu);
    }

    /** As above, on {@code fabric} rather than --fabric (a tool that makes its own fresh fabric). */
    PerfNode(PerfOptions o, Path fabric, boolean server, boolean checksums, int mtu) {
        if (o.cpu >= 0 && !Affinity.pin(o.cpu)) {
            System.err.println("nupa: could not pin to CPU " + o.cpu + "; running unpinned");
        }
        this(server ? ShmFabric.attach(fabric, o.serverAddress, null) : joined(fabric, o.clientAddress), checksums, mtu);
    }

    /** A second node of a client, at {@code address} of --fabric, for a thread of its own (not pinned). */
    PerfNode(PerfOptions o, int address) {
        this(joined(o.fabric, address), true, Link.DEFAULT_MTU);
    }

    private PerfNode(FabricNode node, boolean checksums, int mtu) {
        this.node = node;
        link = new Link(node, mtu);
        IpConfig cfg = IpConfig.fabricPlan(node.address()).withSendWait(1_000_000_000L).withChecksums(checksums, checksums);
        ip = new Ipv4Stack(link, new NeighborDirectory(node), cfg);
    }

    /** A client joins the fabric file (a typo fails fast) and attaches at {@code address}. */
    private static FabricNode joined(Path fabric, int address) {
        Fabric f = ShmFabric.join(fabric);
        try {
            FabricNode n = f.attach(address);
            n.closeFabricOnClose();
            return n;
        } catch (RuntimeException e) {
            f.close();
            throw e;
        }
    }

    /** One poll of the link at the current time. */
    int poll() {
        return link.poll(16, System.nanoTime());
    }

    @Override
    public void close() {
        node.close();
    }
}
