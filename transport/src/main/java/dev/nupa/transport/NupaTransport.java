package dev.nupa.transport;

import java.util.concurrent.ThreadFactory;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFactory;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.InternetProtocolFamily;
import io.netty.util.concurrent.EventExecutor;
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
    /** The node to build as Vert.x asks for its event loops, or null when it was built beforehand. */
    private final NupaStack.Builder builder;
    private NupaStack node;
    private EventLoopGroup group;
    private boolean ioGroupGiven;
    private boolean openFailed;

    /** A transport that builds the node {@code config} describes when Vert.x asks for its event loops (in its build). */
    NupaTransport(StackConfig config) {
        this(NupaStack.builder(config));
    }

    /** A transport that builds the node {@code builder} describes when Vert.x asks for its event loops. */
    NupaTransport(NupaStack.Builder builder) {
        this.builder = builder;
    }

    /** A transport over a node built already; the transport closes it with its loops (or when it is abandoned). */
    NupaTransport(NupaStack node) {
        this.builder = null;
        this.node = node;
    }

    /** The node's event loops. */
    int loops() {
        return builder != null ? builder.loops() : node.stacks().size();
    }

    /** The primary loop's stack. */
    FabricStack stack() {
        return node().primary();
    }

    List<FabricStack> stacks() {
        return node().stacks();
    }

    synchronized NupaStack node() {
        if (node == null) {
            throw new IllegalStateException("the node is not open: it opens when a Vert.x instance is built with this transport");
        }
        return node;
    }

    /**
     * Whether this transport no longer holds (or will hold) its node: opening it failed, or its Vert.x instance is
     * closing or closed. A transport not yet used counts as holding it.
     */
    synchronized boolean released() {
        return openFailed || (group != null && group.isShuttingDown());
    }

    /** Gives the node up when the Vert.x build that took this transport failed. */
    synchronized void abandon() {
        if (group != null) {
            group.shutdownGracefully(0, 0, TimeUnit.SECONDS); // each loop closes its stack as it ends
        } else if (node != null && !openFailed) {
            node.close();
            openFailed = true;
        }
    }

    @Override
    public IoHandlerFactory ioHandlerFactory() {
        // Vert.x asks for loops through eventLoopGroup, overridden below; each NUPA loop makes its handler over its stack.
        throw new UnsupportedOperationException("a NUPA node's event loops come from its transport's eventLoopGroup, "
                + "one per stack of the node (NupaVertx, NupaNetty)");
    }

    /**
     * Vert.x asks for its event loops first (in its build, on the caller's thread, so a wrong fabric or a taken
     * address fails there): the node opens now (unless it was built before), with as many loops as it has, whatever
     * {@code nThreads} says. The loops start at once and own their stacks before this returns, so the node answers
     * (ping, RST, neighbor lookups) before the application has asked anything of it. The acceptor group is a view of
     * the primary loop.
     */
    @Override
    public synchronized EventLoopGroup eventLoopGroup(int type, int nThreads, ThreadFactory threadFactory, int ioRatio) {
        if (type != ACCEPTOR_EVENT_LOOP_GROUP) {
            if (ioGroupGiven) {
                throw new IllegalStateException("this NUPA transport serves one Vert.x instance, which has it already; "
                        + "make a transport per instance (NupaVertx.transport)");
            }
            ioGroupGiven = true;
        }
        if (group == null) {
            group = open(threadFactory);
        }
        return type == ACCEPTOR_EVENT_LOOP_GROUP ? new AcceptorView(group) : group;
    }

    private EventLoopGroup open(ThreadFactory threadFactory) {
        if (node == null) {
            try {
                node = builder.open();
            } catch (RuntimeException e) {
                openFailed = true;
                throw e;
            }
        }
        EventLoopGroup loops;
        try {
            loops = new NupaEventLoopGroup(node, threadFactory);
        } catch (RuntimeException e) {
            node.close();
            openFailed = true;
            throw e;
        }
        try {
            for (EventExecutor loop : loops) {
                loop.submit(() -> { }).get(10, TimeUnit.SECONDS); // Netty starts a loop's thread on its first task
            }
        } catch (Exception e) {
            loops.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            openFailed = true;
            throw new IllegalStateException("the event loops of " + node + " did not start: " + e, e);
        }
        return loops;
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
