package dev.nupa.roce;

/**
 * How a reliable connected QP moves RDMA WRITE, READ and atomic payloads.
 * <ul>
 * <li>{@link #PACKET}: in MTU-sized frames through the peer's receive ring, validated and placed by the
 *   responder, as Soft-RoCE does.</li>
 * <li>{@link #DIRECT}: the fabric's DMA channel: the requester checks the responder's published memory
 *   region and QP entries (rkey, protection domain, bounds, access, state) and then copies straight into or
 *   out of the window that backs the region; nothing travels through the rings. An operation whose checks
 *   fail goes as packets instead, so the responder answers it with the NAK the spec asks for.</li>
 * </ul>
 * SENDs and WRITE_WITH_IMM always travel as packets: they consume the responder's receive queue.
 */
public enum TransferMode {
    PACKET, DIRECT
}
