package dev.nupa.ip;

import dev.nupa.device.Trace;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import dev.nupa.device.FabricDevice;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.Link;
import dev.nupa.l2.LinkClaim;
import dev.nupa.l2.RoceV2;

/**
 * Writes IPv4 datagrams out of a node: into claimed slots of a fabric node's ring, or through the
 * node's external interface ({@link IpInterface}, the gateway's Ethernet side), in fragments when a
 * datagram exceeds the way's MTU (RFC 791). One per {@link Ipv4Stack}, on its loop; allocates nothing.
 */
final class DatagramWriter {
    /** The "node" that stands for the external interface where a fabric node number is expected. */
    static final int VIA_EXTERNAL = Integer.MIN_VALUE;
    /** The "node" that stands for the loopback interface: the node itself, on its own loop. */
    static final int VIA_LOOPBACK = Integer.MIN_VALUE + 1;

    private final Link link;
    private final Counters counters;
    private final LinkClaim[] claims;
    private final Ipv4Header header = new Ipv4Header();
    private IpInterface external;
    private final LoopbackInterface loopback;
    /** One datagram or fragment on its way to the external interface. */
    private MemorySegment frame;
    /** The service level of each DSCP: which ring of the next hop a datagram takes (docs/link-layer.md). */
    private DscpLevels dscpLevels = DscpLevels.defaults();

    DatagramWriter(Link link, Counters counters, LoopbackInterface loopback) {
        this.link = link;
        this.counters = counters;
        this.loopback = loopback;
        int per = (link.mtu() - Ipv4Header.MIN_HEADER) & ~7;
        this.claims = new LinkClaim[(Ipv4Header.MAX_TOTAL_LENGTH - Ipv4Header.MIN_HEADER + per - 1) / per];
        for (int i = 0; i < claims.length; i++) {
            claims[i] = new LinkClaim();
        }
    }

    void dscpLevels(DscpLevels levels) {
        dscpLevels = levels;
    }

    DscpLevels dscpLevels() {
        return dscpLevels;
    }

    void external(IpInterface x) {
        external = x;
        if (x != null && frame == null) {
            frame = Arena.ofAuto().allocate(Ipv4Header.MAX_TOTAL_LENGTH, 8);
        }
    }

    IpInterface external() {
        return external;
    }

    /** The MTU of the way to {@code node} (a fabric node, or {@link #VIA_EXTERNAL}). */
    int mtu(int node) {
        return node == VIA_EXTERNAL ? external.mtu() : node == VIA_LOOPBACK ? LoopbackInterface.MTU : link.mtu();
    }

    /**
     * Forwards a whole datagram that fits the way's MTU as it is, its TTL one lower (RFC 1812 5.3.1). {@code hop}
     * is the next hop on the external interface when {@code node} is {@link #VIA_EXTERNAL}.
     */
    int forwardWhole(int node, int hop, Ipv4Header ip, long waitNs, long now) {
        int total = ip.totalLength();
        if (node == VIA_EXTERNAL) {
            MemorySegment.copy(ip.segment(), ip.offset(), frame, 0, total);
            header.wrapForWrite(frame, 0, total);
            header.decrementTtl();
            return external.transmit(hop, frame, 0, total, now);
        }
        int rc = claimAll(node, 1, total - Ipv4Header.MIN_HEADER, total - Ipv4Header.MIN_HEADER,
                dscpLevels.level(ip.typeOfService()), waitNs);
        if (rc == SendStatus.OK) {
            LinkClaim c = claims[0];
            MemorySegment.copy(ip.segment(), ip.offset(), c.memory(), c.payloadOffset(), total);
            header.wrapForWrite(c.memory(), c.payloadOffset(), total);
            header.decrementTtl();
            rc = c.publish();
        }
        return rc;
    }

    /**
     * Emits one datagram whose payload is head ++ body, in fragments when it exceeds the MTU.
     * {@code fragmentBase} and {@code finalMore} carry an incoming fragment's place when refragmenting.
     * Into the fabric all or nothing: every fragment's slot is claimed before any is written, so a full
     * ring leaves no partial datagram behind for the receiver to time out.
     */
    int emit(int node, int hop, int src, int dst, int protocol, int ttl, int tos, boolean df, int id,
             int fragmentBase, boolean finalMore, MemorySegment head, long headOff, int headLen,
             MemorySegment body, long bodyOff, int bodyLen, boolean icrc, long waitNs, long now) {
        if (Trace.ENABLED) {
            Trace.mark(Trace.IP_OUT);
        }
        int trailer = icrc ? RoceV2.ICRC_LENGTH : 0;
        int payload = headLen + bodyLen + trailer;
        int mtu = mtu(node);
        if (Ipv4Header.MIN_HEADER + payload > Ipv4Header.MAX_TOTAL_LENGTH) {
            return SendStatus.TOO_BIG;
        }
        boolean fragmented = Ipv4Header.MIN_HEADER + payload > mtu;
        if (fragmented && (df || icrc)) {
            counters.inc(IpCounter.FRAG_FAILS);
            return SendStatus.TOO_BIG;
        }
        if (node == VIA_LOOPBACK) { // never fragmented: the loopback MTU is IPv4's largest datagram
            long at = loopback.claim(Ipv4Header.MIN_HEADER + payload);
            if (at < 0) {
                return FabricDevice.BACK_PRESSURED;
            }
            fill(loopback.memory(), at, src, dst, protocol, ttl, tos, df, id, fragmentBase, finalMore, head, headOff,
                    headLen, body, bodyOff, bodyLen, 0, payload);
            if (icrc) {
                RoceV2.writeIcrc(loopback.memory(), at, Ipv4Header.MIN_HEADER + payload - trailer);
            }
            loopback.publish();
            return SendStatus.OK;
        }
        int per = fragmented ? (mtu - Ipv4Header.MIN_HEADER) & ~7 : payload; // RFC 791: multiples of 8
        int count = fragmented ? (payload + per - 1) / per : 1;
        int rc = node == VIA_EXTERNAL ? SendStatus.OK : claimAll(node, count, per, payload, dscpLevels.level(tos), waitNs);
        if (rc != SendStatus.OK) {
            return rc;
        }
        for (int k = 0, at = 0; k < count; k++, at += per) {
            int n = Math.min(per, payload - at);
            boolean more = at + n < payload || finalMore;
            int sent;
            if (node == VIA_EXTERNAL) {
                fill(frame, 0, src, dst, protocol, ttl, tos, df, id, fragmentBase + at, more, head, headOff, headLen,
                        body, bodyOff, bodyLen, at, n);
                if (icrc) {
                    RoceV2.writeIcrc(frame, 0, Ipv4Header.MIN_HEADER + n - trailer);
                }
                sent = external.transmit(hop, frame, 0, Ipv4Header.MIN_HEADER + n, now);
            } else {
                LinkClaim c = claims[k];
                fill(c.memory(), c.payloadOffset(), src, dst, protocol, ttl, tos, df, id, fragmentBase + at, more,
                        head, headOff, headLen, body, bodyOff, bodyLen, at, n);
                if (icrc) {
                    RoceV2.writeIcrc(c.memory(), c.payloadOffset(), Ipv4Header.MIN_HEADER + n - trailer);
                }
                sent = c.publish(); // LATE: held past the stall timeout; the rest still go out, the receiver times out
            }
            if (sent != SendStatus.OK) {
                rc = sent;
            }
        }
        if (fragmented) {
            counters.add(IpCounter.FRAG_CREATES, count);
            counters.inc(IpCounter.FRAG_OKS);
        }
        return rc;
    }

    /** Claims the slots of all {@code count} frames, waiting (bounded by {@code waitNs}) while the ring is full. */
    private int claimAll(int node, int count, int per, int payload, int level, long waitNs) {
        long start = 0;
        for (int round = 0; ; round++) {
            int k = 0;
            int rc = SendStatus.OK;
            for (int at = 0; k < count; k++, at += per) {
                rc = link.tryClaim(node, EtherType.IPV4, Ipv4Header.MIN_HEADER + Math.min(per, payload - at), level, claims[k]);
                if (rc != SendStatus.OK) {
                    break;
                }
            }
            if (rc == SendStatus.OK) {
                return rc;
            }
            for (int j = 0; j < k; j++) {
                claims[j].abort(); // the receiver skips aborted slots
            }
            // Back-pressure is how the lossless fabric says "wait": wait, bounded.
            if (rc != FabricDevice.BACK_PRESSURED || waitNs == 0) {
                return rc;
            }
            if (round == 0) {
                start = System.nanoTime();
            } else if (System.nanoTime() - start > waitNs) {
                return rc;
            }
            if (round < 1000) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        }
    }

    /**
     * Writes one datagram at {@code p} of {@code m}: a 20-byte header and bytes [from, from + n) of head ++ body;
     * bytes past the end of body (a trailer the caller fills) are left as they are.
     */
    private void fill(MemorySegment m, long p, int src, int dst, int protocol, int ttl, int tos, boolean df, int id,
                      int fragmentOffset, boolean more, MemorySegment head, long headOff, int headLen,
                      MemorySegment body, long bodyOff, int bodyLen, int from, int n) {
        int total = Ipv4Header.MIN_HEADER + n;
        Ipv4Header h = header;
        h.wrapForWrite(m, p, total);
        h.emit(tos, total, id, Ipv4Header.flagsWord(df, more, fragmentOffset), ttl, protocol, src, dst);
        long out = p + Ipv4Header.MIN_HEADER;
        int fromHead = Math.max(0, Math.min(headLen - from, n));
        if (fromHead > 0) {
            MemorySegment.copy(head, headOff + from, m, out, fromHead);
        }
        int bodyFrom = Math.max(0, from - headLen);
        int fromBody = Math.min(n - fromHead, bodyLen - bodyFrom);
        if (fromBody > 0) {
            MemorySegment.copy(body, bodyOff + bodyFrom, m, out + fromHead, fromBody);
        }
    }
}
