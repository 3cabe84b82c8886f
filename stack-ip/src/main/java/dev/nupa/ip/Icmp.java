package dev.nupa.ip;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicReferenceArray;

import dev.nupa.ip.wire.Checksum;
import dev.nupa.ip.wire.IcmpHeader;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.ip.wire.WireStatus;

/**
 * A node's ICMP (RFC 792, RFC 1122 3.2.2): echo requests answered, echo replies and errors handed to whoever sent
 * what they answer (an echo listener, a UDP socket, an upper protocol), and the errors the stack sends, rate limited.
 * Part of {@link Ipv4Stack}, on its loop; it sends through the stack.
 */
final class Icmp {
    private final Ipv4Stack stack;
    private final IpConfig config;
    private final Counters counters;
    private final UdpPorts ports;
    private final IpProtocolHandler[] protocols;
    private final AtomicReferenceArray<EchoListener> echoes = new AtomicReferenceArray<>(65536);
    private final TokenBucket errorBudget;
    private final IcmpHeader rxHeader = new IcmpHeader();
    private final Ipv4Header rxQuoted = new Ipv4Header();
    private final IcmpHeader txHeader = new IcmpHeader();
    private final MemorySegment txHead = Arena.ofAuto().allocate(IcmpHeader.HEADER);

    Icmp(Ipv4Stack stack, IpConfig config, Counters counters, UdpPorts ports, IpProtocolHandler[] protocols) {
        this.stack = stack;
        this.config = config;
        this.counters = counters;
        this.ports = ports;
        this.protocols = protocols;
        this.errorBudget = new TokenBucket(config.icmpErrorsPerSecond(), config.icmpErrorBurst());
    }

    /** Registers the receiver of echo replies with {@code identifier}; throws if one is registered. */
    void addEchoListener(int identifier, EchoListener listener) {
        if (!echoes.compareAndSet(identifier & 0xFFFF, null, listener)) {
            throw new IllegalStateException("ICMP echo identifier " + identifier + " is in use; choose another");
        }
    }

    void removeEchoListener(int identifier, EchoListener listener) {
        echoes.compareAndSet(identifier & 0xFFFF, listener, null);
    }

    /** An ICMP message the node received (RFC 792), validated here; on the loop. */
    void input(Ipv4Header ip, boolean toBroadcast, long now) {
        IcmpHeader icmp = rxHeader;
        counters.inc(IpCounter.ICMP_IN_MSGS);
        if (icmp.wrap(ip.segment(), ip.payloadOffset(), ip.payloadLength(), config.verifiesFrom(ip.sourceAddress())) != WireStatus.OK) {
            counters.inc(IpCounter.ICMP_IN_ERRORS);
            return;
        }
        switch (icmp.type()) {
            case IcmpHeader.TYPE_ECHO_REQUEST -> {
                counters.inc(IpCounter.ICMP_IN_ECHOS);
                if (!toBroadcast) { // as Linux's icmp_echo_ignore_broadcasts (RFC 1122 3.2.2.6 allows it)
                    echoReply(ip, icmp);
                }
            }
            case IcmpHeader.TYPE_ECHO_REPLY -> {
                counters.inc(IpCounter.ICMP_IN_ECHO_REPS);
                EchoListener l = echoes.get(icmp.echoIdentifier());
                if (l != null) {
                    l.onEchoReply(ip.sourceAddress(), icmp.echoSequence(), ip.ttl(), icmp.segment(), icmp.dataOffset(),
                            icmp.dataLength(), now);
                }
            }
            case IcmpHeader.TYPE_DESTINATION_UNREACHABLE, IcmpHeader.TYPE_TIME_EXCEEDED -> {
                counters.inc(icmp.type() == IcmpHeader.TYPE_TIME_EXCEEDED ? IpCounter.ICMP_IN_TIME_EXCDS
                        : IpCounter.ICMP_IN_DEST_UNREACHS);
                errorInput(ip, icmp, now);
            }
            default -> {
                // Other types (timestamp, router discovery, ...) are counted and otherwise ignored.
            }
        }
    }

    /** Hands an ICMP error to whoever sent the datagram it quotes (RFC 1122 3.2.2: pass it to the transport). */
    private void errorInput(Ipv4Header ip, IcmpHeader icmp, long now) {
        Ipv4Header q = rxQuoted;
        if (q.wrapQuoted(icmp.segment(), icmp.dataOffset(), icmp.dataLength()) != WireStatus.OK
                || q.sourceAddress() != config.address() || q.availablePayloadLength() < 8) {
            counters.inc(IpCounter.ICMP_IN_ERRORS);
            return;
        }
        MemorySegment s = q.segment();
        long p = q.payloadOffset();
        switch (q.protocol()) {
            case Ipv4Header.PROTOCOL_UDP -> {
                int srcPort = s.get(Checksum.BE_SHORT, p) & 0xFFFF;
                int dstPort = s.get(Checksum.BE_SHORT, p + 2) & 0xFFFF;
                UdpReceiver r = ports.get(srcPort);
                if (r != null) {
                    r.onIcmpError(icmp.type(), icmp.code(), q.destinationAddress(), dstPort);
                }
            }
            case Ipv4Header.PROTOCOL_ICMP -> {
                int type = s.get(ValueLayout.JAVA_BYTE, p) & 0xFF;
                EchoListener l = echoes.get(s.get(Checksum.BE_SHORT, p + 4) & 0xFFFF);
                if (type == IcmpHeader.TYPE_ECHO_REQUEST && l != null) {
                    l.onError(ip.sourceAddress(), icmp.type(), icmp.code(), s.get(Checksum.BE_SHORT, p + 6) & 0xFFFF, now);
                }
            }
            default -> {
                IpProtocolHandler h = protocols[q.protocol()];
                if (h != null) {
                    h.onIcmpError(icmp.type(), icmp.code(), icmp.restOfHeader(), q, now);
                }
            }
        }
    }

    /** Sends an ICMP echo request (RFC 792) with {@code length} bytes of data. Returns a {@link SendStatus} code. */
    int sendEchoRequest(int destination, int identifier, int sequence, MemorySegment data, long offset, int length) {
        stack.link().checkOwner();
        IcmpHeader h = txHeader;
        h.wrapForWrite(txHead, 0, IcmpHeader.HEADER);
        h.setType(IcmpHeader.TYPE_ECHO_REQUEST).setCode(0).setChecksum(0).setEcho(identifier, sequence);
        h.setChecksum(Checksum.finish(Checksum.add(Checksum.sum(txHead, 0, IcmpHeader.HEADER),
                Checksum.sum(data, offset, length))));
        return stack.send(config.sendWaitNs(), -1, config.address(), destination, Ipv4Header.PROTOCOL_ICMP, false, txHead, 0, IcmpHeader.HEADER, data,
                offset, length);
    }


    private void echoReply(Ipv4Header ip, IcmpHeader request) {
        IcmpHeader h = txHeader;
        h.wrapForWrite(txHead, 0, IcmpHeader.HEADER);
        MemorySegment.copy(request.segment(), request.offset(), txHead, 0, IcmpHeader.HEADER);
        h.echoRequestToReply();
        // RFC 1122 3.2.2.6: the reply's source is the address the request was for (either of ours).
        int rc = stack.send(config.sendWaitNs(), -1, ip.destinationAddress(), ip.sourceAddress(), Ipv4Header.PROTOCOL_ICMP, false, txHead, 0, IcmpHeader.HEADER,
                request.segment(), request.dataOffset(), request.dataLength());
        if (rc == SendStatus.OK) {
            counters.inc(IpCounter.ICMP_OUT_MSGS);
            counters.inc(IpCounter.ICMP_OUT_ECHO_REPS);
        }
    }

    /**
     * Sends an ICMP error about {@code original} unless RFC 1122 3.2.2 forbids it (never about an
     * ICMP error, a non-first fragment, a broadcast, or a source that is not one host) or the rate
     * limit says no.
     */
    void sendError(Ipv4Header original, int type, int code, int rest, boolean receivedAsBroadcast, long now) {
        if (!IcmpHeader.mayAnswerWithError(original, receivedAsBroadcast)) {
            return;
        }
        if (!errorBudget.tryTake(now)) {
            counters.inc(IpCounter.ICMP_OUT_RATE_LIMITED);
            return;
        }
        int quoted = IcmpHeader.quotedLength(original);
        IcmpHeader h = txHeader;
        h.wrapForWrite(txHead, 0, IcmpHeader.HEADER);
        h.setType(type).setCode(code).setChecksum(0).setRestOfHeader(rest);
        h.setChecksum(Checksum.finish(Checksum.add(Checksum.sum(txHead, 0, IcmpHeader.HEADER),
                Checksum.sum(original.segment(), original.offset(), quoted))));
        int rc = stack.send(config.sendWaitNs(), -1, config.address(), original.sourceAddress(), Ipv4Header.PROTOCOL_ICMP, false, txHead, 0, IcmpHeader.HEADER,
                original.segment(), original.offset(), quoted);
        if (rc == SendStatus.OK) {
            counters.inc(IpCounter.ICMP_OUT_MSGS);
            counters.inc(type == IcmpHeader.TYPE_TIME_EXCEEDED ? IpCounter.ICMP_OUT_TIME_EXCDS
                    : IpCounter.ICMP_OUT_DEST_UNREACHS);
        }
    }
}
