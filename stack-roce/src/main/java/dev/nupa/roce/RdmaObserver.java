package dev.nupa.roce;

import dev.nupa.roce.verbs.CompletionObserver;
import dev.nupa.roce.verbs.SendWorkRequest;

/**
 * What an {@link RdmaContext} tells an observer that keeps metrics or traces ({@link RdmaContext#setObserver}): the
 * signaled send requests posted and the send completions, with the context's clock. Called on the context's thread
 * in the middle of a post or a completion, so an implementation copies the few values it needs into memory it owns
 * (the request object is the caller's and reused) and builds anything costly elsewhere. Without an observer the
 * context calls nothing.
 */
public interface RdmaObserver extends CompletionObserver {
    /** A signaled send request ({@code wr}) was posted on {@code qp}; it completes with a send completion. */
    default void posted(QueuePair qp, SendWorkRequest wr, long now) {
    }
}
