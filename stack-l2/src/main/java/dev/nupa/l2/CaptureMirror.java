package dev.nupa.l2;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.PeerEvent;
import dev.nupa.device.PeerListener;

/**
 * Remote packet capture, like a switch's mirror port: a node asks another to copy every frame it
 * sends and receives to it ({@code nupa capture}). The node being watched answers
 * {@link EtherType#NUPA_CONTROL} START/STOP messages and sends each frame it sees, behind a small
 * mirror header, as an {@link EtherType#NUPA_MIRROR} frame to every subscriber (docs/link-layer.md).
 *
 * <p>Capture never slows the datapath down: a mirror frame that finds the subscriber's ring full is
 * dropped and counted ({@link #mirrorDrops()}); a subscriber that leaves the fabric is forgotten.
 * A local capture (a pcap file of this node's own) can be combined with it. With no subscriber and
 * no local capture the link's capture is off (one field check per frame).
 */
public final class CaptureMirror implements PacketCapture, AutoCloseable {
    /** Control opcodes. */
    public static final int START = 1;
    public static final int STOP = 2;
    /** Mirror header: timestamp u64, source u16, destination u16, protocol u16, flags u8, pad u8, original length u32. */
    public static final int MIRROR_HEADER = 20;
    public static final int FLAG_OUTBOUND = 1;

    public static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    public static final ValueLayout.OfLong BE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final Link link;
    private final FabricDevice device;
    private final MemorySegment scratch;
    private final LinkHeader header = new LinkHeader();
    private final PeerListener peers = this::onPeerEvent;
    private volatile int[] subscribers = new int[0];
    private volatile PacketCapture local;
    private long drops;
    private long mirrored;

    /** Answers capture requests on {@code link} (registers the control protocol). */
    public CaptureMirror(Link link) {
        this.link = link;
        this.device = link.device();
        this.scratch = Arena.ofAuto().allocate(device.maxFrame(), 8);
        link.register(EtherType.NUPA_CONTROL, this::onControl);
        device.addPeerListener(peers);
    }

    /** Adds (or with null removes) a capture of this node's own frames, e.g. a {@link PcapWriter}. */
    public synchronized void setLocal(PacketCapture capture) {
        this.local = capture;
        update();
    }

    /** Nodes mirrored to now. */
    public int[] subscribers() {
        return subscribers.clone();
    }

    public synchronized long mirrorDrops() {
        return drops;
    }

    public synchronized long mirrored() {
        return mirrored;
    }

    /** Asks node {@code target} to start (or stop) mirroring to this node; returns a device code. */
    public static int request(Link link, int target, int op) {
        MemorySegment m = Arena.ofAuto().allocate(8);
        m.set(ValueLayout.JAVA_BYTE, 0, (byte) op);
        m.set(ValueLayout.JAVA_BYTE, 1, (byte) 1);
        return link.send(target, EtherType.NUPA_CONTROL, m, 0, 8);
    }

    private void onControl(int source, MemorySegment mem, long off, int len) {
        if (len < 2 || mem.get(ValueLayout.JAVA_BYTE, off + 1) != 1) {
            return; // not a version-1 control message: ignored (counted by nothing else to do)
        }
        int op = mem.get(ValueLayout.JAVA_BYTE, off);
        if (op == START) {
            subscribe(source);
        } else if (op == STOP) {
            unsubscribe(source);
        }
    }

    private synchronized void subscribe(int node) {
        for (int s : subscribers) {
            if (s == node) {
                return;
            }
        }
        int[] next = Arrays.copyOf(subscribers, subscribers.length + 1);
        next[next.length - 1] = node;
        subscribers = next;
        update();
    }

    private synchronized void unsubscribe(int node) {
        subscribers = Arrays.stream(subscribers).filter(s -> s != node).toArray();
        update();
    }

    private void update() {
        link.setCapture(subscribers.length > 0 || local != null ? this : null);
    }

    private void onPeerEvent(PeerEvent e) {
        if (e.kind() == PeerEvent.Kind.DOWN || e.kind() == PeerEvent.Kind.RESTARTED) {
            unsubscribe(e.address());
        }
    }

    @Override
    public void capture(long timestampNanos, boolean outbound, int srcNode, int dstNode, int protocol, MemorySegment mem,
                        long off, int len) {
        PacketCapture l = local;
        if (l != null) {
            l.capture(timestampNanos, outbound, srcNode, dstNode, protocol, mem, off, len);
        }
        int[] subs = subscribers;
        if (subs.length == 0 || protocol == EtherType.NUPA_MIRROR || protocol == EtherType.NUPA_CONTROL) {
            return;
        }
        // Senders and the datapath thread both capture; the scratch frame is shared.
        synchronized (this) {
            int room = device.maxFrame() - LinkHeader.LENGTH - MIRROR_HEADER;
            int n = Math.min(len, room);
            long p = LinkHeader.LENGTH;
            scratch.set(BE_LONG, p, timestampNanos);
            scratch.set(BE_SHORT, p + 8, (short) srcNode);
            scratch.set(BE_SHORT, p + 10, (short) dstNode);
            scratch.set(BE_SHORT, p + 12, (short) protocol);
            scratch.set(ValueLayout.JAVA_BYTE, p + 14, (byte) (outbound ? FLAG_OUTBOUND : 0));
            scratch.set(ValueLayout.JAVA_BYTE, p + 15, (byte) 0);
            scratch.set(BE_INT, p + 16, len);
            MemorySegment.copy(mem, off, scratch, p + MIRROR_HEADER, n);
            for (int s : subs) {
                header.wrap(scratch, 0).set(s, link.address(), EtherType.NUPA_MIRROR, MIRROR_HEADER + n);
                int rc = device.offer(s, scratch, 0, LinkHeader.LENGTH + MIRROR_HEADER + n);
                if (rc == FabricDevice.OK) {
                    mirrored++;
                } else {
                    drops++;
                }
            }
        }
    }

    @Override
    public void close() {
        device.removePeerListener(peers);
        synchronized (this) {
            subscribers = new int[0];
            local = null;
            update();
        }
    }
}
