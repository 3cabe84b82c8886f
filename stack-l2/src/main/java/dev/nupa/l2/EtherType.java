package dev.nupa.l2;

/**
 * Protocol numbers carried in the link header's protocol field. They are EtherType values
 * (IEEE 802 numbers, as in an Ethernet II header), so the gateway and packet capture can put
 * them on an Ethernet frame unchanged.
 */
public final class EtherType {
    /** Internet Protocol version 4 (RFC 894). */
    public static final int IPV4 = 0x0800;
    /** ARP: not used on the fabric (the neighbor directory replaces it); named for the gateway. */
    public static final int ARP = 0x0806;
    /** Internet Protocol version 6: not carried yet; named so it is not reused. */
    public static final int IPV6 = 0x86DD;
    /**
     * The NUPA RDMA transport (InfiniBand transport headers directly on the link), reserved with
     * RoCE v1's EtherType so captures decode as RoCE.
     */
    public static final int NUPA_RDMA = 0x8915;

    /**
     * Not carried on the link: the EtherType `nupa capture` gives, in a pcap file, a recorded fabric frame that has no
     * link header (a perf stream's raw frames), written whole; IEEE 802 "local experimental 2".
     */
    public static final int NUPA_RAW = 0x88B6;

    private EtherType() {
    }

    /** A short name for logs and tools: "IPv4", "RDMA", or the hex value. */
    public static String name(int protocol) {
        return switch (protocol) {
            case IPV4 -> "IPv4";
            case ARP -> "ARP";
            case IPV6 -> "IPv6";
            case NUPA_RDMA -> "RDMA";
            case NUPA_RAW -> "NUPA-raw";
            default -> String.format("0x%04x", protocol);
        };
    }
}
