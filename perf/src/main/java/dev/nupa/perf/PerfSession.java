package dev.nupa.perf;

import dev.nupa.device.Affinity;
import dev.nupa.device.Fabric;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricNode;
import dev.nupa.device.FabricWindow;
import dev.nupa.device.ShmFabric;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * What both sides of a fabric perf test share: attaching, finding the peer, control frames, the
 * floor window, and sending with back-pressure. Control frames start with a negative u64; data
 * frames start with their non-negative sequence number.
 */
public final class PerfSession implements AutoCloseable {
    static final long FLOOR = -1;
    static final long BYE = -2;
    static final long END = -3;
    static final long ACK = -4;
    static final long MESSAGE_FLOOR = -5;
    static final long RING_FLOOR = -6;

    final FabricNode node;
    final int peer;
    final boolean interrupts;
    final MemorySegment control = Arena.ofAuto().allocate(64, 64);
    FabricWindow floorWindow;

    PerfSession(PerfOptions o, boolean server, boolean interrupts) {
        if (o.cpu >= 0 && !Affinity.pin(o.cpu)) {
            System.err.println("nupa: could not pin to CPU " + o.cpu + "; running unpinned");
        }
        // The server may create the fabric; a client only joins one, so a typo in --fabric fails fast.
        if (server) {
            this.node = ShmFabric.attach(o.fabric, o.serverAddress, null);
        } else {
            Fabric fabric = ShmFabric.join(o.fabric);
            try {
                this.node = fabric.attach(o.clientAddress);
            } catch (RuntimeException e) {
                fabric.close();
                throw e;
            }
            node.closeFabricOnClose();
        }
        this.peer = server ? o.clientAddress : o.serverAddress;
        this.interrupts = interrupts;
    }

    /** Server: export the floor window and tell clients where it is through the node attributes. */
    void exportFloorWindow() {
        exportFloorWindow(4096);
    }

    /** {@link #exportFloorWindow()} of {@code bytes} (a test's floor that needs more room than the lines). */
    void exportFloorWindow(long bytes) {
        floorWindow = node.exportWindow(bytes, FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE);
        MemorySegment attrs = Arena.ofAuto().allocate(8);
        attrs.set(ValueLayout.JAVA_INT, 0, floorWindow.id());
        attrs.set(ValueLayout.JAVA_INT, 4, floorWindow.key());
        node.publishAttributes(attrs);
    }

    /** Client: wait for the server to be up, open its floor window, and check frames of {@code size} fit. */
    void awaitServer(long timeoutMs, int size) {
        if (size > node.maxFrame()) {
            throw new IllegalArgumentException("--size " + size + " exceeds the maximum frame of " + node.fabric().name()
                    + " (" + node.maxFrame() + " bytes); create the fabric with a larger --max-frame");
        }
        long deadline = System.currentTimeMillis() + timeoutMs;
        MemorySegment attrs = Arena.ofAuto().allocate(8);
        while (!(node.isUp(peer) && node.readAttributes(peer, attrs))) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("no perf server at node " + peer + " of " + node.fabric().name()
                        + " after " + timeoutMs / 1000 + " s; start one with --server");
            }
            sleep(10);
        }
        floorWindow = node.openWindow(attrs.get(ValueLayout.JAVA_INT, 0), attrs.get(ValueLayout.JAVA_INT, 4));
    }

    /** Sends, spinning (or polling nothing) while the ring is full. Fails loudly if the peer went away. */
    void send(MemorySegment src, long offset, int length) {
        int rc;
        while ((rc = node.offer(peer, src, offset, length)) == FabricDevice.BACK_PRESSURED) {
            Thread.onSpinWait();
        }
        if (rc != FabricDevice.OK) {
            throw new IllegalStateException("send to node " + peer + " failed: " + FabricDevice.describe(rc));
        }
    }

    void sendControl(long code, long a, long b) {
        sendControl(code, a, b, 0);
    }

    void sendControl(long code, long a, long b, long c) {
        control.set(ValueLayout.JAVA_LONG, 0, code);
        control.set(ValueLayout.JAVA_LONG, 8, a);
        control.set(ValueLayout.JAVA_LONG, 16, b);
        control.set(ValueLayout.JAVA_LONG, 24, c);
        send(control, 0, 32);
    }

    /** One poll, then idles as the wait mode says. */
    int pollOnce(dev.nupa.device.FrameHandler handler, int limit) {
        int n = node.poll(handler, limit);
        if (n == 0) {
            if (interrupts) {
                node.awaitFrames(100_000_000L);
            } else {
                Thread.onSpinWait();
            }
        }
        return n;
    }

    /** Server side of the floor: echo the ping counter through the pong line, nothing else in between. */
    void floorEcho(long start, long count) {
        FloorLine.echo(floorWindow.memory(), start, count);
    }

    public static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    @Override
    public void close() {
        if (floorWindow != null) {
            floorWindow.close();
        }
        node.close();
    }
}
