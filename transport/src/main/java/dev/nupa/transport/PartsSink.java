package dev.nupa.transport;

import java.io.IOException;
import java.io.OutputStream;

import dev.nupa.tcp.TcpConnection;
import io.netty.buffer.ByteBuf;

/**
 * Queues a buffer of several parts (a composite: HTTP/2 writes a call's frames as one) into a
 * connection's send buffer part by part, through {@link ByteBuf#getBytes(int, OutputStream, int)}:
 * a heap part arrives as its own array, so a write allocates nothing, where {@code nioBuffers} makes
 * a ByteBuffer for each part and an array to hold them. Used on the channel's event loop only.
 */
final class PartsSink extends OutputStream {
    private final BufMemory memory;
    private final byte[] one = new byte[1];
    private TcpConnection connection;
    private int taken;
    private boolean full;

    PartsSink(BufMemory memory) {
        this.memory = memory;
    }

    /**
     * Queues up to {@code length} bytes of {@code buf} from its reader index (the caller bounds it by the
     * room in the send buffer, so no part is copied out only to be refused); returns the bytes taken.
     */
    int take(TcpConnection c, ByteBuf buf, int length) throws IOException {
        connection = c;
        taken = 0;
        full = false;
        try {
            buf.getBytes(buf.readerIndex(), this, length);
        } finally {
            connection = null;
        }
        return taken;
    }

    @Override
    public void write(byte[] b, int off, int len) {
        if (full || len == 0) {
            return; // what the send buffer refused stays in the ByteBuf for the next flush
        }
        memory.of(b, off);
        int n = connection.queue(memory.segment(), memory.offset(), len);
        taken += n;
        full = n < len;
    }

    @Override
    public void write(int b) {
        one[0] = (byte) b;
        write(one, 0, 1);
    }
}
