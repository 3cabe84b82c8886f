package dev.nupa.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.net.InetSocketAddress;

import org.junit.jupiter.api.Test;

class SenderAddressesTest {
    private static final int TEN_0_0_2 = 10 << 24 | 2;

    @Test
    void aSenderHeardBeforeGetsTheSameAddressObject() {
        SenderAddresses senders = new SenderAddresses();
        InetSocketAddress first = senders.of(TEN_0_0_2, 4000);
        assertEquals(new InetSocketAddress("10.0.0.2", 4000), first);
        assertSame(first, senders.of(TEN_0_0_2, 4000));
    }

    @Test
    void everyAddressIsRightWhateverSharesASlot() {
        SenderAddresses senders = new SenderAddresses();
        // Four times as many senders as slots, twice round: slots are shared and replaced, and each answer names its sender.
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < 4 * SenderAddresses.SLOTS; i++) {
                int ip = TEN_0_0_2 + (i & 7);
                int port = 5000 + i;
                InetSocketAddress a = senders.of(ip, port);
                assertEquals(new InetSocketAddress("10.0.0." + (2 + (i & 7)), port), a);
            }
        }
    }
}
