package dev.nupa.tcp;

import dev.nupa.device.FabricDevice;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.wire.Checksum;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.tcp.wire.TcpHeader;
import dev.nupa.tcp.wire.TcpOptions;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The sending of a layer's segments, its connections' and its own answers alike: builds the header with its
 * options and the checksum, and hands header and payload to IP (as Linux's tcp_transmit_skb, and
 * ip_send_unicast_reply for answers without a connection). Resets that find the ring full wait in
 * {@link PendingResets} and leave again when it has room. Datapath thread; allocates nothing.
 */
final class SegmentSender {
    private final TcpLayer layer;
    private final Ipv4Stack ip;
    private final TcpHeader header = new TcpHeader();
    private final TcpOptions options = new TcpOptions();
    private final MemorySegment scratch = Arena.ofAuto().allocate(TcpHeader.MAX_HEADER, 8);
    private final Segment retry = new Segment();
    private final PendingResets pendingResets = new PendingResets();
    /** How the layer's connections send. */
    final TcpConnection.Output output = this::transmit;

    SegmentSender(TcpLayer layer, Ipv4Stack ip) {
        this.layer = layer;
        this.ip = ip;
    }

    private boolean transmit(TcpConnection c, Segment s) {
        return send(c.via(), c.localIp(), c.remoteIp(), c.remotePort(), c.localPort(), s);
    }

    /**
     * Builds the header (with options) and checksum, and hands header + payload to IP, through fabric node
     * {@code via} if the connection learned one (-1: IP's route); false if it did not leave.
     */
    boolean send(int via, int localIp, int remoteIp, int remotePort, int localPort, Segment s) {
        int rc = emit(via, localIp, remoteIp, remotePort, localPort, s);
        if (rc == FabricDevice.BACK_PRESSURED && s.has(Segment.RST)) {
            // A reset has no retransmission behind it: kept and sent again when the ring has room (PendingResets).
            if (pendingResets.add(via, localIp, remoteIp, remotePort, localPort, s.seq, s.ack, s.flags)) {
                layer.count(TcpCounter.RESETS_QUEUED);
                layer.deadlineMoved(System.nanoTime() + TcpConnection.BLOCKED_RETRY_NS);
            } else {
                layer.count(TcpCounter.RESETS_DROPPED);
            }
            return true;
        }
        return rc != FabricDevice.BACK_PRESSURED;
    }

    /** Sends the resets a full ring refused, oldest first, until the ring refuses again. Datapath thread. */
    void sendPendingResets() {
        while (!pendingResets.isEmpty()) {
            Segment s = retry.clear();
            s.seq = pendingResets.oldest(5);
            s.ack = pendingResets.oldest(6);
            s.flags = pendingResets.oldest(7);
            int rc = emit(pendingResets.oldest(0), pendingResets.oldest(1), pendingResets.oldest(2), pendingResets.oldest(3),
                    pendingResets.oldest(4), s);
            if (rc == FabricDevice.BACK_PRESSURED) {
                return;
            }
            pendingResets.removeOldest(); // sent, or failed for good (the peer is down): like a reset lost on a wire
        }
    }

    boolean hasPendingResets() {
        return !pendingResets.isEmpty();
    }

    /** Resets waiting for ring room now. */
    int pendingResets() {
        return pendingResets.size();
    }

    /** Builds and hands one segment to IP; returns the device's code. */
    private int emit(int via, int localIp, int remoteIp, int remotePort, int localPort, Segment s) {
        TcpOptions o = options.clear();
        if (s.mss > 0) {
            o.setMss(s.mss);
        }
        if (s.sackPermitted) {
            o.setSackPermitted(true);
        }
        if (s.timestamps) {
            o.setTimestamps(s.tsVal, s.tsEcr);
        }
        if (s.windowScale >= 0) {
            o.setWindowScale(s.windowScale);
        }
        for (int i = 0; i < s.sackBlocks; i++) {
            o.addSackBlock(s.sackLeft[i], s.sackRight[i]);
        }
        int optionBytes = o.length();
        int hl = TcpHeader.MIN_HEADER + optionBytes;
        TcpHeader h = header;
        h.wrapForWrite(scratch, 0, hl);
        h.setSourcePort(localPort).setDestinationPort(remotePort).setSequenceNumber(s.seq).setAcknowledgmentNumber(s.ack)
                .setHeaderLength(hl).setFlags(s.flags).setWindow(s.window).setChecksum(0).setUrgentPointer(0);
        if (optionBytes > 0) {
            o.emit(scratch, TcpHeader.MIN_HEADER);
        }
        int payload = s.payloadLength;
        if (ip.config().computesTo(remoteIp)) {
            int sum = Checksum.pseudoHeaderSum(localIp, remoteIp, Ipv4Header.PROTOCOL_TCP, hl + payload);
            sum = Checksum.add(sum, Checksum.sum(scratch, 0, hl)); // the header is a multiple of 4 bytes
            if (payload > 0) {
                sum = Checksum.add(sum, Checksum.sum(s.payload, s.payloadOffset, payload));
            }
            h.setChecksum(Checksum.finish(sum));
        }
        // Otherwise the lossless-fabric policy (IpConfig) to a node of the fabric: left 0, as Linux leaves it on lo;
        // receivers with the same policy do not verify (every node of a fabric must agree on it, or TCP segments are
        // dropped). A segment to beyond the fabric is always checksummed (IpConfig.computesTo).
        int rc = ip.sendDatagram(via, localIp, remoteIp, Ipv4Header.PROTOCOL_TCP, true, scratch, 0, hl,
                payload > 0 ? s.payload : scratch, payload > 0 ? s.payloadOffset : 0, payload, 0);
        // A full ring is not loss: the connection keeps the segment and retries shortly. Other
        // failures (peer down, no route) are like loss on a wire; the retransmission timer handles them.
        layer.count(rc == 0 ? TcpCounter.SEGMENTS_OUT : rc == FabricDevice.BACK_PRESSURED ? TcpCounter.SEND_DEFERRED : TcpCounter.SEND_FAILURES);
        return rc;
    }
}
