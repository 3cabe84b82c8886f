package dev.nupa.ip;

/**
 * The counters of an IPv4 stack, named after the IP, ICMP and UDP MIBs (RFC 4293, RFC 4113) where
 * one fits, so they read like {@code netstat -s}.
 */
public enum IpCounter {
    IN_RECEIVES("datagrams received"),
    IN_HDR_ERRORS("dropped: bad version, header length, total length or checksum"),
    IN_TRUNCATED("dropped: shorter than their header says"),
    IN_ADDR_ERRORS("dropped: not for this node and not forwarded, or a bad source address"),
    IN_UNKNOWN_PROTOS("dropped: no handler for the protocol"),
    IN_DELIVERS("delivered to ICMP, UDP or an upper protocol"),
    OUT_REQUESTS("datagrams this node originated"),
    OUT_NO_ROUTES("not sent: no route or no fabric node for the next hop"),
    OUT_DISCARDS("not sent: peer down, detached, or a claim held past the stall timeout"),
    OUT_BACK_PRESSURED("not sent now: destination ring full past the send wait (the caller was told; TCP and sockets retry)"),
    FORW_DATAGRAMS("forwarded"),
    FORW_TTL_EXCEEDED("not forwarded: TTL expired"),
    LOOP_HANDOVERS("handed to the node's event loop that holds their port or connection"),
    FRAG_OKS("datagrams sent in fragments"),
    FRAG_CREATES("fragments sent"),
    FRAG_FAILS("not sent: too big and DF set"),
    REASM_REQDS("fragments received"),
    REASM_OKS("datagrams reassembled"),
    REASM_FAILS("reassemblies abandoned (timeout, overlap, bad fragment, eviction)"),
    REASM_TIMEOUTS("reassemblies timed out"),
    REASM_OVERLAPS("reassemblies dropped for overlapping fragments"),
    REASM_DUPLICATES("duplicate fragments ignored"),
    REASM_EVICTIONS("reassemblies evicted to make room"),
    REASM_BAD_FRAGMENTS("fragments dropped: bad offset, size or total"),
    ICMP_IN_MSGS("ICMP messages received"),
    ICMP_IN_ERRORS("ICMP messages dropped: bad checksum or too short"),
    ICMP_IN_ECHOS("ICMP echo requests received"),
    ICMP_IN_ECHO_REPS("ICMP echo replies received"),
    ICMP_IN_DEST_UNREACHS("ICMP destination unreachable received"),
    ICMP_IN_TIME_EXCDS("ICMP time exceeded received"),
    ICMP_OUT_MSGS("ICMP messages sent"),
    ICMP_OUT_ECHO_REPS("ICMP echo replies sent"),
    ICMP_OUT_DEST_UNREACHS("ICMP destination unreachable sent"),
    ICMP_OUT_TIME_EXCDS("ICMP time exceeded sent"),
    ICMP_OUT_RATE_LIMITED("ICMP errors not sent: rate limit"),
    UDP_IN_DATAGRAMS("UDP datagrams delivered to sockets"),
    UDP_NO_PORTS("UDP datagrams to a closed port"),
    UDP_IN_ERRORS("UDP datagrams dropped: bad length or checksum"),
    UDP_RCVBUF_ERRORS("UDP datagrams dropped: socket receive queue full"),
    UDP_OUT_DATAGRAMS("UDP datagrams sent");

    private final String description;

    IpCounter(String description) {
        this.description = description;
    }

    public String description() {
        return description;
    }

    /** The name in lower camel case, as tools print it (e.g. "inReceives"). */
    public String label() {
        StringBuilder sb = new StringBuilder();
        boolean up = false;
        for (char c : name().toLowerCase().toCharArray()) {
            if (c == '_') {
                up = true;
            } else {
                sb.append(up ? Character.toUpperCase(c) : c);
                up = false;
            }
        }
        return sb.toString();
    }
}
