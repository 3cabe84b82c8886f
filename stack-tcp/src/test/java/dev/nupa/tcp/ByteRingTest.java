package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
