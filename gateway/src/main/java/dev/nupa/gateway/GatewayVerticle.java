package dev.nupa.gateway;

import dev.nupa.device.CounterTable;
import dev.nupa.device.FabricWindow;
import java.util.concurrent.locks.LockSupport;

import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.Route;
import dev.nupa.l2.Datapath;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;

/**
 * The gateway as a verticle on the node's event loop: on deploy it opens the TAP device, gives the node's
 * IP layer its Ethernet side ({@link EthernetInterface}) and that side's routes, hands the interface's
 * timer to the loop, starts the TAP's watcher and announces the gateway's address; on undeploy it takes
 * all of it back and the TAP device goes away.
 *
 * <p>The watcher is one thread that blocks in poll(2) on the TAP device and, when frames wait, wakes the
 * loop (through the fabric's doorbell) and waits until the loop has read them; no frame crosses a thread.
 */
public final class GatewayVerticle extends VerticleBase {
    /** How long the watcher's poll waits before it looks whether it should stop. */
    private static final int WATCH_MS = 100;

    private final Ipv4Stack ip;
    private final GatewayConfig config;
    private Tap tap;
    private EthernetInterface iface;
    private Thread watcher;
    private volatile boolean armed = true;
    private volatile boolean stopping;
    /** How often the published counters are refreshed. */
    static final long PUBLISH_NS = 200_000_000L;
    private FabricWindow counterWindow;
    private Datapath.Timer publisher;

    public GatewayVerticle(Ipv4Stack ip, GatewayConfig config) {
        this.ip = ip;
        this.config = config;
    }

    @Override
    public Future<?> start() {
        if (!ip.config().forwarding()) {
            return Future.failedFuture(new IllegalArgumentException("a gateway forwards between the fabric and Ethernet:"
                    + " its node needs forwarding on (--forwarding, IpConfig.withForwarding(true))"));
        }
        Datapath datapath = ip.link().datapath();
        if (datapath == null || !ip.link().isOwner()) {
            return Future.failedFuture(new IllegalStateException("deploy the gateway on its node's event loop"
                    + " (node.vertx().deployVerticle), where the node's IP layer runs"));
        }
        try {
            tap = Tap.open(config.tap(), config.mtu(), config.offloads());
            iface = new EthernetInterface(tap, ip, config.address(), config.prefixLength(),
                    EthernetInterface.localMac(config.address()),
                    new ArpCache(256, 64, config.mtu(), 30_000_000_000L, 1_000_000_000L, 3));
            ip.attach(iface);
            for (Route r : config.routes()) {
                ip.addRoute(r);
            }
        } catch (RuntimeException e) {
            undo();
            return Future.failedFuture(e);
        }
        datapath.addTimer(iface);
        publishCounters(datapath);
        watcher = Thread.ofPlatform().daemon().name("nupa-tap-watch-" + config.tap()).start(() -> watch(datapath));
        iface.announce();
        return Future.succeededFuture();
    }

    /**
     * The gateway's counters in a window of the fabric ({@link FabricWindow#COUNTERS}), refreshed every
     * {@link #PUBLISH_NS} ns from the loop, so that {@code nupa fabric info} shows them from the fabric file alone.
     */
    private void publishCounters(Datapath datapath) {
        GatewayCounter[] all = GatewayCounter.values();
        String[] names = new String[all.length];
        for (int i = 0; i < all.length; i++) {
            names[i] = all[i].name().toLowerCase(java.util.Locale.ROOT);
        }
        try {
            counterWindow = ip.link().device().exportWindow(CounterTable.bytes(all.length), FabricWindow.REMOTE_READ | FabricWindow.COUNTERS);
        } catch (RuntimeException e) {
            return; // no room for a window: the counters stay in the node's Admin service and metrics only
        }
        CounterTable.format(counterWindow.memory(), "gateway " + config.tap() + " " + dev.nupa.ip.Ipv4Address.toString(config.address())
                + "/" + config.prefixLength(), names);
        publisher = now -> {
            for (int i = 0; i < all.length; i++) {
                CounterTable.set(counterWindow.memory(), i, iface.counter(all[i]));
            }
            return now + PUBLISH_NS;
        };
        datapath.addTimer(publisher);
    }

    private void watch(Datapath datapath) {
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
                datapath.timersChanged(); // polls the interface's timer on the loop's next round, waking it
            }
        }
    }

    /** The Ethernet side, once deployed. */
    public EthernetInterface iface() {
        return iface;
    }

    @Override
    public Future<?> stop() {
        stopping = true;
        if (watcher != null) {
            LockSupport.unpark(watcher);
            try {
                watcher.join(2L * WATCH_MS + 1000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (iface != null) {
            ip.link().datapath().removeTimer(iface);
        }
        if (publisher != null) {
            ip.link().datapath().removeTimer(publisher);
        }
        if (counterWindow != null) {
            counterWindow.close();
        }
        undo();
        return Future.succeededFuture();
    }

    private void undo() {
        if (iface != null) {
            for (Route r : config.routes()) {
                ip.routes().remove(r.prefix(), r.prefixLength());
            }
            ip.detach(iface);
        }
        if (tap != null) {
            tap.close();
        }
    }
}
