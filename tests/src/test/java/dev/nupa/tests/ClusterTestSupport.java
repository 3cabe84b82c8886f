package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.ServerSocket;
import java.util.concurrent.TimeUnit;

import io.vertx.core.Vertx;
import io.vertx.core.eventbus.DeliveryOptions;
import io.vertx.core.eventbus.Message;
import io.vertx.core.eventbus.ReplyException;
import io.vertx.core.eventbus.ReplyFailure;

/** What the clustered event bus's tests share: a request and its reply, a free membership port, a killed member's end. */
final class ClusterTestSupport {
    private ClusterTestSupport() {
    }

    /** The reply's body to a request of {@code body} to {@code address}; throws if none comes within 10 s. */
    static String request(Vertx vertx, String address, String body) {
        try {
            return vertx.eventBus().<String>request(address, body).map(Message::body).await(10, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("no reply on " + address + " within 10 s", e);
        }
    }

    /** A TCP port free on this host now (for a member's cluster-manager port). */
    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /**
     * Requests {@code address} (a killed member's own) until it fails with NO_HANDLERS, as Vert.x on Linux does once
     * the cluster manager drops the member; until then a request times out (nobody answers). Nothing may answer it.
     * Returns the milliseconds it took; fails after 30 s (failure detection is 5 s).
     */
    static long untilNoHandlers(Vertx self, String address) throws Exception {
        DeliveryOptions shortWait = new DeliveryOptions().setSendTimeout(1000);
        long killed = System.nanoTime();
        ReplyFailure last = null;
        while (last != ReplyFailure.NO_HANDLERS) {
            try {
                Message<String> m = self.eventBus().<String>request(address, "x", shortWait).await(10, TimeUnit.SECONDS);
                fail("a killed member answered: " + m.body());
            } catch (ReplyException e) {
                assertTrue(e.failureType() == ReplyFailure.NO_HANDLERS || e.failureType() == ReplyFailure.TIMEOUT, e.toString());
                last = e.failureType();
            }
            if (System.nanoTime() - killed > TimeUnit.SECONDS.toNanos(30)) {
                fail("the consumers of " + address + " were still registered 30 s after the kill (failure detection is 5 s)");
            }
        }
        return (System.nanoTime() - killed) / 1_000_000;
    }
}
