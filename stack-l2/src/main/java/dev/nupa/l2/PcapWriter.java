package dev.nupa.l2;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Writes captured frames to a classic pcap file (nanosecond timestamps, magic 0xa1b23c4d, written
 * little-endian; link type LINKTYPE_ETHERNET), each frame behind a synthesized Ethernet II header:
 * destination and source MAC {@code 02:00:00:00:HH:LL} from the fabric addresses (locally
 * administered, unicast), EtherType = the link protocol. Wireshark and tshark then decode IPv4,
 * ICMP, UDP, TCP and RoCE natively. The direction ({@code outbound}) is not recorded: classic pcap
 * has no field for it.
 *
 * <p>Records are gathered in a direct buffer and written when it fills, on {@link #flush()} and on
 * {@link #close()}: the datapath thread that sends or polls pays for the copy and, now and then,
 * for a file write. An I/O error stops the capture (later frames are counted as lost) and is thrown
 * by {@link #flush()} or {@link #close()}. Safe to use from several threads (each call locks).
 */
public final class PcapWriter implements PacketCapture, AutoCloseable {
    /** The pcap magic for nanosecond timestamps. */
    public static final int MAGIC_NANOS = 0xa1b23c4d;
    public static final int LINKTYPE_ETHERNET = 1;
    /** The snapshot length Wireshark uses by default; also the largest this writer accepts. */
    public static final int DEFAULT_SNAPLEN = 262_144;
    public static final int GLOBAL_HEADER = 24;
    public static final int RECORD_HEADER = 16;
    public static final int ETHERNET_HEADER = 14;

    private final Path path;
    private final FileChannel channel;
    private final ByteBuffer buffer;
    private final MemorySegment bufferSegment;
    private final int snaplen;
    private long records;
    private long lost;
    private IOException failure;
    private boolean closed;

    private PcapWriter(Path path, FileChannel channel, int snaplen) {
        this.path = path;
        this.channel = channel;
        this.snaplen = snaplen;
        this.buffer = ByteBuffer.allocateDirect(Math.max(64 * 1024, RECORD_HEADER + snaplen)).order(ByteOrder.LITTLE_ENDIAN);
        this.bufferSegment = MemorySegment.ofBuffer(buffer);
    }

    /** Creates (or truncates) {@code path} with the default snapshot length. */
    public static PcapWriter open(Path path) throws IOException {
        return open(path, DEFAULT_SNAPLEN);
    }

    /** Creates (or truncates) {@code path}; frames are cut to {@code snaplen} bytes, Ethernet header included. */
    public static PcapWriter open(Path path, int snaplen) throws IOException {
        if (snaplen < ETHERNET_HEADER || snaplen > DEFAULT_SNAPLEN) {
            throw new IllegalArgumentException("pcap snapshot length " + snaplen + " is outside " + ETHERNET_HEADER
                    + ".." + DEFAULT_SNAPLEN + " (it must hold the synthesized Ethernet header)");
        }
        FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING);
        PcapWriter w = new PcapWriter(path, ch, snaplen);
        w.buffer.putInt(MAGIC_NANOS).putShort((short) 2).putShort((short) 4) // version 2.4
                .putInt(0).putInt(0) // thiszone, sigfigs
                .putInt(snaplen).putInt(LINKTYPE_ETHERNET);
        try {
            w.flush();
        } catch (UncheckedIOException e) {
            ch.close();
            throw e.getCause();
        }
        return w;
    }

    public Path path() {
        return path;
    }

    public int snaplen() {
        return snaplen;
    }

    /** Records written (or buffered). */
    public synchronized long records() {
        return records;
    }

    /** Frames not written because an earlier write failed or the writer was closed. */
    public synchronized long lost() {
        return lost;
    }

    @Override
    public synchronized void capture(long timestampNanos, boolean outbound, int srcNode, int dstNode, int protocol,
                                     MemorySegment mem, long off, int len) {
        if (closed || failure != null) {
            lost++;
            return;
        }
        int original = ETHERNET_HEADER + len;
        int included = Math.min(original, snaplen);
        if (buffer.remaining() < RECORD_HEADER + included && !drain()) {
            lost++;
            return;
        }
        buffer.putInt((int) Math.floorDiv(timestampNanos, 1_000_000_000L))
                .putInt((int) Math.floorMod(timestampNanos, 1_000_000_000L))
                .putInt(included).putInt(original);
        ByteBuffer be = buffer.order(ByteOrder.BIG_ENDIAN);
        putMac(be, dstNode);
        putMac(be, srcNode);
        be.putShort((short) protocol);
        be.order(ByteOrder.LITTLE_ENDIAN);
        int payload = included - ETHERNET_HEADER;
        int at = buffer.position();
        MemorySegment.copy(mem, off, bufferSegment, at, payload);
        buffer.position(at + payload);
        records++;
    }

    /** A fabric address as a MAC: 02:00:00:00:HH:LL. */
    private static void putMac(ByteBuffer b, int node) {
        b.putShort((short) 0x0200).putShort((short) 0).putShort((short) node);
    }

    /** The synthesized MAC of a fabric address, as bytes. */
    public static byte[] mac(int node) {
        return new byte[] {2, 0, 0, 0, (byte) (node >>> 8), (byte) node};
    }

    /** Writes buffered records to the file; throws UncheckedIOException if a write failed (now or earlier). */
    public synchronized void flush() {
        if (!closed) {
            drain();
        }
        if (failure != null) {
            throw new UncheckedIOException("pcap capture to " + path + " failed", failure);
        }
    }

    private boolean drain() {
        if (failure != null) {
            return false;
        }
        buffer.flip();
        try {
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            return true;
        } catch (IOException e) {
            failure = e;
            return false;
        } finally {
            buffer.clear();
        }
    }

    /** Flushes and closes the file; throws UncheckedIOException if any write failed. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (failure == null) {
            drain();
        }
        closed = true;
        try {
            channel.close();
        } catch (IOException e) {
            if (failure == null) {
                failure = e;
            }
        }
        if (failure != null) {
            throw new UncheckedIOException("pcap capture to " + path + " failed", failure);
        }
    }
}
