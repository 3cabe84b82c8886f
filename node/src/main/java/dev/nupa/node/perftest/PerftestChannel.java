package dev.nupa.node.perftest;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.NetSocket;
import io.vertx.core.parsetools.RecordParser;

/**
 * perftest's TCP side channel over one of the node's sockets: reads of an exact size, one at a time (the socket
 * is paused between them, so nothing is read ahead), and {@link #exchange}, perftest's {@code ctx_xchg_data}: the
 * client writes, then reads; the server reads, then writes. Used on the socket's context.
 */
final class PerftestChannel implements PerftestSideChannel {
    private final NetSocket socket;
    private final boolean server;
    private final RecordParser parser;
    private Promise<Buffer> pending;
    private boolean ended;
    private Throwable failure;

    PerftestChannel(NetSocket socket, boolean server) {
        this.socket = socket;
        this.server = server;
        this.parser = RecordParser.newFixed(1, socket);
        parser.pause();
        parser.handler(b -> {
            Promise<Buffer> p = pending;
            pending = null;
            if (p != null) {
                p.complete(b);
            }
        });
        parser.exceptionHandler(e -> {
            failure = e;
            fail(e);
        });
        parser.endHandler(v -> {
            ended = true;
            fail(new IllegalStateException("the perftest peer closed the connection"));
        });
    }

    private void fail(Throwable e) {
        Promise<Buffer> p = pending;
        pending = null;
        if (p != null) {
            p.fail(e);
        }
    }

    /** The next {@code n} bytes the peer sends. */
    Future<Buffer> read(int n) {
        if (pending != null) {
            throw new IllegalStateException("one perftest read at a time");
        }
        if (failure != null) {
            return Future.failedFuture(failure);
        }
        if (ended) {
            return Future.failedFuture(new IllegalStateException("the perftest peer closed the connection"));
        }
        pending = Promise.promise();
        Future<Buffer> f = pending.future();
        parser.fixedSizeMode(n);
        parser.fetch(1);
        return f;
    }

    Future<Void> write(Buffer b) {
        return socket.write(b);
    }

    @Override
    public Future<Buffer> exchange(Buffer mine) {
        if (server) {
            return read(mine.length()).compose(theirs -> write(mine).map(theirs));
        }
        return write(mine).compose(v -> read(mine.length()));
    }

    /**
     * The end as perftest 6.x ends: each side writes {@code "done\0"}; ours goes, then the peer's is read (newer
     * perftest sends none and closes: its end of stream is as good), then the socket closes. Reading it first keeps
     * Linux from answering our close with a reset for unread data.
     */
    @Override
    public Future<Void> finish() {
        return write(PerftestWire.done())
                .compose(v -> read(PerftestWire.DONE_BYTES).map((Void) null).recover(e -> Future.succeededFuture()))
                .eventually(() -> socket.close());
    }

    @Override
    public void close() {
        socket.close();
    }

    @Override
    public boolean rdmaCm() {
        return false;
    }
}
