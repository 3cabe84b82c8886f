package dev.nupa.device;

/**
 * Timestamps of one sampled operation as it crosses the layers, for latency breakdowns and traces.
 *
 * <p>Compiled in only with {@code -Dnupa.trace=true}: {@link #ENABLED} is a static final constant, so with it false
 * the JIT removes every {@code if (Trace.ENABLED) Trace.mark(...)} and the datapath pays nothing. With it true, a
 * mark costs a field load unless an operation is being traced: the thread that calls {@link #begin} records each
 * point the operation reaches into preallocated arrays (no allocation) until {@link #end}; spans and reports are
 * built from them later, off the fast path. One operation at a time, on the datapath thread that began it;
 * marks from other threads are ignored.
 *
 * <p>A mark is placed where an operation enters a layer's code, so the time between two marks belongs to the layer
 * entered first (with claims, a layer above may fill the frame in between: that time counts to the link).
 */
public final class Trace {
    /** Whether tracing is compiled in for this JVM ({@code -Dnupa.trace=true}). */
    public static final boolean ENABLED = Boolean.getBoolean("nupa.trace");

    /** The application starts the operation (a post, a write, a send). */
    public static final int USER = 0;
    public static final int TCP_OUT = 1;
    public static final int RDMA_OUT = 2;
    public static final int IP_OUT = 3;
    public static final int LINK_OUT = 4;
    /** A frame is published on the ring (the copy and the release store). */
    public static final int DEVICE_OUT = 5;
    /** The frame is on the peer's ring: from here until {@link #DEVICE_IN} the peer and the fabric have it. */
    public static final int FABRIC = 6;
    public static final int DEVICE_IN = 7;
    public static final int LINK_IN = 8;
    public static final int IP_IN = 9;
    public static final int TCP_IN = 10;
    public static final int RDMA_IN = 11;
    /** Handed to the application: a socket's handler, a completion queued. */
    public static final int CALLBACK = 12;
    /** The application sees the operation done. */
    public static final int DONE = 13;

    private static final String[] NAMES = {"user", "tcp_out", "rdma_out", "ip_out", "link_out", "device_out", "fabric",
        "device_in", "link_in", "ip_in", "tcp_in", "rdma_in", "callback", "done"};
    /** The layer that the time after each point belongs to. */
    private static final String[] LAYERS = {"user", "tcp", "rdma", "ip", "link", "device", "peer and fabric", "device", "link",
        "ip", "tcp", "rdma", "user callback", "done"};

    /** The most points one operation records; more are dropped (and {@link #end} says how many). */
    public static final int MAX_MARKS = 48;

    private static final long[] AT = new long[MAX_MARKS];
    private static final byte[] POINTS = new byte[MAX_MARKS];
    private static Thread owner;
    private static boolean active;
    private static int marks;
    private static int dropped;

    private Trace() {
    }

    /** Starts tracing one operation on this thread (records {@link #USER}). */
    public static void begin() {
        owner = Thread.currentThread();
        marks = 0;
        dropped = 0;
        active = true;
        mark(USER);
    }

    /** Records that the traced operation reached {@code point}; nothing if none is traced on this thread. */
    public static void mark(int point) {
        if (active && Thread.currentThread() == owner) {
            if (marks < MAX_MARKS) {
                POINTS[marks] = (byte) point;
                AT[marks++] = System.nanoTime();
            } else {
                dropped++;
            }
        }
    }

    /** Ends the traced operation (records {@link #DONE}); returns how many points it recorded. */
    public static int end() {
        mark(DONE);
        active = false;
        return marks;
    }

    /** Copies the points of the operation last ended into {@code at} and {@code points} (at least {@link #MAX_MARKS} long). */
    public static void copy(long[] at, int atOffset, byte[] points, int pointsOffset) {
        System.arraycopy(AT, 0, at, atOffset, marks);
        System.arraycopy(POINTS, 0, points, pointsOffset, marks);
    }

    /** Points the last operation could not record (more than {@link #MAX_MARKS}). */
    public static int dropped() {
        return dropped;
    }

    /** The point's name, as traces and reports show it. */
    public static String name(int point) {
        return NAMES[point];
    }

    /** The layer the time after {@code point} belongs to. */
    public static String layer(int point) {
        return LAYERS[point];
    }
}
