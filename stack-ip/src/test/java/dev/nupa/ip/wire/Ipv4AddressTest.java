package dev.nupa.ip.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class Ipv4AddressTest {

    @Test
    void dottedQuadParsesToNetworkOrderIntAndBack() {
        assertEquals(0xC0A800C7, Ipv4Address.parse("192.168.0.199"));
        assertEquals("192.168.0.199", Ipv4Address.toString(0xC0A800C7));
        assertEquals("255.255.255.255", Ipv4Address.toString(Ipv4Address.BROADCAST));
        assertEquals(0x0A000001, Ipv4Address.of(10, 0, 0, 1));
    }

    @Test
    void malformedTextIsRejectedWithTheTextInTheMessage() {
        for (String bad : new String[] {"", "1.2.3", "1.2.3.4.5", "1.2.3.256", "1..3.4", "a.b.c.d", "1.2.3.-4", "0001.2.3.4"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Ipv4Address.parse(bad));
            assertTrue(e.getMessage().contains("\"" + bad + "\""), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> Ipv4Address.of(1, 2, 3, 256));
    }

    @Test
    void classificationFollowsRfc1122Section3213() {
        assertTrue(Ipv4Address.isMulticast(Ipv4Address.parse("224.0.0.1")));
        assertTrue(Ipv4Address.isMulticast(Ipv4Address.parse("239.255.255.255")));
        assertFalse(Ipv4Address.isMulticast(Ipv4Address.parse("240.0.0.0")));
        assertTrue(Ipv4Address.isReserved(Ipv4Address.parse("240.0.0.0")));
        assertTrue(Ipv4Address.isLoopback(Ipv4Address.parse("127.1.2.3")));
        assertTrue(Ipv4Address.isBroadcast(Ipv4Address.parse("255.255.255.255")));
        assertTrue(Ipv4Address.isSingleHost(Ipv4Address.parse("10.1.2.3")));
        for (String notOne : new String[] {"0.0.0.0", "127.0.0.1", "224.0.0.5", "250.1.1.1", "255.255.255.255"}) {
            assertFalse(Ipv4Address.isSingleHost(Ipv4Address.parse(notOne)), notOne);
        }
    }
}
