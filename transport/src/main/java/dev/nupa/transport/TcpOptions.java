package dev.nupa.transport;

import dev.nupa.tcp.TcpConfig;
import io.netty.channel.ChannelOption;

/**
 * The socket options that become a connection's {@link TcpConfig}: TCP_NODELAY, SO_KEEPALIVE,
 * SO_SNDBUF and SO_RCVBUF, each "not set" until set (then the node's default holds). Shared by the
 * connection and listener configs.
 */
final class TcpOptions {
    /** Keep-alive as Linux's defaults have it when SO_KEEPALIVE is on: 2 h idle, 75 s apart, 9 probes. */
    private static final long KEEPALIVE_IDLE_NS = 7_200_000_000_000L;
    private static final long KEEPALIVE_INTERVAL_NS = 75_000_000_000L;
    private static final int KEEPALIVE_PROBES = 9;

    private volatile Boolean noDelay;
    private volatile Boolean keepAlive;
    private volatile int sendBuffer = -1;
    private volatile int receiveBuffer = -1;

    /** Takes one of its options; false for any other option. Throws for a negative or zero buffer size. */
    <T> boolean set(ChannelOption<T> option, T value) {
        if (option == ChannelOption.TCP_NODELAY) {
            noDelay = (Boolean) value;
        } else if (option == ChannelOption.SO_KEEPALIVE) {
            keepAlive = (Boolean) value;
        } else if (option == ChannelOption.SO_SNDBUF) {
            sendBuffer = positive("SO_SNDBUF", (Integer) value);
        } else if (option == ChannelOption.SO_RCVBUF) {
            receiveBuffer = positive("SO_RCVBUF", (Integer) value);
        } else {
            return false;
        }
        return true;
    }

    @SuppressWarnings("unchecked")
    <T> T get(ChannelOption<T> option) {
        if (option == ChannelOption.TCP_NODELAY) {
            return (T) Boolean.valueOf(noDelay());
        }
        if (option == ChannelOption.SO_KEEPALIVE) {
            return (T) Boolean.valueOf(keepAlive());
        }
        if (option == ChannelOption.SO_SNDBUF) {
            return (T) Integer.valueOf(sendBuffer());
        }
        if (option == ChannelOption.SO_RCVBUF) {
            return (T) Integer.valueOf(receiveBuffer());
        }
        return null;
    }

    /** Takes the settings of a connection made already, as if each had been set. */
    void adopt(TcpConfig c) {
        noDelay = c.noDelay();
        keepAlive = c.keepAliveIdleNs() > 0;
        sendBuffer = c.sendBuffer();
        receiveBuffer = c.receiveBuffer();
    }

    boolean noDelay() {
        Boolean b = noDelay;
        return b != null && b;
    }

    boolean keepAlive() {
        Boolean b = keepAlive;
        return b != null && b;
    }

    int sendBuffer() {
        return sendBuffer;
    }

    int receiveBuffer() {
        return receiveBuffer;
    }

    /** {@code defaults} with every option that was set. */
    TcpConfig applyTo(TcpConfig defaults) {
        TcpConfig c = defaults;
        Boolean nd = noDelay;
        if (nd != null) {
            c = c.withNoDelay(nd);
        }
        Boolean ka = keepAlive;
        if (ka != null) {
            c = ka ? (c.keepAliveIdleNs() > 0 ? c : c.withKeepAlive(KEEPALIVE_IDLE_NS, KEEPALIVE_INTERVAL_NS, KEEPALIVE_PROBES))
                    : c.withKeepAlive(0, c.keepAliveIntervalNs(), c.keepAliveProbes());
        }
        if (sendBuffer > 0 || receiveBuffer > 0) {
            // At least one MSS each, as TcpConfig requires (Linux rounds small SO_SNDBUF values up too).
            int s = sendBuffer > 0 ? Math.max(sendBuffer, c.mss()) : c.sendBuffer();
            int r = receiveBuffer > 0 ? Math.max(receiveBuffer, c.mss()) : c.receiveBuffer();
            c = c.withBuffers(s, r);
        }
        return c;
    }

    private static int positive(String name, int v) {
        if (v <= 0) {
            throw new IllegalArgumentException(name + " must be a positive number of bytes, got " + v);
        }
        return v;
    }
}
