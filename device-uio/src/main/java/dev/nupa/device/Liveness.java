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
    /** Successors watched up to and including the this-many-th live one (docs/fabric-layout.md 8). */
    static final int WATCHED = 2;
    /** Every this many ticks the states are read whatever the epoch says: a writer that died before its bump is seen too. */
    static final int FULL_SCAN_TICKS = 10;

    /** Per address, the state word behind the last event fired. */
    private final long[] lastWord;
    /** Per address, what the successor watch last saw, when it last changed, and on which tick it looked. */
    private final long[] seenWord;
    private final long[] seenBeat;
    private final long[] changed;
    private final long[] seenTick;
    private long ticks;
    /** Entries the last successor watch read (for tests of its cost). */
    volatile int lastWalkReads;
    private long lastScan = Long.MIN_VALUE / 2;
    private long lastEpoch = -1;
    private volatile boolean running = true;

    Liveness(Fabric fabric, FabricNode node) {
        this.fabric = fabric;
        this.node = node;
        this.self = node.address();
        this.period = fabric.geometry.heartbeatPeriodNs();
        this.timeout = fabric.geometry.heartbeatTimeoutNs();
        int n = fabric.geometry.maxNodes();
        this.lastWord = new long[n];
        this.seenWord = new long[n];
        this.seenBeat = new long[n];
        this.changed = new long[n];
        this.seenTick = new long[n];
        java.util.Arrays.fill(seenTick, Long.MIN_VALUE / 2);
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
            fabric.bumpEpoch();
        } else if (w != mine) {
            node.evict();
            return;
        }
        node.checkEntry();
        ticks++;
        boolean reclaimed = watchSuccessors(now);
        long epoch = fabric.epoch();
        if (reclaimed || epoch != lastEpoch || ticks - lastScan >= FULL_SCAN_TICKS) {
            lastEpoch = epoch; // read before the scan: a change during it moves the epoch again, so the next tick scans
            lastScan = ticks;
            scanStates();
        }
        node.checkObservers();
    }

    /**
     * Watches the entries after this node's address in address order (wrapping), FREE ones passed over, up to and
     * including the {@link #WATCHED}th one seen live on two ticks in a row: each node watches a few successors, so the
     * fabric's cost grows as N, not N x N, and every held entry has watchers (docs/fabric-layout.md 8). An entry whose
     * heartbeat stands still is not live, so the walk goes past it: a run of dead nodes, however long, is watched
     * whole by the live node before it. Returns whether it reclaimed one.
     */
    private boolean watchSuccessors(long now) {
        int n = seenWord.length;
        int live = 0;
        boolean reclaimed = false;
        int reads = 0;
        for (int i = 1; i < n && live < WATCHED; i++) {
            int a = (self + i) % n;
            long w = fabric.stateWord(a);
            reads++;
            int state = Fabric.state(w);
            if (state == STATE_FREE) {
                continue;
            }
            boolean known = seenTick[a] == ticks - 1;
            seenTick[a] = ticks;
            long beat = fabric.heartbeat(a);
            if (w != seenWord[a] || beat != seenBeat[a]) {
                seenWord[a] = w;
                seenBeat[a] = beat;
                changed[a] = now;
                if (known) {
                    live++;
                }
                continue;
            }
            long still = now - changed[a];
            if (still <= 2 * period) {
                if (known) {
                    live++;
                }
                continue;
            }
            boolean dead = (state != FabricLayout.STATE_RECLAIMING && fabric.provablyDead(a))
                    || (still > timeout && !fabric.provablyAlive(a));
            if (dead) {
                // An entry that went UP and died between two scans (its join's epoch bump never made, or a full
                // scan not yet due) is reported UP before its reclaim's DOWN: no held address goes unreported.
                observe(a, w);
                reclaimed |= fabric.reclaim(a, w);
            }
        }
        lastWalkReads = reads;
        return reclaimed;
    }

    /** Reads every entry's state word and turns its changes into this node's peer events (UP, DOWN, RESTARTED). */
    private void scanStates() {
        for (int a = 0; a < lastWord.length; a++) {
            if (a != self) {
                observe(a, fabric.stateWord(a));
            }
        }
    }

    /** Turns the change of entry {@code a}'s state word since this node last looked into its peer event, if any. */
    private void observe(int a, long w) {
        long prev = lastWord[a];
        boolean wasUp = Fabric.state(prev) == STATE_UP;
        if (Fabric.state(w) == STATE_UP) {
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
