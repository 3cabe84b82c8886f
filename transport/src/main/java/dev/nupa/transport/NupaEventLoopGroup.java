package dev.nupa.transport;

import java.util.Iterator;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadFactory;

import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;

/** A fabric node's event loops: one {@link NupaEventLoop} per stack of the node, the primary first. */
final class NupaEventLoopGroup extends MultiThreadIoEventLoopGroup {
    NupaEventLoopGroup(NupaStack node, ThreadFactory threads) {
        // Netty makes the loops in its constructor, before this class's fields are set: the node comes as an argument.
        super(node.stacks().size(), threads, NupaEventLoopGroup::noHandler, new Stacks(node));
    }

    /** Not used: each loop makes its handler over its own stack ({@link #newChild}). */
    private static io.netty.channel.IoHandler noHandler(io.netty.util.concurrent.ThreadAwareExecutor loop) {
        throw new IllegalStateException("a NUPA event loop makes its handler over its stack");
    }

    @Override
    protected IoEventLoop newChild(Executor executor, IoHandlerFactory unused, Object... args) {
        Stacks s = (Stacks) args[0];
        return new NupaEventLoop(this, executor, s.node, s.next.next());
    }

    /** The node's stacks, handed to the loops in order. */
    private static final class Stacks {
        final NupaStack node;
        final Iterator<FabricStack> next;

        Stacks(NupaStack node) {
            this.node = node;
            this.next = node.stacks().iterator();
        }
    }
}
