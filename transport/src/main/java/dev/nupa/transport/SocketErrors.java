package dev.nupa.transport;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.SocketException;

import dev.nupa.tcp.TcpError;
import io.netty.channel.ConnectTimeoutException;

/** A TCP connection's error as the exception Java's sockets (and Netty's epoll channels) give for it. */
final class SocketErrors {
    private SocketErrors() {
    }

    /** Why a connect to {@code remote} failed (null {@code error}: it closed without one). */
    static IOException connectFailed(TcpError error, InetSocketAddress remote) {
        String to = remote != null ? remote.toString() : "the peer";
        if (error == TcpError.REFUSED) {
            return new ConnectException("Connection refused: " + to);
        }
        if (error == TcpError.HOST_UNREACHABLE || error == TcpError.NETWORK_UNREACHABLE) {
            return new NoRouteToHostException(error.message() + ": " + to); // an ICMP error in SYN-SENT, as Java's sockets
        }
        if (error == TcpError.TIMED_OUT) {
            return new ConnectTimeoutException("connection timed out: " + to + " (the SYN went unanswered)");
        }
        return new ConnectException((error == null ? "connection closed" : error.message()) + ": " + to);
    }

    /** Why an established connection to {@code remote} ended: ECONNRESET reads "Connection reset", as Java's sockets say. */
    static IOException failed(TcpError error, InetSocketAddress remote) {
        if (error == TcpError.RESET) {
            return new SocketException("Connection reset");
        }
        return new IOException(error.message() + " (" + remote + ")");
    }
}
