package dev.nupa.l2;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Writes captured frames to a classic pcap file (nanosecond timestamps, magic 0xa1b23c4d, written
 * little-endian; link type LINKTYPE_ETHERNET), each frame behind a synthesized Ethernet II header:
 * destination and source MAC {@code 02:00:00:00:HH:LL} from the fabric addresses (locally
 * administered, unicast), EtherType = the link protocol. Wireshark and tshark then decode IPv4,
 * ICMP, UDP and TCP natively. The direction ({@code outbound}) is not recorded: classic pcap has no
 * field for it.
 *
 * <p><b>RDMA frames are written as RoCEv2.</b> A frame of protocol {@link EtherType#NUPA_RDMA} carries
 * a bare InfiniBand packet (BTH, extension headers, payload, pad: no GRH, no ICRC), which no analyzer
 * decodes behind EtherType 0x8915 (RoCE v1 wants a GRH first). It is written as what the gateway
 * would put on Ethernet: {@code Ethernet (0x0800) | IPv4 | UDP | the frame | ICRC}, with
 *
 * <ul>
 *   <li>IPv4: 20 bytes, TOS 0, identification 0, DF, TTL 64, protocol 17, a correct header checksum;
 *       addresses from the fabric addresses, {@link #ipv4(int) 169.254.H.L} for node H*256+L
 *       (link-local, so they cannot be mistaken for a node's configured addresses);
 *   <li>UDP: destination port 4791, source port 0xC000 | the low 14 bits of the BTH's DestQP (RoCEv2
 *       uses the source port for flow entropy; this keeps one QP's packets one flow), checksum 0
 *       (RoCEv2 allows it; the ICRC covers the packet);
 *   <li>the ICRC of {@link RoceV2}, computed over the synthesized headers and the frame.
 * </ul>
 *
 * <p>An RDMA frame shorter than a BTH (12 bytes) or too long for one IPv4 datagram is written as
 * before, behind EtherType 0x8915. The original length of an RDMA record counts the 28 bytes of IPv4
 * and UDP and the 4 of the ICRC; a snapshot length cuts the record like any other, and the ICRC is
 * computed only when the record includes (part of) it.
 *
 * <p>Records are gathered in a direct buffer and written when it fills, on {@link #flush()} and on
 * {@link #close()}: the datapath thread that sends or polls pays for the copy (and for an RDMA frame
 * the ICRC) and, now and then, for a file write. An I/O error stops the capture (later frames are
 * counted as lost) and is thrown by {@link #flush()} or {@link #close()}. Safe to use from several
 * threads (each call locks). Allocation-free per frame.
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
    /** Ethernet + IPv4 + UDP in front of an RDMA frame written as RoCEv2. */
    public static final int ROCE_HEADERS = ETHERNET_HEADER + RoceV2.IPV4_UDP_HEADERS;
    /** The longest RDMA frame that fits one IPv4 datagram with UDP and the ICRC. */
    public static final int MAX_ROCE_FRAME = 0xFFFF - RoceV2.IPV4_UDP_HEADERS - RoceV2.ICRC_LENGTH;
    /** RoCEv2 flows' source ports start here (0xC000 | 14 bits of the DestQP). */
    public static final int ROCE_SOURCE_PORT_BASE = 0xC000;

    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final Path path;
    /** What the records go to: the file, or another sink ({@link #to}). */
    private final WritableByteChannel channel;
    /** The file's path or the sink's name, for messages. */
    private final String name;
    private final ByteBuffer buffer;
    private final MemorySegment bufferSegment;
    /** The synthesized headers of the record being written (and an ICRC after them). */
    private final byte[] head = new byte[ROCE_HEADERS + RoceV2.ICRC_LENGTH];
    private final MemorySegment headSegment = MemorySegment.ofArray(head);
    private final int snaplen;
    private long records;
    private long lost;
    private IOException failure;
    private boolean closed;

    private PcapWriter(Path path, WritableByteChannel channel, String name, int snaplen) {
        this.path = path;
        this.name = name;
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
        checkSnaplen(snaplen);
        // 0600 at creation: a capture holds every frame's payload (as tcpdump -w under a 077 umask)
        FileChannel ch = FileChannel.open(path, java.util.Set.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING), java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
        try {
            return start(new PcapWriter(path, ch, path.toString(), snaplen));
        } catch (IOException e) {
            ch.close();
            throw e;
        }
    }

    /**
     * A pcap stream into {@code sink} (named {@code name} in messages), which gets the file header now and whole
     * records from then on, each time the buffer fills or is flushed.
     */
    public static PcapWriter to(WritableByteChannel sink, String name, int snaplen) throws IOException {
        checkSnaplen(snaplen);
        return start(new PcapWriter(null, sink, name, snaplen));
    }

    private static void checkSnaplen(int snaplen) {
        if (snaplen < ETHERNET_HEADER || snaplen > DEFAULT_SNAPLEN) {
            throw new IllegalArgumentException("pcap snapshot length " + snaplen + " is outside " + ETHERNET_HEADER
                    + ".." + DEFAULT_SNAPLEN + " (it must hold the synthesized Ethernet header)");
        }
    }

    private static PcapWriter start(PcapWriter w) throws IOException {
        w.buffer.putInt(MAGIC_NANOS).putShort((short) 2).putShort((short) 4) // version 2.4
                .putInt(0).putInt(0) // thiszone, sigfigs
                .putInt(w.snaplen).putInt(LINKTYPE_ETHERNET);
        try {
            w.flush();
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        return w;
    }

    /** The file written, or null for another sink. */
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
    public void capture(long timestampNanos, boolean outbound, int srcNode, int dstNode, int protocol,
                        MemorySegment mem, long off, int len) {
        capture(timestampNanos, outbound, srcNode, dstNode, protocol, mem, off, len, len);
    }

    /**
     * Like {@link #capture(long, boolean, int, int, int, MemorySegment, long, int)} for a frame of
     * which only the first {@code len} of {@code frameLength} payload bytes are at hand (a remote
     * capture observer's record cut at its snapshot length): the record's original length
     * counts the whole frame and it includes what is at hand. An RDMA frame cut that way has no ICRC.
     */
    public synchronized void capture(long timestampNanos, boolean outbound, int srcNode, int dstNode, int protocol,
                                     MemorySegment mem, long off, int len, int frameLength) {
        if (closed || failure != null) {
            lost++;
            return;
        }
        int whole = Math.max(frameLength, len);
        boolean roce = protocol == EtherType.NUPA_RDMA && len >= RoceV2.BTH_LENGTH && whole <= MAX_ROCE_FRAME;
        int headLen = roce ? ROCE_HEADERS : ETHERNET_HEADER;
        int tailLen = roce ? RoceV2.ICRC_LENGTH : 0;
        long original = (long) headLen + whole + tailLen;
        int included = (int) Math.min(Math.min(original, (long) headLen + len + (len == whole ? tailLen : 0)), snaplen);
        if (buffer.remaining() < RECORD_HEADER + included && !drain()) {
            lost++;
            return;
        }
        buffer.putInt((int) Math.floorDiv(timestampNanos, 1_000_000_000L))
                .putInt((int) Math.floorMod(timestampNanos, 1_000_000_000L))
                .putInt(included).putInt((int) Math.min(original, Integer.MAX_VALUE));
        MemorySegment h = headSegment;
        putMac(h, 0, dstNode);
        putMac(h, 6, srcNode);
        h.set(BE_SHORT, 12, (short) (roce ? EtherType.IPV4 : protocol));
        if (roce) {
            int destQp = mem.get(BE_INT, off + 4) & 0xFF_FFFF;
            putIpv4Udp(h, ETHERNET_HEADER, srcNode, dstNode, ROCE_SOURCE_PORT_BASE | (destQp & 0x3FFF), whole);
        }
        int n = Math.min(included, headLen);
        buffer.put(head, 0, n);
        int payload = Math.min(included - n, len);
        int at = buffer.position();
        MemorySegment.copy(mem, off, bufferSegment, at, payload);
        buffer.position(at + payload);
        int tail = included - n - payload;
        if (tail > 0) { // only when the whole frame is at hand and the record reaches its ICRC
            int icrc = RoceV2.icrc(h, ETHERNET_HEADER, RoceV2.IPV4_UDP_HEADERS, mem, off, len);
            RoceV2.putIcrc(h, ROCE_HEADERS, icrc);
            buffer.put(head, ROCE_HEADERS, tail);
        }
        records++;
    }

    /** A fabric address as a MAC: 02:00:00:00:HH:LL. */
    private static void putMac(MemorySegment h, long at, int node) {
        h.set(BE_SHORT, at, (short) 0x0200);
        h.set(BE_SHORT, at + 2, (short) 0);
        h.set(BE_SHORT, at + 4, (short) node);
    }

    /**
     * The IPv4 address an RDMA frame of fabric node {@code node} shows in a capture: 169.254.H.L for node
     * H*256+L, as an int in network order (169.254.0.1 for node 1, 169.254.3.232 for node 1000).
     */
    public static int ipv4(int node) {
        return 0xA9FE_0000 | (node & 0xFFFF);
    }

    /** IPv4 (20 bytes, DF, TTL 64, UDP) and UDP (to 4791, checksum 0) headers for {@code frame} bytes of BTH onwards and an ICRC. */
    private static void putIpv4Udp(MemorySegment h, int at, int srcNode, int dstNode, int sourcePort, int frame) {
        int total = RoceV2.IPV4_UDP_HEADERS + frame + RoceV2.ICRC_LENGTH;
        h.set(BE_INT, at, 0x4500_0000 | total); // version 4, IHL 5, TOS 0, total length
        h.set(BE_INT, at + 4, 0x0000_4000); // identification 0, DF, fragment offset 0
        h.set(BE_INT, at + 8, 0x4011_0000); // TTL 64, protocol 17 (UDP), checksum 0 for now
        h.set(BE_INT, at + 12, ipv4(srcNode));
        h.set(BE_INT, at + 16, ipv4(dstNode));
        int sum = 0;
        for (int i = 0; i < RoceV2.IPV4_HEADER; i += 2) {
            sum += h.get(BE_SHORT, at + i) & 0xFFFF;
        }
        sum = (sum & 0xFFFF) + (sum >>> 16);
        sum += sum >>> 16;
        h.set(BE_SHORT, at + 10, (short) ~sum);
        int u = at + RoceV2.IPV4_HEADER;
        h.set(BE_SHORT, u, (short) sourcePort);
        h.set(BE_SHORT, u + 2, (short) RoceV2.UDP_PORT);
        h.set(BE_SHORT, u + 4, (short) (total - RoceV2.IPV4_HEADER));
        h.set(BE_SHORT, u + 6, (short) 0);
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
            throw new UncheckedIOException("pcap capture to " + name + " failed", failure);
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
            throw new UncheckedIOException("pcap capture to " + name + " failed", failure);
        }
    }
}
