package dev.nupa.perf;

import io.vertx.core.transport.Transport;

/** A Linux peer of the {@code vertx-*} tools: Vert.x on a native transport, over TCP loopback or a Unix domain socket. */
enum VertxPeer {
    EPOLL("epoll", "Vert.x epoll over loopback", Transport.EPOLL, false),
    IO_URING("io_uring", "Vert.x io_uring over loopback", Transport.IO_URING, false),
    UDS("uds", "Vert.x epoll over a Unix domain socket", Transport.EPOLL, true);

    final String key;
    final String label;
    final Transport transport;
    final boolean domainSocket;

    VertxPeer(String key, String label, Transport transport, boolean domainSocket) {
        this.key = key;
        this.label = label;
        this.transport = transport;
        this.domainSocket = domainSocket;
    }

    /** The peer {@code --peers} names {@code name}. */
    static VertxPeer of(String name) {
        for (VertxPeer p : values()) {
            if (p.key.equals(name.trim())) {
                return p;
            }
        }
        throw new IllegalArgumentException("--peers takes epoll, io_uring and uds, not " + name);
    }

    /** Picocli's converter for {@code --peers}. */
    static final class Name implements picocli.CommandLine.ITypeConverter<VertxPeer> {
        @Override
        public VertxPeer convert(String value) {
            return VertxPeer.of(value);
        }
    }
}
