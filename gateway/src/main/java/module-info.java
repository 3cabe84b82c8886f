/** The gateway to Ethernet through a TAP device: Ethernet II, ARP, offloads, the edge checks of RoCEv2. */
module dev.nupa.gateway {
    requires transitive dev.nupa.ip;
    requires transitive io.vertx.core;

    exports dev.nupa.gateway;
    exports dev.nupa.gateway.vertx;
}
