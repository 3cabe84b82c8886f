package dev.nupa.transport;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;

import dev.nupa.tcp.TcpConnection;
import io.netty.channel.DefaultFileRegion;
import io.netty.channel.FileRegion;

/**
 * Writes a {@link FileRegion} into a connection's send buffer, as much as fits; the region then stands at its
 * {@code transferred()} and goes on from there once the connection is writable again.
 *
 * <p>A {@link DefaultFileRegion} (Vert.x's {@code sendFile}) is read from its file into a direct buffer of the
 * loop ({@link FileBuffer}) and copied from there, nothing allocated per write; its file and progress are its
 * private fields, which Netty's epoll transport reads and sets from C ({@code sendFile} in
 * netty_epoll_linuxsocket.c), and which this class reaches where Netty's package is open to it (the class path,
 * as the node and the tests run). Any other region, or a DefaultFileRegion where Netty is a named module (its
 * package is not open), transfers into this class as a {@link WritableByteChannel}, as epoll's
 * {@code writeFileRegion} hands it one over the socket: each write takes what fits and says how much. A
 * DefaultFileRegion then reads its file through the JDK's {@code FileChannel.transferTo}, 8 KiB at a time into a
 * heap buffer it makes per call. Used on the channel's event loop only.
 */
final class RegionSink implements WritableByteChannel {
    /** DefaultFileRegion's file and bytes sent, where its package is open to this class; else null. */
    private static final VarHandle FILE;
    private static final VarHandle TRANSFERRED;

    static {
        VarHandle file = null;
        VarHandle transferred = null;
        try {
            MethodHandles.Lookup netty = MethodHandles.privateLookupIn(DefaultFileRegion.class, MethodHandles.lookup());
            file = netty.findVarHandle(DefaultFileRegion.class, "file", FileChannel.class);
            transferred = netty.findVarHandle(DefaultFileRegion.class, "transferred", long.class);
        } catch (ReflectiveOperationException | RuntimeException e) {
            file = null; // a named module that does not open io.netty.channel, or another Netty: transferTo
            transferred = null;
        }
        FILE = file;
        TRANSFERRED = transferred;
    }

    /** The direct buffer a loop's channels read files through, one per loop ({@link FabricStack#fileBuffer}). */
    static final class FileBuffer {
        static final int SIZE = 64 * 1024;
        final ByteBuffer buffer = ByteBuffer.allocateDirect(SIZE);
        final MemorySegment segment = MemorySegment.ofBuffer(buffer);
    }

    private final BufMemory memory;
    private TcpConnection connection;

    /** Whether a DefaultFileRegion's file is read here directly (Netty's package is open to this class). */
    static boolean readsFilesDirectly() {
        return FILE != null;
    }

    RegionSink(BufMemory memory) {
        this.memory = memory;
    }

    /** Queues what fits of {@code region} from where it stands into {@code c}'s send buffer; returns the bytes taken. */
    long take(TcpConnection c, FileRegion region, FabricStack stack) throws IOException {
        if (FILE != null && region.getClass() == DefaultFileRegion.class) {
            DefaultFileRegion r = (DefaultFileRegion) region;
            r.open(); // a region made from a File opens it now, as epoll's sendFile does first
            FileChannel file = (FileChannel) FILE.get(r);
            if (file != null) { // null: released already; its transferTo says so
                return read(c, r, file, stack.fileBuffer());
            }
        }
        connection = c;
        try {
            return region.transferTo(this, region.transferred());
        } finally {
            connection = null;
        }
    }

    /** Reads the region's file into the send buffer through {@code via}; throws where the file ends before the region. */
    private static long read(TcpConnection c, DefaultFileRegion region, FileChannel file, FileBuffer via) throws IOException {
        long done = region.transferred();
        long left = region.count() - done;
        long at = region.position() + done;
        long taken = 0;
        try {
            while (left > taken) {
                int room = c.writable();
                if (room == 0) {
                    break;
                }
                ByteBuffer b = via.buffer.clear().limit((int) Math.min(Math.min(left - taken, room), FileBuffer.SIZE));
                int n = file.read(b, at + taken);
                if (n <= 0) {
                    break;
                }
                taken += c.queue(via.segment, 0, n); // all of it: no more than the room
            }
        } finally {
            TRANSFERRED.set(region, done + taken); // what reached the send buffer, whatever failed after
        }
        if (taken == 0 && left > 0 && c.writable() > 0) {
            // Nothing to read where the region has bytes left: the file is shorter (truncated), as
            // DefaultFileRegion.validate reports it (and epoll's validateFileRegion after a sendfile of 0).
            throw new IOException("Underlying file size " + file.size() + " smaller then requested count " + region.count());
        }
        return taken;
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
