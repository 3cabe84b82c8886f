package dev.nupa.tcp;

import dev.nupa.device.PeerEvent;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The end of a layer's connections to fabric nodes that died or restarted: the liveness thread reports the node
 * ({@link #onNodeLost}), and the owner ends its connections at its next poll ({@link #endLost}), as Linux ends a
 * connection on a hard error; nothing will ever answer them.
 */
final class LostPeers {
    /** Nodes whose death the liveness thread reported, with the addresses they held; the owner ends their connections. */
    private record LostNode(int node, int[] addresses) {
    }

    private final ConcurrentLinkedQueue<LostNode> lostNodes = new ConcurrentLinkedQueue<>();

    private final TcpLayer layer;

    LostPeers(TcpLayer layer) {
        this.layer = layer;
    }

    /** On the liveness thread: queues the node for the owner and wakes its loop to poll the layer (rare; may allocate). */
    void onNodeLost(PeerEvent e, int[] addresses) {
        lostNodes.add(new LostNode(e.address(), addresses));
        layer.wake();
    }

    boolean pending() {
        return !lostNodes.isEmpty();
    }

    /** On the owner thread: ends the connections to the nodes the liveness thread reported. */
    void endLost() {
        LostNode n;
        while ((n = lostNodes.poll()) != null) {
            endConnectionsTo(n.node(), n.addresses());
        }
    }

    /** See {@link TcpLayer#endConnectionsTo}. */
    int endConnectionsTo(int node, int[] addresses) {
        layer.ip().link().checkOwner();
        int ended = 0;
        for (TcpConnection c : layer.table.all()) {
            TcpState st = c.state();
            if (st == TcpState.TIME_WAIT || st == TcpState.CLOSED || c.via() != node && !contains(addresses, c.remoteIp())) {
                continue;
            }
            layer.count(TcpCounter.PEER_DOWN_RESETS);
            c.hardError(st == TcpState.SYN_SENT ? TcpError.HOST_UNREACHABLE : TcpError.RESET);
            ended++;
        }
        return ended;
    }

    private static boolean contains(int[] a, int v) {
        for (int x : a) {
            if (x == v) {
                return true;
            }
        }
        return false;
    }
}
