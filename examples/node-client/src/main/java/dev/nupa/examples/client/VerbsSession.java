package dev.nupa.examples.client;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.nupa.node.verbs.VerbsEvent;
import dev.nupa.node.verbs.VerbsGrpcClient;
import dev.nupa.node.verbs.VerbsRequest;
import dev.nupa.node.verbs.WorkCompletion;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.net.SocketAddress;
import io.vertx.core.streams.WriteStream;
import io.vertx.grpc.client.GrpcClient;

/**
 * The client side of a Verbs {@code Session} call: requests numbered, each answer matched to its request by id,
 * work completions queued apart as they arrive. The session's resources live as long as the call.
 */
final class VerbsSession {
    private final Map<Long, Promise<VerbsEvent>> waiting = new ConcurrentHashMap<>();
    private final LinkedBlockingQueue<WorkCompletion> completions = new LinkedBlockingQueue<>();
    private final AtomicLong ids = new AtomicLong();
    private final WriteStream<VerbsRequest> requests;

    private VerbsSession(WriteStream<VerbsRequest> requests) {
        this.requests = requests;
    }

    static VerbsSession open(GrpcClient grpc, SocketAddress endpoint) {
        Promise<WriteStream<VerbsRequest>> opened = Promise.promise();
        Promise<VerbsSession> session = Promise.promise();
        VerbsGrpcClient.create(grpc, endpoint).session(opened).onSuccess(answers -> session.future().onSuccess(s -> answers.handler(e -> {
            if (e.getKindCase() == VerbsEvent.KindCase.COMPLETION) {
                s.completions.add(e.getCompletion());
            } else {
                Promise<VerbsEvent> p = s.waiting.remove(e.getId());
                if (p != null) {
                    p.complete(e);
                }
            }
        })));
        VerbsSession s = new VerbsSession(opened.future().await());
        session.complete(s);
        return s;
    }

    /** Sends a request; the Future completes with its answer, or fails with the node's reason. */
    Future<VerbsEvent> send(VerbsRequest.Builder request) {
        long id = ids.incrementAndGet();
        Promise<VerbsEvent> answer = Promise.promise();
        waiting.put(id, answer);
        requests.write(request.setId(id).build());
        return answer.future().compose(e -> e.getKindCase() == VerbsEvent.KindCase.FAILED
                ? Future.failedFuture(new IllegalStateException(e.getFailed().getMessage())) : Future.succeededFuture(e));
    }

    /** Sends a request and waits for its answer. */
    VerbsEvent call(VerbsRequest.Builder request) {
        try {
            return send(request).await(10, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("no answer within 10 s to " + request.getOpCase(), e);
        }
    }

    /** The next work completion of the session's queues (waits up to 10 s). */
    WorkCompletion completion() {
        try {
            WorkCompletion wc = completions.poll(10, TimeUnit.SECONDS);
            if (wc == null) {
                throw new IllegalStateException("no work completion within 10 s");
            }
            return wc;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for a completion", e);
        }
    }

    /** Ends the call: the node releases the session's resources. */
    void end() {
        requests.end();
    }
}
