package dev.nupa.device;

import java.lang.foreign.MemorySegment;

/**
 * A claimed slot, to be written in place and then published (or aborted). Reusable: one per
 * sending thread, passed to {@link FabricDevice#tryClaim}, so sending allocates nothing.
 * The frame occupies {@code [offset(), offset() + length())} of {@link #memory()}.
 */
public final class FrameClaim {
    FabricNode node;
    Ring ring;
    int destination;
    long position = -1;
    long offset;
    int length;

    public MemorySegment memory() {
        return ring.mem;
    }

    public long offset() {
        return offset;
    }

    public int length() {
        return length;
    }

    public int destination() {
        return destination;
    }

    /**
     * Publishes the frame. Returns {@link FabricDevice#OK}, or {@link FabricDevice#LATE} if the
     * consumer had given up on this slot (the claim was held longer than the stall timeout).
     */
    public int publish() {
        return finish(0);
    }

    /** Gives the slot back unused; the consumer skips it silently. */
    public void abort() {
        finish(FabricLayout.CTRL_PADDING);
    }

    private int finish(long flags) {
        if (position < 0) {
            throw new IllegalStateException("frame claim is not active: call tryClaim and check it returned OK first");
        }
        long p = position;
        position = -1;
        return node.publish(this, p, flags);
    }
}
