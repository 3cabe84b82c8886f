package dev.nupa.roce.verbs;

import dev.nupa.l2.Link;
import java.lang.foreign.MemorySegment;

/**
 * The node's IP layer as RoCEv2 (IBA annex A17) uses it: UDP datagrams to and from port 4791, routed and resolved by
 * the IP layer, and word of the IPv4 addresses a dead fabric node held. A verbs context speaks RoCEv2 through one
 * ({@code RdmaContext.attachIp}); {@code dev.nupa.roce.ip.Ipv4RoceIp} is the one over the node's own IPv4 layer. Every
 * call but {@link Listener#onNodeLost} runs on the link's owner thread.
 */
public interface RoceIp {
    /** {@link #send} sent the datagram (it left, or is queued to the next hop). */
    int SENT = 0;
    /** {@link #send} found the ring to the next hop full: nothing was sent; try again later. */
    int BACK_PRESSURED = -1;
    /** {@link #send} could not send it (no route, no neighbor, too big): dropped, as on a wire. */
    int FAILED = -2;

    /** What the IP layer tells the context; the context registers it with {@link #open}. */
    interface Listener {
        /**
         * A datagram to UDP 4791 from {@code sourceAddress}: its IPv4 header at {@code ipOffset} of {@code ip}, whose
         * {@code ipLength} bytes are the whole IP datagram (the ICRC its last 4), and its UDP payload ({@code length}
         * bytes at {@code offset} of {@code data}); valid during the call. {@code ip} is null where the IP layer
         * could not give the header (the ICRC cannot be checked then).
         */
        void onDatagram(int sourceAddress, MemorySegment ip, long ipOffset, int ipLength, MemorySegment data, long offset,
                int length);

        /** Fabric node {@code node}, which held {@code addresses}, died or restarted. On the liveness thread. */
        void onNodeLost(int node, int[] addresses);
    }

    /** Binds UDP 4791 to {@code listener} and tells it of lost nodes; throws naming the cause if the port is taken. */
    void open(Listener listener);

    /** Unbinds UDP 4791 and stops telling of lost nodes. */
    void close();

    /** The link the IP layer runs on (the context's own, or it is the wrong IP layer). */
    Link link();

    /** This node's IPv4 address. */
    int address();

    /** The largest UDP payload (transport packet and ICRC) that leaves in one frame, without fragmentation. */
    int maxUdpPayload();

    /**
     * Sends the transport packet of {@code length} bytes at {@code offset} of {@code packet} (BTH through pad) from UDP
     * port {@code sourcePort} to port 4791 of {@code destination}, Don't Fragment set, with its ICRC appended as it
     * leaves (IBA A17.4); without waiting. Returns {@link #SENT}, {@link #BACK_PRESSURED} or {@link #FAILED}.
     */
    int send(int sourcePort, int destination, MemorySegment packet, long offset, int length);

    /** {@code address} in dotted quad, for messages. */
    static String toString(int address) {
        return (address >>> 24) + "." + (address >>> 16 & 0xFF) + "." + (address >>> 8 & 0xFF) + "." + (address & 0xFF);
    }
}
