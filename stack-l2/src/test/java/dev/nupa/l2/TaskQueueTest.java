package dev.nupa.l2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** {@link TaskQueue}: bounded, first in first out, many producers, nothing lost or doubled. */
class TaskQueueTest {
    @Test
    void refusesWhenFullAndTakesAgainOnceDrained() {
        TaskQueue q = new TaskQueue(3); // rounded up to 4
        assertEquals(4, q.capacity());
        Runnable[] r = new Runnable[5];
        for (int i = 0; i < r.length; i++) {
            r[i] = () -> { };
        }
        for (int i = 0; i < 4; i++) {
            assertTrue(q.offer(r[i]));
        }
        assertFalse(q.offer(r[4]), "full: refused, not grown");
        assertSame(r[0], q.poll());
        assertTrue(q.offer(r[4]), "one taken, one room");
        for (int i = 1; i < 5; i++) {
            assertSame(r[i], q.poll(), "in order");
        }
        assertNull(q.poll());
        assertThrows(IllegalArgumentException.class, () -> new TaskQueue(0));
    }

    @Test
    void pollStopsAtTheBoundItWasGiven() {
        TaskQueue q = new TaskQueue(8);
        Runnable a = () -> { };
        Runnable b = () -> { };
        q.offer(a);
        long end = q.claimed();
        q.offer(b); // offered after the bound was read: left for the next drain
        assertSame(a, q.poll(end));
        assertNull(q.poll(end));
        assertSame(b, q.poll());
    }

    @Test
    void manyProducersOneConsumerLoseNothing() throws Exception {
        TaskQueue q = new TaskQueue(64);
        int producers = 4;
        int each = 50_000;
        int[] ran = new int[producers * each];
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            int base = p * each;
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < each; i++) {
                    int k = base + i;
                    while (!q.offer(() -> ran[k]++)) {
                        Thread.onSpinWait(); // full: the consumer makes room
                    }
                }
            }));
        }
        go.countDown();
        int taken = 0;
        while (taken < ran.length) {
            Runnable r = q.poll();
            if (r != null) {
                r.run();
                taken++;
            }
        }
        for (Thread t : threads) {
            t.join();
        }
        assertNull(q.poll());
        for (int i = 0; i < ran.length; i++) {
            assertEquals(1, ran[i], "task " + i + " ran once");
        }
    }
}
