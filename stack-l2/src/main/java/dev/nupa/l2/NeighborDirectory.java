package dev.nupa.l2;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricLayout;
import dev.nupa.device.PeerEvent;
import dev.nupa.device.PeerListener;

/**
 * The fabric's replacement for ARP: which fabric node holds which IPv4 address. Each node
 * publishes its addresses in its node table entry (the attribute record of docs/link-layer.md);
 * peers read them when the device reports the node UP or RESTARTED and forget them when it goes
 * DOWN. A lookup that misses rescans the fabric (misses rescan at most once per {@link #RESCAN_INTERVAL_NS}), so a
 * peer that published its address just after joining is found without waiting for an event.
 *
 * <p>Lookups are allocation-free and safe from any thread: the table is an immutable open-addressing
 * map replaced as a whole (copy on write) when a binding changes.
 */
public final class NeighborDirectory implements AutoCloseable {
    /** Record magic "NB" and version of the attribute layout (docs/link-layer.md). */
    static final int MAGIC = 0x4E42;
    static final int VERSION = 1;
    static final int HEADER = 4;
    static final int ENTRY = 8;
    /** Addresses one node may publish: what fits the node table entry. */
    public static final int MAX_ADDRESSES = (FabricLayout.ATTR_BYTES - HEADER) / ENTRY;
    public static final long RESCAN_INTERVAL_NS = 1_000_000L;

    private static final ValueLayout.OfShort BE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /** One binding: {@code ipv4/prefixLength} lives on fabric node {@code node}. */
    public record Binding(int ipv4, int prefixLength, int node) {
        @Override
        public String toString() {
            return (ipv4 >>> 24) + "." + ((ipv4 >>> 16) & 0xFF) + "." + ((ipv4 >>> 8) & 0xFF) + "." + (ipv4 & 0xFF)
                    + "/" + prefixLength + " at node " + node;
        }
    }

    /** An immutable int-to-int map; keys are IPv4 addresses, values node addresses. */
    private record Table(int[] keys, int[] values, boolean[] used, List<Binding> bindings) {
        static Table of(List<Binding> bindings) {
            int cap = Integer.highestOneBit(Math.max(4, bindings.size() * 2)) * 2;
            int[] k = new int[cap];
            int[] v = new int[cap];
            boolean[] u = new boolean[cap];
            for (Binding b : bindings) {
                int i = slot(b.ipv4(), cap);
                while (u[i] && k[i] != b.ipv4()) {
                    i = (i + 1) & (cap - 1);
                }
                k[i] = b.ipv4();
                v[i] = b.node();
                u[i] = true;
            }
            return new Table(k, v, u, List.copyOf(bindings));
        }

        int get(int ipv4) {
            int cap = keys.length;
            for (int i = slot(ipv4, cap); used[i]; i = (i + 1) & (cap - 1)) {
                if (keys[i] == ipv4) {
                    return values[i];
                }
            }
            return -1;
        }

        private static int slot(int key, int cap) {
            int h = key * 0x9E3779B9;
            return (h ^ (h >>> 16)) & (cap - 1);
        }
    }

    /**
     * Told when a fabric node's life ends (DOWN, or RESTARTED with a new generation) with the IPv4 addresses it held
     * until then, so the layers above can end what they kept with it. Called on the device's liveness thread, before
     * the directory forgets those addresses: hand the work to the owning datapath loop.
     */
    @FunctionalInterface
    public interface NodeLostListener {
        void onNodeLost(PeerEvent event, int[] addresses);
    }

    private final FabricDevice device;
    private final PeerListener listener = this::onPeerEvent;
    private final java.util.concurrent.CopyOnWriteArrayList<NodeLostListener> lostListeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();
    private final MemorySegment scratch = Arena.ofAuto().allocate(FabricLayout.ATTR_BYTES);
    private volatile Table table = Table.of(List.of());
    private volatile long lastMissRescan = Long.MIN_VALUE / 2;
    private volatile long rescans;
    private volatile long lastRescan;
    private volatile long conflicts;
    private List<Binding> lastConflicts = List.of();
    private boolean published;
    private static final System.Logger LOG = System.getLogger(NeighborDirectory.class.getName());

    /**
     * Rescans when the last scan is older than {@code maxAgeNs}: for readers of bindings that change without a peer
     * event (a node joining a multicast group republishes its entry; no event tells its peers).
     */
    public void rescanIfOlder(long maxAgeNs) {
        if (System.nanoTime() - lastRescan >= maxAgeNs) {
            rescan();
        }
    }

    public NeighborDirectory(FabricDevice device) {
        this.device = device;
        device.addPeerListener(listener);
        rescan();
    }

    /**
     * Publishes this node's own addresses (replacing any published before) and binds them locally.
     * Throws IllegalArgumentException if there are more than {@link #MAX_ADDRESSES} or a prefix is outside 0..32.
     */
    public synchronized void publish(List<Binding> own) {
        if (own.size() > MAX_ADDRESSES) {
            throw new IllegalArgumentException(own.size() + " addresses do not fit a node table entry; at most "
                    + MAX_ADDRESSES + " may be published per node");
        }
        if (!published) {
            // RFC 5227 section 2.1 (probe before use): an address a live node holds is refused, not shared.
            rescan();
            for (Binding b : own) {
                Binding holder = heldElsewhere(b.ipv4());
                if (holder != null) {
                    throw new IllegalStateException("IPv4 address " + holder + " is in use by a live node (an RFC 5227"
                            + " address conflict); give another --ip or stop that node");
                }
            }
            published = true;
        }
        MemorySegment rec = Arena.ofAuto().allocate(HEADER + (long) ENTRY * own.size());
        rec.set(BE_SHORT, 0, (short) MAGIC);
        rec.set(ValueLayout.JAVA_BYTE, 2, (byte) VERSION);
        rec.set(ValueLayout.JAVA_BYTE, 3, (byte) own.size());
        for (int i = 0; i < own.size(); i++) {
            Binding b = own.get(i);
            if (b.prefixLength() < 0 || b.prefixLength() > 32) {
                throw new IllegalArgumentException("prefix length " + b.prefixLength() + " of " + b + " is outside 0..32");
            }
            rec.set(BE_INT, HEADER + (long) ENTRY * i, b.ipv4());
            rec.set(ValueLayout.JAVA_BYTE, HEADER + (long) ENTRY * i + 4, (byte) b.prefixLength());
        }
        device.publishAttributes(rec);
        rescan();
    }

    /** The fabric node holding {@code ipv4}, or -1 if none is known (after one rate-limited rescan). Allocation-free. */
    public int lookup(int ipv4) {
        int node = table.get(ipv4);
        if (node >= 0) {
            return node;
        }
        long now = System.nanoTime();
        if (now - lastMissRescan >= RESCAN_INTERVAL_NS) {
            lastMissRescan = now;
            rescan();
            node = table.get(ipv4);
        }
        return node;
    }

    /** The bindings known now, this node's own included. */
    public List<Binding> bindings() {
        return table.bindings();
    }

    /** How often the fabric was rescanned (on misses and events). */
    public long rescans() {
        return rescans;
    }

    /** Reads every up node's published addresses and replaces the table. */
    public synchronized void rescan() {
        rescans++;
        lastRescan = System.nanoTime();
        List<Binding> all = new ArrayList<>();
        int max = device.geometry().maxNodes();
        for (int node = 0; node < max; node++) {
            if (device.isUp(node)) {
                readInto(node, all);
            }
        }
        if (!all.equals(table.bindings())) {
            table = Table.of(all);
            noteConflicts();
        }
    }

    /** Another node's binding of unicast {@code ipv4}, or null. Multicast groups are shared by design. */
    private Binding heldElsewhere(int ipv4) {
        if ((ipv4 >>> 28) == 0xE) {
            return null;
        }
        for (Binding t : table.bindings()) {
            if (t.ipv4() == ipv4 && t.node() != device.address()) {
                return t;
            }
        }
        return null;
    }

    /**
     * RFC 5227 section 2.4 (ongoing conflict detection): a node that publishes one of this node's unicast addresses
     * after it started is counted and logged once per new conflict.
     */
    private void noteConflicts() {
        List<Binding> now = new ArrayList<>();
        for (Binding b : table.bindings()) {
            if (b.node() == device.address()) {
                Binding other = heldElsewhere(b.ipv4());
                if (other != null) {
                    now.add(other);
                }
            }
        }
        for (Binding c : now) {
            if (!lastConflicts.contains(c)) {
                conflicts++;
                LOG.log(System.Logger.Level.WARNING, "IPv4 address conflict (RFC 5227): " + c + " also claims this node's address");
            }
        }
        lastConflicts = now;
    }

    /** Address conflicts seen since start: another node published one of this node's unicast addresses. */
    public long conflicts() {
        return conflicts;
    }

    private void readInto(int node, List<Binding> out) {
        scratch.fill((byte) 0);
        if (!device.readAttributes(node, scratch)) {
            return;
        }
        if ((scratch.get(BE_SHORT, 0) & 0xFFFF) != MAGIC || scratch.get(ValueLayout.JAVA_BYTE, 2) != VERSION) {
            return; // not a record of ours (or a later version): no bindings from it
        }
        int count = Math.min(scratch.get(ValueLayout.JAVA_BYTE, 3) & 0xFF, MAX_ADDRESSES);
        for (int i = 0; i < count; i++) {
            int ip = scratch.get(BE_INT, HEADER + (long) ENTRY * i);
            int prefix = scratch.get(ValueLayout.JAVA_BYTE, HEADER + (long) ENTRY * i + 4) & 0xFF;
            out.add(new Binding(ip, Math.min(prefix, 32), node));
        }
    }

    /** Adds {@code l}, told of each node lost from now on (see {@link NodeLostListener}). */
    public void addNodeLostListener(NodeLostListener l) {
        lostListeners.add(l);
    }

    public void removeNodeLostListener(NodeLostListener l) {
        lostListeners.remove(l);
    }

    /** The addresses bound to {@code node} in the table now (its own published ones, groups included). */
    public int[] addressesOf(int node) {
        return table.bindings().stream().filter(b -> b.node() == node).mapToInt(Binding::ipv4).toArray();
    }

    private void onPeerEvent(PeerEvent e) {
        if ((e.kind() == PeerEvent.Kind.DOWN || e.kind() == PeerEvent.Kind.RESTARTED) && !lostListeners.isEmpty()) {
            int[] held = addressesOf(e.address()); // before the rescan below forgets (or rebinds) them
            for (NodeLostListener l : lostListeners) {
                try {
                    l.onNodeLost(e, held);
                } catch (RuntimeException ex) {
                    // a listener's bug must not keep the directory from forgetting the node
                }
            }
        }
        switch (e.kind()) {
            case UP, RESTARTED, DOWN -> rescan();
            case EVICTED -> {
                synchronized (this) {
                    table = Table.of(List.of());
                }
            }
        }
    }

    /** Stops listening to peer events. */
    @Override
    public void close() {
        device.removePeerListener(listener);
    }

    @Override
    public String toString() {
        return "NeighborDirectory" + Arrays.toString(bindings().toArray());
    }
}
