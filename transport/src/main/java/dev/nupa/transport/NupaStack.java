package dev.nupa.transport;

import java.util.ArrayList;
import java.util.List;

import dev.nupa.ip.LoopGroup;

/**
 * A fabric node, built in one place: for each event loop a stack (device, link, datapath, IPv4, TCP; see
 * {@link FabricStack}), then the layers above them in order (RDMA, a gateway: {@link NodeLayer}). The Vert.x
 * transport ({@link NupaVertx#create(NupaStack, io.vertx.core.VertxOptions, io.vertx.core.spi.VertxTracerFactory)})
 * and plain Netty ({@link NupaNetty#eventLoopGroup(NupaStack, java.util.concurrent.ThreadFactory)}) take the built
 * node and run its loops; as each loop ends, the layers let go of it and its stack closes.
 *
 * <pre>{@code
 * NupaStack node = NupaStack.builder(StackConfig.defaults(fabric, 0)).layer(rdma).open();
 * Vertx vertx = NupaVertx.create(node, new VertxOptions(), null);
 * }</pre>
 */
public final class NupaStack {
    private final List<FabricStack> stacks;
    private final List<NodeLayer> layers = new ArrayList<>();

    private NupaStack(List<FabricStack> stacks) {
        this.stacks = stacks;
    }

    /** A builder of the node {@code config} describes. */
    public static Builder builder(StackConfig config) {
        return new Builder(config);
    }

    /** What a node is built from: its stacks' configuration and the layers above them, built in the order given. */
    public static final class Builder {
        private final StackConfig config;
        private final List<NodeLayer.Factory> layers = new ArrayList<>();

        private Builder(StackConfig config) {
            this.config = config;
        }

        /** Adds a layer, built onto the node after the stacks and the layers added before it. */
        public Builder layer(NodeLayer.Factory layer) {
            layers.add(layer);
            return this;
        }

        /** The node's event loops. */
        public int loops() {
            return config.loops();
        }

        /**
         * Joins (or creates) the fabric, attaches the node's loops and builds their stacks, then the layers. All or
         * none: throws with the reason, leaving nothing attached.
         */
        public NupaStack open() {
            LoopGroup group = new LoopGroup(config.loops());
            List<FabricStack> stacks = new ArrayList<>();
            try {
                for (int loop = 0; loop < config.loops(); loop++) {
                    stacks.add(FabricStack.open(config, group, loop, stacks.isEmpty() ? null : stacks.getFirst()));
                }
            } catch (RuntimeException e) {
                stacks.forEach(FabricStack::close);
                throw e;
            }
            NupaStack node = new NupaStack(List.copyOf(stacks));
            try {
                for (NodeLayer.Factory f : layers) {
                    node.layers.add(f.open(node));
                }
            } catch (RuntimeException e) {
                node.close();
                throw e;
            }
            return node;
        }
    }

    /** The stacks of the node's event loops, the primary (which peers send to) first. */
    public List<FabricStack> stacks() {
        return stacks;
    }

    /** The primary loop's stack. */
    public FabricStack primary() {
        return stacks.getFirst();
    }

    /** The node's layer of {@code type}, or null when it has none. */
    public <L extends NodeLayer> L layer(Class<L> type) {
        for (NodeLayer l : layers) {
            if (type.isInstance(l)) {
                return type.cast(l);
            }
        }
        return null;
    }

    /**
     * On {@code stack}'s loop as it ends: the layers let go of it (last built first), then the stack closes. A layer
     * that fails to close does not keep the others or the stack open; the first failure is thrown after.
     */
    void closeLoop(FabricStack stack) {
        RuntimeException failed = null;
        for (int i = layers.size() - 1; i >= 0; i--) {
            try {
                layers.get(i).close(stack);
            } catch (RuntimeException e) {
                if (failed == null) {
                    failed = e;
                }
            }
        }
        stack.close();
        if (failed != null) {
            throw failed;
        }
    }

    /** Closes a node whose loops never ran (a failed build), on the caller's thread. */
    void close() {
        for (FabricStack s : stacks) {
            closeLoop(s);
        }
    }

    @Override
    public String toString() {
        return primary().toString();
    }
}
