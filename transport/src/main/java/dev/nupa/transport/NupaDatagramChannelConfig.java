package dev.nupa.transport;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.util.Map;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.MessageSizeEstimator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.DatagramChannelConfig;

/**
 * A fabric UDP socket's Netty options. SO_RCVBUF bounds, in bytes, the datagrams kept while reading
 * is paused (further ones are dropped and counted, as UDP allows); the others are kept and have no
 * effect on the fabric (no multicast, broadcast or TOS there).
 */
final class NupaDatagramChannelConfig extends DefaultChannelConfig implements DatagramChannelConfig {
    /** Linux's default net.core.rmem_default. */
    static final int DEFAULT_RECEIVE_BUFFER = 212_992;

    private volatile int sendBuffer = DEFAULT_RECEIVE_BUFFER;
    private volatile int receiveBuffer = DEFAULT_RECEIVE_BUFFER;
    private volatile int trafficClass;
    private volatile boolean reuseAddress;
    private volatile boolean reusePort;
    private volatile boolean broadcast;
    private volatile boolean loopbackModeDisabled;
    private volatile int timeToLive = 1;
    private volatile InetAddress interfaceAddress;
    private volatile NetworkInterface networkInterface;
    private volatile boolean activeOnRegistration;

    NupaDatagramChannelConfig(NupaDatagramChannel channel) {
        super(channel, new FixedRecvByteBufAllocator(2048));
    }

    boolean activeOnRegistration() {
        return activeOnRegistration;
    }

    /** SO_REUSEPORT (socket(7)): several sockets on one port, unicast datagrams spread over them by flow. */
    boolean reusePort() {
        return reusePort;
    }

    NupaDatagramChannelConfig setReusePort(boolean on) {
        reusePort = on;
        return this;
    }

    /** Netty's own SO_REUSEPORT option lives in its native transports (UnixChannelOption): taken here by its name. */
    private static boolean isReusePort(ChannelOption<?> option) {
        return option.name().endsWith("SO_REUSEPORT");
    }

    @Override
    public Map<ChannelOption<?>, Object> getOptions() {
        return getOptions(super.getOptions(), ChannelOption.SO_BROADCAST, ChannelOption.SO_RCVBUF, ChannelOption.SO_SNDBUF,
                ChannelOption.SO_REUSEADDR, ChannelOption.IP_MULTICAST_LOOP_DISABLED, ChannelOption.IP_MULTICAST_ADDR,
                ChannelOption.IP_MULTICAST_IF, ChannelOption.IP_MULTICAST_TTL, ChannelOption.IP_TOS,
                ChannelOption.DATAGRAM_CHANNEL_ACTIVE_ON_REGISTRATION);
    }

    @Override
    @SuppressWarnings({"unchecked", "deprecation"})
    public <T> T getOption(ChannelOption<T> option) {
        Object v = option == ChannelOption.SO_BROADCAST ? (Object) broadcast
                : option == ChannelOption.SO_RCVBUF ? (Object) receiveBuffer
                : option == ChannelOption.SO_SNDBUF ? (Object) sendBuffer
                : option == ChannelOption.SO_REUSEADDR ? (Object) reuseAddress
                : option == ChannelOption.IP_MULTICAST_LOOP_DISABLED ? (Object) loopbackModeDisabled
                : option == ChannelOption.IP_MULTICAST_ADDR ? interfaceAddress
                : option == ChannelOption.IP_MULTICAST_IF ? networkInterface
                : option == ChannelOption.IP_MULTICAST_TTL ? (Object) timeToLive
                : option == ChannelOption.IP_TOS ? (Object) trafficClass
                : option == ChannelOption.DATAGRAM_CHANNEL_ACTIVE_ON_REGISTRATION ? (Object) activeOnRegistration
                : isReusePort(option) ? (Object) reusePort
                : null;
        return v != null ? (T) v : super.getOption(option);
    }

    @Override
    @SuppressWarnings("deprecation")
    public <T> boolean setOption(ChannelOption<T> option, T value) {
        validate(option, value);
        if (option == ChannelOption.SO_BROADCAST) {
            setBroadcast((Boolean) value);
        } else if (option == ChannelOption.SO_RCVBUF) {
            setReceiveBufferSize((Integer) value);
        } else if (option == ChannelOption.SO_SNDBUF) {
            setSendBufferSize((Integer) value);
        } else if (option == ChannelOption.SO_REUSEADDR) {
            setReuseAddress((Boolean) value);
        } else if (isReusePort(option)) {
            setReusePort((Boolean) value);
        } else if (option == ChannelOption.IP_MULTICAST_LOOP_DISABLED) {
            setLoopbackModeDisabled((Boolean) value);
        } else if (option == ChannelOption.IP_MULTICAST_ADDR) {
            setInterface((InetAddress) value);
        } else if (option == ChannelOption.IP_MULTICAST_IF) {
            setNetworkInterface((NetworkInterface) value);
        } else if (option == ChannelOption.IP_MULTICAST_TTL) {
            setTimeToLive((Integer) value);
        } else if (option == ChannelOption.IP_TOS) {
            setTrafficClass((Integer) value);
        } else if (option == ChannelOption.DATAGRAM_CHANNEL_ACTIVE_ON_REGISTRATION) {
            if (channel.isRegistered()) {
                throw new IllegalStateException("DATAGRAM_CHANNEL_ACTIVE_ON_REGISTRATION can only be set before registration");
            }
            activeOnRegistration = (Boolean) value;
        } else {
            return super.setOption(option, value);
        }
        return true;
    }

    @Override
    public int getSendBufferSize() {
        return sendBuffer;
    }

    @Override
    public NupaDatagramChannelConfig setSendBufferSize(int bytes) {
        sendBuffer = bytes;
        return this;
    }

    @Override
    public int getReceiveBufferSize() {
        return receiveBuffer;
    }

    @Override
    public NupaDatagramChannelConfig setReceiveBufferSize(int bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("SO_RCVBUF must be a positive number of bytes, got " + bytes);
        }
        receiveBuffer = bytes;
        return this;
    }

    @Override
    public int getTrafficClass() {
        return trafficClass;
    }

    @Override
    public NupaDatagramChannelConfig setTrafficClass(int trafficClass) {
        this.trafficClass = trafficClass;
        return this;
    }

    @Override
    public boolean isReuseAddress() {
        return reuseAddress;
    }

    @Override
    public NupaDatagramChannelConfig setReuseAddress(boolean on) {
        reuseAddress = on;
        return this;
    }

    @Override
    public boolean isBroadcast() {
        return broadcast;
    }

    @Override
    public NupaDatagramChannelConfig setBroadcast(boolean on) {
        broadcast = on;
        return this;
    }

    @Override
    public boolean isLoopbackModeDisabled() {
        return loopbackModeDisabled;
    }

    @Override
    public NupaDatagramChannelConfig setLoopbackModeDisabled(boolean disabled) {
        loopbackModeDisabled = disabled;
        return this;
    }

    @Override
    public int getTimeToLive() {
        return timeToLive;
    }

    @Override
    public NupaDatagramChannelConfig setTimeToLive(int ttl) {
        timeToLive = ttl;
        return this;
    }

    @Override
    public InetAddress getInterface() {
        return interfaceAddress;
    }

    @Override
    public NupaDatagramChannelConfig setInterface(InetAddress address) {
        interfaceAddress = address;
        return this;
    }

    @Override
    public NetworkInterface getNetworkInterface() {
        return networkInterface;
    }

    @Override
    public NupaDatagramChannelConfig setNetworkInterface(NetworkInterface ni) {
        networkInterface = ni;
        return this;
    }

    @Override
    @Deprecated
    public NupaDatagramChannelConfig setMaxMessagesPerRead(int n) {
        super.setMaxMessagesPerRead(n);
        return this;
    }

    @Override
    public NupaDatagramChannelConfig setWriteSpinCount(int n) {
        super.setWriteSpinCount(n);
        return this;
    }

    @Override
    public NupaDatagramChannelConfig setConnectTimeoutMillis(int ms) {
        super.setConnectTimeoutMillis(ms);
        return this;
    }

    @Override
    public NupaDatagramChannelConfig setAllocator(ByteBufAllocator allocator) {
        super.setAllocator(allocator);
        return this;
    }

    @Override
    public NupaDatagramChannelConfig setRecvByteBufAllocator(RecvByteBufAllocator allocator) {
        super.setRecvByteBufAllocator(allocator);
        return this;
    }

    @Override
    public NupaDatagramChannelConfig setAutoRead(boolean autoRead) {
        super.setAutoRead(autoRead);
        return this;
    }

    @Override
    public NupaDatagramChannelConfig setAutoClose(boolean autoClose) {
        super.setAutoClose(autoClose);
        return this;
    }

    @Override
    public NupaDatagramChannelConfig setMessageSizeEstimator(MessageSizeEstimator estimator) {
        super.setMessageSizeEstimator(estimator);
        return this;
    }

    @Override
    public NupaDatagramChannelConfig setWriteBufferWaterMark(WriteBufferWaterMark mark) {
        super.setWriteBufferWaterMark(mark);
        return this;
    }
}
