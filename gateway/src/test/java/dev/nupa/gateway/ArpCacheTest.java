package dev.nupa.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The neighbor cache on virtual time: RFC 826's merge rules, waiting datagrams, retries, aging and its bounds. */
class ArpCacheTest {
    private static final long S = 1_000_000_000L;
    private static final int A = 0xC0A84D01; // 192.168.77.1
    private static final int B = 0xC0A84D03;

    /** What the cache asked for, in order. */
    private static final class Recorder implements ArpCache.Actions {
        final List<Integer> requests = new ArrayList<>();
        final List<String> sent = new ArrayList<>();
        final List<Integer> unresolved = new ArrayList<>();

        @Override
        public void request(int ip) {
            requests.add(ip);
        }

        @Override
        public void send(long mac, MemorySegment d, long off, int len) {
            sent.add(Long.toHexString(mac) + ":" + d.get(ValueLayout.JAVA_BYTE, off));
        }

        @Override
        public void unresolved(int ip, MemorySegment d, long off, int len) {
            unresolved.add((int) d.get(ValueLayout.JAVA_BYTE, off));
        }
    }

    private static MemorySegment datagram(int tag) {
        MemorySegment m = MemorySegment.ofArray(new byte[100]);
        m.set(ValueLayout.JAVA_BYTE, 0, (byte) tag);
        return m;
    }

    private static ArpCache cache(int entries, int pending) {
        return new ArpCache(entries, pending, 1500, 30 * S, S, 3);
    }

    @Test
    void rfc826_aReplyUpdatesOnlyAnEntryThatExistsARequestForUsCreatesOne() {
        ArpCache c = cache(8, 8);
        Recorder r = new Recorder();
        assertFalse(c.learn(A, 0x02AAL, 0, false, r), "an unsolicited reply creates nothing");
        assertEquals(-1, c.lookup(A, 0, r));
        assertTrue(c.learn(A, 0x02AAL, 0, true, r), "a request aimed at us does");
        assertEquals(0x02AAL, c.lookup(A, 0, r));
        assertTrue(c.learn(A, 0x02BBL, S, false, r), "and a later reply updates it");
        assertEquals(0x02BBL, c.lookup(A, S, r));
    }

    @Test
    void datagramsWaitingForAnAddressLeaveInOrderWhenItAnswers() {
        ArpCache c = cache(8, 8);
        Recorder r = new Recorder();
        assertTrue(c.enqueue(A, datagram(1), 0, 100, 0, r));
        assertTrue(c.enqueue(A, datagram(2), 0, 100, 0, r));
        assertTrue(c.enqueue(A, datagram(3), 0, 100, 0, r));
        assertFalse(c.enqueue(A, datagram(4), 0, 100, 0, r), "at most " + ArpCache.QUEUE_PER_ENTRY + " wait per address");
        assertEquals(List.of(A), r.requests, "one request for the new entry");
        c.learn(A, 0x02AAL, 10, false, r);
        assertEquals(List.of("2aa:1", "2aa:2", "2aa:3"), r.sent);
        assertEquals(1, c.size());
    }

    @Test
    void rfc1122_2_3_2_1_requestsGoOutASecondApartThenTheWaitingDatagramsAreUnresolved() {
        ArpCache c = cache(8, 8);
        Recorder r = new Recorder();
        c.enqueue(A, datagram(7), 0, 100, 0, r);
        assertEquals(S, c.poll(S / 2, r), "nothing due before a second");
        c.poll(S, r);
        c.poll(2 * S, r);
        assertEquals(List.of(A, A, A), r.requests, "three requests, a second apart");
        c.poll(3 * S, r);
        assertEquals(List.of(7), r.unresolved, "then the datagram is reported unresolved");
        assertEquals(0, c.size(), "and the entry is gone");
    }

    @Test
    void aConfirmedEntryIsConfirmedAgainAfterItsReachableTimeAndForgottenLater() {
        ArpCache c = cache(8, 8);
        Recorder r = new Recorder();
        c.learn(A, 0x02AAL, 0, true, r);
        assertEquals(0x02AAL, c.lookup(A, 31 * S, r), "still used after 30 s");
        assertEquals(List.of(A), r.requests, "with one request to confirm it");
        c.lookup(A, 31 * S + S / 2, r);
        assertEquals(1, r.requests.size(), "at most one a second");
        assertEquals(-1, c.lookup(A, 121 * S, r), "unconfirmed for 120 s: forgotten");
    }

    @Test
    void aFloodOfAddressesThatNeverAnswerCannotCrowdOutTheNeighborsThatDo() {
        ArpCache c = cache(16, 64);
        Recorder r = new Recorder();
        c.learn(A, 0x02AAL, 0, true, r);
        int waiting = 0;
        for (int i = 0; i < 100; i++) {
            if (c.enqueue(0x0A090000 + i, datagram(i), 0, 100, 0, r)) {
                waiting++;
            }
        }
        assertEquals(4, waiting, "a quarter of the 16 entries may wait for an answer");
        assertEquals(0x02AAL, c.lookup(A, 0, r), "the neighbor that answered is still there");
        assertTrue(c.learn(B, 0x02BBL, 0, true, r), "and a new one that asks for us finds room");
    }
}
