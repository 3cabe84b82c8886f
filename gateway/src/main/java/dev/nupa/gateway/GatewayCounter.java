package dev.nupa.gateway;

/** What the gateway's Ethernet side counts, per direction, and its drops by reason. */
public enum GatewayCounter {
    /** Frames and bytes read from the TAP device. */
    RX_FRAMES, RX_BYTES,
    /** Frames and bytes written to the TAP device. */
    TX_FRAMES, TX_BYTES,
    /** read(2) on the TAP device failed with other than EAGAIN. */
    RX_ERRORS,
    ARP_REQUESTS_IN, ARP_REPLIES_IN, ARP_REQUESTS_OUT, ARP_REPLIES_OUT,
    /** Replies for fabric addresses the gateway fronts (proxy ARP, RFC 1027). */
    PROXY_ARP_REPLIES,
    /** IPv4 datagrams handed to the node's IP layer, and taken from it for the TAP side. */
    IPV4_IN, IPV4_OUT,
    /** With offloads: TCP super-frames read from the TAP, and the segments they were cut into. */
    RX_GSO_FRAMES, RX_GSO_SEGMENTS,
    /** With offloads: partial checksums from Linux completed. */
    RX_CSUM_COMPLETED,
    /** With offloads: super-frames written to the TAP, and the segments joined into them. */
    TX_GSO_FRAMES, TX_GSO_SEGMENTS,
    /** Drops: a virtio-net header that cannot be honoured (a segmentation type not offered, offsets outside the frame). */
    DROP_BAD_VNET,
    /** RoCEv2 datagrams (UDP 4791) that passed the gateway's checks, from the TAP side and to it. */
    ROCEV2_IN, ROCEV2_OUT,
    /**
     * ECN-capable datagrams marked Congestion Experienced (RFC 3168) because the round's backlog reached the threshold
     * ({@link EcnMarker}): from the TAP toward the fabric, and toward the TAP.
     */
    ECN_MARKED_IN, ECN_MARKED_OUT,
    /** Drops: RoCEv2 that is fragmented, whose UDP length disagrees with IP, or too short for a BTH and an ICRC. */
    DROP_BAD_ROCEV2,
    /** Drops: RoCEv2 whose invariant CRC does not match, either way (IBA 7.8.1, annex A17). */
    DROP_BAD_ICRC,
    /** Drops: shorter than an Ethernet header. */
    DROP_RUNT,
    /** Drops: longer than the MTU allows. */
    DROP_OVERSIZE,
    /** Drops: addressed to another station's MAC address. */
    DROP_NOT_FOR_US,
    /** Drops: to a multicast MAC address (IPv6 neighbor discovery, mDNS, ...: nothing here joins a group). */
    DROP_MULTICAST,
    /** Drops: a group address as the source MAC (IEEE 802 forbids it). */
    DROP_BAD_SOURCE_MAC,
    /** Drops: 802.1Q or 802.1ad tagged (VLANs are not configured). */
    DROP_VLAN,
    /** Drops: IPv6 (not routed). */
    DROP_IPV6,
    /** Drops: any other EtherType. */
    DROP_ETHERTYPE,
    /** Drops: ARP that is not Ethernet/IPv4, or an unknown operation. */
    DROP_BAD_ARP,
    /** Drops: an IPv4 source address of the fabric's subnet or of the gateway itself, arriving from Ethernet. */
    DROP_SPOOFED,
    /** Drops: IPv4 to a broadcast address of the Ethernet side (a router does not pass it on, RFC 1812 5.3.5.1). */
    DROP_BROADCAST,
    /** Drops: a datagram for a next hop being resolved, when its queue or the shared pool is full. */
    DROP_ARP_QUEUE_FULL,
    /** Drops: a datagram whose next hop never answered ARP (host unreachable is sent back). */
    DROP_UNRESOLVED,
    /** Drops: the TAP device's queue was full (write failed). */
    DROP_TX_FULL
}
