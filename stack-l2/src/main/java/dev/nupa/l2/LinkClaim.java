package dev.nupa.l2;

import java.lang.foreign.MemorySegment;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FrameClaim;

/**
 * A claimed link frame, its header already written, whose payload is written in place and then
 * published (or aborted): the zero-copy send path, built on {@link FrameClaim}. Reusable: keep one
 * per sending thread and pass it to {@link Link#tryClaim}, so sending allocates nothing.
 * The payload occupies {@code [payloadOffset(), payloadOffset() + payloadLength())} of {@link #memory()}.
 */
public final class LinkClaim {
    final FrameClaim frame = new FrameClaim();
    Link link;
    int protocol;
    int slot;
    int payloadLength;
    boolean active;

    public MemorySegment memory() {
        requireActive();
        return frame.memory();
    }

    /** Where the payload starts in {@link #memory()} (after the 8-byte link header). */
    public long payloadOffset() {
        requireActive();
        return frame.offset() + LinkHeader.LENGTH;
    }

    public int payloadLength() {
        return payloadLength;
    }

    public int protocol() {
        return protocol;
    }

    public int destination() {
        return frame.destination();
    }

    /**
     * Publishes the frame. Returns {@link FabricDevice#OK}, or {@link FabricDevice#LATE} if the claim
     * was held past the fabric's stall timeout and the receiver skipped it.
     */
    public int publish() {
        requireActive();
        active = false;
        return link.publish(this);
    }

    /** Gives the slot back unsent; the receiver skips it silently. */
    public void abort() {
        requireActive();
        active = false;
        frame.abort();
    }

    public boolean isActive() {
        return active;
    }

    private void requireActive() {
        if (!active) {
            throw new IllegalStateException("link claim is not active: call Link.tryClaim and check it returned OK first");
        }
    }
}
