package dev.nupa.ip;

import java.util.concurrent.atomic.AtomicBoolean;

import io.reactivex.rxjava3.core.Completable;
import io.reactivex.rxjava3.core.Flowable;
import io.vertx.core.Future;
import io.vertx.core.streams.ReadStream;

/**
 * RxJava 3 adapters for the stack's streams: a {@link ReadStream} as a {@link Flowable} whose
 * {@code request(n)} becomes {@code fetch(n)} (so back-pressure reaches the socket's receive queue),
 * and a Vert.x {@link Future} as a {@link Completable}.
 */
public final class RxStreams {
    private RxStreams() {
    }

    /**
     * A cold Flowable over {@code stream}: subscribing pauses the stream and installs its handlers;
     * items flow only as requested; cancelling pauses it and removes the handlers. One subscriber at a time.
     */
    public static <T> Flowable<T> toFlowable(ReadStream<T> stream) {
        return Flowable.unsafeCreate(subscriber -> {
            AtomicBoolean done = new AtomicBoolean();
            stream.pause();
            stream.handler(item -> {
                if (!done.get()) {
                    subscriber.onNext(item);
                }
            });
            stream.exceptionHandler(t -> {
                if (done.compareAndSet(false, true)) {
                    stream.handler(null);
                    subscriber.onError(t);
                }
            });
            stream.endHandler(v -> {
                if (done.compareAndSet(false, true)) {
                    subscriber.onComplete();
                }
            });
            subscriber.onSubscribe(new org.reactivestreams.Subscription() {
                @Override
                public void request(long n) {
                    if (n <= 0) {
                        if (done.compareAndSet(false, true)) {
                            subscriber.onError(new IllegalArgumentException("§3.9: request(" + n + ") must be positive"));
                        }
                        return;
                    }
                    stream.fetch(n);
                }

                @Override
                public void cancel() {
                    if (done.compareAndSet(false, true)) {
                        stream.pause();
                        stream.handler(null);
                    }
                }
            });
        });
    }

    /** A UDP socket's datagrams as a Flowable with request-n back-pressure. */
    public static Flowable<UdpDatagram> datagrams(UdpSocket socket) {
        return toFlowable(socket);
    }

    /** A Future as a Completable (a write, a send, a close). */
    public static Completable completable(Future<?> future) {
        return Completable.create(emitter -> future.onComplete(r -> {
            if (r.succeeded()) {
                emitter.onComplete();
            } else {
                emitter.onError(r.cause());
            }
        }));
    }
}
