package dev.nupa.node;

import dev.nupa.gateway.Gateway;
import dev.nupa.gateway.GatewayConfig;
import dev.nupa.transport.FabricStack;
import dev.nupa.transport.NodeLayer;

/** A node's gateway to Ethernet ({@link Gateway}) as a layer of the node: a TAP queue per event loop. */
final class GatewayLayer implements NodeLayer {
    private final Gateway gateway;

    private GatewayLayer(Gateway gateway) {
        this.gateway = gateway;
    }

    /** The builder's step that opens the gateway {@code config} describes on the node's loops. */
    static NodeLayer.Factory factory(GatewayConfig config) {
        return node -> new GatewayLayer(Gateway.open(node.stacks().stream().map(FabricStack::ip).toList(), config));
    }

    Gateway gateway() {
        return gateway;
    }

    @Override
    public void close(FabricStack loop) {
        gateway.close(loop.loop());
    }
}
