package dev.nupa.transport;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import dev.nupa.l2.Datapath;
import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoOps;
import io.netty.channel.IoRegistration;
import io.netty.util.concurrent.ThreadAwareExecutor;

/**
 * The event loop's I/O: each turn of a Netty {@code SingleThreadIoEventLoop} runs one round of the
 * node's {@link Datapath} (a batch of frames carried up the stack to the channels, the tasks handed
 * over, the due timers), sends what the channels queued in the turn (the reads' answers and the
 * loop's tasks' writes, together) and then, when it did nothing and the loop has no tasks, idles as the
 * datapath's {@link Datapath.Idle} says: spin, yield, then sleep on the fabric's armed interrupt
 * (the loop's own tasks count as work for it) until a frame, a timer, a scheduled task or {@link #wakeup} (a task from another thread). Stack and
 * application handlers thus run on one thread, to completion, with nothing handed between threads.
 */
final class NupaIoHandler implements IoHandler {
    private final ThreadAwareExecutor executor;
    private final NupaStack node;
    private final FabricStack stack;
    private final Set<NupaIoHandle> handles = new LinkedHashSet<>();
    private IoHandlerContext context;
    private final BooleanSupplier mayBlock = () -> context.canBlock();

    NupaIoHandler(ThreadAwareExecutor executor, NupaStack node, FabricStack stack) {
        this.executor = executor;
        this.node = node;
        this.stack = stack;
    }

    @Override
    public void initialize() {
        stack.datapath().drive(); // this thread owns the node from here on
    }

    @Override
    public int run(IoHandlerContext ctx) {
        Datapath d = stack.datapath();
        int work = stack.sendDue(); // what the loop's tasks wrote since the last turn
        long now = System.nanoTime();
        work += d.runOnce(now);
        work += stack.endRound();
        work += stack.sendDue(); // what the round's reads answered
        if (work == 0 && ctx.canBlock()) {
            context = ctx;
            d.idle(now, 0, ctx.delayNanos(now), mayBlock);
        }
        if (work == 0 && !ctx.canBlock()) {
            // The loop's own tasks run next (one handed over woke it, or one is due): work for the idle strategy.
            d.workDone(System.nanoTime());
        }
        if (ctx.shouldReportActiveIoTime()) {
            ctx.reportActiveIoTime(0);
        }
        return work;
    }

    @Override
    public void wakeup() {
        if (!executor.isExecutorThread(Thread.currentThread())) {
            stack.datapath().wakeup();
        }
    }

    @Override
    public void prepareToDestroy() {
        for (NupaIoHandle h : new ArrayList<>(handles)) {
            h.closeNow();
        }
        handles.clear();
    }

    @Override
    public void destroy() {
        stack.sendDue(); // the last tasks' writes
        node.closeLoop(stack); // on the loop's thread: the layers let go, the datapath runs what was handed over, the node leaves
    }

    @Override
    public IoRegistration register(IoHandle handle) {
        if (!(handle instanceof NupaIoHandle h)) {
            throw new IllegalArgumentException("a NUPA event loop serves NUPA channels only, not " + handle.getClass().getName()
                    + "; create channels through the NUPA transport (NupaVertx)");
        }
        if (!handles.add(h)) {
            throw new IllegalStateException("channel handle registered twice: " + h);
        }
        Registration r = new Registration(h);
        h.registered();
        return r;
    }

    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) {
        return NupaIoHandle.class.isAssignableFrom(handleType);
    }

    /** A channel's registration; its attachment is the node's stack. */
    private final class Registration implements IoRegistration {
        private final NupaIoHandle handle;
        private final AtomicBoolean canceled = new AtomicBoolean();

        Registration(NupaIoHandle handle) {
            this.handle = handle;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T> T attachment() {
            return (T) stack;
        }

        @Override
        public long submit(IoOps ops) {
            throw new UnsupportedOperationException("NUPA channels are driven by the stack's events, not by submitted ops");
        }

        @Override
        public boolean isValid() {
            return !canceled.get();
        }

        @Override
        public boolean cancel() {
            if (!canceled.compareAndSet(false, true)) {
                return false;
            }
            if (executor.isExecutorThread(Thread.currentThread())) {
                remove();
            } else {
                executor.execute(this::remove);
            }
            return true;
        }

        private void remove() {
            if (handles.remove(handle)) {
                handle.unregistered();
            }
        }
    }
}
