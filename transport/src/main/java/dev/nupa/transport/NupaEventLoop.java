package dev.nupa.transport;

import java.util.concurrent.Executor;

import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.SingleThreadIoEventLoop;

/**
 * One event loop of a fabric node: Netty's I/O loop running {@link NupaIoHandler} over its {@link FabricStack},
 * which a channel finds here as Netty offers it a loop to register with.
 */
final class NupaEventLoop extends SingleThreadIoEventLoop {
    private final FabricStack stack;

    NupaEventLoop(IoEventLoopGroup parent, Executor executor, NupaStack node, FabricStack stack) {
        super(parent, executor, loop -> new NupaIoHandler(loop, node, stack));
        this.stack = stack;
    }

    /** The stack that NUPA event loop {@code loop} drives, or null if it is not one (or has ended). */
    static FabricStack stackOf(EventLoop loop) {
        return loop instanceof NupaEventLoop l && !l.isTerminated() ? l.stack : null;
    }
}
