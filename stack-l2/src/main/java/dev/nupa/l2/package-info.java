/**
 * The link layer over the fabric (docs/link-layer.md): the 8-byte link header ({@link dev.nupa.l2.LinkHeader},
 * {@link dev.nupa.l2.LinkRepr}), protocol dispatch and counters ({@link dev.nupa.l2.Link}), packet capture to
 * pcap ({@link dev.nupa.l2.PcapWriter}) and a fault-injecting device for tests ({@link dev.nupa.l2.FaultyDevice}).
 * The neighbor directory and the link verticle come next (issue 3).
 */
package dev.nupa.l2;
