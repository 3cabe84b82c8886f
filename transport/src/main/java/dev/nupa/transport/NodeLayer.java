package dev.nupa.transport;

/**
 * A layer of a node above TCP (RDMA, a gateway's Ethernet side), built onto the node's stacks by
 * {@link NupaStack.Builder#layer} before its event loops start, and taken down as they end.
 */
public interface NodeLayer {
    /**
     * Takes down what this layer holds on {@code loop}: called on that loop's thread as it ends, before its stack
     * closes (the layers of a node in the reverse of the order they were built), or on the builder's thread when a
     * later layer failed and the loops never started.
     */
    void close(FabricStack loop);

    /** Builds a layer onto a node whose stacks are open and whose loops have not started. */
    @FunctionalInterface
    interface Factory {
        /** The layer over {@code node}; throws with the reason, leaving nothing of itself behind. */
        NodeLayer open(NupaStack node);
    }
}
