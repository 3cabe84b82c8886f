package dev.nupa.tcp;

import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.LoopGroup;
import dev.nupa.ip.wire.Ipv4Address;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The local ports a layer's connections take: one the application bound, checked free ({@link #checkBindable}, as
 * Linux's inet_csk_get_port), or an ephemeral one chosen ({@link #ephemeral}, as Linux's __inet_hash_connect).
 * With several loops each takes ports of its own share of the ephemeral range ({@link LoopGroup#ephemeralOwner}),
 * by which the primary knows where to hand their segments. Owner thread.
 */
final class LocalPorts {
    private final TcpLayer layer;
    private final Ipv4Stack ip;
    private final LoopGroup group;
    private final TcpLayer.Listener[] listeners;
    // RFC 6056 3.3.1: start the ephemeral search at a random port, so a process that restarts does
    // not reuse the 4-tuples its previous run may still have in the peer's TIME-WAIT.
    private int nextEphemeral = Ipv4Stack.EPHEMERAL_FIRST
            + ThreadLocalRandom.current().nextInt(65536 - Ipv4Stack.EPHEMERAL_FIRST);

    LocalPorts(TcpLayer layer, TcpLayer.Listener[] listeners) {
        this.layer = layer;
        this.ip = layer.ip();
        this.group = ip.loopGroup();
        this.listeners = listeners;
    }

    /** See {@link TcpLayer#checkBindable}. */
    void checkBindable(int localIp, int localPort) {
        if (localIp != 0 && !ip.isLocal(localIp)) {
            throw new IllegalArgumentException("Cannot assign requested address: " + Ipv4Address.toString(localIp)
                    + " is not an address of this node (" + Ipv4Address.toString(ip.address()) + ", 127.0.0.0/8)");
        }
        if (localPort == 0) {
            return;
        }
        if (localPort < 1 || localPort > 65535) {
            throw new IllegalArgumentException("TCP port " + localPort + " is outside 0..65535");
        }
        if (ip.loop() != 0 && group.ephemeralOwner(localPort) != ip.loop()) {
            throw new IllegalArgumentException("Address already in use: port " + localPort + " belongs to another event loop"
                    + " of this node (each takes its own share of ports); bind port 0 or use one loop");
        }
        if (listeners[localPort] != null) {
            throw new IllegalArgumentException("Address already in use: TCP port " + localPort + " listens on this node");
        }
        for (TcpConnection c : layer.table.all()) {
            if (c.localPort() == localPort) {
                throw new IllegalArgumentException("Address already in use: TCP port " + localPort + " has a connection ("
                        + c + ")");
            }
        }
    }

    /**
     * An ephemeral port for a connection to {@code remoteIp}:{@code remotePort}, searched from after the last one
     * taken: free, not listening, of this loop's share, and with no connection to that peer, though one waiting in
     * TIME-WAIT gives way (RFC 6191). Throws {@link IllegalStateException} when none is.
     */
    int ephemeral(int remoteIp, int remotePort) {
        int span = 65536 - Ipv4Stack.EPHEMERAL_FIRST;
        for (int i = 0; i < span; i++) {
            int p = nextEphemeral;
            nextEphemeral = p == 65535 ? Ipv4Stack.EPHEMERAL_FIRST : p + 1;
            if (listeners[p] != null || group.loops() > 1 && (group.ephemeralOwner(p) != ip.loop() || group.isTcpListening(p))) {
                continue; // with several loops, each takes ports of its own share (the primary hands segments on by port)
            }
            long key = ConnectionTable.key(remoteIp, remotePort, p);
            TcpConnection old = layer.table.get(key);
            // The port's last connection to this peer, if any, is the oldest of the round: one waiting in
            // TIME-WAIT gives way (RFC 6191), so churn faster than ports leave TIME-WAIT does not run out.
            int record = old == null && layer.timeWaitRecords.size() > 0 ? layer.timeWaitRecords.find(key) : -1;
            if (record >= 0) {
                if (!layer.timeWaitRecords.timestamps(record)) {
                    continue; // without timestamps, PAWS cannot keep the old connection's duplicates out
                }
                layer.timeWaitRecords.remove(record);
                layer.count(TcpCounter.TIME_WAIT_REUSED);
                return p;
            }
            if (old == null || old.endTimeWaitForReuse()) {
                if (old != null) {
                    layer.count(TcpCounter.TIME_WAIT_REUSED);
                    layer.pool.reuseAtOnce(old); // nothing of it runs any more: the new connection takes it
                }
                return p;
            }
        }
        throw new IllegalStateException("no ephemeral TCP port is free toward " + Ipv4Address.toString(remoteIp) + ":"
                + remotePort + " (all " + span + " in use); close some connections");
    }
}
