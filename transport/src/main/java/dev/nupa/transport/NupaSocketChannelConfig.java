package dev.nupa.transport;

import java.util.Map;

import dev.nupa.tcp.TcpConfig;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.MessageSizeEstimator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannelConfig;

/**
 * A fabric TCP connection's Netty options. The TCP ones (TCP_NODELAY, SO_KEEPALIVE, SO_SNDBUF,
 * SO_RCVBUF) shape the {@link TcpConfig} the connection is made with, so they count when set
 * before connect (Vert.x sets them through its bootstrap); on an accepted connection the listener's
 * settings apply (see {@link NupaServerSocketChannelConfig}) and read back as they are. TCP_NODELAY starts on, as
 * on Netty's epoll and NIO channels. SO_LINGER acts on close (0: a reset; above 0: the close completes once everything was acknowledged, or after that many seconds).
 * IP_TOS, SO_REUSEADDR and TCP_FASTOPEN_CONNECT are kept and have no effect on the fabric (a connect is an
 * ordinary handshake, as Linux's when the peer gave no Fast Open cookie).
 */
public final class NupaSocketChannelConfig extends DefaultChannelConfig implements SocketChannelConfig {
    private final TcpOptions tcp = new TcpOptions();
    /** The longest linger, seconds (as the JDK's Socket.setSoLinger caps it). */
    public static final int MAX_LINGER = 65_535;
    private volatile int soLinger = -1;
    private volatile int trafficClass;
    private volatile boolean reuseAddress;
    private volatile boolean allowHalfClosure;
    /** Kept and read back; the connect is an ordinary handshake, as Linux's when the peer has no TFO cookie (RFC 7413 4.1). */
    private volatile boolean fastOpenConnect;

    NupaSocketChannelConfig(NupaSocketChannel channel) {
        super(channel);
        setTcpNoDelay(true); // as Netty's epoll and NIO channels start (EpollSocketChannelConfig: canEnableTcpNoDelayByDefault)
    }

    /** An accepted connection's settings (its listener's), so that they read back as they are. */
    void adopt(TcpConfig connection) {
        tcp.adopt(connection);
    }

    /** Auto-read went off: the read it asked for is withdrawn, as epoll's config clears EPOLLIN. */
    @Override
    protected void autoReadCleared() {
        ((NupaSocketChannel) channel).autoReadCleared();
    }

    /** The connection's TCP settings: the node's defaults with the options set here. */
    TcpConfig tcpConfig(TcpConfig defaults) {
        return tcp.applyTo(defaults);
    }

    @Override
    public Map<ChannelOption<?>, Object> getOptions() {
        return getOptions(super.getOptions(), ChannelOption.SO_RCVBUF, ChannelOption.SO_SNDBUF, ChannelOption.TCP_NODELAY,
                ChannelOption.SO_KEEPALIVE, ChannelOption.SO_REUSEADDR, ChannelOption.SO_LINGER, ChannelOption.IP_TOS,
                ChannelOption.ALLOW_HALF_CLOSURE, ChannelOption.TCP_FASTOPEN_CONNECT);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(ChannelOption<T> option) {
        if (option == ChannelOption.SO_LINGER) {
            return (T) Integer.valueOf(soLinger);
        }
        if (option == ChannelOption.IP_TOS) {
            return (T) Integer.valueOf(trafficClass);
        }
        if (option == ChannelOption.SO_REUSEADDR) {
            return (T) Boolean.valueOf(reuseAddress);
        }
        if (option == ChannelOption.ALLOW_HALF_CLOSURE) {
            return (T) Boolean.valueOf(allowHalfClosure);
        }
        if (option == ChannelOption.TCP_FASTOPEN_CONNECT) {
            return (T) Boolean.valueOf(fastOpenConnect);
        }
        T v = tcp.get(option);
        return v != null ? v : super.getOption(option);
    }

    @Override
    public <T> boolean setOption(ChannelOption<T> option, T value) {
        validate(option, value);
        if (option == ChannelOption.SO_LINGER) {
            setSoLinger((Integer) value);
        } else if (option == ChannelOption.IP_TOS) {
            setTrafficClass((Integer) value);
        } else if (option == ChannelOption.SO_REUSEADDR) {
            setReuseAddress((Boolean) value);
        } else if (option == ChannelOption.ALLOW_HALF_CLOSURE) {
            setAllowHalfClosure((Boolean) value);
        } else if (option == ChannelOption.TCP_FASTOPEN_CONNECT) {
            fastOpenConnect = (Boolean) value;
        } else if (!tcp.set(option, value)) {
            return super.setOption(option, value);
        }
        return true;
    }

    @Override
    public boolean isTcpNoDelay() {
        return tcp.noDelay();
    }

    @Override
    public NupaSocketChannelConfig setTcpNoDelay(boolean on) {
        tcp.set(ChannelOption.TCP_NODELAY, on);
        return this;
    }

    @Override
    public int getSoLinger() {
        return soLinger;
    }

    @Override
    public NupaSocketChannelConfig setSoLinger(int seconds) {
        if (seconds < -1 || seconds > MAX_LINGER) {
            throw new IllegalArgumentException("SO_LINGER " + seconds + " is outside -1.." + MAX_LINGER
                    + " seconds (-1: off, 0: reset on close, above 0: wait for the peer's acknowledgement that long)");
        }
        soLinger = seconds;
        return this;
    }

    @Override
    public int getSendBufferSize() {
        return tcp.sendBuffer();
    }

    @Override
    public NupaSocketChannelConfig setSendBufferSize(int bytes) {
        tcp.set(ChannelOption.SO_SNDBUF, bytes);
        return this;
    }

    @Override
    public int getReceiveBufferSize() {
        return tcp.receiveBuffer();
    }

    @Override
    public NupaSocketChannelConfig setReceiveBufferSize(int bytes) {
        tcp.set(ChannelOption.SO_RCVBUF, bytes);
        return this;
    }

    @Override
    public boolean isKeepAlive() {
        return tcp.keepAlive();
    }

    @Override
    public NupaSocketChannelConfig setKeepAlive(boolean on) {
        tcp.set(ChannelOption.SO_KEEPALIVE, on);
        return this;
    }

    @Override
    public int getTrafficClass() {
        return trafficClass;
    }

    @Override
    public NupaSocketChannelConfig setTrafficClass(int trafficClass) {
        this.trafficClass = trafficClass;
        return this;
    }

    @Override
    public boolean isReuseAddress() {
        return reuseAddress;
    }

    @Override
    public NupaSocketChannelConfig setReuseAddress(boolean on) {
        reuseAddress = on;
        return this;
    }

    @Override
    public NupaSocketChannelConfig setPerformancePreferences(int connectionTime, int latency, int bandwidth) {
        return this; // a hint the JDK itself ignores
    }

    @Override
    public boolean isAllowHalfClosure() {
        return allowHalfClosure;
    }

    @Override
    public NupaSocketChannelConfig setAllowHalfClosure(boolean on) {
        allowHalfClosure = on;
        return this;
    }

    // Covariant returns of the common setters.

    @Override
    public NupaSocketChannelConfig setConnectTimeoutMillis(int ms) {
        super.setConnectTimeoutMillis(ms);
        return this;
    }

    @Override
    @Deprecated
    public NupaSocketChannelConfig setMaxMessagesPerRead(int n) {
        super.setMaxMessagesPerRead(n);
        return this;
    }

    @Override
    public NupaSocketChannelConfig setWriteSpinCount(int n) {
        super.setWriteSpinCount(n);
        return this;
    }

    @Override
    public NupaSocketChannelConfig setAllocator(ByteBufAllocator allocator) {
        super.setAllocator(allocator);
        return this;
    }

    @Override
    public NupaSocketChannelConfig setRecvByteBufAllocator(RecvByteBufAllocator allocator) {
        super.setRecvByteBufAllocator(allocator);
        return this;
    }

    @Override
    public NupaSocketChannelConfig setAutoRead(boolean autoRead) {
        super.setAutoRead(autoRead);
        return this;
    }

    @Override
    public NupaSocketChannelConfig setAutoClose(boolean autoClose) {
        super.setAutoClose(autoClose);
        return this;
    }

    @Override
    public NupaSocketChannelConfig setMessageSizeEstimator(MessageSizeEstimator estimator) {
        super.setMessageSizeEstimator(estimator);
        return this;
    }

    @Override
    public NupaSocketChannelConfig setWriteBufferWaterMark(WriteBufferWaterMark mark) {
        super.setWriteBufferWaterMark(mark);
        return this;
    }
}
