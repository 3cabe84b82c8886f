package dev.nupa.roce.vertx;

import dev.nupa.roce.AsyncEvent;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.WorkCompletion;
import io.reactivex.rxjava3.core.BackpressureStrategy;
import io.reactivex.rxjava3.core.Flowable;

/** RxJava 3 views of verbs objects: a completion queue's completion channel and a context's async events as {@link Flowable}s. */
public final class RdmaRx {
    private RdmaRx() {
    }

    /**
     * The completions of {@code cq} as they arrive ({@code ibv_get_cq_event} in the manner of a stream):
     * on each completion event the queue is drained into copies, emitted on the context's thread, and
     * the event re-armed. Completions already queued at subscription are emitted first. Subscribe on
     * the context's thread; the queue must not be polled by anyone else meanwhile.
     */
    public static Flowable<WorkCompletion> completions(CompletionQueue cq) {
        return Flowable.create(emitter -> {
            WorkCompletion wc = new WorkCompletion();
            Runnable drain = () -> {
                try {
                    while (!emitter.isCancelled() && cq.poll(wc)) {
                        emitter.onNext(wc.copy());
                    }
                } catch (RdmaException e) {
                    emitter.onError(e); // an overrun: the stream ends with the reason
                }
            };
            cq.onEvent(() -> {
                drain.run();
                if (!emitter.isCancelled()) {
                    cq.requestNotify(false);
                }
            });
            emitter.setCancellable(() -> cq.onEvent(null));
            drain.run();
            cq.requestNotify(false);
        }, BackpressureStrategy.BUFFER);
    }

    /**
     * The asynchronous events of {@code ctx} ({@code ibv_get_async_event} in the manner of a stream), emitted on the
     * context's thread from its poll; events already queued at subscription are emitted first. Subscribe on the
     * context's thread; nobody else may take its events ({@link RdmaContext#pollAsyncEvent}) meanwhile, and one
     * subscriber at a time (a second replaces the first's handler).
     */
    public static Flowable<AsyncEvent> asyncEvents(RdmaContext ctx) {
        return Flowable.create(emitter -> {
            Runnable drain = () -> {
                for (AsyncEvent e; !emitter.isCancelled() && (e = ctx.pollAsyncEvent()) != null; ) {
                    emitter.onNext(e);
                }
            };
            ctx.onAsyncEvent(drain);
            emitter.setCancellable(() -> ctx.onAsyncEvent(null));
            drain.run();
        }, BackpressureStrategy.BUFFER);
    }
}
