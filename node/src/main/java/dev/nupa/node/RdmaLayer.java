package dev.nupa.node;

import dev.nupa.roce.ip.Ipv4RoceIp;
import dev.nupa.roce.vertx.NodeRdma;
import dev.nupa.transport.NupaStack;
import dev.nupa.transport.FabricStack;
import dev.nupa.transport.NodeLayer;

/** A node's RDMA ({@link NodeRdma}) as a layer of the node, on its primary loop. */
final class RdmaLayer implements NodeLayer {
    private final FabricStack primary;
    private final NodeRdma rdma;

    private RdmaLayer(FabricStack primary, NodeRdma rdma) {
        this.primary = primary;
        this.rdma = rdma;
    }

    /** The builder's step that opens RDMA on the node's primary loop, speaking RoCEv2 through its IP layer. */
    static RdmaLayer open(NupaStack node) {
        FabricStack s = node.primary();
        return new RdmaLayer(s, NodeRdma.open(s.link(), s.neighbors(), s.ip() == null ? null : new Ipv4RoceIp(s.ip())));
    }

    NodeRdma rdma() {
        return rdma;
    }

    @Override
    public void close(FabricStack loop) {
        if (loop == primary) {
            rdma.close();
        }
    }
}
