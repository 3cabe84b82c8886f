package dev.nupa.node.grpc;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.WritableByteChannel;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.Link;
import dev.nupa.l2.PacketCapture;
import dev.nupa.l2.PcapWriter;

/**
 * A live capture of a node's frames (the Admin service's Capture call): the frames that pass a filter become
 * a pcap stream, handed on in chunks. Frames are filtered and copied on the node's event loop, by the link's
 * capture hook, which keeps feeding the capture that was set before (a `--capture` file). A chunk is made when
 * the buffer fills or at {@link #flush}, and {@code deliver} gets it; at most {@value #MAX_PENDING} chunks are
 * on their way at once, and while that many are, or while the receiver is {@link #stall stalled}, matching
 * frames are dropped and counted, so a slow reader costs the node no memory.
 */
final class LiveCapture implements PacketCapture, WritableByteChannel {
    static final int MAX_PENDING = 16;

    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /**
     * Which frames: a link protocol (0: any), an IP protocol within IPv4 ({@link #ANY}), a host and a port (0: any; a
     * port matches TCP and UDP only).
     */
    record Filter(int linkProtocol, int ipProtocol, int host, int port) {
        static final int ANY = -1;

        /** From the call's words; throws IllegalArgumentException naming what is wrong. */
        static Filter of(String protocol, String host, int port) {
            int h = 0;
            if (!host.isEmpty()) {
                h = Ipv4Address.parse(host);
            }
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port " + port + " is outside 0..65535 (0 for any)");
            }
            return switch (protocol.toLowerCase(Locale.ROOT)) {
                case "" -> new Filter(h != 0 || port != 0 ? EtherType.IPV4 : 0, ANY, h, port);
                case "ipv4" -> new Filter(EtherType.IPV4, ANY, h, port);
                case "icmp" -> new Filter(EtherType.IPV4, 1, h, port);
                case "tcp" -> new Filter(EtherType.IPV4, 6, h, port);
                case "udp" -> new Filter(EtherType.IPV4, 17, h, port);
                case "rdma" -> new Filter(EtherType.NUPA_RDMA, ANY, 0, 0);
                default -> throw new IllegalArgumentException("protocol \"" + protocol
                        + "\" is not one of ipv4, icmp, udp, tcp, rdma (or empty for all)");
            };
        }

        /** Whether a frame of {@code protocol} whose payload (after the link header) is {@code [off, off + len)} passes. */
        boolean matches(int protocol, MemorySegment mem, long off, int len) {
            if (linkProtocol != 0 && protocol != linkProtocol) {
                return false;
            }
            if (protocol != EtherType.IPV4 || (ipProtocol == ANY && host == 0 && port == 0)) {
                return true;
            }
            if (len < 20) {
                return false;
            }
            int ihl = (mem.get(ValueLayout.JAVA_BYTE, off) & 0x0F) * 4;
            int proto = mem.get(ValueLayout.JAVA_BYTE, off + 9) & 0xFF;
            if (ipProtocol != ANY && proto != ipProtocol) {
                return false;
            }
            if (host != 0 && mem.get(BE_INT, off + 12) != host && mem.get(BE_INT, off + 16) != host) {
                return false;
            }
            if (port == 0) {
                return true;
            }
            // A port is only in the first fragment of a TCP or UDP datagram (RFC 791: offset 0).
            boolean first = (mem.get(BE_SHORT, off + 6) & 0x1FFF) == 0;
            if (!first || (proto != 6 && proto != 17) || len < ihl + 4) {
                return false;
            }
            return (mem.get(BE_SHORT, off + ihl) & 0xFFFF) == port || (mem.get(BE_SHORT, off + ihl + 2) & 0xFFFF) == port;
        }
    }

    private final Link link;
    private final Filter filter;
    private final long count;
    private final PacketCapture previous;
    private final Consumer<Chunk> deliver;
    private final Runnable finished;
    private final PcapWriter writer;
    private final AtomicInteger pending = new AtomicInteger();
    private final AtomicLong dropped = new AtomicLong();
    private volatile boolean stalled;
    private volatile boolean done;

    /**
     * Starts capturing on {@code link}: {@code deliver} gets each chunk of the stream (the file header first), and
     * {@code finished} runs once after the last chunk when {@code count} frames (0: no bound) were captured.
     */
    LiveCapture(Link link, Filter filter, long count, int snaplen, Consumer<Chunk> deliver, Runnable finished) throws IOException {
        this.link = link;
        this.filter = filter;
        this.count = count;
        this.deliver = deliver;
        this.finished = finished;
        this.previous = link.capture();
        this.writer = PcapWriter.to(this, "a live capture", snaplen);
        link.setCapture(this);
    }

    @Override
    public void capture(long timestampNanos, boolean outbound, int srcNode, int dstNode, int protocol,
                        MemorySegment mem, long off, int len) {
        if (previous != null) {
            previous.capture(timestampNanos, outbound, srcNode, dstNode, protocol, mem, off, len);
        }
        if (done || !filter.matches(protocol, mem, off, len)) {
            return;
        }
        if (stalled || pending.get() >= MAX_PENDING) {
            dropped.incrementAndGet();
            return;
        }
        // Senders and the event loop capture at once: one frame at a time, so that the count is whole.
        boolean last;
        synchronized (this) {
            if (done) {
                return;
            }
            writer.capture(timestampNanos, outbound, srcNode, dstNode, protocol, mem, off, len);
            last = writer.records() == count;
        }
        if (last) {
            stop();
            finished.run();
        }
    }

    /** Hands on what is buffered (called periodically, so that a quiet capture still shows its frames). */
    void flush() {
        if (!done) {
            writer.flush();
        }
    }

    /** Ends the capture: the link's hook goes back to what it was, and what is buffered is handed on. Once. */
    synchronized void stop() {
        if (done) {
            return;
        }
        done = true;
        link.setCapture(previous);
        writer.close();
    }

    /** The receiver took a chunk. */
    void delivered() {
        pending.decrementAndGet();
    }

    /** Whether the receiver can take more; while it cannot, matching frames are dropped. */
    void stall(boolean on) {
        stalled = on;
    }

    long records() {
        return writer.records();
    }

    long dropped() {
        return dropped.get();
    }

    // ---- the writer's sink: a chunk per drain ---------------------------------------------

    /**
     * The next bytes of the stream, with the records in the stream up to and including them and the frames dropped
     * so far: the counts are taken when the bytes are, so a receiver that stops after any chunk holds what it says.
     */
    record Chunk(byte[] pcap, long records, long dropped) {
    }

    @Override
    public int write(ByteBuffer src) {
        byte[] bytes = new byte[src.remaining()];
        src.get(bytes);
        pending.incrementAndGet();
        // The writer drains (under its lock) before it adds a record: every record it counted is in these bytes or before.
        deliver.accept(new Chunk(bytes, writer != null ? writer.records() : 0, dropped.get())); // null: the file header
        return bytes.length;
    }

    @Override
    public boolean isOpen() {
        return true;
    }

    @Override
    public void close() {
    }
}
