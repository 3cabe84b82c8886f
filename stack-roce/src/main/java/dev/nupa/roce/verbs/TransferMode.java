package dev.nupa.roce.verbs;

/**
 * How a reliable connected QP moves its payloads.
 * <ul>
 * <li>{@link #PACKET}: in MTU-sized frames through the peer's receive ring, validated and placed by the
 *   responder, as Soft-RoCE does.</li>
 * <li>{@link #DIRECT}: the fabric's DMA channel: the requester checks the responder's published memory
 *   region and QP entries (rkey, protection domain, bounds, access, state) and then copies straight into or
 *   out of the window that backs the region; a SEND goes into the buffer of the receive the peer posted next
 *   (through the peer's receive mirror, docs/rdma.md "Direct SEND"). Nothing travels through the rings. An operation whose checks fail goes as packets
 *   instead, so the responder answers it as the spec asks (a NAK, an RNR NAK, a length error).</li>
 * </ul>
 * WRITE_WITH_IMM always travels as packets.
 */
public enum TransferMode {
    PACKET, DIRECT
}
