package dev.nupa.node.telemetry;

/**
 * The thread of a telemetry ring ({@link TcpTelemetry}, {@link RdmaTelemetry}): every {@link #DRAIN_MS} ms it builds what
 * the datapath queued; closing drains once more after it stops.
 */
public abstract class TelemetryDrainer implements AutoCloseable {
    public static final long DRAIN_MS = 100;

    private final Thread drainer;
    private volatile boolean closed;

    TelemetryDrainer(String name) {
        drainer = Thread.ofPlatform().daemon().name(name).unstarted(this::run);
    }

    /** Called by the subclass once its fields are set. */
    final void startDraining() {
        drainer.start();
    }

    /** Builds what the ring holds, on the drainer's thread (or the closer's, once the drainer is done). */
    abstract void drain();

    private void run() {
        while (!closed) {
            try {
                Thread.sleep(DRAIN_MS);
            } catch (InterruptedException e) {
                break;
            }
            drain();
        }
        drain();
    }

    /** Stops the drainer after a last drain. */
    @Override
    public void close() {
        closed = true;
        drainer.interrupt();
        try {
            drainer.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        drain();
    }
}
