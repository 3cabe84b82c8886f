package dev.nupa.gateway;

import dev.nupa.device.CounterTable;
import dev.nupa.device.FabricWindow;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.Route;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.Datapath;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * A node's gateway to Ethernet: {@link #open} opens the TAP device with one queue per event loop of the node, gives
 * each loop's IP layer its Ethernet side ({@link EthernetInterface}: the first queue's keeps the neighbor cache, the
 * others read it) and that side's routes, hands each interface to its loop's datapath (a poll source and a timer),
 * starts one watcher per queue and announces the gateway's address. It is opened before the loops start (the node's
 * builder does it); {@link #close(int)} takes a queue back on its loop as the loop ends, and the last queue closed
 * takes the TAP device away.
 *
 * <p>A watcher is a thread that blocks in poll(2) on its queue and, when frames wait, wakes its loop (through the
 * fabric's doorbell) and waits until the loop has read them; no frame crosses a thread.
 */
public final class Gateway {
    /** How long a watcher's poll waits before it looks whether it should stop. */
    private static final int WATCH_MS = 100;
    /** How often the published counters are refreshed. */
    static final long PUBLISH_NS = 200_000_000L;

    private final GatewayConfig config;
    private final List<Queue> queues;

    /** One queue of the TAP device and what serves it on its loop. */
    private final class Queue {
        final Ipv4Stack ip;
        final Tap tap;
        final EthernetInterface iface;
        Thread watcher;
        volatile boolean stopping;
        volatile boolean armed = true;
        FabricWindow counterWindow;
        Datapath.Timer publisher;
        boolean attached;

        Queue(Ipv4Stack ip, Tap tap, EthernetInterface iface) {
            this.ip = ip;
            this.tap = tap;
            this.iface = iface;
        }

        Datapath datapath() {
            return ip.link().datapath();
        }

        /** On the queue's loop: the interface joins the IP layer and the loop. */
        void attach() {
            ip.attach(iface);
            attached = true;
            for (Route r : config.routes()) {
                ip.addRoute(r);
            }
            datapath().addSource(iface);
            datapath().addTimer(iface);
            publishCounters();
            watcher = Thread.ofPlatform().daemon().name("nupa-tap-watch-" + config.tap() + "-" + tap.queue()).start(this::watch);
            if (tap.queue() == 0) {
                iface.announce();
            }
        }

        /** On the queue's loop (or anywhere once it stopped): everything {@link #attach} did, undone. */
        void detach() {
            datapath().removeSource(iface);
            datapath().removeTimer(iface);
            if (publisher != null) {
                datapath().removeTimer(publisher);
            }
            if (counterWindow != null) {
                counterWindow.close();
            }
            if (attached) {
                for (Route r : config.routes()) {
                    ip.routes().remove(r.prefix(), r.prefixLength());
                }
                ip.detach(iface);
            }
        }

        /**
         * The queue's counters in a window of the fabric ({@link FabricWindow#COUNTERS}) of its loop's node, refreshed
         * every {@link #PUBLISH_NS} ns from the loop, so that {@code nupa fabric info} shows them from the fabric file.
         */
        private void publishCounters() {
            GatewayCounter[] all = GatewayCounter.values();
            String[] names = new String[all.length];
            for (int i = 0; i < all.length; i++) {
                names[i] = all[i].name().toLowerCase(Locale.ROOT);
            }
            try {
                counterWindow = ip.link().device().exportWindow(CounterTable.bytes(all.length),
                        FabricWindow.REMOTE_READ | FabricWindow.COUNTERS);
            } catch (RuntimeException e) {
                return; // no room for a window: the counters stay in the node's Admin service and metrics only
            }
            CounterTable.format(counterWindow.memory(), "gateway " + config.tap() + (tap.queue() > 0 ? " queue " + tap.queue() : "")
                    + " " + Ipv4Address.toString(config.address()) + "/" + config.prefixLength(), names);
            publisher = now -> {
                for (int i = 0; i < all.length; i++) {
                    CounterTable.set(counterWindow.memory(), i, iface.counter(all[i]));
                }
                return now + PUBLISH_NS;
            };
            datapath().addTimer(publisher);
        }

        private void watch() {
            Thread self = Thread.currentThread();
            Runnable rearm = () -> {
                armed = true;
                LockSupport.unpark(self);
            };
            while (!stopping) {
                if (!armed) {
                    LockSupport.parkNanos(WATCH_MS * 1_000_000L);
                    continue;
                }
                if (tap.awaitReadable(WATCH_MS)) {
                    armed = false;
                    iface.frameArrived(rearm);
                    datapath().wakeup(); // a sleeping loop wakes, looks at its sources and reads the TAP
                }
            }
        }
    }

    private Gateway(GatewayConfig config, List<Queue> queues) {
        this.config = config;
        this.queues = queues;
    }

    /**
     * The gateway {@code config} describes over a node's IP layers, one per event loop ({@code loops}, the primary
     * first; as many as the TAP has queues), whose loops have not started. Throws with the reason (forwarding off,
     * loops and queues unequal, the TAP device), leaving nothing open.
     */
    public static Gateway open(List<Ipv4Stack> loops, GatewayConfig config) {
        if (loops.size() != config.queues()) {
            throw new IllegalArgumentException("a gateway of " + config.queues() + " TAP queues needs a node of as many event"
                    + " loops, not " + loops.size() + "; give the node one loop per queue");
        }
        if (!loops.getFirst().config().forwarding()) {
            throw new IllegalArgumentException("a gateway forwards between the fabric and Ethernet:"
                    + " its node needs forwarding on (--forwarding, IpConfig.withForwarding(true))");
        }
        for (Ipv4Stack ip : loops) {
            if (ip.link().datapath() == null) {
                throw new IllegalStateException("a gateway runs on a node whose event loops run its datapath (NupaNode,"
                        + " NupaStack), where the node's IP layers run");
            }
        }
        List<Tap> taps = Tap.open(config.tap(), config.mtu(), config.offloads(), config.queues());
        Gateway g;
        try {
            EthernetInterface primary = new EthernetInterface(taps.getFirst(), loops.getFirst(), config.address(),
                    config.prefixLength(), EthernetInterface.localMac(config.address()),
                    new ArpCache(256, 64, config.mtu(), 30_000_000_000L, 1_000_000_000L, 3));
            List<Queue> queues = new ArrayList<>();
            g = new Gateway(config, queues);
            for (int q = 0; q < taps.size(); q++) {
                EthernetInterface iface = q == 0 ? primary : new EthernetInterface(taps.get(q), loops.get(q), primary);
                iface.ecnThreshold(config.ecnThreshold());
                queues.add(g.new Queue(loops.get(q), taps.get(q), iface));
            }
        } catch (RuntimeException e) {
            taps.forEach(Tap::close);
            throw e;
        }
        try {
            for (Queue q : g.queues) {
                q.attach();
            }
        } catch (RuntimeException e) {
            for (int q = 0; q < g.queues.size(); q++) {
                g.close(q);
            }
            throw e;
        }
        return g;
    }

    /** The primary queue's Ethernet side (the one that keeps the neighbor cache). */
    public EthernetInterface iface() {
        return queues.getFirst().iface;
    }

    /** Every queue's Ethernet side, queue 0 first. */
    public List<EthernetInterface> interfaces() {
        return queues.stream().map(q -> q.iface).toList();
    }

    /** The counters of all queues added up; any thread. */
    public Map<GatewayCounter, Long> counters() {
        Map<GatewayCounter, Long> sum = new EnumMap<>(GatewayCounter.class);
        for (GatewayCounter c : GatewayCounter.values()) {
            long v = 0;
            for (Queue q : queues) {
                v += q.iface.counter(c);
            }
            sum.put(c, v);
        }
        return sum;
    }

    /**
     * Takes queue {@code loop} back: its watcher stops, its interface leaves the loop and the IP layer, its TAP queue
     * closes. On that loop's thread as it ends (or on any thread when the loops never ran).
     */
    public void close(int loop) {
        Queue q = queues.get(loop);
        q.stopping = true;
        if (q.watcher != null) {
            LockSupport.unpark(q.watcher);
            try {
                q.watcher.join(2L * WATCH_MS + 1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            q.detach();
        } finally {
            q.tap.close();
        }
    }
}
