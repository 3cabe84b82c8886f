/** The stack as a Vert.x 5 transport: the event loop's IoHandler over a node's datapath, Netty channels over TCP and UDP. */
module dev.nupa.transport {
    requires transitive dev.nupa.tcp;
    requires transitive io.vertx.core;
    requires transitive io.netty.transport;
    requires transitive io.netty.buffer;
    requires transitive io.netty.common;
    requires java.management; // the warm-up waits for the JIT compilers to settle (Warmup)

    exports dev.nupa.transport;

    // Puts the Vert.x instances of a program on the node that nupa.* system properties name (NodeProperties).
    provides io.vertx.core.spi.VertxServiceProvider with dev.nupa.transport.NupaVertxProvider;
}
