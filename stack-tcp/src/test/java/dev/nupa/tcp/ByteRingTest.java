package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;

class ByteRingTest {

    @Test
    void outOfOrderBytesLandPastTheTailEvenWhenUnreadBytesRemainAndAcrossTheWrap() {
        // Found by TcpNodeTest: writeAt counted from the head, so data received while earlier bytes were
        // still unread overwrote them.
        ByteRing r = new ByteRing(10);
        r.write(MemorySegment.ofArray(new byte[] {1, 2, 3, 4, 5, 6}), 0, 6);
        byte[] three = new byte[3];
        r.peek(0, MemorySegment.ofArray(three), 0, 3);
        r.consume(3); // head 3, tail 6: 4 5 6 unread
        r.writeAt(2, MemorySegment.ofArray(new byte[] {9, 9}), 0, 2); // out of order at tail+2 (wraps)
        r.writeAt(0, MemorySegment.ofArray(new byte[] {7, 8}), 0, 2); // the hole
        r.commit(4);
        byte[] all = new byte[7];
        assertEquals(7, r.peek(0, MemorySegment.ofArray(all), 0, 7));
        assertArrayEquals(new byte[] {4, 5, 6, 7, 8, 9, 9}, all);
        assertEquals(3, r.free());
        assertEquals(3, r.contiguous(4), "from offset 4 (position 7) to the end of the ring");
    }

    @Test
    void memoryIsTakenFromTheBudgetOnFirstUseAndGivenBackOnceOnRelease() {
        BufferBudget budget = new BufferBudget(25);
        ByteRing a = new ByteRing(10, budget);
        ByteRing b = new ByteRing(10, budget);
        ByteRing c = new ByteRing(10, budget);
        assertEquals(0, budget.used(), "nothing is taken before a buffer is used");
        assertEquals(3, a.write(MemorySegment.ofArray(new byte[] {1, 2, 3}), 0, 3));
        assertTrue(b.reserve());
        assertEquals(20, budget.used());
        assertFalse(c.reserve(), "a third 10-byte buffer passes the 25-byte budget");
        BufferUnavailableException e = assertThrows(BufferUnavailableException.class,
                () -> c.write(MemorySegment.ofArray(new byte[] {4}), 0, 1));
        assertTrue(e.getMessage().contains("10-byte TCP buffer") && e.getMessage().contains("20 of 25 allowed"), e.getMessage());
        assertEquals(0, c.size(), "the refused write took nothing");

        a.release();
        a.release();
        assertEquals(20, budget.used(), "released with bytes unread (TIME-WAIT): still counted until read");
        byte[] left = new byte[3];
        assertEquals(3, a.peek(0, MemorySegment.ofArray(left), 0, 3), "what was unread stays readable after release");
        assertArrayEquals(new byte[] {1, 2, 3}, left);
        assertThrows(IllegalStateException.class, () -> a.writeAt(0, MemorySegment.ofArray(new byte[] {7}), 0, 1),
                "a released ring takes no more bytes");
        a.consume(3);
        assertFalse(a.allocated(), "read empty: the memory goes back");
        assertEquals(10, budget.used(), "given back once, when read");
        assertFalse(a.reserve(), "a released ring takes no memory again");
        assertEquals(10, budget.used());
        assertTrue(c.reserve(), "the bytes given back make room for another buffer");
        assertEquals(20, budget.used());

        assertEquals(2, b.write(MemorySegment.ofArray(new byte[] {5, 6}), 0, 2));
        b.releaseNow();
        assertEquals(10, budget.used(), "a closed connection's ring stops counting at once, unread bytes or not");
        assertTrue(b.allocated(), "its unread bytes stay readable");
        b.consume(2);
        b.releaseNow();
        assertEquals(10, budget.used(), "and is given back only once");

        ByteRing never = new ByteRing(10, budget);
        never.release();
        assertEquals(10, budget.used(), "a ring that never took memory gives none back");
        assertFalse(never.reserve(), "nor takes any after release");
        assertEquals(10, budget.used());
    }

    @Test
    void anEmptyReleasedRingsMemoryIsReusedByTheNextRingOfItsSize() {
        BufferBudget budget = new BufferBudget(1000);
        ByteRing a = new ByteRing(100, budget);
        assertTrue(a.reserve());
        long address = a.segment().address();
        assertEquals(5, a.write(MemorySegment.ofArray(new byte[] {1, 2, 3, 4, 5}), 0, 5));
        a.release();
        assertEquals(0, budget.pooled(), "unread bytes keep the memory with the ring");
        a.consume(5);
        assertEquals(100, budget.pooled(), "read empty: the memory waits in the pool");
        assertEquals(0, budget.used());

        a.release();
        a.consume(0);
        assertEquals(100, budget.pooled(), "released and emptied again: still pooled once");

        ByteRing b = new ByteRing(100, budget);
        assertTrue(b.reserve());
        assertEquals(address, b.segment().address(), "the next ring of that size gets the same memory");
        assertEquals(0, budget.pooled());
        assertEquals(100, budget.used());
        byte[] got = new byte[5];
        assertEquals(0, b.size());
        assertEquals(0, b.peek(0, MemorySegment.ofArray(got), 0, 5), "the old bytes are not there to read");
        assertEquals(2, b.write(MemorySegment.ofArray(new byte[] {9, 8}), 0, 2));
        assertEquals(2, b.peek(0, MemorySegment.ofArray(got), 0, 5), "a reused ring reads only what it wrote");
        assertArrayEquals(new byte[] {9, 8, 0, 0, 0}, got);
        ByteRing b2 = new ByteRing(100, budget);
        assertTrue(b2.reserve());
        assertTrue(b2.segment().address() != address, "the pool handed that memory out once");

        // Pooled memory yields to a buffer of another size when the bound needs the room.
        BufferBudget tight = new BufferBudget(100);
        ByteRing x = new ByteRing(100, tight);
        assertTrue(x.reserve());
        x.release();
        assertEquals(100, tight.pooled());
        ByteRing y = new ByteRing(60, tight);
        assertTrue(y.reserve(), "the pooled 100 bytes are let go to make room");
        assertEquals(0, tight.pooled());
        assertEquals(60, tight.used());

        ByteRing unbounded = new ByteRing(10);
        assertTrue(unbounded.reserve());
        unbounded.release();
        assertEquals(0, BufferBudget.UNLIMITED.pooled(), "connections outside a layer keep no pool");
    }
}
