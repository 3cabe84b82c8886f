package dev.nupa.transport;

import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.ThreadLocalRandom;

import dev.nupa.ip.Ipv4Stack;
import dev.nupa.tcp.TcpConnection;
import dev.nupa.tcp.TcpLayer;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.socket.ServerSocketChannel;

/**
 * A Netty {@link ServerSocketChannel} over a fabric TCP listener: bind listens on the node's
 * {@link TcpLayer} (port 0: a free ephemeral port), and every connection the listener accepts, once
 * established, becomes a {@link NupaSocketChannel} handed to the pipeline while accepting is asked
 * for (auto-read), queued otherwise.
 */
public final class NupaServerSocketChannel extends NupaChannel implements ServerSocketChannel {
    /** As Netty's AbstractServerChannel: no disconnect; up to 16 connections handed out per read. */
    private static final ChannelMetadata METADATA = new ChannelMetadata(false, 16);
    private final NupaServerSocketChannelConfig config = new NupaServerSocketChannelConfig(this);
    private final ArrayDeque<NupaSocketChannel> accepted = new ArrayDeque<>();
    private boolean acceptRequested;

    public NupaServerSocketChannel() {
        super(null);
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    public NupaServerSocketChannelConfig config() {
        return config;
    }

    @Override
    public boolean isActive() {
        return open && local != null;
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return null;
    }

    @Override
    protected SocketAddress remoteAddress0() {
        return null;
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new ServerUnsafe();
    }

    /** A listener writes nothing and disconnects from nothing (as Netty's AbstractServerChannel). */
    @Override
    protected void doDisconnect() {
        throw new UnsupportedOperationException("a listening channel has no peer to disconnect from");
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) {
        throw new UnsupportedOperationException("a listening channel writes nothing; write to the connections it accepts");
    }

    @Override
    protected Object filterOutboundMessage(Object msg) {
        throw new UnsupportedOperationException("a listening channel writes nothing; write to the connections it accepts");
    }

    @Override
    protected void doBind(SocketAddress localAddress) throws BindException {
        InetSocketAddress a = Addresses.check(localAddress);
        Ipv4Stack ip = stack.ip();
        int addr = Addresses.local(ip, a, "listen on");
        TcpLayer tcp = stack.tcp();
        int port = a.getPort() != 0 ? a.getPort() : freePort(tcp);
        if (tcp.isListening(port)) {
            throw new BindException("Address already in use: TCP port " + port + " already listens on this node;"
                    + " close that server or choose another port");
        }
        tcp.listen(addr, port, config.getBacklog(), config.acceptedTcpConfig(tcp.defaults()), this::onAccept);
        local = Addresses.inet(addr != 0 ? addr : ip.address(), port);
    }

    /** A free port in the ephemeral range (RFC 6335), from a random start. */
    private static int freePort(TcpLayer tcp) {
        int span = 65536 - Ipv4Stack.EPHEMERAL_FIRST;
        int start = ThreadLocalRandom.current().nextInt(span);
        for (int i = 0; i < span; i++) {
            int p = Ipv4Stack.EPHEMERAL_FIRST + (start + i) % span;
            if (!tcp.isListening(p)) {
                return p;
            }
        }
        throw new IllegalStateException("no free TCP port to listen on (all " + span + " ephemeral ports listen); give a port");
    }

    /** From the listener, on the loop: a connection is established. */
    private void onAccept(TcpConnection c) {
        if (!open) {
            c.abort(System.nanoTime());
            return;
        }
        accepted.add(new NupaSocketChannel(this, stack, c));
        if (acceptRequested && !acceptDue) {
            acceptDue = true;
            stack.acceptAtRoundEnd(this); // not in the middle of the connection's segment (see FabricStack.endRound)
        }
    }

    /** Set while the channel waits in its stack's list of listeners due at the end of the round. */
    private boolean acceptDue;

    /** The end of the round: hands out the connections accepted in it, if accepting is still asked for. */
    void roundEnd() {
        acceptDue = false;
        if (acceptRequested && open) {
            readAccepted();
        }
    }

    @Override
    protected void doBeginRead() {
        acceptRequested = true;
        readAccepted();
    }

    private void readAccepted() {
        if (accepted.isEmpty()) {
            return;
        }
        RecvByteBufAllocator.Handle h = unsafe().recvBufAllocHandle();
        h.reset(config);
        ChannelPipeline p = pipeline();
        do {
            NupaSocketChannel child = accepted.poll();
            if (child == null) {
                break;
            }
            h.incMessagesRead(1);
            p.fireChannelRead(child);
        } while (h.continueReading());
        h.readComplete();
        p.fireChannelReadComplete();
        acceptRequested = config.isAutoRead();
    }

    @Override
    protected void doClose() {
        if (!open) {
            return;
        }
        open = false;
        InetSocketAddress l = local;
        if (l != null && stack != null) {
            stack.tcp().unlisten(l.getPort());
        }
        for (NupaSocketChannel c = accepted.poll(); c != null; c = accepted.poll()) {
            c.unsafe().closeForcibly(); // never handed out: nobody else would close it
        }
    }

    private final class ServerUnsafe extends AbstractUnsafe implements NupaIoHandle {
        @Override
        public void connect(SocketAddress remote, SocketAddress local, ChannelPromise promise) {
            promise.setFailure(new UnsupportedOperationException("a listening channel does not connect"));
        }

        @Override
        public void closeNow() {
            close(voidPromise());
        }
    }

    @Override
    public String toString() {
        return "NupaServerSocketChannel[" + (local != null ? local : "unbound") + (open ? "" : ", closed") + "]";
    }
}
