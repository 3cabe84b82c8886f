package dev.nupa.l2;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/** Which ring each service level takes, and how a ring policy is read. */
class ServiceLevelsTest {
    @Test
    void oneRingTakesEveryLevel() {
        ServiceLevels s = ServiceLevels.defaults(1);
        for (int l = 0; l < 16; l++) {
            assertEquals(0, s.ring(l), "level " + l);
        }
    }

    @Test
    void defaultsPutHigherLevelsOnHigherRings() {
        ServiceLevels two = ServiceLevels.defaults(2);
        assertEquals(0, two.ring(0));
        assertEquals(0, two.ring(7));
        assertEquals(1, two.ring(8));
        assertEquals(1, two.ring(15));
        ServiceLevels four = ServiceLevels.defaults(4);
        int[] expected = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
        for (int l = 0; l < 16; l++) {
            assertEquals(expected[l], four.ring(l), "level " + l);
        }
        ServiceLevels sixteen = ServiceLevels.defaults(16);
        for (int l = 0; l < 16; l++) {
            assertEquals(l, sixteen.ring(l), "level " + l);
        }
    }

    @Test
    void sharedPutsEveryLevelOnRingZero() {
        ServiceLevels s = ServiceLevels.shared(4);
        for (int l = 0; l < 16; l++) {
            assertEquals(0, s.ring(l));
        }
        assertEquals(4, s.rings());
    }

    @Test
    void anExplicitMapIsCheckedAndParsed() {
        ServiceLevels s = ServiceLevels.parse("1,1,1,1,1,1,1,1,0,0,0,0,0,0,0,0", 2);
        assertEquals(1, s.ring(0));
        assertEquals(0, s.ring(15));
        assertEquals(ServiceLevels.defaults(2), ServiceLevels.parse("default", 2));
        assertEquals(ServiceLevels.shared(2), ServiceLevels.parse("shared", 2));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ServiceLevels.parse("0,0,0,0,0,0,0,0,2,2,2,2,2,2,2,2", 2));
        assertTrue(e.getMessage().contains("ring 2, outside 0..1"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ServiceLevels.parse("0,1", 2));
        assertTrue(e.getMessage().contains("16"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ServiceLevels.parse("x", 2));
        assertThrows(IllegalArgumentException.class, () -> ServiceLevels.defaults(17));
    }

    @Test
    void ringPoliciesAreCheckedAndParsed() {
        RingPolicy d = RingPolicy.defaults(2);
        assertArrayEquals(new int[] {1, 7}, d.weights());
        assertEquals(RingPolicy.DEFAULT_BURST, d.burst());
        assertArrayEquals(new int[] {1, 1, 1, 21}, RingPolicy.defaults(4).weights());
        RingPolicy p = RingPolicy.parse("2,5/16", 2);
        assertArrayEquals(new int[] {2, 5}, p.weights());
        assertEquals(16, p.burst());
        assertEquals(d, RingPolicy.parse("default", 2));
        assertThrows(IllegalArgumentException.class, () -> RingPolicy.parse("1,2,3", 2));
        assertThrows(IllegalArgumentException.class, () -> RingPolicy.parse("0,0", 2));
        assertThrows(IllegalArgumentException.class, () -> RingPolicy.parse("1,x", 2));
        assertThrows(IllegalArgumentException.class, () -> new RingPolicy(new int[] {1, 1}, 0));
    }
}
