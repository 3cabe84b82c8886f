/**
 * The link layer over the fabric (docs/link-layer.md): the 8-byte link header ({@link dev.nupa.l2.LinkHeader},
 * {@link dev.nupa.l2.LinkRepr}), protocol dispatch, counters and the one-owner rule ({@link dev.nupa.l2.Link}),
 * the datapath loop ({@link dev.nupa.l2.Datapath}), the neighbor directory, packet capture
 * to pcap, and a fault-injecting device for tests ({@link dev.nupa.l2.FaultyDevice}).
 */
package dev.nupa.l2;
