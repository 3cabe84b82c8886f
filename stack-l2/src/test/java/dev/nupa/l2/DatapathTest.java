package dev.nupa.l2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
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
        d.execute(() -> { throw new OutOfMemoryError("counted, not fatal either"); });
        d.execute(() -> { throw new StackOverflowError(); });
        CompletableFuture<Thread> still = new CompletableFuture<>();
        d.execute(() -> still.complete(Thread.currentThread()));
        assertSame(loop, still.get(5, TimeUnit.SECONDS), "the loop goes on after a task ran out of memory or stack");
        d.close(); // the loop's last drain, or the callers, take whatever is left
        assertEquals(1000, count.get(), "every task ran exactly once");
        assertEquals(3, d.errors());
        assertTrue(!d.isRunning());
        CompletableFuture<Thread> after = new CompletableFuture<>();
        d.execute(() -> after.complete(Thread.currentThread()));
        assertSame(Thread.currentThread(), after.getNow(null), "a stopped loop's tasks run on the caller");
    }

    @Test
    void whileTheLoopRunsOnlyItSendsAndPollsOtherThreadsHandOver() throws Exception {
        fx.create(L2Fixture.jumbo());
        Link link = new Link(fx.attach(0));
        assertTrue(link.isOwner(), "no loop yet: the caller owns the link");
        Datapath d = new Datapath(link, Datapath.Idle.backoff());
        d.start();
        assertFalse(link.isOwner());
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> link.send(0, EtherType.IPV4, java.lang.foreign.MemorySegment.ofArray(new byte[8]), 0, 8));
        assertTrue(e.getMessage().contains("Link.execute"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> link.poll(1));
        assertTrue(link.call(link::isOwner), "a task handed over runs as the owner");
        CompletableFuture<Thread> ran = new CompletableFuture<>();
        link.execute(() -> ran.complete(Thread.currentThread()));
        assertTrue(ran.get(5, TimeUnit.SECONDS).getName().startsWith("nupa-datapath-"));
        d.close();
        assertTrue(link.isOwner(), "the loop has stopped: the caller owns the link again");
    }

    @Test
    void aTaskPostedFromTheLoopRunsOnTheNextRoundNotInLine() throws Exception {
        fx.create(L2Fixture.jumbo());
        Datapath d = new Datapath(new Link(fx.attach(0)), Datapath.Idle.backoff());
        d.start();
        CompletableFuture<String> order = new CompletableFuture<>();
        StringBuilder b = new StringBuilder();
        d.execute(() -> {
            d.post(() -> order.complete(b.append("posted").toString()));
            b.append("first,");
        });
        assertEquals("first,posted", order.get(5, TimeUnit.SECONDS));
        // A task that posts itself again and again runs once a round, not in a loop that never polls.
        AtomicInteger rounds = new AtomicInteger();
        CompletableFuture<Void> polledBetween = new CompletableFuture<>();
        Runnable[] again = new Runnable[1];
        again[0] = () -> {
            if (rounds.incrementAndGet() < 1000) {
                d.post(again[0]);
            } else {
                polledBetween.complete(null);
            }
        };
        d.execute(again[0]);
        polledBetween.get(5, TimeUnit.SECONDS);
        d.close();
    }

    @Test
    void aFullTaskQueueMakesTheCallerWaitThenRefusesWithTheRemedy() throws Exception {
        fx.create(L2Fixture.jumbo());
        Datapath d = new Datapath(new Link(fx.attach(0)), Datapath.Idle.backoff(), 4);
        d.start();
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch blocked = new CountDownLatch(1);
        d.execute(() -> { // holds the loop until released
            blocked.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertTrue(blocked.await(5, TimeUnit.SECONDS));
        AtomicInteger count = new AtomicInteger();
        for (int i = 0; i < 4; i++) {
            d.execute(count::incrementAndGet); // fills the queue of 4
        }
        java.util.concurrent.RejectedExecutionException e = assertThrows(java.util.concurrent.RejectedExecutionException.class,
                () -> d.execute(count::incrementAndGet));
        assertTrue(e.getMessage().contains("larger task queue"), e.getMessage());
        // A caller that finds the queue full waits for room (up to a second) and goes on once the loop drains it.
        CompletableFuture<Void> waited = CompletableFuture.runAsync(() -> d.execute(count::incrementAndGet));
        release.countDown();
        waited.get(5, TimeUnit.SECONDS);
        d.close();
        assertEquals(5, count.get(), "every task taken ran once; the refused one did not");
    }

    @Test
    void aRemovedTimerIsNoLongerPolled() throws Exception {
        fx.create(L2Fixture.jumbo());
        Datapath d = new Datapath(new Link(fx.attach(0)), Datapath.Idle.busySpin());
        AtomicInteger polls = new AtomicInteger();
        Datapath.Timer t = now -> {
            polls.incrementAndGet();
            return now + 1_000L;
        };
        AtomicInteger otherPolls = new AtomicInteger();
        Datapath.Timer other = now -> {
            otherPolls.incrementAndGet();
            return now + 1_000L;
        };
        d.addTimer(other);
        d.addTimer(t);
        d.start();
        for (int i = 0; i < 500 && polls.get() < 10; i++) {
            Thread.sleep(1);
        }
        assertTrue(polls.get() >= 10, "polled while added");
        d.removeTimer(t);
        CompletableFuture<Void> round = new CompletableFuture<>();
        d.execute(() -> round.complete(null)); // the round that runs this task polls the new timer array
        round.get(5, TimeUnit.SECONDS);
        int after = polls.get(); // final from here: the removed timer's last poll was in an earlier round
        // The other timer is the clock: twenty more of its polls are twenty rounds that did not poll t.
        int otherBefore = otherPolls.get();
        for (int i = 0; i < 10_000 && otherPolls.get() < otherBefore + 20; i++) {
            Thread.sleep(1);
        }
        assertTrue(otherPolls.get() >= otherBefore + 20, "the remaining timer is still polled: the loop lives");
        assertEquals(after, polls.get(), "not polled in the twenty timer rounds since its removal");
        assertTrue(d.isRunning());
        assertEquals(0, d.errors());
        d.close();
    }

    @Test
    void aSleepingLoopIsWokenForATaskOrATimerChangeFromAnotherThread() throws Exception {
        fx.create(L2Fixture.jumbo());
        long sleep = 60_000_000_000L; // without a wake-up, work handed over would wait up to a minute
        Datapath d = new Datapath(new Link(fx.attach(0)), new Datapath.Idle(0, 0, sleep));
        java.util.concurrent.Semaphore polled = new java.util.concurrent.Semaphore(0);
        d.addTimer(now -> {
            polled.release();
            return Long.MAX_VALUE;
        });
        d.start();
        CompletableFuture<Thread> loopThread = new CompletableFuture<>();
        d.execute(() -> loopThread.complete(Thread.currentThread()));
        Thread loop = loopThread.get(30, TimeUnit.SECONDS);
        for (int round = 0; round < 3; round++) {
            Thread.sleep(100); // the loop has long gone to sleep: nothing comes and no timer is due
            CompletableFuture<Thread> ran = new CompletableFuture<>();
            d.execute(() -> ran.complete(Thread.currentThread()));
            assertSame(loop, ran.get(30, TimeUnit.SECONDS), "the task woke the loop and ran on it");

            Thread.sleep(100);
            polled.drainPermits();
            d.timersChanged();
            assertTrue(polled.tryAcquire(30, TimeUnit.SECONDS), "the timer change woke the loop, which polled the timers");
        }
        Thread.sleep(100);
        d.close(); // waits up to 5 s for the loop: far less than its sleep
        assertTrue(!loop.isAlive(), "close woke the loop asleep, and it stopped");
    }

    /**
     * A source's work handed over from another node (a work ring's WQE) and announced by ringing the node's doorbell
     * wakes a loop asleep for a minute, and the source takes it: whether the ring comes while the loop sleeps, or just
     * before it goes to sleep (its look at the source's {@code ready} sees the work then).
     */
    @Test
    void aDoorbellFromAnotherNodeWakesTheLoopForASourcesWork() throws Exception {
        fx.create(L2Fixture.jumbo());
        long sleep = 60_000_000_000L;
        Datapath d = new Datapath(new Link(fx.attach(0)), new Datapath.Idle(0, 0, sleep));
        var poster = fx.attach(1);
        java.util.concurrent.atomic.AtomicBoolean work = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.Semaphore taken = new java.util.concurrent.Semaphore(0);
        d.addSource(new Datapath.Source() {
            @Override
            public int poll(int limit, long now) {
                if (work.compareAndSet(true, false)) {
                    taken.release();
                    return 1;
                }
                return 0;
            }

            @Override
            public boolean ready() {
                return work.get();
            }
        });
        d.start();
        for (int round = 0; round < 5; round++) {
            Thread.sleep(round % 2 == 0 ? 100 : 0); // asleep for long, or perhaps on its way to sleep
            work.set(true);
            poster.wake(0);
            assertTrue(taken.tryAcquire(30, TimeUnit.SECONDS), "round " + round + ": the doorbell woke the loop and its source took the work");
        }
        d.close();
    }
}
