package dev.nupa.tests;

import java.nio.file.Path;

import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.tcp.TcpConnection;
import dev.nupa.tcp.TcpState;
import dev.nupa.transport.FabricStack;
import dev.nupa.transport.StackConfig;

/**
 * A child node for {@link PeerDeathTest}: joins {@code fabric} at {@code address}, opens {@code count} TCP connections to
 * {@code ip:port}, reads nothing, prints {@code READY} once all are established, then waits to be killed.
 */
public final class PeerConnectMain {
    public static void main(String[] args) throws Exception {
        Path fabric = Path.of(args[0]);
        int address = Integer.parseInt(args[1]);
        int count = Integer.parseInt(args[2]);
        int ip = Ipv4Address.parse(args[3]);
        int port = Integer.parseInt(args[4]);
        FabricStack node = FabricStack.open(StackConfig.defaults(fabric, address));
        node.datapath().start();
        TcpConnection[] opened = new TcpConnection[count];
        node.link().call(() -> {
            for (int i = 0; i < count; i++) {
                opened[i] = node.tcp().connect(ip, port, node.tcp().defaults(), null, node.link().now());
            }
            return null;
        });
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (node.tcp().states().getOrDefault(TcpState.ESTABLISHED, 0) < count) {
            if (System.nanoTime() > deadline) {
                System.out.println("FAILED established " + node.tcp().states());
                System.exit(1);
            }
            Thread.sleep(10); // a child waiting on its own loop; the test waits on the line below
        }
        System.out.println("READY " + count);
        System.out.flush();
        while (true) {
            Thread.sleep(60_000); // until SIGKILL
        }
    }
}
