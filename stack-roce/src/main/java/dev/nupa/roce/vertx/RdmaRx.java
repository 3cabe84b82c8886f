package dev.nupa.roce.vertx;

import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.WorkCompletion;
import io.reactivex.rxjava3.core.BackpressureStrategy;
import io.reactivex.rxjava3.core.Flowable;

/** RxJava 3 views of verbs objects: a completion queue's completion channel as a {@link Flowable}. */
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
}
