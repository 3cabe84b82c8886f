/** IPv4, ICMP and UDP over the link layer. */
module dev.nupa.ip {
    requires transitive dev.nupa.l2;

    exports dev.nupa.ip;
    exports dev.nupa.ip.wire;
}
