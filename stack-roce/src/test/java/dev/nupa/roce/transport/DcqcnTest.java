package dev.nupa.roce.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** DCQCN's reaction point on virtual time (Zhu et al. 2015, figure 7). */
class DcqcnTest {
    private static final double LINE = 10e9;
    private static final long T0 = 1_000_000_000L;

    @Test
    void startsAtTheLineRateUnpaced() {
        Dcqcn d = new Dcqcn(LINE);
        assertEquals(LINE, d.rate());
        assertFalse(d.limited());
        assertTrue(d.maySend(T0));
        d.sent(T0, 1_000_000);
        assertTrue(d.maySend(T0), "an unthrottled QP is not paced");
        assertEquals(Long.MAX_VALUE, d.nextSendAt());
    }

    @Test
    void aCnpCutsTheRateByHalfAlphaAndRaisesAlpha() {
        Dcqcn d = new Dcqcn(LINE);
        d.onCnp(T0); // alpha starts at 1: Rc = Rc (1 - 1/2)
        assertEquals(LINE / 2, d.rate(), 1);
        assertEquals(LINE, d.targetRate(), 1);
        assertEquals(1.0, d.alpha(), 1e-12, "(1 - g) 1 + g = 1");
        assertTrue(d.limited());
        d.onCnp(T0 + 1_000); // a second CNP before any timer: Rt = Rc, then the cut
        assertEquals(LINE / 4, d.rate(), 1);
        assertEquals(LINE / 2, d.targetRate(), 1);
        assertEquals(2, d.decreases());
    }

    @Test
    void alphaDecaysEveryPeriodWithoutCnps() {
        Dcqcn d = new Dcqcn(LINE);
        d.onCnp(T0);
        d.advance(T0 + Dcqcn.ALPHA_PERIOD_NS - 1);
        assertEquals(1.0, d.alpha(), 1e-12);
        d.advance(T0 + 3 * Dcqcn.ALPHA_PERIOD_NS);
        assertEquals(Math.pow(1 - Dcqcn.G, 3), d.alpha(), 1e-12);
        // The next cut is gentler: Rc (1 - alpha/2).
        double before = d.rate();
        double alpha = d.alpha();
        d.onCnp(T0 + 3 * Dcqcn.ALPHA_PERIOD_NS);
        assertEquals(before * (1 - alpha / 2), d.rate(), 1);
    }

    @Test
    void fastRecoveryThenAdditiveIncreaseOnTheTimer() {
        Dcqcn d = new Dcqcn(LINE);
        d.onCnp(T0);
        double rt = d.targetRate();
        double rc = d.rate();
        for (int i = 1; i <= Dcqcn.F; i++) { // fast recovery: Rc halves its distance to Rt, Rt stays
            d.advance(T0 + i * Dcqcn.INCREASE_PERIOD_NS);
            rc = (rt + rc) / 2;
            assertEquals(rc, d.rate(), 1, "event " + i);
            assertEquals(rt, d.targetRate(), 1);
        }
        // Rt was the line rate: recovery ends at it, unpaced; start again from a lower target to see additive increase.
        Dcqcn e = new Dcqcn(LINE);
        e.onCnp(T0);
        e.onCnp(T0); // Rt = LINE/2, Rc = LINE/4
        rt = e.targetRate();
        rc = e.rate();
        for (int i = 1; i <= Dcqcn.F + 2; i++) {
            e.advance(T0 + i * Dcqcn.INCREASE_PERIOD_NS);
            if (i > Dcqcn.F) {
                rt += Dcqcn.RATE_AI; // the timer's count passed F, the byte counter's did not: additive
            }
            rc = (rt + rc) / 2;
            assertEquals(rt, e.targetRate(), 1, "event " + i);
            assertEquals(rc, e.rate(), 1, "event " + i);
        }
    }

    @Test
    void hyperIncreaseWhenTimerAndByteCounterBothPassF() {
        Dcqcn d = new Dcqcn(LINE);
        d.onCnp(T0);
        d.onCnp(T0);
        d.onCnp(T0); // Rt = LINE/4, Rc = LINE/8
        long now = T0;
        for (int i = 0; i < Dcqcn.F + 1; i++) { // the byte counter passes F first (no timer event yet)
            d.sent(now, (int) Dcqcn.BYTE_COUNTER);
        }
        double rt = d.targetRate();
        // Timer events: the first F only count (byte count is past F: additive), then both pass F: hyper.
        for (int i = 1; i <= Dcqcn.F + 1; i++) {
            now = T0 + i * Dcqcn.INCREASE_PERIOD_NS;
            d.advance(now);
            rt += i > Dcqcn.F ? (i - Dcqcn.F) * Dcqcn.RATE_HAI : Dcqcn.RATE_AI;
            assertEquals(Math.min(rt, LINE), d.targetRate(), 1, "event " + i);
        }
    }

    @Test
    void recoversToTheLineRateAndStopsPacing() {
        Dcqcn d = new Dcqcn(LINE);
        d.onCnp(T0);
        d.advance(T0 + 64 * Dcqcn.INCREASE_PERIOD_NS);
        assertEquals(LINE, d.rate());
        assertFalse(d.limited());
    }

    @Test
    void pacesToTheCurrentRate() {
        Dcqcn d = new Dcqcn(LINE);
        d.onCnp(T0); // 5 Gbit/s: 1000 bytes every 1600 ns
        assertTrue(d.maySend(T0));
        d.sent(T0, 1000);
        assertEquals(T0 + 1600, d.nextSendAt());
        assertFalse(d.maySend(T0 + 1599));
        assertTrue(d.maySend(T0 + 1600));
        d.sent(T0 + 1600, 1000);
        assertEquals(T0 + 3200, d.nextSendAt());
        // Idle for a while: no burst saved up.
        d.sent(T0 + 10_000, 1000);
        assertEquals(T0 + 11_600, d.nextSendAt());
    }

    @Test
    void notificationPointSendsAtMostOneCnpPerInterval() {
        Dcqcn d = new Dcqcn(LINE);
        assertTrue(d.cnpDue(T0, 4_000));
        assertFalse(d.cnpDue(T0 + 3_999, 4_000));
        assertTrue(d.cnpDue(T0 + 4_000, 4_000));
        assertTrue(d.cnpDue(T0 + 4_000, 0), "interval 0: one per marked datagram");
        assertTrue(d.cnpDue(T0 + 4_000, 0));
    }

    @Test
    void resetReturnsToTheLineRate() {
        Dcqcn d = new Dcqcn(LINE);
        d.onCnp(T0);
        d.reset();
        assertEquals(LINE, d.rate());
        assertFalse(d.limited());
        assertEquals(1.0, d.alpha());
    }

    @Test
    void neverBelowTheMinimumRate() {
        Dcqcn d = new Dcqcn(LINE);
        for (int i = 0; i < 100; i++) {
            d.onCnp(T0);
        }
        assertEquals(Dcqcn.MIN_RATE, d.rate());
        assertThrows(IllegalArgumentException.class, () -> new Dcqcn(0));
    }
}
