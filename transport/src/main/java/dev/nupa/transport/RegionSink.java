package dev.nupa.transport;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;

import dev.nupa.tcp.TcpConnection;
import io.netty.channel.FileRegion;

/**
 * A connection's send buffer as the {@link WritableByteChannel} a {@link FileRegion} transfers into, as Netty's
 * epoll transport hands a region a channel over its socket ({@code AbstractEpollStreamChannel.writeFileRegion}):
 * each write takes what fits and says how much, so the region stops there and resumes from its
 * {@code transferred()} once the connection is writable again. A {@code DefaultFileRegion} reads its file into
 * what it writes here ({@code FileChannel.transferTo} to a channel that is not the JDK's own). Used on the
 * channel's event loop only.
 */
final class RegionSink implements WritableByteChannel {
    private final BufMemory memory;
    private TcpConnection connection;

    RegionSink(BufMemory memory) {
        this.memory = memory;
    }

    /** Queues what fits of {@code region} from where it stands into {@code c}'s send buffer; returns the bytes taken. */
    long take(TcpConnection c, FileRegion region) throws IOException {
        connection = c;
        try {
            return region.transferTo(this, region.transferred());
        } finally {
            connection = null;
        }
    }

    @Override
    public int write(ByteBuffer src) {
        int n = Math.min(src.remaining(), connection.writable());
        if (n == 0) {
            return 0;
        }
        MemorySegment segment;
        long offset;
        if (src.hasArray()) {
            memory.of(src.array(), src.arrayOffset() + src.position());
            segment = memory.segment();
            offset = memory.offset();
        } else {
            segment = MemorySegment.ofBuffer(src); // from the buffer's position
            offset = 0;
        }
        int taken = connection.queue(segment, offset, n);
        src.position(src.position() + taken);
        return taken;
    }

    /** Open while a transfer runs (the JDK's transferTo checks it first). */
    @Override
    public boolean isOpen() {
        return connection != null;
    }

    @Override
    public void close() {
        // The channel closes the connection, not the region.
    }
}
