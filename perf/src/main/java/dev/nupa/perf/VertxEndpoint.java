package dev.nupa.perf;

import io.vertx.core.net.SocketAddress;
import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Where a {@code vertx-*} workload's server listens and its client connects: a host and ports (workload {@code i} on
 * {@code port + i}), or a directory of Unix domain sockets (workload {@code i} on {@code i.sock}).
 */
record VertxEndpoint(String host, int port, Path sockets) {
    /** Ports a workload may take from its endpoint's first. */
    static final int PORTS = 4;

    /**
     * An endpoint on 127.0.0.1 whose {@link #PORTS} ports were free for TCP and UDP when looked at: a block at a
     * random place above the ephemeral range's usual start, so two runs on one machine (a test beside a benchmark)
     * do not meet on fixed ports.
     */
    static VertxEndpoint freeLoopback() {
        for (int tries = 0; tries < 100; tries++) {
            int base = 20_000 + PORTS * ThreadLocalRandom.current().nextInt((32_000 - 20_000) / PORTS);
            if (free(base)) {
                return new VertxEndpoint("127.0.0.1", base, null);
            }
        }
        throw new IllegalStateException("no block of " + PORTS + " free ports on 127.0.0.1 in 20000..31999 after 100 tries");
    }

    private static boolean free(int base) {
        InetAddress lo = InetAddress.getLoopbackAddress();
        for (int p = base; p < base + PORTS; p++) {
            try (ServerSocket tcp = new ServerSocket(); DatagramSocket udp = new DatagramSocket(null)) {
                tcp.bind(new InetSocketAddress(lo, p));
                udp.bind(new InetSocketAddress(lo, p));
            } catch (IOException e) {
                return false;
            }
        }
        return true;
    }

    SocketAddress listen(int i) {
        return sockets != null ? SocketAddress.domainSocketAddress(sockets.resolve(i + ".sock").toString())
                : SocketAddress.inetSocketAddress(port + i, "0.0.0.0");
    }

    SocketAddress connect(int i) {
        return sockets != null ? SocketAddress.domainSocketAddress(sockets.resolve(i + ".sock").toString())
                : SocketAddress.inetSocketAddress(port + i, host);
    }
}
