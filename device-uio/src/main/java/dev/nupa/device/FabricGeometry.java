package dev.nupa.device;

/**
 * The shape of a fabric, fixed when it is created and stored in its header.
 *
 * @param maxNodes           node addresses 0..maxNodes-1 (1..1024)
 * @param ringsPerNode       receive rings each node consumes (1..16)
 * @param ringSlots          slots per ring, a power of two (2..65536)
 * @param maxFrame           largest frame a slot holds, in bytes (64..16 MiB)
 * @param maxWindows         entries in the window table (1..65536)
 * @param windowBytes        bytes of window space shared by all nodes' exported windows
 * @param heartbeatPeriodNs  how often a node bumps its heartbeat
 * @param heartbeatTimeoutNs how long a heartbeat may stand still before the node is declared dead
 * @param stallTimeoutNs     how long a consumer waits on a claimed but unpublished slot before skipping it
 */
public record FabricGeometry(int maxNodes, int ringsPerNode, int ringSlots, int maxFrame, int maxWindows,
                             long windowBytes, long heartbeatPeriodNs, long heartbeatTimeoutNs,
                             long stallTimeoutNs) {

    public static final int MAX_NODES = 1024;

    /** 64 nodes, one ring of 256 slots of 9216 bytes (a 9000-byte MTU plus headers), 64 MiB of windows. */
    public static FabricGeometry defaults() {
        return new FabricGeometry(64, 1, 256, 9216, 256, 64L << 20,
                100_000_000L, 1_000_000_000L, 1_000_000_000L);
    }

    public FabricGeometry {
        check(maxNodes >= 1 && maxNodes <= MAX_NODES, "max nodes " + maxNodes + " is outside 1.." + MAX_NODES);
        check(ringsPerNode >= 1 && ringsPerNode <= 16, "rings per node " + ringsPerNode + " is outside 1..16");
        check(ringSlots >= 2 && ringSlots <= 65536 && Integer.bitCount(ringSlots) == 1,
                "ring slots " + ringSlots + " must be a power of two in 2..65536");
        check(maxFrame >= 64 && maxFrame <= (16 << 20), "max frame " + maxFrame + " bytes is outside 64..16777216");
        check(maxWindows >= 1 && maxWindows <= 65536, "max windows " + maxWindows + " is outside 1..65536");
        check(windowBytes >= 0 && windowBytes % FabricLayout.PAGE == 0,
                "window space " + windowBytes + " bytes must be a non-negative multiple of " + FabricLayout.PAGE);
        check(heartbeatPeriodNs >= 1_000_000L, "heartbeat period must be at least 1 ms");
        check(heartbeatTimeoutNs >= 2 * heartbeatPeriodNs, "heartbeat timeout must be at least twice the period");
        check(stallTimeoutNs >= 1_000_000L, "stall timeout must be at least 1 ms");
        long total = FabricLayout.totalBytes(maxNodes, ringsPerNode, ringSlots, maxFrame, maxWindows, windowBytes);
        check(total <= (1L << 40), "fabric of " + total + " bytes is too large; shrink nodes, slots or frames");
    }

    public FabricGeometry withMaxNodes(int n) {
        return new FabricGeometry(n, ringsPerNode, ringSlots, maxFrame, maxWindows, windowBytes,
                heartbeatPeriodNs, heartbeatTimeoutNs, stallTimeoutNs);
    }

    public FabricGeometry withRing(int slots, int frame) {
        return new FabricGeometry(maxNodes, ringsPerNode, slots, frame, maxWindows, windowBytes,
                heartbeatPeriodNs, heartbeatTimeoutNs, stallTimeoutNs);
    }

    public FabricGeometry withRingsPerNode(int rings) {
        return new FabricGeometry(maxNodes, rings, ringSlots, maxFrame, maxWindows, windowBytes,
                heartbeatPeriodNs, heartbeatTimeoutNs, stallTimeoutNs);
    }

    public FabricGeometry withWindows(int count, long bytes) {
        return new FabricGeometry(maxNodes, ringsPerNode, ringSlots, maxFrame, count, bytes,
                heartbeatPeriodNs, heartbeatTimeoutNs, stallTimeoutNs);
    }

    public FabricGeometry withTimeouts(long heartbeatPeriod, long heartbeatTimeout, long stallTimeout) {
        return new FabricGeometry(maxNodes, ringsPerNode, ringSlots, maxFrame, maxWindows, windowBytes,
                heartbeatPeriod, heartbeatTimeout, stallTimeout);
    }

    /** Bytes the fabric occupies with this geometry. */
    public long totalBytes() {
        return FabricLayout.totalBytes(maxNodes, ringsPerNode, ringSlots, maxFrame, maxWindows, windowBytes);
    }

    private static void check(boolean ok, String problem) {
        if (!ok) {
            throw new FabricException("bad fabric geometry: " + problem);
        }
    }
}
