package dev.nupa.transport;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicBoolean;

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
import io.vertx.core.net.NetServerOptions;

/**
 * The Vert.x transport SPI over one fabric node: its event loop is the node's datapath
 * ({@link NupaIoHandler}) and its channels are the node's TCP and UDP. One node, one event loop:
 * Vert.x's event-loop group and its acceptor group are that one loop, so a server's listener and
 * the connections it accepts, and every client connection, live on the thread that owns the node.
 * More loops are more nodes (see docs/vertx-transport.md).
 */
@SuppressWarnings("deprecation") // InternetProtocolFamily: the type of Vert.x 5.0's SPI
final class NupaTransport implements io.vertx.core.spi.transport.Transport {
    private final FabricStack stack;
    private final AtomicBoolean handlerMade = new AtomicBoolean();
    private EventLoopGroup group;

    NupaTransport(FabricStack stack) {
        this.stack = stack;
    }

    FabricStack stack() {
        return stack;
    }

    @Override
    public IoHandlerFactory ioHandlerFactory() {
        return executor -> {
            if (!handlerMade.compareAndSet(false, true)) {
                throw new IllegalStateException("a fabric node has one event loop; " + stack
                        + " already has its own (start another node for another loop)");
            }
            return new NupaIoHandler(executor, stack);
        };
    }

    @Override
    public synchronized EventLoopGroup eventLoopGroup(int type, int nThreads, ThreadFactory threadFactory, int ioRatio) {
        if (group == null) { // Vert.x asks for its event loops first: one, whatever nThreads says
            group = new MultiThreadIoEventLoopGroup(1, threadFactory, ioHandlerFactory());
        }
        return type == ACCEPTOR_EVENT_LOOP_GROUP ? new AcceptorView(group) : group;
    }

    @Override
    public boolean supportFileRegion() {
        return false; // files are sent as buffers (Vert.x then writes them in chunks)
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
