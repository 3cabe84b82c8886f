package dev.nupa.ip;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * The event loops of one node that share its IPv4 address. Each loop is a fabric node of its own (its
 * own receive ring, so loops never contend for one), and loop 0, the <em>primary</em>, is the only one
 * that publishes the address in the neighbor directory: peers send to it. Traffic that belongs to
 * another loop is handed over by the primary through the fabric, to that loop's ring:
 * <ul>
 * <li>UDP: to the loop that bound the port ({@link #claimUdp}; one port table for the node).</li>
 * <li>TCP: to the loop a connection lives on, found by its flow (an accepted connection moved there)
 * or, for a connection the loop opened, by its local port: each loop takes ephemeral ports from its own
 * share of the range ({@link #ephemeralOwner}), so the primary needs no table for them.</li>
 * </ul>
 * Loops other than the primary send from their own fabric node with the shared IPv4 address; a peer
 * that learns that node from the frames it receives answers there directly (TCP does).
 *
 * <p>Thread-safe: every loop of the node calls it. The loops' fabric nodes are set while the node is built,
 * before its loops start.
 */
public final class LoopGroup {
    private final int[] nodes;
    /** Per UDP port, the loop that bound it, plus one (0: unbound anywhere). */
    private final AtomicIntegerArray udpOwners = new AtomicIntegerArray(65536);
    /** Per TCP port, 1 while the primary listens on it: no loop takes it as an ephemeral port. */
    private final AtomicIntegerArray tcpListening = new AtomicIntegerArray(65536);

    /** A group of {@code loops} loops (1..64), their fabric nodes to be set with {@link #setNode}. */
    public LoopGroup(int loops) {
        if (loops < 1 || loops > 64) {
            throw new IllegalArgumentException("event loops per node " + loops + " is outside 1..64");
        }
        nodes = new int[loops];
        Arrays.fill(nodes, -1);
    }

    /** The group of a node with one loop. */
    public static LoopGroup single() {
        return new LoopGroup(1);
    }

    public int loops() {
        return nodes.length;
    }

    /** Records that {@code loop} is fabric node {@code node}; each loop's stack does, once, before the loops start. */
    public void setNode(int loop, int node) {
        if (nodes[loop] != -1 && nodes[loop] != node) {
            throw new IllegalStateException("loop " + loop + " of this node is already fabric node " + nodes[loop]);
        }
        nodes[loop] = node;
    }

    /** The fabric node of {@code loop}. */
    public int node(int loop) {
        return nodes[loop];
    }

    /** Whether {@code node} is one of this group's loops. */
    public boolean isLoop(int node) {
        for (int n : nodes) {
            if (n == node) {
                return true;
            }
        }
        return false;
    }

    /**
     * The loop whose share of the ephemeral range (RFC 6335: 49152-65535) {@code port} is in: ports are
     * dealt to the loops in turn. -1 for a port below the range.
     */
    public int ephemeralOwner(int port) {
        if (port < Ipv4Stack.EPHEMERAL_FIRST) {
            return -1;
        }
        return (port - Ipv4Stack.EPHEMERAL_FIRST) % nodes.length;
    }

    /** Takes UDP {@code port} for {@code loop} node-wide; false if some loop holds it. */
    public boolean claimUdp(int port, int loop) {
        return udpOwners.compareAndSet(port, 0, loop + 1);
    }

    /** Gives back UDP {@code port} if {@code loop} holds it. */
    public void releaseUdp(int port, int loop) {
        udpOwners.compareAndSet(port, loop + 1, 0);
    }

    /** The loop that holds UDP {@code port}, or -1. */
    public int udpOwner(int port) {
        return udpOwners.get(port) - 1;
    }

    /** Marks TCP {@code port} as listened on (or no longer), so that no loop takes it as an ephemeral port. */
    public void setTcpListening(int port, boolean listening) {
        tcpListening.set(port, listening ? 1 : 0);
    }

    public boolean isTcpListening(int port) {
        return tcpListening.get(port) != 0;
    }

    @Override
    public String toString() {
        return "LoopGroup" + Arrays.toString(nodes);
    }
}
