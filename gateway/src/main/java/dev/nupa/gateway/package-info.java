/**
 * The gateway between the fabric and Ethernet (docs/gateway.md): a TAP device through the Foreign
 * Function &amp; Memory API ({@link dev.nupa.gateway.Tap}), Ethernet II and ARP views
 * ({@link dev.nupa.gateway.EthernetFrame}, {@link dev.nupa.gateway.ArpPacket}), the Ethernet side as an
 * IPv4 interface of the node with its neighbor cache ({@link dev.nupa.gateway.EthernetInterface}), and
 * the verticle that runs it on the node's event loop ({@link dev.nupa.gateway.GatewayVerticle}).
 */
package dev.nupa.gateway;
