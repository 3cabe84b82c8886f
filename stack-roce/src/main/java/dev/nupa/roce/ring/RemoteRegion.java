package dev.nupa.roce.ring;

import dev.nupa.roce.verbs.RdmaException;
import java.nio.ByteBuffer;

/**
 * The memory region a target offers a proxy's queue pair, as the private data of its CM reply carries it:
 * base address, length and rkey, 20 bytes in network order (docs/work-rings.md).
 */
public record RemoteRegion(long addr, long length, int rkey) {
    public static final int BYTES = 20;

    public byte[] toBytes() {
        return ByteBuffer.allocate(BYTES).putLong(addr).putLong(length).putInt(rkey).array();
    }

    public static RemoteRegion parse(byte[] privateData) {
        if (privateData == null || privateData.length < BYTES) {
            throw new RdmaException("the target's reply carries no memory region (" + (privateData == null ? 0 : privateData.length)
                    + " bytes of private data, " + BYTES + " needed); connect the proxy to a target (nupa node --rdma-target PORT)");
        }
        ByteBuffer b = ByteBuffer.wrap(privateData);
        return new RemoteRegion(b.getLong(), b.getLong(), b.getInt());
    }
}
