package dev.nupa.node;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.nupa.ip.IpCounter;
import dev.nupa.tcp.TcpConfig;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.net.NetServerOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "node", mixinStandardHelpOptions = true,
        description = {"Run a node in the foreground until interrupted: it answers ping, serves UDP echo if asked,",
                "forwards if asked, and mirrors its frames to `nupa capture`. Prints its counters on exit.",
                "The TCP socket options (--no-delay to --congestion) set the connections of the TCP echo server."})
final class NodeCommand implements Callable<Integer> {
    @Mixin
    NodeOptions options;

    @Option(names = "--udp-echo", paramLabel = "PORT", description = "Serve UDP echo on PORT (e.g. 7).")
    Integer udpEcho;

    @Option(names = "--tcp-echo", paramLabel = "PORT", description = "Serve TCP echo on PORT (e.g. 7).")
    Integer tcpEcho;

    @Option(names = "--capture", paramLabel = "FILE", description = "Write this node's frames to a pcap file.")
    Path capture;

    @Option(names = "--run-for", paramLabel = "SECONDS", description = "Stop after this many seconds (default: until interrupted).")
    Double runFor;

    @Mixin
    TcpSocketOptions sockets;

    @Override
    public Integer call() throws Exception {
        NodeConfig config = options.config().withCapture(capture);
        String socketOption = sockets.firstGiven();
        if (socketOption != null && tcpEcho == null) {
            throw new IllegalArgumentException(socketOption + " sets the TCP echo server's connections; give --tcp-echo PORT too");
        }
        // Checked before the node starts; socket options become the node's TCP defaults (keep-alive timing
        // and congestion control live there), and the echo server's Vert.x options say the rest.
        TcpConfig checked = socketOption != null ? sockets.apply(config.tcpOrDefault()) : null;
        if (checked != null) {
            config = config.withTcp(checked);
        }
        NupaNode node = NupaNode.create(config).await(30, TimeUnit.SECONDS); // the node's datapath is its Vert.x event loop
        if (udpEcho != null) {
            DatagramSocket echo = node.vertx().createDatagramSocket();
            echo.handler(p -> echo.send(p.data(), p.sender().port(), p.sender().host()));
            echo.listen(udpEcho, "0.0.0.0").await(5, TimeUnit.SECONDS);
        }
        TcpConfig echoConfig = checked != null ? checked : node.tcp().defaults();
        if (tcpEcho != null) {
            node.vertx().createNetServer(sockets.vertxOptions(new NetServerOptions(), echoConfig))
                    .connectHandler(s -> s.pipeTo(s)) // ends (FIN, or RST with --linger 0) when the client ends
                    .listen(tcpEcho, "0.0.0.0").await(5, TimeUnit.SECONDS);
        }
        System.out.println("nupa node: " + node + " on " + config.fabric()
                + (udpEcho != null ? ", UDP echo on port " + udpEcho : "")
                + (tcpEcho != null ? ", TCP echo on port " + tcpEcho + " (" + sockets.describe(echoConfig) + ")" : "")
                + (capture != null ? ", capturing to " + capture : "") + "; Ctrl-C to stop");
        System.out.flush();
        CountDownLatch stopped = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            stop(node);
            stopped.countDown();
        });
        Runtime.getRuntime().addShutdownHook(hook);
        if (runFor != null) {
            Thread.sleep((long) (runFor * 1000));
            Runtime.getRuntime().removeShutdownHook(hook);
            hook.run();
        }
        stopped.await();
        return 0;
    }

    private static void stop(NupaNode node) {
        Map<IpCounter, Long> c = node.ip().counters();
        StringBuilder sb = new StringBuilder("nupa node: stopping; counters:");
        c.forEach((k, v) -> {
            if (v != 0) {
                sb.append(' ').append(k.label()).append('=').append(v);
            }
        });
        System.out.println(sb);
        StringBuilder t = new StringBuilder("nupa node: tcp connections open=" + node.tcp().connections() + " "
                + node.tcp().states() + "; counters:");
        node.tcp().counters().forEach((k, v) -> {
            if (v != 0) {
                t.append(' ').append(k.name().toLowerCase()).append('=').append(v);
            }
        });
        System.out.println(t);
        System.out.flush();
        node.closeAndWait();
    }
}
