package dev.nupa.tcp;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;

import dev.nupa.ip.Ipv4Address;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.netty.buffer.Unpooled;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.ContextInternal;
import io.vertx.core.internal.buffer.BufferInternal;
import io.vertx.core.streams.ReadStream;
import io.vertx.core.streams.WriteStream;

/**
 * A TCP connection over the fabric in the manner of Vert.x's {@code NetSocket}: a
 * {@link ReadStream} and {@link WriteStream} of {@link Buffer}s, so {@code pipeTo} and back-pressure
 * work (pause/resume/fetch reach the receive window; {@link #writeQueueFull} and the drain handler
 * follow the send buffer). Handlers run on the Vert.x context that created the socket. {@link #end()}
 * half-closes (FIN after the queued data, reading goes on); {@link #close()} closes fully, as
 * {@link #setLinger} says, which also bounds how long the connection then waits for the peer's FIN
 * ({@link TcpConfig#finWait2TimeoutNs()}); errors reach the exception handler as IOExceptions that
 * say what happened (reset, timed out, refused). Per-socket settings other than linger (Nagle,
 * keep-alive, buffers, congestion control) are the {@link TcpConfig} the socket was made with
 * ({@link #connect}, {@link TcpServer#create}).
 *
 * <p><b>Threading.</b> The connection belongs to the node's datapath loop (see {@link TcpLayer}): the
 * socket's calls reach it through {@link TcpLayer#execute} (at once when the socket's context runs on
 * the loop), its events arrive there, and what the application sees is handed to the socket's context.
 */
public final class TcpSocket implements ReadStream<Buffer>, WriteStream<Buffer>, TcpConnection.Events {
    /** Default bound of data queued beyond the send buffer before {@link #writeQueueFull()}. */
    public static final int DEFAULT_WRITE_QUEUE = 256 * 1024;
    /** The longest linger, seconds (as the JDK's Socket.setSoLinger caps it). */
    public static final int MAX_LINGER = 65_535;
    private static final int READ_CHUNK = 64 * 1024;
    /** How often a lingering close looks whether its FIN was acknowledged (no event says so). */
    private static final long LINGER_CHECK_MS = 5;

    private final TcpLayer layer;
    private final ContextInternal context;
    private volatile TcpConnection connection;
    /** On the loop: the connection closed and was let go of; its layer may reuse the object, so it is not touched. */
    private boolean released;
    /** Why the connection closed (null: orderly, or not closed); kept since the connection object may be reused. */
    private volatile TcpError closeError;
    private volatile int localIp;
    private volatile int localPort;
    private volatile int remoteIp;
    private volatile int remotePort;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private long pendingBytes;
    private int writeQueueMax = DEFAULT_WRITE_QUEUE;
    private volatile long demand = Long.MAX_VALUE;
    private boolean readScheduled;
    /** On the context: a read was asked of the loop and has not come back. */
    private boolean readInFlight;
    /** On the context: bytes read while the stream was paused, handed over on resume or fetch. */
    private Buffer held;
    /** On the context: the connection is gone; the close handler runs once the last bytes are read. */
    private boolean closeOwed;
    private boolean flushScheduled;
    private boolean wasFull;
    private volatile boolean ending;
    /** close(), not just end(): the connection is closed fully once the queued data is in. */
    private volatile boolean closing;
    private boolean endSignalled;
    private volatile boolean closed;
    private volatile int linger = -1;
    /** close() aborted the connection (linger 0): the abort is no error to report. */
    private volatile boolean abortedByClose;
    private Promise<TcpSocket> connecting;
    private Handler<Buffer> handler;
    private Handler<Void> endHandler;
    private Handler<Throwable> exceptionHandler;
    private Handler<Void> drainHandler;
    private Handler<Void> closeHandler;

    private record Pending(MemorySegment data, long[] offset, Promise<Void> promise) {
    }

    private TcpSocket(Context context, TcpLayer layer) {
        this.layer = layer;
        this.context = (ContextInternal) context;
    }

    /** Connects to {@code host}:{@code port}; the Future fails with the reason (refused, timed out, no route). */
    public static Future<TcpSocket> connect(Vertx vertx, TcpLayer layer, int port, String host, TcpConfig config) {
        TcpSocket s = new TcpSocket(vertx.getOrCreateContext(), layer);
        Promise<TcpSocket> p = s.context.promise(); // completed on the loop, heard on the context
        s.connecting = p;
        int dst;
        try {
            dst = Ipv4Address.parse(host);
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
        layer.execute(() -> {
            try {
                TcpConnection c = layer.connect(dst, port, config, s, System.nanoTime());
                if (s.connection == null) {
                    s.attach(c); // an event may have stored it already
                }
            } catch (RuntimeException e) {
                s.connecting = null;
                p.tryFail(e);
            }
        });
        return p.future();
    }

    /** Attaches to a connection a server accepted (on the loop). */
    static TcpSocket accepted(Context context, TcpLayer layer, TcpConnection c) {
        TcpSocket s = new TcpSocket(context, layer);
        s.attach(c);
        layer.setEvents(c, s); // beside the layer's own hooks, which keep its tables right
        return s;
    }

    /** On the loop: this socket's connection from now on; its addresses are kept apart, readable from any thread. */
    private void attach(TcpConnection c) {
        localIp = c.localIp();
        localPort = c.localPort();
        remoteIp = c.remoteIp();
        remotePort = c.remotePort();
        connection = c;
    }

    /** On the loop: the connection while it may be used, null before it is known and once it was released. */
    private TcpConnection live() {
        return released ? null : connection;
    }

    public String remoteAddress() {
        return Ipv4Address.toString(remoteIp) + ":" + remotePort;
    }

    public String localAddress() {
        return Ipv4Address.toString(localIp) + ":" + localPort;
    }

    /**
     * The connection core, for tools and tests (call only on the loop, e.g. through {@link TcpLayer#execute});
     * null once closed and released, when its layer may have reused the object for another connection.
     */
    public TcpConnection connection() {
        return live();
    }

    // ---- ReadStream ---------------------------------------------------------------------------

    @Override
    public TcpSocket handler(Handler<Buffer> handler) {
        this.handler = handler;
        scheduleRead();
        return this;
    }

    @Override
    public TcpSocket pause() {
        demand = 0;
        return this;
    }

    @Override
    public TcpSocket resume() {
        demand = Long.MAX_VALUE;
        scheduleRead();
        return this;
    }

    @Override
    public TcpSocket fetch(long amount) {
        if (amount < 0) {
            throw new IllegalArgumentException("fetch amount must not be negative: " + amount);
        }
        demand = demand + amount < 0 ? Long.MAX_VALUE : demand + amount;
        scheduleRead();
        return this;
    }

    @Override
    public TcpSocket endHandler(Handler<Void> endHandler) {
        this.endHandler = endHandler;
        scheduleRead();
        return this;
    }

    @Override
    public TcpSocket exceptionHandler(Handler<Throwable> handler) {
        this.exceptionHandler = handler;
        return this;
    }

    public TcpSocket closeHandler(Handler<Void> handler) {
        this.closeHandler = handler;
        return this;
    }

    private void scheduleRead() {
        synchronized (this) {
            if (readScheduled) {
                return;
            }
            readScheduled = true;
        }
        context.runOnContext(v -> drainReads());
    }

    /**
     * On the context: while there is demand, asks the loop for the next chunk of received bytes (one
     * request at a time), which {@link #onRead} hands to the handler; then the end.
     */
    private void drainReads() {
        synchronized (this) {
            readScheduled = false;
        }
        if (held != null && handler != null && demand > 0) {
            Buffer b = held;
            held = null;
            deliver(b);
        }
        if (readInFlight || handler == null || demand <= 0 || connection == null || endSignalled) { // connection: known yet
            if (!readInFlight) {
                finishClose();
            }
            return;
        }
        readInFlight = true;
        layer.execute(this::readOnLoop);
    }

    /** On the loop: takes up to a chunk out of the receive buffer (opening the window) and passes it to the context. */
    private void readOnLoop() {
        TcpConnection c = live();
        // Straight into an array of the size at hand: no per-socket scratch (10,000 sockets).
        int avail = c == null ? 0 : Math.min(c.readable(), READ_CHUNK);
        byte[] bytes = new byte[avail];
        if (avail > 0) {
            c.read(MemorySegment.ofArray(bytes), 0, avail, System.nanoTime());
        }
        boolean atEnd = c == null || c.atEnd();
        context.runOnContext(v -> onRead(bytes, atEnd));
    }

    /** On the context: the loop's answer to {@link #readOnLoop}. */
    private void onRead(byte[] bytes, boolean atEnd) {
        readInFlight = false;
        if (bytes.length > 0) {
            Buffer b = BufferInternal.buffer(Unpooled.wrappedBuffer(bytes));
            if (handler != null && demand > 0) {
                deliver(b);
            } else {
                held = b; // paused while the read was on its way: kept for resume or fetch
            }
            drainReads(); // more may be waiting
            return;
        }
        if (atEnd && held == null && !endSignalled && handler != null && demand > 0) {
            endSignalled = true;
            if (endHandler != null) {
                endHandler.handle(null);
            }
        }
        finishClose();
    }

    /** On the context, once no read is on its way: the close handler, if the connection is gone and it is owed. */
    private void finishClose() {
        if (closeOwed) {
            closeOwed = false;
            if (closeHandler != null) {
                closeHandler.handle(null);
            }
        }
    }

    private void deliver(Buffer b) {
        long d = demand;
        if (d != Long.MAX_VALUE) {
            demand = d - 1;
        }
        handler.handle(b);
    }

    // ---- WriteStream --------------------------------------------------------------------------

    @Override
    public Future<Void> write(Buffer data) {
        if (ending || closed) {
            return Future.failedFuture(new IOException("socket " + (closed ? "is closed" : "was ended") + "; no more writes"));
        }
        byte[] bytes = data.getBytes();
        Promise<Void> p = context.promise(); // completed on the loop, heard on the context
        synchronized (this) {
            pending.add(new Pending(MemorySegment.ofArray(bytes), new long[] {0}, p));
            pendingBytes += bytes.length;
        }
        scheduleFlush();
        return p.future();
    }

    /** Asks the loop to flush, once for any number of writes queued before it runs. */
    private void scheduleFlush() {
        synchronized (this) {
            if (flushScheduled) {
                return;
            }
            flushScheduled = true;
        }
        layer.execute(this::flush);
    }

    /** On the loop: moves queued writes into the send buffer as room allows; completes their Futures. */
    private void flush() {
        synchronized (this) {
            flushScheduled = false;
        }
        boolean drained = false;
        while (true) {
            Pending next;
            synchronized (this) {
                next = pending.peek();
            }
            if (next == null || connection == null) {
                break;
            }
            TcpConnection c = live();
            long size = next.data.byteSize();
            int n;
            try {
                TcpState st = c == null ? TcpState.CLOSED : c.state();
                if (st == TcpState.CLOSED) {
                    failPending(new IOException("connection closed before the data was sent"));
                    return;
                }
                if (st == TcpState.SYN_SENT || st == TcpState.SYN_RECEIVED) {
                    break; // sent once established (onEstablished flushes)
                }
                n = c.write(next.data, next.offset[0], (int) Math.min(Integer.MAX_VALUE, size - next.offset[0]),
                        System.nanoTime());
            } catch (BufferUnavailableException e) {
                failPending(new IOException(e.getMessage(), e)); // nothing of these writes was taken: say so
                break; // and on to the end: a pending end() or close() still sends its FIN
            }
            if (n == 0) {
                break;
            }
            next.offset[0] += n;
            synchronized (this) {
                pendingBytes -= n;
                if (next.offset[0] == size) {
                    pending.poll();
                    drained = pendingBytes < writeQueueMax / 2;
                } else {
                    continue;
                }
            }
            next.promise.complete();
        }
        boolean signal;
        synchronized (this) {
            signal = drained && wasFull;
            if (signal) {
                wasFull = false;
            }
        }
        if (signal && drainHandler != null) {
            // Never from inside write(): a writer that loops until writeQueueFull() and resumes from
            // the drain handler would run again in the middle of its own loop (found by a chunked echo
            // that came back with its first 64 KiB twice). As Vert.x does: once the queue was full.
            Handler<Void> h = drainHandler;
            context.runOnContext(v -> h.handle(null));
        }
        finishEnd();
    }

    private void failPending(Throwable t) {
        Pending p;
        while (true) {
            synchronized (this) {
                p = pending.poll();
                pendingBytes = 0;
            }
            if (p == null) {
                return;
            }
            p.promise.tryFail(t);
        }
    }

    /** Half-closes: FIN follows the data queued so far; reading goes on until the peer closes. */
    @Override
    public Future<Void> end() {
        ending = true;
        layer.execute(this::finishEnd);
        return Future.succeededFuture();
    }

    /** On the loop: once every queued write is in the send buffer, the FIN (or the full close) follows. */
    private void finishEnd() {
        boolean empty;
        synchronized (this) {
            empty = pending.isEmpty();
        }
        TcpConnection c = live();
        if (ending && empty && c != null) {
            if (closing) {
                c.close(System.nanoTime());
            } else {
                c.shutdownOutput(System.nanoTime());
            }
        }
    }

    /**
     * SO_LINGER: how {@link #close()} ends the connection (Linux's tcp_close; Vert.x's
     * NetClientOptions.setSoLinger). {@link #end()} is never affected, as shutdown(SHUT_WR) is not.
     * <ul>
     *   <li>-1, the default: close returns at once and the FIN follows the queued data.</li>
     *   <li>0: close aborts (RFC 9293 3.10.5): a RST, queued and unacknowledged data dropped, no
     *       TIME-WAIT. The exception handler does not hear of this abort; pending writes fail.</li>
     *   <li>1..{@value #MAX_LINGER}: close's Future completes once the peer has acknowledged the FIN,
     *       and so every byte, or fails after that many seconds; the connection goes on closing
     *       either way (as Linux's close returns after sk_stream_wait_close).</li>
     * </ul>
     *
     * @throws IllegalArgumentException if {@code seconds} is outside -1..{@value #MAX_LINGER}
     */
    public TcpSocket setLinger(int seconds) {
        if (seconds < -1 || seconds > MAX_LINGER) {
            throw new IllegalArgumentException("linger must be -1 (off) or 0.." + MAX_LINGER + " seconds, got " + seconds);
        }
        this.linger = seconds;
        return this;
    }

    /** The linger set by {@link #setLinger}: -1 when off. */
    public int linger() {
        return linger;
    }

    /**
     * Closes fully: FIN after the queued data, or as {@link #setLinger} says; the close handler runs
     * when the connection is gone. Once the FIN is acknowledged, the connection is reset if the peer
     * keeps its side open longer than {@link TcpConfig#finWait2TimeoutNs()} (after {@link #end()}
     * alone it waits for ever).
     */
    public Future<Void> close() {
        closing = true;
        int seconds = linger;
        if (seconds < 0) {
            return end();
        }
        if (seconds == 0) {
            ending = true;
            abortedByClose = true;
            layer.execute(() -> {
                TcpConnection c = live();
                if (c != null) {
                    c.abort(System.nanoTime());
                }
            });
            return Future.succeededFuture();
        }
        end();
        Promise<Void> done = context.promise();
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        layer.execute(() -> checkLinger(done, seconds, deadline));
        return done.future();
    }

    /** On the loop: completes a lingering close once the FIN is acknowledged, fails it at the deadline. */
    private void checkLinger(Promise<Void> done, int seconds, long deadline) {
        boolean queued;
        synchronized (this) {
            queued = !pending.isEmpty();
        }
        TcpConnection c = live();
        TcpState state = c == null ? TcpState.CLOSED : c.state();
        TcpError error = c == null ? closeError : c.error();
        int unacknowledged = c == null ? 0 : c.unacknowledged();
        if (state == TcpState.CLOSED && error != null) {
            done.tryFail(new IOException(error.message() + " while lingering (" + remoteAddress() + ")"));
        } else if (!queued && (state == TcpState.FIN_WAIT_2 || state == TcpState.TIME_WAIT || state == TcpState.CLOSED)) {
            done.tryComplete(); // our FIN was acknowledged: the peer has every byte
        } else if (System.nanoTime() - deadline >= 0) {
            done.tryFail(new IOException("linger of " + seconds + " s ran out before the peer acknowledged the FIN ("
                    + unacknowledged + " bytes unacknowledged, state " + state + "); the connection goes on closing"));
        } else {
            context.owner().setTimer(LINGER_CHECK_MS, id -> layer.execute(() -> checkLinger(done, seconds, deadline)));
        }
    }

    /** Drops the connection with a reset (RFC 9293 ABORT). */
    public void abort() {
        layer.execute(() -> {
            TcpConnection c = live();
            if (c != null) {
                c.abort(System.nanoTime());
            }
        });
    }

    @Override
    public TcpSocket setWriteQueueMaxSize(int maxSize) {
        if (maxSize < 1) {
            throw new IllegalArgumentException("write queue size must be at least 1 byte, got " + maxSize);
        }
        this.writeQueueMax = maxSize;
        return this;
    }

    @Override
    public synchronized boolean writeQueueFull() {
        boolean full = pendingBytes >= writeQueueMax;
        if (full) {
            wasFull = true; // the drain handler is owed once it empties to half
        }
        return full;
    }

    @Override
    public TcpSocket drainHandler(Handler<Void> handler) {
        this.drainHandler = handler;
        return this;
    }

    // ---- events from the connection (on the loop) ----------------------------------------------

    @Override
    public void onEstablished(TcpConnection c) {
        attach(c); // events may come before connect() has stored it
        Promise<TcpSocket> p = connecting;
        connecting = null;
        if (p != null) {
            p.tryComplete(this);
        }
        flush(); // writes queued during the handshake
    }

    @Override
    public void onReadable(TcpConnection c) {
        scheduleRead();
    }

    @Override
    public void onWritable(TcpConnection c) {
        boolean queued;
        synchronized (this) {
            queued = !pending.isEmpty();
        }
        if (queued) {
            flush(); // already on the loop: no hop
        }
    }

    @Override
    public void onPeerClosed(TcpConnection c) {
        scheduleRead();
    }

    @Override
    public void onClosed(TcpConnection c, TcpError error) {
        if (connection == null) {
            attach(c);
        }
        closeError = error;
        Promise<TcpSocket> p = connecting;
        connecting = null;
        context.runOnContext(v -> {
            closed = true;
            IOException e = error == null ? null : new IOException(error.message() + " (" + remoteAddress() + ")");
            if (p != null) {
                p.tryFail(e != null ? e : new IOException("connection closed during the handshake"));
                return;
            }
            if (e != null) {
                failPending(e);
                if (exceptionHandler != null && !(error == TcpError.ABORTED && abortedByClose)) {
                    exceptionHandler.handle(e);
                }
            }
            closeOwed = true;
            drainReads(); // what is left to read reaches the handler first; then the close handler
        });
    }

    @Override
    public void onReleased(TcpConnection c) {
        released = true;
    }
}
