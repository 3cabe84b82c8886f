package dev.nupa.ip;

import io.vertx.core.buffer.Buffer;

/** A received UDP datagram, as {@link UdpSocket} hands it to its handler (Vert.x's DatagramPacket). */
public record UdpDatagram(String senderHost, int senderPort, Buffer data) {
    @Override
    public String toString() {
        return "UdpDatagram[" + data.length() + " bytes from " + senderHost + ":" + senderPort + "]";
    }
}
