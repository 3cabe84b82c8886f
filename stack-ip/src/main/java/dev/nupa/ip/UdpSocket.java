package dev.nupa.ip;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import dev.nupa.device.FabricDevice;
import dev.nupa.l2.Datapath;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Handler;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.internal.ContextInternal;
import io.vertx.core.internal.buffer.BufferInternal;
import io.vertx.core.streams.ReadStream;

/**
 * A UDP socket over the fabric in the manner of Vert.x's {@code DatagramSocket}: {@link #listen},
 * {@link #send}, a handler of {@link UdpDatagram}s, and {@link ReadStream} flow control
 * ({@link #pause}, {@link #resume}, {@link #fetch}). Handlers run on the Vert.x context that created
 * the socket.
 *
 * <p>Datagrams are copied out of ring memory on the datapath thread into a bounded receive queue
 * ({@code receiveQueueLimit} datagrams, as SO_RCVBUF); when it is full, further datagrams are dropped
 * and counted ({@link IpCounter#UDP_RCVBUF_ERRORS}), as UDP allows. A send either leaves (the Future
 * succeeds) or fails with the reason (no route, host unreachable, ring full past the send wait).
 *
 * <p>Sends run on the node's datapath loop (see {@link dev.nupa.l2.Link}'s threading): {@link #send}
 * queues the datagram and hands the queue to the loop, at once when the socket's context is the loop.
 */
public final class UdpSocket implements ReadStream<UdpDatagram> {
    /** Default receive queue bound, in datagrams. */
    public static final int DEFAULT_RECEIVE_QUEUE = 4096;

    private final Ipv4Stack stack;
    private final Context context;
    private final int receiveQueueLimit;
    private final ConcurrentLinkedQueue<UdpDatagram> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicLong demand = new AtomicLong(Long.MAX_VALUE);
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final Receiver receiver = new Receiver();
    private final Runnable sendPending = this::sendPending;
    /** On the loop: when the head of the send queue first found the ring full (0: it did not). */
    private long blockedSince;
    private final java.util.ArrayDeque<PendingSend> pending = new java.util.ArrayDeque<>();
    private final Vertx vertx;
    private volatile int port = -1;
    private volatile boolean closed;
    private Handler<UdpDatagram> handler;
    private Handler<Throwable> exceptionHandler;
    private Handler<Void> endHandler;

    private UdpSocket(Vertx vertx, Ipv4Stack stack, int receiveQueueLimit) {
        if (receiveQueueLimit < 1) {
            throw new IllegalArgumentException("receive queue limit must be at least 1 datagram, got " + receiveQueueLimit);
        }
        this.stack = stack;
        this.vertx = vertx;
        this.context = vertx.getOrCreateContext();
        this.receiveQueueLimit = receiveQueueLimit;
    }

    public static UdpSocket create(Vertx vertx, Ipv4Stack stack) {
        return new UdpSocket(vertx, stack, DEFAULT_RECEIVE_QUEUE);
    }

    public static UdpSocket create(Vertx vertx, Ipv4Stack stack, int receiveQueueLimit) {
        return new UdpSocket(vertx, stack, receiveQueueLimit);
    }

    /**
     * Binds {@code port} (0: an ephemeral one) on {@code host}, which must be this node's address or
     * 0.0.0.0. Fails with the reason when the port is taken or the host is not ours.
     */
    public Future<UdpSocket> listen(int port, String host) {
        try {
            int h = Ipv4Address.parse(host);
            if (h != 0 && h != stack.address()) {
                return Future.failedFuture(new IllegalArgumentException("cannot listen on " + host + ": this node is "
                        + Ipv4Address.toString(stack.address()) + "; listen on it or on 0.0.0.0"));
            }
            bind(port);
            return Future.succeededFuture(this);
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
    }

    private synchronized void bind(int wanted) {
        if (closed) {
            throw new IllegalStateException("UDP socket is closed; create a new one");
        }
        if (port >= 0) {
            throw new IllegalStateException("UDP socket is already bound to port " + port);
        }
        port = stack.bindUdp(wanted, receiver);
    }

    /**
     * Sends {@code data} to {@code host}:{@code port}, binding an ephemeral port first if the socket
     * has none. When the destination's ring is full the datagram waits in order, without blocking the
     * caller, and is retried; once the ring has stayed full for {@link #SEND_TIMEOUT_MS} with nothing
     * sent, the Future fails.
     */
    public Future<Void> send(Buffer data, int port, String host) {
        try {
            int dst = Ipv4Address.parse(host);
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("UDP port " + port + " is outside 0..65535");
            }
            if (this.port < 0) {
                bind(0);
            }
            // Completed on the loop, heard on the socket's context.
            PendingSend p = new PendingSend(segmentOf(data), dst, port, host, ((ContextInternal) context).promise());
            boolean first;
            synchronized (pending) {
                pending.add(p);
                first = pending.size() == 1;
            }
            if (first) {
                stack.link().execute(sendPending); // a later send finds the queue non-empty: this run takes it too
            }
            return p.promise.future();
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
    }

    /** How long the destination ring may stay full, nothing of ours taken, before the datagram at the head fails. */
    public static final long SEND_TIMEOUT_MS = 1000;


    private record PendingSend(MemorySegment bytes, int destination, int port, String host, Promise<Void> promise) {
    }

    /** The buffer's bytes, in place when it is backed by an array (no copy); the caller must not change it. */
    private static MemorySegment segmentOf(Buffer data) {
        if (data instanceof BufferInternal bi && bi.getByteBuf().hasArray()) {
            ByteBuf b = bi.getByteBuf();
            return MemorySegment.ofArray(b.array()).asSlice(b.arrayOffset() + b.readerIndex(), b.readableBytes());
        }
        return MemorySegment.ofArray(data.getBytes());
    }

    /** Tries once without waiting; completes the promise unless the ring is full (then returns false). */
    private boolean trySend(PendingSend p) {
        int length = (int) p.bytes.byteSize();
        // No wait on the loop: a full ring is retried from a timer, so the loop goes on receiving meanwhile.
        int rc = stack.sendUdp(this.port, p.destination, p.port, p.bytes, 0, length, 0);
        if (rc == FabricDevice.BACK_PRESSURED) {
            long now = System.nanoTime();
            if (blockedSince == 0) {
                blockedSince = now;
            }
            if (now - blockedSince < SEND_TIMEOUT_MS * 1_000_000L) {
                return false;
            }
        }
        blockedSince = 0; // sent, or failed for good: the next datagram gets its own second
        if (rc == SendStatus.OK) {
            p.promise.complete();
        } else {
            p.promise.fail(new IOException("UDP send of " + length + " bytes to " + p.host + ":" + p.port
                    + " failed: " + SendStatus.describe(rc)));
        }
        return true;
    }

    /** On the loop: sends what is queued, in order; a full ring is tried again on the loop's next round. */
    private void sendPending() {
        synchronized (pending) {
            while (!pending.isEmpty() && trySend(pending.peek())) {
                pending.poll();
            }
            if (pending.isEmpty()) {
                return;
            }
        }
        Datapath d = stack.link().datapath();
        if (d != null && d.isRunning()) {
            d.post(sendPending); // after the loop's next poll, as NAPI would
        } else {
            vertx.setTimer(1, id -> stack.link().execute(sendPending)); // no loop: the caller polls, give it time
        }
    }

    public Future<Void> send(String text, int port, String host) {
        return send(Buffer.buffer(text), port, host);
    }

    /** The bound port, or -1. */
    public int localPort() {
        return port;
    }

    public String localHost() {
        return Ipv4Address.toString(stack.address());
    }

    /** Unbinds; the end handler is called. Datagrams still queued are dropped. */
    public Future<Void> close() {
        synchronized (this) {
            if (closed) {
                return Future.succeededFuture();
            }
            closed = true;
            if (port >= 0) {
                stack.unbindUdp(port, receiver);
            }
        }
        queue.clear();
        queued.set(0);
        context.runOnContext(v -> {
            Handler<Void> h = endHandler;
            if (h != null) {
                h.handle(null);
            }
        });
        return Future.succeededFuture();
    }

    @Override
    public UdpSocket handler(Handler<UdpDatagram> handler) {
        this.handler = handler;
        scheduleDrain();
        return this;
    }

    @Override
    public UdpSocket exceptionHandler(Handler<Throwable> handler) {
        this.exceptionHandler = handler;
        return this;
    }

    @Override
    public UdpSocket endHandler(Handler<Void> endHandler) {
        this.endHandler = endHandler;
        return this;
    }

    @Override
    public UdpSocket pause() {
        demand.set(0);
        return this;
    }

    @Override
    public UdpSocket resume() {
        demand.set(Long.MAX_VALUE);
        scheduleDrain();
        return this;
    }

    @Override
    public UdpSocket fetch(long amount) {
        if (amount < 0) {
            throw new IllegalArgumentException("fetch amount must not be negative: " + amount);
        }
        demand.accumulateAndGet(amount, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
        scheduleDrain();
        return this;
    }

    private void scheduleDrain() {
        if (!queue.isEmpty() && drainScheduled.compareAndSet(false, true)) {
            context.runOnContext(v -> drain());
        }
    }

    /** On the socket's context: hands queued datagrams to the handler while there is demand. */
    private void drain() {
        drainScheduled.set(false);
        while (true) {
            Handler<UdpDatagram> h = handler;
            if (h == null || closed) {
                return;
            }
            long d = demand.get();
            if (d == 0) {
                return;
            }
            UdpDatagram next = queue.poll();
            if (next == null) {
                break;
            }
            queued.decrementAndGet();
            if (d != Long.MAX_VALUE) {
                demand.decrementAndGet();
            }
            try {
                h.handle(next);
            } catch (RuntimeException e) {
                reportError(e);
            }
        }
        scheduleDrain(); // a datagram may have come between the last poll and clearing the flag
    }

    private void reportError(Throwable t) {
        Handler<Throwable> h = exceptionHandler;
        if (h == null) {
            h = context.exceptionHandler(); // the context's, as Vert.x reports unhandled failures
        }
        if (h != null) {
            h.handle(t);
        }
    }

    /** On the datapath thread: copy out of ring memory, queue, and wake the context. */
    private final class Receiver implements UdpReceiver {
        @Override
        public void onDatagram(int sourceAddress, int sourcePort, int destinationAddress, MemorySegment data, long offset,
                               int length) {
            if (queued.get() >= receiveQueueLimit) {
                stack.countReceiveQueueDrop();
                return;
            }
            byte[] bytes = new byte[length];
            MemorySegment.copy(data, offset, MemorySegment.ofArray(bytes), 0, length);
            Buffer b = BufferInternal.buffer(Unpooled.wrappedBuffer(bytes)); // one copy, out of the ring
            queued.incrementAndGet();
            queue.add(new UdpDatagram(Ipv4Address.toString(sourceAddress), sourcePort, b));
            scheduleDrain();
        }

        @Override
        public void onIcmpError(int type, int code, int destination, int port) {
            String what = type == IcmpHeader.TYPE_DESTINATION_UNREACHABLE && code == IcmpHeader.UNREACHABLE_PORT
                    ? "port unreachable" : "ICMP type " + type + " code " + code;
            IOException e = new IOException(what + " from " + Ipv4Address.toString(destination) + ":" + port);
            context.runOnContext(v -> reportError(e));
        }
    }
}
