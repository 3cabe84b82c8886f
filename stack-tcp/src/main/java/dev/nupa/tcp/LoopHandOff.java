package dev.nupa.tcp;

import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.LoopGroup;
import dev.nupa.ip.wire.Ipv4Header;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The moving of connections between the event loops of one node ({@link LoopGroup}), for one loop's layer: a
 * connection the primary accepted moves to the loop its application runs on ({@link #handOff}), that loop takes it
 * in ({@link #adoptArrivals}), and the primary hands on the segments its peer still sends to it ({@link #handOn})
 * until the peer learns the loop's fabric node. The only part of a layer another loop's thread touches is
 * {@link #arrivals}.
 */
final class LoopHandOff {
    private final TcpLayer layer;
    private final Ipv4Stack ip;
    private final LoopGroup group;
    /** The node's connections that moved off the primary loop, shared by its loops' layers. */
    final LoopFlows flows;
    /** Connections another loop handed to this one, taken in by {@link #adoptArrivals}. */
    private final ConcurrentLinkedQueue<TcpConnection> arrivals = new ConcurrentLinkedQueue<>();

    LoopHandOff(TcpLayer layer, Ipv4Stack ip, LoopFlows flows) {
        this.layer = layer;
        this.ip = ip;
        this.group = ip.loopGroup();
        this.flows = flows;
    }

    /** See {@link TcpLayer#handOff}. */
    void handOff(TcpConnection c, TcpLayer to) {
        ip.link().checkOwner();
        ConnectionHooks h = (ConnectionHooks) c.events();
        if (to.ip().loopGroup() != group || to == layer) {
            throw new IllegalArgumentException(to + " is not another event loop of this node (" + group + ")");
        }
        if (!h.claimed || h.waiting || !c.state().synchronizedState()) {
            throw new IllegalStateException("only an established connection that an application holds moves to another"
                    + " event loop, not " + c);
        }
        long key = ConnectionTable.key(c.remoteIp(), c.remotePort(), c.localPort());
        layer.table.remove(key, c);
        layer.timers.remove(c);
        ConnectionHooks moved = new ConnectionHooks(to);
        moved.begin(null, h.user);
        moved.counted = true;
        c.moveTo(to.sender.output, moved);
        to.loopHandOff.arrivals.add(c);
        if (ip.loop() == 0) {
            flows.put(key, to.ip().loop());
        }
        layer.count(TcpCounter.CONNECTIONS_MOVED_OUT);
        to.wake(); // its loop wakes to take it in
    }

    boolean hasArrivals() {
        return !arrivals.isEmpty();
    }

    /** See {@link TcpLayer#adoptArrivals}. */
    void adoptArrivals() {
        ip.link().checkOwner();
        TcpConnection c;
        while ((c = arrivals.poll()) != null) {
            layer.table.put(ConnectionTable.key(c.remoteIp(), c.remotePort(), c.localPort()), c);
            long d = c.deadline();
            if (d != Long.MAX_VALUE) {
                layer.timers.schedule(c, d);
                layer.deadlineMoved(d);
            }
            layer.count(TcpCounter.CONNECTIONS_MOVED_IN);
        }
    }

    /**
     * On the primary of several loops, for a segment no connection of its own took: hands it to the loop that has
     * its connection, one that moved there or that the loop opened from its share of ports (unless a listener has
     * the port). Returns whether it was handed on.
     */
    boolean handOn(long key, int localPort, boolean listening, Ipv4Header iph) {
        if (group.loops() == 1 || ip.loop() != 0) {
            return false;
        }
        int to = flows.get(key);
        if (to < 0 && !listening) {
            to = group.ephemeralOwner(localPort); // a connection another loop opened, from its share of ports
        }
        if (to <= 0) {
            return false;
        }
        layer.count(TcpCounter.SEGMENTS_HANDED_ON);
        ip.handOver(to, iph);
        return true;
    }

    /** The connection of {@code key} left this loop's table: the primary no longer hands its segments on here. */
    void forget(long key) {
        flows.remove(key, ip.loop());
    }
}
