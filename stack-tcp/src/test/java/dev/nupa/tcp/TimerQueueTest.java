package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The layer's timer queue against a plain map of deadlines, under seeded random schedules, moves and removals. */
class TimerQueueTest {
    private static final long NEVER = Long.MAX_VALUE;

    private static List<TcpConnection> connections(int n) {
        List<TcpConnection> l = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            l.add(new TcpConnection(Wire.LOCAL, 1000 + i, Wire.REMOTE, 2000, TcpConfig.defaults(9000), (c, s) -> true, null));
        }
        return l;
    }

    @Test
    void emptyQueueHasNoDeadline() {
        TimerQueue q = new TimerQueue();
        assertEquals(NEVER, q.earliest());
        assertNull(q.first());
        TcpConnection c = connections(1).get(0);
        q.remove(c); // not queued: nothing happens
        q.schedule(c, NEVER);
        assertEquals(0, q.size());
        assertFalse(q.contains(c));
    }

    @Test
    void aConnectionIsQueuedOnceAndMovesBothWays() {
        TimerQueue q = new TimerQueue();
        List<TcpConnection> cs = connections(3);
        q.schedule(cs.get(0), 300);
        q.schedule(cs.get(1), 200);
        q.schedule(cs.get(2), 100);
        q.schedule(cs.get(2), 400); // later: no longer first
        assertEquals(3, q.size());
        assertSame(cs.get(1), q.first());
        q.schedule(cs.get(0), 50); // earlier: first
        assertSame(cs.get(0), q.first());
        assertEquals(50, q.earliest());
        q.schedule(cs.get(0), NEVER); // no timer left: out
        assertFalse(q.contains(cs.get(0)));
        assertEquals(-1, cs.get(0).timerIndex);
        assertEquals(200, q.earliest());
    }

    @Test
    void randomOperationsKeepTheEarliestDeadlineFirst() {
        Random r = new Random(42);
        List<TcpConnection> cs = connections(300);
        TimerQueue q = new TimerQueue();
        Map<TcpConnection, Long> expected = new HashMap<>();
        for (int step = 0; step < 50_000; step++) {
            TcpConnection c = cs.get(r.nextInt(cs.size()));
            int op = r.nextInt(10);
            if (op < 6) {
                long d = r.nextInt(1000); // ties are common
                q.schedule(c, d);
                expected.put(c, d);
            } else if (op < 8) {
                q.remove(c);
                expected.remove(c);
            } else if (!expected.isEmpty()) {
                // Take the first out, as the layer's poll does when it reschedules it.
                TcpConnection first = q.first();
                long min = expected.values().stream().mapToLong(Long::longValue).min().orElseThrow();
                assertEquals(min, q.earliest(), "step " + step);
                assertEquals(min, expected.get(first), "step " + step + ": the first holds the earliest deadline");
                q.schedule(first, NEVER);
                expected.remove(first);
            }
            assertEquals(expected.size(), q.size(), "step " + step);
            for (TcpConnection x : cs) {
                assertEquals(expected.containsKey(x), q.contains(x), "step " + step);
            }
        }
        // Draining gives every deadline in order.
        long last = Long.MIN_VALUE;
        while (q.size() > 0) {
            TcpConnection c = q.first();
            long d = q.earliest();
            assertTrue(d >= last, "deadlines come out in order");
            assertEquals(expected.remove(c), d);
            q.remove(c);
            last = d;
        }
        assertTrue(expected.isEmpty());
    }
}
