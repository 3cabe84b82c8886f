package dev.nupa.node;

import java.util.List;

import dev.nupa.device.CounterTable;
import dev.nupa.device.FabricWindow;
import dev.nupa.l2.FaultyDevice;
import dev.nupa.l2.FaultyDevice.FaultCounters;
import dev.nupa.l2.Link;

/**
 * The faults `--link-faults` injected into the frames a node received, counted: as link-layer counters of the Admin
 * service and metrics ({@link #values}), and in a counter table window of the fabric (docs/fabric-layout.md "Counter
 * tables") that `nupa fabric info` shows from the fabric file.
 */
final class LinkFaultTable {
    static final String[] NAMES = {"faults_dropped", "faults_duplicated", "faults_reordered", "faults_corrupted",
            "faults_delayed", "faults_rate_limited", "faults_lost"};
    private static final long PUBLISH_NS = 100_000_000L;

    private LinkFaultTable() {
    }

    /** The received-fault counters of {@code link}'s device, in the order of {@link #NAMES}; empty without faults. */
    static long[] values(Link link) {
        if (!(link.device() instanceof FaultyDevice f)) {
            return new long[0];
        }
        FaultCounters c = f.receiveFaults();
        return new long[] {c.dropped(), c.duplicated(), c.reordered(), c.corrupted(), c.delayed(), c.rateLimited(), c.lost()};
    }

    /** Publishes the table of a node with link faults, refreshed from its loop; nothing for a node without. */
    static void publish(Link link) {
        if (!(link.device() instanceof FaultyDevice)) {
            return;
        }
        FabricWindow w;
        try {
            w = link.device().exportWindow(CounterTable.bytes(NAMES.length), FabricWindow.REMOTE_READ | FabricWindow.COUNTERS);
        } catch (RuntimeException e) {
            return; // no room for a window: the counters stay in the Admin service and metrics
        }
        CounterTable.format(w.memory(), "link faults injected on receive", NAMES);
        link.datapath().addTimer(now -> { // the window goes with the node when it leaves the fabric
            long[] v = values(link);
            for (int i = 0; i < v.length; i++) {
                CounterTable.set(w.memory(), i, v[i]);
            }
            return now + PUBLISH_NS;
        });
    }

    /** The same as named counters of the link layer. */
    static void addTo(Link link, List<NodeCounters.Value> out) {
        long[] v = values(link);
        for (int i = 0; i < v.length; i++) {
            out.add(new NodeCounters.Value("link", NAMES[i], v[i]));
        }
    }
}
