package dev.nupa.transport;

import java.net.BindException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.NotYetConnectedException;
import java.util.concurrent.TimeUnit;

import dev.nupa.tcp.BufferUnavailableException;
import dev.nupa.tcp.TcpConnection;
import dev.nupa.tcp.TcpError;
import dev.nupa.tcp.TcpState;
import io.netty.buffer.ByteBuf;
import io.netty.channel.AbstractChannel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.channel.FileRegion;
import io.netty.channel.IoRegistration;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.channel.socket.ChannelOutputShutdownException;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.util.concurrent.Future;

/**
 * A Netty {@link SocketChannel} over a fabric {@link TcpConnection}, for Vert.x's NetSocket, HTTP and
 * gRPC. Everything happens on the channel's event loop, which is the node's datapath: the
 * connection's events (established, readable, writable, peer closed, closed) call the channel
 * directly, and the channel calls the connection directly.
 *
 * <p>Reading follows Netty's rules: bytes are taken out of the connection's receive buffer only
 * while reading is asked for (auto-read, or a {@code read()}); otherwise they stay there and the
 * receive window closes, which is how a slow reader throttles the writer end to end. Writing moves
 * the outbound buffer into the send buffer as room allows and resumes when the connection says it
 * is writable; the outbound buffer's water marks give Vert.x its {@code writeQueueFull}. A {@link FileRegion}
 * (Vert.x's {@code sendFile}) is read into the send buffer as it has room ({@link RegionSink}), goes on once a
 * third of it is free, reports its progress and is released once sent, as epoll's sendfile path does.
 *
 * <p>Closing sends a FIN after the queued data and the channel is closed at once: the connection
 * finishes closing in its layer (FIN-WAIT, TIME-WAIT) without the channel. SO_LINGER 0 sends a reset
 * instead; SO_LINGER above 0 completes the close once the peer acknowledged every byte and the FIN, or
 * after that many seconds, as a kernel's close() returns then. The
 * peer's FIN closes the channel, or with ALLOW_HALF_CLOSURE shuts its input down; writes already
 * flushed that wait for room in the send buffer go into it first (a kernel socket closed this way
 * still sends what it holds), so an echo's last bytes are not lost. A reset reaches the
 * pipeline as {@code SocketException("Connection reset")}, a refused connect as
 * {@link ConnectException}, an unanswered one as {@link ConnectTimeoutException}.
 */
public final class NupaSocketChannel extends AbstractChannel implements SocketChannel {
    private static final ChannelMetadata METADATA = new ChannelMetadata(false, 16);

    private enum State { OPEN, CONNECTING, CONNECTED, CLOSED }

    private final NupaSocketChannelConfig config;
    private final ConnectionEvents events = new ConnectionEvents();
    private FabricStack stack;
    private IoRegistration registration;
    private TcpConnection connection;
    private volatile State state = State.OPEN;
    private volatile boolean inputShutdown;
    private volatile boolean outputShutdown;
    private ChannelPromise connectPromise;
    private Future<?> connectTimeout;
    private InetSocketAddress remote;
    private InetSocketAddress local;
    /** Reading was asked for (auto-read or read()) and not yet satisfied. */
    private boolean readRequested;
    /** Inside {@link #readNow}: a read asked for meanwhile is taken by its loop. */
    private boolean reading;
    /** The send buffer was full: the connection's next writable event flushes. */
    private boolean flushPending;
    /** A write found no TCP buffer memory: the retry that writes once some may be back. */
    private Future<?> memoryRetry;
    /** How soon a write that found no buffer memory looks again. */
    private static final long MEMORY_RETRY_MS = 10;
    private static final long MAX_MEMORY_RETRY_MS = 1000;
    private long memoryRetryMs;
    /** The peer's FIN came while writes waited for room in the send buffer: close once they are in it. */
    private boolean closeWhenFlushed;
    private final BufMemory readMemory = new BufMemory();
    private final BufMemory writeMemory = new BufMemory();
    private final PartsSink parts = new PartsSink(writeMemory);
    private final RegionSink regions = new RegionSink(writeMemory);
    /** The send buffer was full while a file region was being written: it resumes as Linux wakes a writer. */
    private boolean regionWaiting;

    /** A client channel: connected by {@code connect}. */
    public NupaSocketChannel() {
        super(null);
        config = new NupaSocketChannelConfig(this);
    }

    /** A connection the {@code parent} listener accepted (on the loop); registered on the same loop. */
    NupaSocketChannel(NupaServerSocketChannel parent, FabricStack stack, TcpConnection c) {
        super(parent);
        config = new NupaSocketChannelConfig(this);
        this.stack = stack;
        this.connection = c;
        this.state = State.CONNECTED;
        config.adopt(c.config());
        addresses(c);
        stack.tcp().setEvents(c, events);
    }

    /** The connection's addresses; a remote address the connect was given keeps its host name ({@link Addresses#remote}). */
    private void addresses(TcpConnection c) {
        local = Addresses.inet(c.localIp(), c.localPort());
        remote = Addresses.remote(remote, c.remoteIp(), c.remotePort());
    }

    @Override
    public ServerSocketChannel parent() {
        return (ServerSocketChannel) super.parent();
    }

    @Override
    public NupaSocketChannelConfig config() {
        return config;
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    public boolean isOpen() {
        return state != State.CLOSED;
    }

    @Override
    public boolean isActive() {
        return state == State.CONNECTED;
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) super.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return (InetSocketAddress) super.remoteAddress();
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected SocketAddress remoteAddress0() {
        return remote;
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new NupaUnsafe();
    }

    /**
     * Netty asks this as it registers the channel, on the registering thread. An accepted connection whose
     * listener's loop (the node's primary) registers it on another loop of the node moves there now: the
     * primary hands it off, and that loop takes it in as it registers the channel ({@link #doRegister}).
     * The listener hands out connections at the end of the loop's round, so none is in the middle of a segment.
     */
    @Override
    protected boolean isCompatible(EventLoop loop) {
        if (!NupaIoHandle.compatible(loop, NupaUnsafe.class)) {
            return false;
        }
        FabricStack to = NupaEventLoop.stackOf(loop);
        if (stack == null || connection == null || to == stack) {
            return true;
        }
        if (to == null || !stack.sameNode(to) || !stack.link().isOwner()) {
            return false; // another node's loop, or not from the loop that has the connection
        }
        stack.tcp().handOff(connection, to.tcp());
        stack = to;
        if (readDue) {
            readDue = false; // the primary's round end skips it now (FabricStack.endRound): its new loop reads
            readAfterRegister = true;
        }
        return true;
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        NupaIoHandle.register(eventLoop(), (NupaUnsafe) unsafe(), promise, r -> {
            FabricStack s = r.attachment();
            if (stack != null && stack != s) {
                r.cancel();
                throw new IllegalStateException("a connection of " + stack + " cannot move to the event loop of " + s
                        + "; connections move only from the node's primary loop, as Vert.x registers them");
            }
            registration = r;
            stack = s;
            if (connection != null) {
                s.tcp().adoptArrivals(); // a connection handed from the primary loop is this loop's from here on
            }
            if (readAfterRegister) {
                readAfterRegister = false;
                readAtRoundEnd(); // after the registration ends, with the pipeline in place
            }
        });
    }

    FabricStack stack() {
        return stack;
    }

    @Override
    protected void doDeregister() {
        registration = NupaIoHandle.cancel(registration);
    }

    /**
     * bind(2) before a connect: the local address (one of the node's, 127.0.0.1 for loopback destinations, or
     * 0.0.0.0) and port (0: an ephemeral one) the connection leaves from; refused as Linux refuses it, with a
     * {@link BindException}.
     */
    @Override
    protected void doBind(SocketAddress localAddress) throws BindException {
        InetSocketAddress a = Addresses.check(localAddress);
        int ip = Addresses.ipv4(a);
        try {
            stack.tcp().checkBindable(ip, a.getPort());
        } catch (IllegalArgumentException e) {
            throw new BindException(e.getMessage());
        }
        bindIp = ip;
        bindPort = a.getPort();
    }

    /** What {@link #doBind} chose: the connection's local address and port (0: chosen at connect). */
    private int bindIp;
    private int bindPort;

    @Override
    protected void doDisconnect() {
        doClose();
    }

    @Override
    protected void doClose() {
        readMemory.clear();
        writeMemory.clear();
        State was = state;
        state = State.CLOSED;
        cancelConnectTimeout();
        ChannelPromise p = connectPromise;
        if (p != null) {
            connectPromise = null;
            p.tryFailure(new ClosedChannelException());
        }
        TcpConnection c = connection;
        if (c != null && lingering) {
            connection = null; // closed when the linger began; the layer may have reused the object since
            return;
        }
        if (c != null && was != State.CLOSED) {
            // It finishes closing in its layer, without the channel, which lets go of it here: once closed,
            // the layer reuses the object for another connection.
            connection = null;
            stack.tcp().setEvents(c, null);
            long now = System.nanoTime();
            if (config.getSoLinger() == 0 && c.state() != TcpState.CLOSED) {
                c.abort(now); // RFC 9293 3.10.5 ABORT: a reset, queued data dropped
            } else {
                c.close(now);
            }
        }
    }

    @Override
    protected void doShutdownOutput() {
        outputShutdown = true;
        TcpConnection c = connection;
        if (c != null) {
            c.shutdownOutput(System.nanoTime());
        }
    }

    @Override
    protected void doBeginRead() {
        if (state != State.CONNECTED || inputShutdown) {
            return;
        }
        readRequested = true;
        readNow();
    }

    /**
     * Hands what the receive buffer holds to the pipeline, a batch per read asked for (every batch
     * while auto-read is on); then the peer's FIN. A {@code read()} from a handler during a batch
     * only marks the request: a later message of the batch, or the loop here, answers it, rather
     * than a nested read.
     */
    private void readNow() {
        TcpConnection c = connection;
        if (reading || c == null) {
            return;
        }
        reading = true;
        try {
            while (readRequested && state == State.CONNECTED && !inputShutdown) {
                if (c.readable() == 0) {
                    if (c.atEnd()) {
                        peerClosed();
                    }
                    return;
                }
                readBatch(c);
                if (config.isAutoRead()) {
                    readRequested = true; // unless a handler paused the channel meanwhile
                }
            }
        } finally {
            reading = false;
        }
    }

    private void readBatch(TcpConnection c) {
        RecvByteBufAllocator.Handle h = unsafe().recvBufAllocHandle();
        h.reset(config);
        ChannelPipeline p = pipeline();
        long now = System.nanoTime();
        do {
            int available = c.readable();
            if (available == 0) {
                break;
            }
            ByteBuf buf = h.allocate(alloc());
            int n = Math.min(available, buf.writableBytes());
            readMemory.of(buf, buf.writerIndex(), n);
            int got = c.read(readMemory.segment(), readMemory.offset(), n, now);
            buf.writerIndex(buf.writerIndex() + got);
            h.lastBytesRead(got);
            h.incMessagesRead(1);
            // Each message answers the read asked for so far; a read() from its handler asks for more,
            // which the next message of this batch answers in turn (as Netty's own transports count it).
            readRequested = false;
            p.fireChannelRead(buf);
        } while (h.continueReading() && state == State.CONNECTED && !inputShutdown);
        h.readComplete();
        p.fireChannelReadComplete();
    }

    /**
     * Closes from the transport's side (the peer's FIN or reset, a failed connect), through the unsafe
     * as Netty's own transports do: a handler that intercepts close() (Vert.x delays an application's
     * close to finish a WebSocket or HTTP/2 handshake) must not hold up a connection that is gone.
     */
    private void closeNow() {
        unsafe().close(unsafe().voidPromise());
    }

    /** The peer's FIN, after every byte before it was read: close, or shut the input down (half-closure). */
    private void peerClosed() {
        if (config.isAllowHalfClosure()) {
            inputShutdown = true;
            pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            pipeline().fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
            if (outputShutdown) {
                closeNow();
            }
        } else if (flushPending) {
            // Writes the application made before the FIN still wait for room in the send buffer: they go first,
            // as a closed kernel socket still sends what it holds (Netty would fail them at this close).
            inputShutdown = true;
            closeWhenFlushed = true;
        } else {
            closeNow();
        }
    }

    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (msg instanceof ByteBuf || msg instanceof FileRegion) {
            return msg;
        }
        throw new UnsupportedOperationException("a fabric TCP channel writes ByteBufs and FileRegions, not "
                + msg.getClass().getName());
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        TcpConnection c = connection;
        if (state != State.CONNECTED) {
            throw state == State.CLOSED ? new ClosedChannelException() : new NotYetConnectedException();
        }
        if (outputShutdown) {
            throw new ChannelOutputShutdownException("output of " + this + " was shut down");
        }
        // An empty buffer at the front needs no memory and is done at once, as epoll's doWriteSingle does: Vert.x
        // flushes one before it closes, and that close must not wait for send memory the connection never uses.
        while (in.current() instanceof ByteBuf b && b.readableBytes() == 0) {
            in.remove();
        }
        if (memoryRetry != null) {
            flushPending = true; // waiting for buffer memory: the retry writes (no exception per write meanwhile)
            return;
        }
        if (in.current() != null && !c.sendBufferReady() && c.sendBufferFitsBound()) {
            waitForMemory(in);
            return;
        }
        // Every buffer of the flush is queued first and sent by one poll, as epoll's gathering write hands the
        // kernel all of them at once: HTTP/2's frames of one call leave as one segment, not one each. A further
        // flush in the same turn of the loop waits for the turn's end (sendDue): a burst of small messages (Vert.x's
        // event bus writes and flushes each) leaves as full segments too.
        boolean queued = false;
        try {
            while (true) {
                Object msg = in.current();
                if (msg == null) {
                    flushPending = false;
                    regionWaiting = false;
                    return;
                }
                if (msg instanceof FileRegion region) {
                    // As epoll's writeFileRegion: what fits now, its progress reported; removed (released) once whole.
                    if (region.transferred() < region.count() && c.writable() > 0) {
                        long n = regions.take(c, region, stack);
                        if (n > 0) {
                            queued = true;
                            in.progress(n);
                        }
                    }
                    if (region.transferred() >= region.count()) {
                        in.remove();
                        stack.regionSent();
                        continue;
                    }
                    flushPending = true; // the send buffer is full: onWritable goes on with the region
                    regionWaiting = true;
                    return;
                }
                regionWaiting = false;
                ByteBuf buf = (ByteBuf) msg;
                int readable = buf.readableBytes();
                if (readable == 0) {
                    in.remove();
                    continue;
                }
                int n;
                if (buf.nioBufferCount() > 1) {
                    n = parts.take(c, buf, Math.min(readable, c.writable()));
                } else {
                    writeMemory.of(buf, buf.readerIndex(), readable);
                    n = c.queue(writeMemory.segment(), writeMemory.offset(), readable);
                }
                if (n > 0) {
                    queued = true;
                    in.removeBytes(n);
                    memoryRetryMs = 0; // the send buffer had memory
                }
                if (n < readable) {
                    flushPending = true; // the send buffer is full: onWritable flushes the rest
                    return;
                }
            }
        } catch (BufferUnavailableException e) {
            if (e.neverFits()) {
                throw e; // a send buffer larger than the bound ever gives: the write fails with the remedy
            }
            waitForMemory(in);
        } finally {
            if (queued) {
                if (flushTurn != stack.turn()) {
                    flushTurn = stack.turn();
                    c.poll(System.nanoTime()); // the turn's first flush to this connection leaves at once
                } else {
                    sendAtTurnEnd();
                }
            }
        }
    }

    /**
     * The node's TCP buffers are at their bound (Linux's tcp_mem hard limit): the data stays in the outbound
     * buffer, whose high-water mark turns the channel unwritable (Vert.x's writeQueueFull) as more is written,
     * as a Linux writer waits for memory in sk_stream_wait_memory rather than failing; the write is tried again
     * shortly, once other connections may have given memory back.
     */
    private void waitForMemory(ChannelOutboundBuffer in) {
        flushPending = true;
        if (memoryRetry == null) {
            // Tries again after 10 ms, doubling to 1 s while none comes: thousands of waiting writers stay cheap.
            memoryRetryMs = Math.min(MAX_MEMORY_RETRY_MS, memoryRetryMs == 0 ? MEMORY_RETRY_MS : memoryRetryMs * 2);
            memoryRetry = eventLoop().schedule(() -> {
                memoryRetry = null;
                if (flushPending && state == State.CONNECTED) {
                    ((NupaUnsafe) unsafe()).flushNow();
                }
            }, memoryRetryMs, TimeUnit.MILLISECONDS);
        }
    }

    private void cancelConnectTimeout() {
        Future<?> t = connectTimeout;
        if (t != null) {
            connectTimeout = null;
            t.cancel(false);
        }
    }

    // ---- DuplexChannel ----------------------------------------------------------------------------

    @Override
    public boolean isInputShutdown() {
        return inputShutdown || !isActive();
    }

    @Override
    public ChannelFuture shutdownInput() {
        return shutdownInput(newPromise());
    }

    @Override
    public ChannelFuture shutdownInput(ChannelPromise promise) {
        onLoop(() -> {
            inputShutdown = true; // what arrives is left unread; the window closes
            promise.trySuccess();
        });
        return promise;
    }

    @Override
    public boolean isOutputShutdown() {
        return outputShutdown || !isActive();
    }

    @Override
    public ChannelFuture shutdownOutput() {
        return shutdownOutput(newPromise());
    }

    @Override
    public ChannelFuture shutdownOutput(ChannelPromise promise) {
        onLoop(() -> ((AbstractUnsafe) unsafe()).shutdownOutput(promise));
        return promise;
    }

    @Override
    public boolean isShutdown() {
        return (inputShutdown && outputShutdown) || !isActive();
    }

    @Override
    public ChannelFuture shutdown() {
        return shutdown(newPromise());
    }

    @Override
    public ChannelFuture shutdown(ChannelPromise promise) {
        ChannelPromise out = newPromise();
        out.addListener(f -> shutdownInput(promise));
        return shutdownOutput(out);
    }

    private void onLoop(Runnable r) {
        if (eventLoop().inEventLoop()) {
            r.run();
        } else {
            eventLoop().execute(r);
        }
    }

    // ---- the connection's events (on the loop) ----------------------------------------------------

    private final class ConnectionEvents implements TcpConnection.Events {
        @Override
        public void onEstablished(TcpConnection c) {
            if (state != State.CONNECTING) {
                return;
            }
            cancelConnectTimeout();
            addresses(c);
            state = State.CONNECTED;
            ChannelPromise p = connectPromise;
            connectPromise = null;
            boolean promised = p == null || p.trySuccess();
            pipeline().fireChannelActive();
            if (!promised) {
                closeNow(); // the connect was cancelled meanwhile
            }
        }

        @Override
        public void onReadable(TcpConnection c) {
            readAtRoundEnd();
        }

        @Override
        public void onPeerClosed(TcpConnection c) {
            readAtRoundEnd(); // the FIN is heard after the bytes before it (roundEnd)
        }

        @Override
        public void onWritable(TcpConnection c) {
            // A file region waiting for room goes on once the free space is at least half of what is queued, as
            // Linux wakes a writer (sk_stream_is_writeable), so its file is read in large pieces, not one per ACK.
            if (flushPending && (!regionWaiting || c.writable() >= c.unacknowledged() / 2)) {
                ((NupaUnsafe) unsafe()).flushNow();
            }
            if (closeWhenFlushed && !flushPending && state == State.CONNECTED) {
                closeNow();
            }
        }

        @Override
        public void onClosed(TcpConnection c, TcpError error) {
            if (readDue) {
                roundEnd(); // bytes that came before the reset still reach the pipeline first
            }
            if (state == State.CLOSED) {
                return;
            }
            if (state == State.CONNECTING) {
                ChannelPromise p = connectPromise;
                connectPromise = null;
                cancelConnectTimeout();
                if (p != null) {
                    p.tryFailure(SocketErrors.connectFailed(error, remote));
                }
                closeNow();
                return;
            }
            if (error != null) {
                pipeline().fireExceptionCaught(SocketErrors.failed(error, remote));
            }
            closeNow();
        }
    }

    /**
     * The stack's turn of the channel's last flush that sent at once: its later flushes in that turn wait in its stack's
     * list of sends due at the turn's end, so a burst of small writes leaves as full segments (as Linux's autocorking
     * holds small writes while the socket's last segment is still queued), while a connection written once a turn (a
     * response to a request) sends at once, nothing more, and requests and answers of many connections still overlap.
     */
    private long flushTurn = -1;
    /** Set while the channel waits in its stack's list of sends due at the end of the turn. */
    private boolean sendDue;

    /** Bytes were queued by a second flush in the turn: they go with the turn's end. */
    private void sendAtTurnEnd() {
        if (!sendDue) {
            sendDue = true;
            stack.sendAtTurnEnd(this);
        }
    }

    /** The end of the loop's turn: the connection sends what was queued (closed since: its close sent it). */
    void sendNow(long now) {
        sendDue = false;
        TcpConnection c = connection;
        if (c != null) {
            c.poll(now);
        }
    }

    /** Set while the channel waits in its stack's list of reads due at the end of the round. */
    private boolean readDue;
    /** Bytes came before the channel was registered (it was moving to its loop): it reads once registered. */
    private boolean readAfterRegister;

    /**
     * Auto-read went off (pause): the read it asked for is withdrawn, so nothing more is read until {@code read()}, as
     * epoll clears EPOLLIN (AbstractEpollChannel.clearEpollIn); from another thread, on the loop unless it came back on.
     */
    void autoReadCleared() {
        if (!isRegistered()) {
            return; // nothing asked for yet: doBeginRead asks once active
        }
        if (eventLoop().inEventLoop()) {
            readRequested = false;
        } else {
            eventLoop().execute(() -> {
                if (!config.isAutoRead()) {
                    readRequested = false;
                }
            });
        }
    }

    /** Bytes or the peer's FIN arrived: read once the round's frames are all in (one read for a batch of segments). */
    private void readAtRoundEnd() {
        if (!readDue) {
            readDue = true;
            stack.readAtRoundEnd(this);
        }
    }

    /** The end of the round: read what arrived, then hear the peer's FIN if nothing is left unread. */
    void roundEnd() {
        if (!readDue) {
            return; // already read, ahead of a reset (onClosed)
        }
        readDue = false;
        if (!isRegistered()) {
            readAfterRegister = true; // moving to its loop: the pipeline is not in place yet
            return;
        }
        TcpConnection c = connection;
        if (c == null || state != State.CONNECTED) {
            return;
        }
        readNow();
        if (!reading && state == State.CONNECTED && !inputShutdown && c.readable() == 0 && c.atEnd()) {
            // Nothing left unread: the FIN is heard without a read asked for, as epoll's EPOLLRDHUP
            // tells Netty's native transport (after unread bytes it waits for them to be read).
            peerClosed();
        }
    }

    /** SO_LINGER above 0: the connection was closed in {@link NupaUnsafe#prepareToClose}, and the channel waits. */
    private boolean lingering;

    /**
     * Runs {@code close} (the rest of the channel's close) once every byte and the FIN were acknowledged, or at
     * {@code deadline}; a connection the layer reused meanwhile (another generation) had closed already.
     */
    private void lingerThen(TcpConnection c, int generation, long deadline, Runnable close) {
        boolean reused = c.generation() != generation;
        TcpState st = reused ? TcpState.CLOSED : c.state();
        boolean acknowledged = st == TcpState.CLOSED || (st == TcpState.FIN_WAIT_2 || st == TcpState.TIME_WAIT)
                && c.unacknowledged() == 0;
        if (acknowledged || System.nanoTime() - deadline >= 0) {
            close.run();
        } else {
            eventLoop().schedule(() -> lingerThen(c, generation, deadline, close), LINGER_CHECK_MS, TimeUnit.MILLISECONDS);
        }
    }

    /** How often a lingering close looks whether its FIN was acknowledged (no event says so). */
    private static final long LINGER_CHECK_MS = 1;

    private final class NupaUnsafe extends AbstractUnsafe implements NupaIoHandle {
        /**
         * SO_LINGER above 0 (socket(7)): the close completes once every byte and the FIN were acknowledged, or
         * after that many seconds, as a kernel's close() returns then; the connection goes on closing either
         * way. The wait runs on the event loop without blocking it, through the executor Netty's close hands
         * the rest of the close to.
         */
        @Override
        protected java.util.concurrent.Executor prepareToClose() {
            int linger = config.getSoLinger();
            TcpConnection c = connection;
            if (linger <= 0 || c == null || state != State.CONNECTED) {
                return null;
            }
            lingering = true;
            int generation = c.generation();
            long deadline = System.nanoTime() + linger * 1_000_000_000L;
            stack.tcp().setEvents(c, null); // it finishes closing in its layer, without the channel
            c.close(System.nanoTime());
            return close -> lingerThen(c, generation, deadline, close);
        }

        @Override
        public void connect(SocketAddress remoteAddress, SocketAddress localAddress, ChannelPromise promise) {
            if (!promise.setUncancellable() || !ensureOpen(promise)) {
                return;
            }
            try {
                if (connectPromise != null) {
                    throw new ConnectionPendingException();
                }
                if (state == State.CONNECTED) {
                    throw new AlreadyConnectedException();
                }
                InetSocketAddress r = Addresses.check(remoteAddress);
                if (localAddress != null) {
                    doBind(localAddress);
                }
                remote = r;
                connection = stack.tcp().connect(bindIp, bindPort, Addresses.ipv4(r), r.getPort(),
                        config.tcpConfig(stack.tcp().defaults()), events, System.nanoTime());
                local = Addresses.inet(connection.localIp(), connection.localPort());
                if (state == State.OPEN) { // an event during connect() may have settled it already
                    state = State.CONNECTING;
                    connectPromise = promise;
                    int ms = config.getConnectTimeoutMillis();
                    if (ms > 0) {
                        connectTimeout = eventLoop().schedule(() -> {
                            ChannelPromise p = connectPromise;
                            if (p != null && p.tryFailure(new ConnectTimeoutException("connection timed out after " + ms
                                    + " ms: " + r))) {
                                closeNow();
                            }
                        }, ms, TimeUnit.MILLISECONDS);
                    }
                }
            } catch (Throwable t) {
                if (t instanceof java.io.UncheckedIOException u) {
                    t = u.getCause(); // the layer's NoRouteToHostException, as a kernel's connect(2) fails at once
                }
                promise.tryFailure(annotateConnectException(t, remoteAddress));
                closeIfClosed();
            }
        }

        void flushNow() {
            flush0();
        }

        @Override
        public void closeNow() {
            close(voidPromise());
        }
    }

    @Override
    public String toString() {
        return "NupaSocketChannel[" + (local != null ? local : "unbound") + " -> " + (remote != null ? remote : "?") + ", "
                + state + "]";
    }
}
