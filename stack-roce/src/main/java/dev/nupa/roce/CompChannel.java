package dev.nupa.roce;

import dev.nupa.roce.verbs.RdmaException;

/**
 * A completion channel ({@code ibv_comp_channel}, ibv_create_comp_channel(3)): the completion queues created with it
 * ({@link RdmaContext#createCq(int, CompChannel)}) report their completion events here. Arm a queue with {@link
 * CompletionQueue#requestNotify}; when its next completion arrives the queue is put on the channel, and {@link
 * #getCqEvent} returns it ({@code ibv_get_cq_event}); acknowledge each event taken with {@link
 * CompletionQueue#ackCqEvents} ({@code ibv_ack_cq_events}) before destroying the queue. As every verb, on the context's
 * thread; {@link #getCqEvent} does not block (the channel's file in O_NONBLOCK mode): it returns null when no queue has
 * fired, and the caller polls again after the context's next poll.
 */
public final class CompChannel implements AutoCloseable {
    final RdmaContext context;
    /** Queues whose event fired and was not taken yet, oldest first (a queue may be in it once per arming). */
    private final java.util.ArrayDeque<CompletionQueue> fired = new java.util.ArrayDeque<>();
    int users;
    boolean closed;

    CompChannel(RdmaContext context) {
        this.context = context;
    }

    /** Called by a queue of this channel whose armed event fired (on the context's thread, as the completion arrives). */
    void fire(CompletionQueue cq) {
        fired.add(cq);
    }

    /** Drops the events of {@code cq}, which is being destroyed, that were not taken yet. */
    void forget(CompletionQueue cq) {
        fired.removeIf(q -> q == cq);
    }

    /**
     * The queue whose completion event fired longest ago and was not taken yet, or null ({@code ibv_get_cq_event} on a
     * non-blocking channel: EAGAIN). Each event returned must be acknowledged with {@link CompletionQueue#ackCqEvents}.
     * The queue is not armed again: call {@code requestNotify} for its next event.
     */
    public CompletionQueue getCqEvent() {
        context.checkThread();
        if (closed) {
            throw new RdmaException("completion channel is destroyed");
        }
        CompletionQueue cq = fired.poll();
        if (cq != null) {
            cq.eventsTaken++;
        }
        return cq;
    }

    /** Destroys the channel ({@code ibv_destroy_comp_channel}); throws while completion queues use it. */
    @Override
    public void close() {
        context.checkThread();
        if (users > 0) {
            throw new RdmaException("completion channel still serves " + users + " completion queue(s); destroy them first");
        }
        closed = true;
    }
}
