/** The gateway to Ethernet through a TAP device: Ethernet II, ARP, offloads, the edge checks of RoCEv2. */
module dev.nupa.gateway {
    requires transitive dev.nupa.ip;

    exports dev.nupa.gateway;
}
