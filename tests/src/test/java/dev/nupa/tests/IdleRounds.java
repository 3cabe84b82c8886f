package dev.nupa.tests;

import dev.nupa.device.FabricDevice;

/**
 * How the raw consumers of the system tests idle between polls of a node: 200 rounds spinning, 100 yielding, then
 * sleeps on the node's doorbell of up to 1 ms each; any work starts it over.
 */
final class IdleRounds {
    private final FabricDevice node;
    private int idle;

    IdleRounds(FabricDevice node) {
        this.node = node;
    }

    /** After a round that did {@code work} items. */
    void after(int work) {
        idle = work > 0 ? 0 : idle + 1;
        if (idle > 300) {
            node.awaitFrames(1_000_000L);
        } else if (idle > 200) {
            Thread.yield();
        } else if (idle > 0) {
            Thread.onSpinWait();
        }
    }
}
