package dev.nupa.transport;

import java.util.Map;

import dev.nupa.tcp.TcpConfig;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.MessageSizeEstimator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.ServerChannelRecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.ServerSocketChannelConfig;

/**
 * A fabric listener's Netty options: SO_BACKLOG bounds its half-open connections (beyond it SYN
 * cookies answer), and TCP_NODELAY, SO_KEEPALIVE, SO_SNDBUF and SO_RCVBUF set here shape the
 * connections it accepts (a connection's settings are fixed when its SYN arrives, before Netty sees
 * it; {@link NupaTransport} sets them here from Vert.x's server options); TCP_NODELAY starts on, as for
 * Netty's epoll child channels. SO_REUSEADDR and TCP_FASTOPEN are kept and have no effect on the fabric.
 */
final class NupaServerSocketChannelConfig extends DefaultChannelConfig implements ServerSocketChannelConfig {
    /** Linux's default somaxconn. */
    static final int DEFAULT_BACKLOG = 4096;

    private final TcpOptions accepted = new TcpOptions();
    private volatile int backlog = DEFAULT_BACKLOG;
    private volatile boolean reuseAddress;
    /** Kept and read back; the listener does no Fast Open, so clients use the ordinary handshake (RFC 7413 4.1). */
    private volatile int fastOpen;

    NupaServerSocketChannelConfig(NupaServerSocketChannel channel) {
        super(channel, new ServerChannelRecvByteBufAllocator());
        // Accepted connections start with Nagle off, as Netty's epoll and NIO child channels do
        // (EpollSocketChannelConfig: canEnableTcpNoDelayByDefault).
        accepted.set(ChannelOption.TCP_NODELAY, true);
    }

    TcpConfig acceptedTcpConfig(TcpConfig defaults) {
        return accepted.applyTo(defaults);
    }

    @Override
    public Map<ChannelOption<?>, Object> getOptions() {
        return getOptions(super.getOptions(), ChannelOption.SO_BACKLOG, ChannelOption.SO_REUSEADDR, ChannelOption.TCP_NODELAY,
                ChannelOption.SO_KEEPALIVE, ChannelOption.SO_SNDBUF, ChannelOption.SO_RCVBUF, ChannelOption.TCP_FASTOPEN);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(ChannelOption<T> option) {
        if (option == ChannelOption.SO_BACKLOG) {
            return (T) Integer.valueOf(backlog);
        }
        if (option == ChannelOption.SO_REUSEADDR) {
            return (T) Boolean.valueOf(reuseAddress);
        }
        if (option == ChannelOption.TCP_FASTOPEN) {
            return (T) Integer.valueOf(fastOpen);
        }
        T v = accepted.get(option);
        return v != null ? v : super.getOption(option);
    }

    @Override
    public <T> boolean setOption(ChannelOption<T> option, T value) {
        validate(option, value);
        if (option == ChannelOption.SO_BACKLOG) {
            setBacklog((Integer) value);
        } else if (option == ChannelOption.SO_REUSEADDR) {
            setReuseAddress((Boolean) value);
        } else if (option == ChannelOption.TCP_FASTOPEN) {
            if ((Integer) value < 0) {
                throw new IllegalArgumentException("TCP_FASTOPEN is a queue length, at least 0, got " + value);
            }
            fastOpen = (Integer) value;
        } else if (!accepted.set(option, value)) {
            return super.setOption(option, value);
        }
        return true;
    }

    @Override
    public int getBacklog() {
        return backlog;
    }

    @Override
    public NupaServerSocketChannelConfig setBacklog(int backlog) {
        if (backlog < 0) {
            throw new IllegalArgumentException("SO_BACKLOG must not be negative, got " + backlog);
        }
        this.backlog = backlog == 0 ? DEFAULT_BACKLOG : backlog; // 0: the default, as for Linux's listen()
        return this;
    }

    @Override
    public boolean isReuseAddress() {
        return reuseAddress;
    }

    @Override
    public NupaServerSocketChannelConfig setReuseAddress(boolean on) {
        reuseAddress = on;
        return this;
    }

    @Override
    public int getReceiveBufferSize() {
        return accepted.receiveBuffer();
    }

    @Override
    public NupaServerSocketChannelConfig setReceiveBufferSize(int bytes) {
        accepted.set(ChannelOption.SO_RCVBUF, bytes);
        return this;
    }

    @Override
    public NupaServerSocketChannelConfig setPerformancePreferences(int connectionTime, int latency, int bandwidth) {
        return this;
    }

    @Override
    public NupaServerSocketChannelConfig setConnectTimeoutMillis(int ms) {
        super.setConnectTimeoutMillis(ms);
        return this;
    }

    @Override
    @Deprecated
    public NupaServerSocketChannelConfig setMaxMessagesPerRead(int n) {
        super.setMaxMessagesPerRead(n);
        return this;
    }

    @Override
    public NupaServerSocketChannelConfig setWriteSpinCount(int n) {
        super.setWriteSpinCount(n);
        return this;
    }

    @Override
    public NupaServerSocketChannelConfig setAllocator(ByteBufAllocator allocator) {
        super.setAllocator(allocator);
        return this;
    }

    @Override
    public NupaServerSocketChannelConfig setRecvByteBufAllocator(RecvByteBufAllocator allocator) {
        super.setRecvByteBufAllocator(allocator);
        return this;
    }

    @Override
    public NupaServerSocketChannelConfig setAutoRead(boolean autoRead) {
        super.setAutoRead(autoRead);
        return this;
    }

    @Override
    public NupaServerSocketChannelConfig setMessageSizeEstimator(MessageSizeEstimator estimator) {
        super.setMessageSizeEstimator(estimator);
        return this;
    }

    @Override
    public NupaServerSocketChannelConfig setWriteBufferHighWaterMark(int mark) {
        super.setWriteBufferHighWaterMark(mark);
        return this;
    }

    @Override
    public NupaServerSocketChannelConfig setWriteBufferLowWaterMark(int mark) {
        super.setWriteBufferLowWaterMark(mark);
        return this;
    }

    @Override
    public NupaServerSocketChannelConfig setWriteBufferWaterMark(WriteBufferWaterMark mark) {
        super.setWriteBufferWaterMark(mark);
        return this;
    }
}
