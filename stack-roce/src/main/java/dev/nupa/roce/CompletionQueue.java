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
    int users;
    boolean closed;

    CompletionQueue(RdmaContext context, int cqe) {
        this.context = context;
        this.completions = new Completions(context.device, cqe);
        completions.onError = () -> context.raise(AsyncEvent.of(AsyncEventType.CQ_ERR, this));
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

    /** The handler {@link #requestNotify} arms; it runs on the context's thread. */
    public void onEvent(Runnable handler) {
        context.checkThread();
        completions.onEvent(handler);
    }

    /** Destroys the queue ({@code ibv_destroy_cq}); throws while QPs use it. */
    @Override
    public void close() {
        context.checkThread();
        if (users > 0) {
            throw new RdmaException("completion queue still feeds " + users + " queue pair(s); destroy them first");
        }
        if (!closed) {
            closed = true;
            context.cqs--;
        }
    }
}
