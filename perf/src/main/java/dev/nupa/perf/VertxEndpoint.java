package dev.nupa.perf;

import io.vertx.core.net.SocketAddress;
import java.nio.file.Path;

/**
 * Where a {@code vertx-*} workload's server listens and its client connects: a host and ports (workload {@code i} on
 * {@code port + i}), or a directory of Unix domain sockets (workload {@code i} on {@code i.sock}).
 */
record VertxEndpoint(String host, int port, Path sockets) {
    SocketAddress listen(int i) {
        return sockets != null ? SocketAddress.domainSocketAddress(sockets.resolve(i + ".sock").toString())
                : SocketAddress.inetSocketAddress(port + i, "0.0.0.0");
    }

    SocketAddress connect(int i) {
        return sockets != null ? SocketAddress.domainSocketAddress(sockets.resolve(i + ".sock").toString())
                : SocketAddress.inetSocketAddress(port + i, host);
    }
}
