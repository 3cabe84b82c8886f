package dev.nupa.transport;

import java.net.InetSocketAddress;
import java.net.SocketAddress;

import io.netty.channel.AbstractChannel;
import io.netty.channel.Channel;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.IoRegistration;

/**
 * What the NUPA channels that are no connection (a UDP socket, a TCP listener) share: the stack of the loop they
 * are registered with (the registration's attachment), their local address once bound, and whether they are open.
 */
abstract class NupaChannel extends AbstractChannel {
    /** The stack of the loop the channel is registered with; set as it registers. */
    protected FabricStack stack;
    private IoRegistration registration;
    protected volatile InetSocketAddress local;
    protected volatile boolean open = true;

    protected NupaChannel(Channel parent) {
        super(parent);
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) super.localAddress();
    }

    @Override
    protected SocketAddress localAddress0() {
        return local;
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return NupaIoHandle.compatible(loop, NupaIoHandle.class);
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        NupaIoHandle.register(eventLoop(), (NupaIoHandle) unsafe(), promise, r -> {
            registration = r;
            stack = r.attachment();
        });
    }

    @Override
    protected void doDeregister() {
        registration = NupaIoHandle.cancel(registration);
    }
}
