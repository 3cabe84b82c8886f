package dev.nupa.device;

import static dev.nupa.device.FabricLayout.LONG;
import static dev.nupa.device.FabricLayout.N_HEARTBEAT;
import static dev.nupa.device.FabricLayout.N_STATE;
import static dev.nupa.device.FabricLayout.STATE_FREE;
import static dev.nupa.device.FabricLayout.STATE_UP;

/**
 * A node's heartbeat and its watch over its peers, run on the node's liveness thread every
 * heartbeat period. A heartbeat is a counter, not a clock, so nodes in different hosts (or VMs
 * sharing an ivshmem BAR) never compare clocks: each watcher times the counter with its own.
 *
 * <p>A peer is dead when its counter stands still for the heartbeat timeout, or sooner when it
 * runs on this host and its process is gone; a stopped but living process (SIGSTOP, a debugger)
 * on this host is not reclaimed. The first watcher to win the reclaim CAS takes back its rings and
 * windows (see {@link Fabric#reclaim}); every watcher reports DOWN.
 */
final class Liveness implements Runnable {
    private final Fabric fabric;
    private final FabricNode node;
    private final int self;
    private final long period;
    private final long timeout;
    private final long[] lastWord;
    private final long[] lastBeat;
    private final long[] beatChanged;
    private volatile boolean running = true;

    Liveness(Fabric fabric, FabricNode node) {
        this.fabric = fabric;
        this.node = node;
        this.self = node.address();
        this.period = fabric.geometry.heartbeatPeriodNs();
        this.timeout = fabric.geometry.heartbeatTimeoutNs();
        int n = fabric.geometry.maxNodes();
        this.lastWord = new long[n];
        this.lastBeat = new long[n];
        this.beatChanged = new long[n];
    }

    void stop() {
        running = false;
    }

    @Override
    public void run() {
        while (running) {
            try {
                Thread.sleep(period / 1_000_000, (int) (period % 1_000_000));
            } catch (InterruptedException e) {
                return;
            }
            if (running) {
                String lost = fabric.lostReason();
                if (lost != null) {
                    node.markLost(lost);
                    return;
                }
                try {
                    tick(System.nanoTime());
                } catch (InternalError e) {
                    if (!FabricFile.isMappingFault(e)) {
                        throw e;
                    }
                    lost = fabric.lostReason();
                    node.markLost(lost != null ? lost : "the memory of fabric " + fabric.name() + " faulted (SIGBUS)");
                    return;
                }
            }
            if (node.isEvicted()) {
                return;
            }
        }
    }

    void tick(long now) {
        long me = fabric.nodeOffset(self);
        LONG.setRelease(fabric.mem, me + N_HEARTBEAT, (long) LONG.getAcquire(fabric.mem, me + N_HEARTBEAT) + 1);
        long mine = Fabric.word(STATE_UP, node.generation());
        long w = fabric.stateWord(self);
        if (w != mine && !Fabric.validState(w) && LONG.compareAndSet(fabric.mem, me + N_STATE, w, mine)) {
            node.entryRepaired(); // no state at all: a foreign hand's bytes, not a peer's reclaim; ours again
        } else if (w != mine) {
            node.evict();
            return;
        }
        node.checkEntry();
        for (int a = 0; a < lastWord.length; a++) {
            if (a != self) {
                watch(a, now);
            }
        }
    }

    private void watch(int a, long now) {
        long w = fabric.stateWord(a);
        long prev = lastWord[a];
        int state = Fabric.state(w);
        if (state != STATE_FREE) {
            long beat = fabric.heartbeat(a);
            if (w != prev || beat != lastBeat[a]) {
                lastBeat[a] = beat;
                beatChanged[a] = now;
            } else {
                long still = now - beatChanged[a];
                boolean dead = (still > 2 * period && state != FabricLayout.STATE_RECLAIMING && fabric.provablyDead(a))
                        || (still > timeout && !fabric.provablyAlive(a));
                if (dead) {
                    fabric.reclaim(a, w);
                    w = fabric.stateWord(a);
                    state = Fabric.state(w);
                }
            }
        }
        boolean wasUp = Fabric.state(prev) == STATE_UP;
        if (state == STATE_UP) {
            if (!wasUp) {
                node.fire(new PeerEvent(PeerEvent.Kind.UP, a, Fabric.generation(w)));
            } else if (Fabric.generation(w) != Fabric.generation(prev)) {
                node.fire(new PeerEvent(PeerEvent.Kind.RESTARTED, a, Fabric.generation(w)));
            }
        } else if (wasUp) {
            node.fire(new PeerEvent(PeerEvent.Kind.DOWN, a, Fabric.generation(prev)));
        }
        lastWord[a] = w;
    }
}
