package dev.nupa.roce;

import dev.nupa.roce.transport.Mw;
import dev.nupa.roce.verbs.MwType;
import dev.nupa.roce.verbs.WrOpcode;

/**
 * A type 2 memory window, in the manner of libibverbs' {@code struct ibv_mw} (IBA 10.6.7): allocated free with
 * {@link ProtectionDomain#allocMw}, bound to part of a memory region by a {@link WrOpcode#BIND_MW} send work request
 * (with a key byte of the consumer's choice, {@link #incRkey}), reached by peers through {@link #rkey()} while bound,
 * and invalidated by {@link WrOpcode#LOCAL_INV} or a peer's {@link WrOpcode#SEND_WITH_INV}. {@link #close()}
 * deallocates it ({@code ibv_dealloc_mw}).
 */
public final class MemoryWindow implements AutoCloseable {
    final ProtectionDomain pd;
    final Mw mw;

    MemoryWindow(ProtectionDomain pd, Mw mw) {
        this.pd = pd;
        this.mw = mw;
    }

    /** The current rkey: the window's index and the key byte of its last bind. */
    public int rkey() {
        return mw.rkey();
    }

    /** {@code ibv_inc_rkey}: {@code rkey} with its key byte incremented, the index kept; what a bind usually asks for. */
    public static int incRkey(int rkey) {
        return (rkey & ~0xFF) | ((rkey + 1) & 0xFF);
    }

    public MwType type() {
        return MwType.TYPE_2;
    }

    public ProtectionDomain pd() {
        return pd;
    }

    /** Whether a bind holds it now (it has not been invalidated since). */
    public boolean bound() {
        return mw.bound();
    }

    /** Deallocates the window ({@code ibv_dealloc_mw}); throws while it is bound. */
    @Override
    public void close() {
        pd.context.checkThread();
        pd.context.deallocMw(this);
    }

    @Override
    public String toString() {
        return "mw{rkey=0x" + Integer.toHexString(mw.rkey()) + ", type=2, " + (mw.bound() ? "bound" : "free") + "}";
    }
}
