/**
 * The gateway between the fabric and Ethernet (docs/gateway.md): a TAP device through the Foreign
 * Function &amp; Memory API ({@link dev.nupa.gateway.Tap}, one descriptor per queue), Ethernet II and ARP views
 * ({@link dev.nupa.gateway.EthernetFrame}, {@link dev.nupa.gateway.ArpPacket}), the Ethernet side as an
 * IPv4 interface of the node with its neighbor cache ({@link dev.nupa.gateway.EthernetInterface}), the
 * offloads (virtio-net headers: {@link dev.nupa.gateway.VnetHeader}, {@link dev.nupa.gateway.TcpSegmenter},
 * {@link dev.nupa.gateway.TcpCoalescer}), the checks of RoCEv2 at the edge ({@link dev.nupa.gateway.RoceV2Filter}),
 * and the gateway itself on the node's event loops, a watcher thread per TAP queue ({@link dev.nupa.gateway.Gateway}).
 */
package dev.nupa.gateway;
