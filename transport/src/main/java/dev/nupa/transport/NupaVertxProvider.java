package dev.nupa.transport;

import io.vertx.core.VertxOptions;
import io.vertx.core.internal.VertxBootstrap;
import io.vertx.core.spi.VertxServiceProvider;

/**
 * Puts every Vert.x instance of a program on a fabric node when system properties or the environment name one
 * ({@link NodeProperties}: {@code -Dnupa.fabric=/dev/shm/f1 -Dnupa.address=3}, or {@code NUPA_FABRIC}...), with
 * no change to the program: {@code Vertx.vertx()} and {@code Vertx.builder().build()} run on the node, as
 * OpenOnload's {@code onload ./app} puts a program's sockets on its stack.
 *
 * <p>Vert.x loads this provider with {@link java.util.ServiceLoader} as it builds each instance
 * ({@code VertxBootstrapImpl.init}, after the builder has set the transport the program chose, NIO by default) and
 * lets it change the bootstrap. With no fabric named it changes nothing. With one, it replaces whatever kernel
 * transport the program chose (NIO, epoll, io_uring) with a {@link NupaTransport} on that node; a program that
 * set a NUPA transport itself ({@link NupaVertx#transport}) keeps it. Either way the event-loop pool size is the
 * node's loops, which the transport's event loops are.
 *
 * <p>A program that creates several Vert.x instances gets a node for each, since a node's stack is owned by its
 * event loops: the first takes the named address (and IPv4 address, if one is named); each one created while that
 * one is still open takes the first free fabric address with the fabric's plan for its IPv4 address, so that the
 * named address stays the one peers reach. Closing a Vert.x instance closes its node.
 */
public final class NupaVertxProvider implements VertxServiceProvider {
    /** The transport of this JVM's instance on the named address, or null when none holds it. */
    private static NupaTransport named;

    @Override
    public void init(VertxBootstrap bootstrap) {
        NupaTransport transport;
        if (bootstrap.transport() instanceof NupaTransport chosen) {
            transport = chosen;
        } else {
            StackConfig config = NodeProperties.fromSystem();
            if (config == null) {
                return; // no node named: Vert.x as without this jar
            }
            transport = transportFor(config);
            bootstrap.transport(transport);
        }
        bootstrap.options(new VertxOptions(bootstrap.options()).setEventLoopPoolSize(transport.loops()));
    }

    private static synchronized NupaTransport transportFor(StackConfig config) {
        if (named != null && !named.released()) {
            return new NupaTransport(new StackConfig(config.fabric(), -1, config.geometry(), config.mtu(), config.idle(), null,
                    config.routes(), config.tcp(), config.tcpBufferMemory(), config.loops(), config.linkFaults()));
        }
        named = new NupaTransport(config);
        return named;
    }
}
