package dev.nupa.transport;

import java.util.concurrent.ThreadFactory;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFactory;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.InternetProtocolFamily;
import io.vertx.core.datagram.DatagramSocketOptions;
import io.vertx.core.net.NetServerOptions;

/**
 * The Vert.x transport SPI over one fabric node: each of its event loops drives a stack of the node
 * ({@link NupaIoHandler}; one per loop, sharing the node's IPv4 address) and its channels are the node's
 * TCP and UDP. Vert.x's acceptor group is the primary loop, which peers send to: listeners live there,
 * and a connection they accept moves to the loop Vert.x registers it on (see docs/vertx-transport.md).
 */
@SuppressWarnings("deprecation") // InternetProtocolFamily: the type of Vert.x 5.0's SPI
final class NupaTransport implements io.vertx.core.spi.transport.Transport {
    private final List<FabricStack> stacks;
    private final AtomicInteger handlersMade = new AtomicInteger();
    private EventLoopGroup group;

    NupaTransport(List<FabricStack> stacks) {
        this.stacks = stacks;
    }

    /** The primary loop's stack. */
    FabricStack stack() {
        return stacks.getFirst();
    }

    List<FabricStack> stacks() {
        return stacks;
    }

    @Override
    public IoHandlerFactory ioHandlerFactory() {
        return executor -> {
            int i = handlersMade.getAndIncrement();
            if (i >= stacks.size()) {
                throw new IllegalStateException("this fabric node has " + stacks.size() + " event loop(s), all made; "
                        + "give StackConfig.withLoops the number of loops wanted");
            }
            return new NupaIoHandler(executor, stacks.get(i));
        };
    }

    @Override
    public synchronized EventLoopGroup eventLoopGroup(int type, int nThreads, ThreadFactory threadFactory, int ioRatio) {
        if (group == null) { // Vert.x asks for its event loops first: the node's, whatever nThreads says
            group = new MultiThreadIoEventLoopGroup(stacks.size(), threadFactory, ioHandlerFactory());
        }
        return type == ACCEPTOR_EVENT_LOOP_GROUP ? new AcceptorView(group) : group;
    }

    @Override
    public boolean supportFileRegion() {
        // NupaSocketChannel writes FileRegions into the connection's send buffer, so Vert.x builds the pipeline it
        // builds on epoll (no ChunkedWriteHandler: its idle handler sits after the HTTP decoder) and sends files as regions.
        return true;
    }

    @Override
    public DatagramChannel datagramChannel() {
        return new NupaDatagramChannel();
    }

    @Override
    public DatagramChannel datagramChannel(InternetProtocolFamily family) {
        if (family == InternetProtocolFamily.IPv6) {
            throw new IllegalArgumentException("the fabric speaks IPv4 only; set DatagramSocketOptions.setIpV6(false)");
        }
        return new NupaDatagramChannel();
    }

    @Override
    public ChannelFactory<? extends Channel> channelFactory(boolean domainSocket) {
        if (domainSocket) {
            throw new IllegalArgumentException("the fabric has no domain sockets; connect to the node's IPv4 address");
        }
        return NupaSocketChannel::new;
    }

    @Override
    public ChannelFactory<? extends ServerChannel> serverChannelFactory(boolean domainSocket) {
        if (domainSocket) {
            throw new IllegalArgumentException("the fabric has no domain sockets; listen on a TCP port");
        }
        return NupaServerSocketChannel::new;
    }

    /**
     * As Vert.x's, with what Vert.x's default sets only for its NIO transport and its native ones set themselves:
     * SO_REUSEPORT, IP_MULTICAST_LOOP and IP_MULTICAST_TTL (the multicast interface is the fabric, whatever is named).
     */
    @Override
    public void configure(DatagramChannel channel, DatagramSocketOptions options) {
        io.vertx.core.spi.transport.Transport.super.configure(channel, options);
        if (channel.config() instanceof NupaDatagramChannelConfig c) {
            c.setReusePort(options.isReusePort());
            c.setLoopbackModeDisabled(options.isLoopbackModeDisabled());
            if (options.getMulticastTimeToLive() != -1) {
                c.setTimeToLive(options.getMulticastTimeToLive());
            }
        }
    }

    /** As Vert.x's, and the accepted connections' TCP options set on the listener too, where they take effect. */
    @Override
    public void configure(NetServerOptions options, boolean domainSocket, ServerBootstrap bootstrap) {
        io.vertx.core.spi.transport.Transport.super.configure(options, domainSocket, bootstrap);
        bootstrap.option(ChannelOption.TCP_NODELAY, options.isTcpNoDelay());
        bootstrap.option(ChannelOption.SO_KEEPALIVE, options.isTcpKeepAlive());
        if (options.getSendBufferSize() > 0) {
            bootstrap.option(ChannelOption.SO_SNDBUF, options.getSendBufferSize());
        }
        if (options.getReceiveBufferSize() > 0) {
            bootstrap.option(ChannelOption.SO_RCVBUF, options.getReceiveBufferSize());
        }
    }
}
