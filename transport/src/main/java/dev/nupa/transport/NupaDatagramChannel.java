package dev.nupa.transport;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketAddress;
import java.net.SocketException;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;

import dev.nupa.device.FabricDevice;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.SendStatus;
import dev.nupa.ip.UdpReceiver;
import io.netty.buffer.ByteBuf;
import io.netty.channel.AddressedEnvelope;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.DatagramPacket;

/**
 * A Netty {@link DatagramChannel} over a UDP port of the node's {@link Ipv4Stack}, for Vert.x's
 * DatagramSocket. Datagrams are copied once out of ring memory into a buffer from the channel's
 * allocator and handed to the pipeline as {@link DatagramPacket}s while reading is asked for; while
 * it is not, up to SO_RCVBUF bytes of them wait, and further ones are dropped and counted
 * ({@code UDP_RCVBUF_ERRORS}). A send that finds the destination ring full is tried again on the
 * loop's next round (never waiting on the loop), and fails once the ring has stayed full for
 * {@link #SEND_TIMEOUT_NS}. An unbound channel binds an ephemeral port on its first send.
 */
public final class NupaDatagramChannel extends NupaChannel implements DatagramChannel {
    private static final ChannelMetadata METADATA = new ChannelMetadata(true, 16);
    /** How long the destination ring may stay full before the datagram at the head fails. */
    static final long SEND_TIMEOUT_NS = 1_000_000_000L;

    private final NupaDatagramChannelConfig config = new NupaDatagramChannelConfig(this);
    private final Receiver receiver = new Receiver();
    private final ArrayDeque<DatagramPacket> waiting = new ArrayDeque<>();
    private final Runnable retry = this::retryFlush;
    private final BufMemory sendMemory = new BufMemory();
    private final BufMemory receiveMemory = new BufMemory();
    private final SenderAddresses senders = new SenderAddresses();
    private int port = -1;
    private int waitingBytes;
    private boolean readRequested;
    private boolean retryPosted;
    private long blockedSince;

    public NupaDatagramChannel() {
        super(null);
    }

    @Override
    public NupaDatagramChannelConfig config() {
        return config;
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    public boolean isActive() {
        return open && (local != null || (config.activeOnRegistration() && isRegistered()));
    }

    @Override
    public boolean isConnected() {
        return false;
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
        return new DatagramUnsafe();
    }

    @Override
    protected void doBind(SocketAddress localAddress) throws BindException {
        InetSocketAddress a = Addresses.check(localAddress);
        Ipv4Stack ip = stack.ip();
        int addr = Addresses.local(ip, a, "bind to");
        boundIp = addr;
        bind(a.getPort());
    }

    /** The one local address the socket receives on (127.0.0.1: only what the node sends itself), or 0 for all. */
    private int boundIp;

    private void bind(int wanted) {
        if (port >= 0) {
            throw new IllegalStateException("UDP channel is already bound to port " + port);
        }
        port = stack.ip().bindUdp(wanted, receiver, config.isReuseAddress(), config.reusePort());
        local = Addresses.inet(boundIp != 0 ? boundIp : stack.ip().address(), port);
    }

    @Override
    protected void doDisconnect() {
        doClose();
    }

    @Override
    protected void doClose() {
        if (!open) {
            return;
        }
        open = false;
        if (port >= 0) {
            stack.ip().unbindUdp(port, receiver);
        }
        leaveAll();
        for (DatagramPacket p = waiting.poll(); p != null; p = waiting.poll()) {
            p.release();
        }
        waitingBytes = 0;
    }

    @Override
    protected void doBeginRead() {
        readRequested = true;
        while (readRequested && !waiting.isEmpty()) {
            DatagramPacket p = waiting.poll();
            waitingBytes -= p.content().readableBytes();
            deliver(p);
            readRequested = config.isAutoRead(); // a read() asks for one
        }
    }

    private void deliver(DatagramPacket p) {
        pipeline().fireChannelRead(p);
        pipeline().fireChannelReadComplete();
    }

    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (msg instanceof DatagramPacket) {
            return msg;
        }
        if (msg instanceof AddressedEnvelope<?, ?> e && e.content() instanceof ByteBuf && e.recipient() instanceof InetSocketAddress) {
            return msg;
        }
        throw new UnsupportedOperationException("a fabric UDP channel sends DatagramPackets (or addressed ByteBufs), not "
                + msg.getClass().getName());
    }

    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        if (!open) {
            throw new ClosedChannelException();
        }
        if (port < 0) {
            bind(0); // as a socket does on its first sendto()
        }
        Ipv4Stack ip = stack.ip();
        while (true) {
            Object msg = in.current();
            if (msg == null) {
                return;
            }
            @SuppressWarnings("unchecked")
            AddressedEnvelope<ByteBuf, InetSocketAddress> e = (AddressedEnvelope<ByteBuf, InetSocketAddress>) msg;
            ByteBuf buf = e.content();
            InetSocketAddress to = Addresses.check(e.recipient());
            int length = buf.readableBytes();
            if (!config.isBroadcast() && ip.isBroadcast(Addresses.ipv4(to))) {
                // Linux refuses it with EACCES unless SO_BROADCAST is set (ip(7)).
                in.remove(new SocketException("Permission denied: " + to + " is a broadcast address; set SO_BROADCAST"
                        + " (DatagramSocketOptions.setBroadcast(true)) to send to it"));
                continue;
            }
            sendMemory.of(buf, buf.readerIndex(), length);
            int rc = ip.sendUdp(port, Addresses.ipv4(to), to.getPort(), sendMemory.segment(), sendMemory.offset(), length, 0,
                    !config.isLoopbackModeDisabled());
            if (rc == FabricDevice.BACK_PRESSURED) {
                long now = System.nanoTime();
                if (blockedSince == 0) {
                    blockedSince = now;
                }
                if (now - blockedSince < SEND_TIMEOUT_NS) {
                    if (!retryPosted) {
                        retryPosted = true;
                        stack.datapath().post(retry); // after the loop's next poll of the rings
                    }
                    return;
                }
            }
            blockedSince = 0;
            if (rc == SendStatus.OK || rc == SendStatus.NO_NEIGHBOR || rc == FabricDevice.PEER_DOWN) {
                // An address of the fabric's subnet that no live node holds is Linux's on-link host that never answers
                // ARP: its sendto(2) succeeds, the datagram is dropped when resolution fails, and only a connected socket
                // or IP_RECVERR hears of it (udp(7)). IP counted it (OUT_NO_ROUTES, OUT_DISCARDS).
                in.remove();
            } else {
                in.remove(new IOException("UDP send of " + length + " bytes to " + to + " failed: " + SendStatus.describe(rc)));
            }
        }
    }

    private void retryFlush() {
        retryPosted = false;
        if (open) {
            ((DatagramUnsafe) unsafe()).flushNow();
        }
    }

    /** On the loop: datagrams for this port, and ICMP errors about what it sent. */
    private final class Receiver implements UdpReceiver {
        @Override
        public void onDatagram(int sourceAddress, int sourcePort, int destinationAddress, MemorySegment data, long offset,
                               int length) {
            if (!open) {
                return;
            }
            if (boundIp != 0 && destinationAddress != boundIp) {
                stack.ip().countNoPort(); // bound to another of the node's addresses: no socket here, as on Linux
                return;
            }
            if (!readRequested && waitingBytes + length > config.getReceiveBufferSize()) {
                stack.ip().countReceiveQueueDrop();
                return;
            }
            ByteBuf buf = alloc().buffer(length);
            // The one copy, out of the ring; into a heap buffer's array as it is (a fresh array each datagram: a segment
            // over it would be one more object each).
            if (buf.hasArray()) {
                MemorySegment.copy(data, ValueLayout.JAVA_BYTE, offset, buf.array(), buf.arrayOffset(), length);
            } else {
                receiveMemory.of(buf, 0, length);
                MemorySegment.copy(data, offset, receiveMemory.segment(), receiveMemory.offset(), length);
            }
            buf.writerIndex(length);
            DatagramPacket p = new DatagramPacket(buf, local, senders.of(sourceAddress, sourcePort));
            if (readRequested) {
                deliver(p);
                if (!config.isAutoRead()) {
                    readRequested = false;
                }
            } else {
                waiting.add(p);
                waitingBytes += length;
            }
        }

        @Override
        public void onIcmpError(int type, int code, int destination, int port) {
            // Counted by IP (ICMP_IN_DEST_UNREACHS and the like), not raised: the channel is never connected, and Linux
            // passes ICMP errors to an unconnected UDP socket only with IP_RECVERR (RFC 1122 4.1.3.3 asks that they
            // reach the application, which cannot tell here which of its datagrams drew one). Raising it would also
            // end the socket: Vert.x closes a channel on any exception, where on Linux the socket goes on.
        }
    }

    // ---- multicast: groups joined on the node, membership published in the fabric (Ipv4Stack.joinGroup) ---------

    /** The groups this socket joined (left when it closes, as a kernel drops a closed socket's memberships). */
    private final java.util.List<Integer> joined = new java.util.ArrayList<>();

    /**
     * Joins or leaves {@code group} on the loop; the interface is the fabric whatever is named (a node has one); a
     * source-specific membership (RFC 4607) is refused with the reason.
     */
    private ChannelFuture membership(InetAddress group, InetAddress source, boolean join, ChannelPromise promise) {
        if (source != null) {
            return promise.setFailure(new UnsupportedOperationException("source-specific multicast (" + source
                    + ") is not supported on the fabric; join " + group.getHostAddress() + " without a source"));
        }
        if (!(group instanceof java.net.Inet4Address)) {
            return promise.setFailure(new IllegalArgumentException("the fabric speaks IPv4 only; " + group.getHostAddress()
                    + " is not an IPv4 multicast group (224.0.0.0/4)"));
        }
        int g = Addresses.ipv4(new InetSocketAddress(group, 0));
        Runnable r = () -> {
            try {
                if (join) {
                    stack.ip().joinGroup(g);
                    joined.add(g);
                } else if (joined.remove((Integer) g)) {
                    stack.ip().leaveGroup(g);
                }
                promise.setSuccess();
            } catch (RuntimeException e) {
                promise.setFailure(e);
            }
        };
        if (!isRegistered()) {
            return promise.setFailure(new IllegalStateException("register the channel before joining a group"));
        }
        if (eventLoop().inEventLoop()) {
            r.run();
        } else {
            eventLoop().execute(r);
        }
        return promise;
    }

    /** Leaves what the socket joined; on the loop, as it closes. */
    private void leaveAll() {
        for (int g : joined) {
            stack.ip().leaveGroup(g);
        }
        joined.clear();
    }

    @Override
    public ChannelFuture joinGroup(InetAddress group) {
        return joinGroup(group, newPromise());
    }

    @Override
    public ChannelFuture joinGroup(InetAddress group, ChannelPromise promise) {
        return membership(group, null, true, promise);
    }

    @Override
    public ChannelFuture joinGroup(InetSocketAddress group, NetworkInterface ni) {
        return joinGroup(group, ni, newPromise());
    }

    @Override
    public ChannelFuture joinGroup(InetSocketAddress group, NetworkInterface ni, ChannelPromise promise) {
        return membership(group.getAddress(), null, true, promise);
    }

    @Override
    public ChannelFuture joinGroup(InetAddress group, NetworkInterface ni, InetAddress source) {
        return joinGroup(group, ni, source, newPromise());
    }

    @Override
    public ChannelFuture joinGroup(InetAddress group, NetworkInterface ni, InetAddress source, ChannelPromise promise) {
        return membership(group, source, true, promise);
    }

    @Override
    public ChannelFuture leaveGroup(InetAddress group) {
        return leaveGroup(group, newPromise());
    }

    @Override
    public ChannelFuture leaveGroup(InetAddress group, ChannelPromise promise) {
        return membership(group, null, false, promise);
    }

    @Override
    public ChannelFuture leaveGroup(InetSocketAddress group, NetworkInterface ni) {
        return leaveGroup(group, ni, newPromise());
    }

    @Override
    public ChannelFuture leaveGroup(InetSocketAddress group, NetworkInterface ni, ChannelPromise promise) {
        return membership(group.getAddress(), null, false, promise);
    }

    @Override
    public ChannelFuture leaveGroup(InetAddress group, NetworkInterface ni, InetAddress source) {
        return leaveGroup(group, ni, source, newPromise());
    }

    @Override
    public ChannelFuture leaveGroup(InetAddress group, NetworkInterface ni, InetAddress source, ChannelPromise promise) {
        return membership(group, source, false, promise);
    }

    /** Source filtering (RFC 4607) is not supported. */
    private ChannelFuture noSourceFilter(ChannelPromise promise) {
        return promise.setFailure(new UnsupportedOperationException("blocking a multicast source is not supported on the"
                + " fabric; filter by sender in the handler"));
    }

    @Override
    public ChannelFuture block(InetAddress group, NetworkInterface ni, InetAddress source) {
        return block(group, ni, source, newPromise());
    }

    @Override
    public ChannelFuture block(InetAddress group, NetworkInterface ni, InetAddress source, ChannelPromise promise) {
        return noSourceFilter(promise);
    }

    @Override
    public ChannelFuture block(InetAddress group, InetAddress source) {
        return block(group, source, newPromise());
    }

    @Override
    public ChannelFuture block(InetAddress group, InetAddress source, ChannelPromise promise) {
        return noSourceFilter(promise);
    }

    private final class DatagramUnsafe extends AbstractUnsafe implements NupaIoHandle {
        @Override
        public void connect(SocketAddress remote, SocketAddress localAddress, ChannelPromise promise) {
            promise.setFailure(new UnsupportedOperationException("connected UDP channels are not supported on the fabric; "
                    + "send DatagramPackets with their recipient"));
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
        return "NupaDatagramChannel[" + (local != null ? local : "unbound") + (open ? "" : ", closed") + "]";
    }
}
