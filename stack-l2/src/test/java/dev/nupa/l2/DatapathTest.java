package dev.nupa.l2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link Datapath#execute}: tasks run on the loop thread, each exactly once, also around the loop's stop. */
class DatapathTest {
    private final L2Fixture fx = new L2Fixture();

    @AfterEach
    void close() {
        fx.close();
    }

    @Test
    void tasksRunOnTheLoopThreadAndAfterItStopsOnTheCallersOnce() throws Exception {
        fx.create(L2Fixture.jumbo());
        Datapath d = new Datapath(new Link(fx.attach(0)), Datapath.Idle.backoff());
        d.start();
        CompletableFuture<Thread> ran = new CompletableFuture<>();
        d.execute(() -> ran.complete(Thread.currentThread()));
        Thread loop = ran.get(5, TimeUnit.SECONDS);
        assertTrue(loop.getName().startsWith("nupa-datapath-"), loop.getName());
        AtomicInteger count = new AtomicInteger();
        for (int i = 0; i < 1000; i++) {
            d.execute(count::incrementAndGet);
        }
        d.execute(() -> { throw new IllegalStateException("counted, not fatal"); });
        d.close(); // the loop's last drain, or the callers, take whatever is left
        assertEquals(1000, count.get(), "every task ran exactly once");
        assertEquals(1, d.errors());
        assertTrue(!d.isRunning());
        CompletableFuture<Thread> after = new CompletableFuture<>();
        d.execute(() -> after.complete(Thread.currentThread()));
        assertSame(Thread.currentThread(), after.getNow(null), "a stopped loop's tasks run on the caller");
    }
}
