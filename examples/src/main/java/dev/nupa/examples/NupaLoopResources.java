package dev.nupa.examples;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import dev.nupa.transport.NupaNetty;
import dev.nupa.transport.StackConfig;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import reactor.core.publisher.Mono;
import reactor.netty.resources.LoopResources;

/**
 * Reactor Netty's {@link LoopResources} on a fabric node: the node's event loops ({@link NupaNetty#eventLoopGroup})
 * for servers and clients, listeners on the node's primary loop ({@link NupaNetty#acceptorGroup}), and the NUPA
 * channel classes. Give it to {@code HttpServer.runOn} / {@code HttpClient.runOn} (or {@code TcpServer},
 * {@code UdpClient}...) and the rest of a Reactor Netty program is unchanged. Disposing it closes the node.
 */
public final class NupaLoopResources implements LoopResources {
    private final EventLoopGroup group;
    private final EventLoopGroup acceptor;

    /** Joins the fabric as the node {@code config} describes; throws with the reason. */
    public NupaLoopResources(StackConfig config) {
        // Daemon threads, as Reactor Netty's own loops: disposing them is the program's choice, not a condition of exit.
        this.group = NupaNetty.eventLoopGroup(config, new DefaultThreadFactory("reactor-nupa", true));
        this.acceptor = NupaNetty.acceptorGroup(group);
    }

    /** The node's event loops (for {@link NupaNetty#stack}: its address and counters). */
    public EventLoopGroup group() {
        return group;
    }

    @Override
    public EventLoopGroup onServer(boolean useNative) {
        return group; // the node's loops are its own transport: there is no native or NIO choice to make
    }

    @Override
    public EventLoopGroup onServerSelect(boolean useNative) {
        return acceptor;
    }

    @Override
    public EventLoopGroup onClient(boolean useNative) {
        return group;
    }

    @Override
    public <C extends Channel> C onChannel(Class<C> channelType, EventLoopGroup g) {
        return NupaNetty.newChannel(channelType);
    }

    @Override
    public <C extends Channel> Class<? extends C> onChannelClass(Class<C> channelType, EventLoopGroup g) {
        return NupaNetty.channelClass(channelType);
    }

    @Override
    public boolean isDisposed() {
        return group.isShuttingDown();
    }

    @Override
    public Mono<Void> disposeLater(Duration quietPeriod, Duration timeout) {
        return Mono.create(sink -> group.shutdownGracefully(quietPeriod.toMillis(), timeout.toMillis(), TimeUnit.MILLISECONDS)
                .addListener(f -> {
                    if (f.isSuccess()) {
                        sink.success();
                    } else {
                        sink.error(f.cause());
                    }
                }));
    }
}
