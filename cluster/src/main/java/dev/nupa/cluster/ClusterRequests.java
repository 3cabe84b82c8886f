package dev.nupa.cluster;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;
import java.time.Duration;

/**
 * A request to a consumer that another member registered a moment ago. A consumer's registration reaches the other
 * members through the cluster manager's registry asynchronously (docs/cluster.md), so a request sent right after a
 * member joined may find no handler there yet (NO_HANDLERS) although one exists: this asks again, every 20 ms of a
 * Vert.x timer, until a handler answers or {@code within} has passed. Any other failure ends it at once.
 */
public final class ClusterRequests {
    private static final long RETRY_MS = 20;

    private ClusterRequests() {
    }

    /** The reply to {@code body} sent to {@code address}, once a consumer there is known to this member. */
    public static <T> Future<Message<T>> requestOnceKnown(Vertx vertx, String address, Object body, Duration within) {
        Promise<Message<T>> reply = Promise.promise();
        attempt(vertx, address, body, System.nanoTime() + within.toNanos(), reply);
        return reply.future();
    }

    private static <T> void attempt(Vertx vertx, String address, Object body, long deadline, Promise<Message<T>> reply) {
        vertx.eventBus().<T>request(address, body).onComplete(ar -> {
            if (ar.succeeded()) {
                reply.complete(ar.result());
            } else if (ar.cause() instanceof ReplyException e && e.failureType() == ReplyFailure.NO_HANDLERS
                    && System.nanoTime() - deadline < 0) {
                vertx.setTimer(RETRY_MS, id -> attempt(vertx, address, body, deadline, reply));
            } else {
                reply.fail(ar.cause());
            }
        });
    }
}
