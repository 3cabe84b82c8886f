package dev.nupa.node.perftest;

import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;

/**
 * perftest's side channel, over which the two sides swap versions, sizes, QP details and reports: a TCP connection
 * ({@link PerftestChannel}) or, with {@code -R}, an RC connection made through the CM ({@link PerftestCmChannel}).
 * Used on the session's context.
 */
interface PerftestSideChannel {
    /** Sends {@code mine} and takes the peer's message of the same size, in the order of this side's role. */
    Future<Buffer> exchange(Buffer mine);

    /** The end as perftest ends the channel, once the last exchange is done. */
    Future<Void> finish();

    void close();

    /** Whether this is the rdma_cm channel, whose QP details are binary and whose data QP the CM connects. */
    boolean rdmaCm();
}
