package dev.nupa.roce;

import dev.nupa.roce.transport.Completions;
import dev.nupa.roce.verbs.AsyncEventType;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.WorkCompletion;

/**
 * A completion queue ({@code ibv_cq}): work completions in the order the transport produced them,
 * held in preallocated arrays so neither producing nor {@link #poll polling} allocates.
 *
 * <p>A queue that fills up has overrun (IBA 11.4.2.1: a CQ error): the completion that did not fit
 * is counted, the queue reports it on the next poll with an exception, raises CQ_ERR ({@link AsyncEvent}) once, and
 * the QPs that feed it are moved to the error state, so no completion goes missing silently. Size it for the work in
 * flight.
 *
 * <p>Notification ({@code ibv_req_notify_cq}): after {@link #requestNotify} the {@link #onEvent} handler
 * runs once, on the context's thread, when the next completion arrives.
 */
public final class CompletionQueue implements AutoCloseable {
    final RdmaContext context;
    /** The entries, which the transport pushes to. */
    final Completions completions;
    /** The completion channel its events go to, or null. */
    final CompChannel channel;
    /** Events {@link CompChannel#getCqEvent} returned for it, and those acknowledged ({@link #ackCqEvents}). */
    long eventsTaken;
    private long eventsAcked;
    int users;
    boolean closed;

    CompletionQueue(RdmaContext context, int cqe, CompChannel channel) {
        this.context = context;
        this.completions = new Completions(context.device, cqe);
        this.channel = channel;
        completions.onError = () -> context.raise(AsyncEvent.of(AsyncEventType.CQ_ERR, this));
        if (channel != null) {
            channel.users++;
            completions.onEvent(() -> channel.fire(this));
        }
    }

    /** The completion channel it reports its events to ({@code ibv_cq}'s channel), or null. */
    public CompChannel channel() {
        return channel;
    }

    public int capacity() {
        return completions.capacity();
    }

    /** Completions waiting to be polled. */
    public int size() {
        return completions.size();
    }

    /** Completions that did not fit (each one an overrun). */
    public long overruns() {
        return completions.overruns();
    }

    /**
     * Fills up to {@code max} of {@code wcs} with the oldest completions; returns how many
     * ({@code ibv_poll_cq}). Throws RdmaException once the queue has overrun.
     */
    public int poll(WorkCompletion[] wcs, int max) {
        context.checkThread();
        int n = 0;
        while (n < Math.min(max, wcs.length) && poll(wcs[n])) {
            n++;
        }
        return n;
    }

    /** Polls the oldest completion into {@code wc}; returns whether there was one. Throws once the queue has overrun. */
    public boolean poll(WorkCompletion wc) {
        context.checkThread();
        Completions c = completions;
        if (c.overruns() != 0) {
            throw new RdmaException("completion queue overrun: " + c.overruns() + " completion(s) did not fit its " + c.capacity()
                    + " entries and its QPs were moved to ERR; create the queue with more entries");
        }
        return c.poll(wc);
    }

    /** Arms the event handler for the next completion (or the next solicited one). */
    public void requestNotify(boolean solicitedOnly) {
        context.checkThread();
        completions.requestNotify(solicitedOnly);
    }

    /** The handler {@link #requestNotify} arms; it runs on the context's thread. Not for a queue of a completion channel. */
    public void onEvent(Runnable handler) {
        context.checkThread();
        if (channel != null) {
            throw new RdmaException("this completion queue reports its events to its completion channel; take them with"
                    + " CompChannel.getCqEvent, or create the queue without a channel to set a handler");
        }
        completions.onEvent(handler);
    }

    /**
     * Acknowledges {@code n} of the events {@link CompChannel#getCqEvent} returned for this queue ({@code
     * ibv_ack_cq_events}); the queue can be destroyed once every event taken is acknowledged. Throws for more than
     * were taken and not yet acknowledged.
     */
    public void ackCqEvents(int n) {
        context.checkThread();
        if (n < 0 || n > eventsTaken - eventsAcked) {
            throw new RdmaException("cannot acknowledge " + n + " events: " + (eventsTaken - eventsAcked)
                    + " taken with getCqEvent are not acknowledged yet");
        }
        eventsAcked += n;
    }

    /** Destroys the queue ({@code ibv_destroy_cq}); throws while QPs use it. */
    @Override
    public void close() {
        context.checkThread();
        if (users > 0) {
            throw new RdmaException("completion queue still feeds " + users + " queue pair(s); destroy them first");
        }
        if (eventsTaken != eventsAcked) {
            // ibv_destroy_cq(3) waits until every event taken is acknowledged; on the one thread that would never end.
            throw new RdmaException("completion queue has " + (eventsTaken - eventsAcked)
                    + " event(s) taken with getCqEvent and not acknowledged; call ackCqEvents first");
        }
        if (!closed) {
            closed = true;
            context.cqs--;
            if (channel != null) {
                channel.users--;
                channel.forget(this); // events not taken yet go with it
            }
        }
    }
}
