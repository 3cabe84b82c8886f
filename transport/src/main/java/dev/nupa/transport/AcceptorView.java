package dev.nupa.transport;

import java.util.Iterator;
import java.util.concurrent.TimeUnit;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.AbstractEventExecutorGroup;
import io.netty.util.concurrent.DefaultPromise;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.Promise;

/**
 * Vert.x's acceptor group, as the node's primary event loop (its first, which peers send to): listeners
 * are registered there. Shutting it down ends only the view: Vert.x shuts its
 * acceptor group down first and then goes on with work on its event loops, so the loop itself is
 * shut down with the event-loop group, after that.
 */
final class AcceptorView extends AbstractEventExecutorGroup implements EventLoopGroup {
    private final EventLoopGroup loops;
    private final Promise<Void> terminated = new DefaultPromise<>(GlobalEventExecutor.INSTANCE);

    AcceptorView(EventLoopGroup loops) {
        this.loops = loops;
    }

    @Override
    public EventLoop next() {
        return (EventLoop) loops.iterator().next(); // the group's first child drives the primary stack
    }

    @Override
    public Iterator<EventExecutor> iterator() {
        return java.util.List.<EventExecutor>of(next()).iterator();
    }

    @Override
    public ChannelFuture register(Channel channel) {
        return next().register(channel);
    }

    @Override
    public ChannelFuture register(ChannelPromise promise) {
        return next().register(promise);
    }

    @Override
    @Deprecated
    public ChannelFuture register(Channel channel, ChannelPromise promise) {
        return next().register(channel, promise);
    }

    @Override
    public boolean isShuttingDown() {
        return terminated.isDone();
    }

    @Override
    public Future<?> shutdownGracefully(long quietPeriod, long timeout, TimeUnit unit) {
        terminated.trySuccess(null);
        return terminated;
    }

    @Override
    public Future<?> terminationFuture() {
        return terminated;
    }

    @Override
    @Deprecated
    public void shutdown() {
        shutdownGracefully();
    }

    @Override
    public boolean isShutdown() {
        return terminated.isDone();
    }

    @Override
    public boolean isTerminated() {
        return terminated.isDone();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        return terminated.await(timeout, unit);
    }
}
