package dev.nupa.transport;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadFactory;

import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;

/**
 * Plain Netty on a fabric node, and what is built on Netty (Reactor Netty's {@code LoopResources}, a
 * {@code Bootstrap}'s group and channel class): the node's event loops as a Netty {@link EventLoopGroup},
 * and the channel classes that go with them, as Netty's epoll transport offers {@code EpollIoHandler} with
 * {@code EpollSocketChannel}.
 *
 * <pre>{@code
 * EventLoopGroup group = NupaNetty.eventLoopGroup(StackConfig.defaults(Path.of("/dev/shm/f1"), 0)); // 10.0.0.1
 * new ServerBootstrap().group(NupaNetty.acceptorGroup(group), group)
 *         .channel(NupaNetty.channelClass(ServerSocketChannel.class))
 *         .childHandler(...).bind(8080);
 * ...
 * group.shutdownGracefully(); // the node leaves the fabric
 * }</pre>
 *
 * The group's loops are the node's: each runs one stack of the node ({@link StackConfig#loops}), and its
 * channels are that stack's TCP and UDP. A listener belongs on the node's primary loop, which peers send to
 * (see docs/vertx-transport.md, "Several loops, one address"): give a {@code ServerBootstrap}
 * {@link #acceptorGroup} as its parent group.
 */
public final class NupaNetty {
    private NupaNetty() {
    }

    /** As {@link #eventLoopGroup(StackConfig, ThreadFactory)} with threads named {@code nupa-netty-...}. */
    public static EventLoopGroup eventLoopGroup(StackConfig config) {
        return eventLoopGroup(config, new DefaultThreadFactory("nupa-netty"));
    }

    /**
     * Joins the fabric as the node {@code config} describes and returns its event loops (one per
     * {@link StackConfig#loops}), started: the node answers (ping, TCP resets) from here on. Shutting the group
     * down closes the node: it leaves the fabric. Throws with the reason (fabric, address, IP), leaving nothing
     * attached.
     */
    public static EventLoopGroup eventLoopGroup(StackConfig config, ThreadFactory threads) {
        return eventLoopGroup(new NupaTransport(config), threads);
    }

    /**
     * The event loops of {@code node}, built already ({@link NupaStack#builder}), started: one per stack. Shutting
     * the group down closes the node. If the loops cannot start, the node is closed and the reason thrown.
     */
    public static EventLoopGroup eventLoopGroup(NupaStack node, ThreadFactory threads) {
        return eventLoopGroup(new NupaTransport(node), threads);
    }

    private static EventLoopGroup eventLoopGroup(NupaTransport transport, ThreadFactory threads) {
        // The transport opens the node (if not built yet) and starts its loops as it does for Vert.x.
        return transport.eventLoopGroup(io.vertx.core.spi.transport.Transport.IO_EVENT_LOOP_GROUP, 0, threads, 0);
    }

    /**
     * The group a {@code ServerBootstrap} takes as its parent (acceptor) group: the node's primary loop, where
     * listeners live. Shutting it down ends only this view; the loop goes on until {@code group} is shut down.
     */
    public static EventLoopGroup acceptorGroup(EventLoopGroup group) {
        stacks(group); // throws if it is not a fabric node's
        return new AcceptorView(group);
    }

    /**
     * The NUPA channel class for a Netty channel type: {@link SocketChannel} (TCP), {@link ServerSocketChannel}
     * (a TCP listener) or {@link DatagramChannel} (UDP); for a {@code Bootstrap}'s {@code channel(...)} or
     * Reactor Netty's {@code LoopResources.onChannelClass}. Other types (domain sockets, QUIC) throw with the reason.
     */
    public static <C extends Channel> Class<? extends C> channelClass(Class<C> type) {
        if (SocketChannel.class.isAssignableFrom(type) && type.isAssignableFrom(NupaSocketChannel.class)) {
            return NupaSocketChannel.class.asSubclass(type);
        }
        if (ServerSocketChannel.class.isAssignableFrom(type) && type.isAssignableFrom(NupaServerSocketChannel.class)) {
            return NupaServerSocketChannel.class.asSubclass(type);
        }
        if (DatagramChannel.class.isAssignableFrom(type) && type.isAssignableFrom(NupaDatagramChannel.class)) {
            return NupaDatagramChannel.class.asSubclass(type);
        }
        throw new IllegalArgumentException("a fabric node has no " + type.getName() + ": its channels are TCP (SocketChannel, "
                + "ServerSocketChannel) and UDP (DatagramChannel) over IPv4; use those (domain sockets: connect to the node's address)");
    }

    /** A new NUPA channel of {@code type} (see {@link #channelClass}), for Reactor Netty's {@code LoopResources.onChannel}. */
    public static <C extends Channel> C newChannel(Class<C> type) {
        Class<? extends C> c = channelClass(type);
        Channel ch = c == NupaSocketChannel.class ? new NupaSocketChannel()
                : c == NupaServerSocketChannel.class ? new NupaServerSocketChannel() : new NupaDatagramChannel();
        return type.cast(ch);
    }

    /** The stacks of the node under {@code group} (from {@link #eventLoopGroup}), the primary first; throws if it is not one. */
    public static List<FabricStack> stacks(EventLoopGroup group) {
        List<FabricStack> stacks = new ArrayList<>();
        for (EventExecutor e : group) {
            FabricStack s = e instanceof EventLoop loop ? NupaEventLoop.stackOf(loop) : null;
            if (s == null) {
                throw new IllegalArgumentException("this event-loop group does not run a fabric node (or it was shut down); "
                        + "create it with NupaNetty.eventLoopGroup");
            }
            stacks.add(s);
        }
        return List.copyOf(stacks);
    }

    /** The node's primary stack (its address, counters) under {@code group}; throws if it is not one. */
    public static FabricStack stack(EventLoopGroup group) {
        return stacks(group).getFirst();
    }
}
