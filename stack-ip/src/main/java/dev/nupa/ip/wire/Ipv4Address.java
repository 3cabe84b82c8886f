package dev.nupa.ip.wire;

/**
 * IPv4 addresses as {@code int} in network order (the first octet in the high byte), so the
 * datapath never boxes one. Classification per RFC 1122 3.2.1.3 and RFC 5771 (multicast).
 */
public final class Ipv4Address {
    private Ipv4Address() {
    }

    public static final int UNSPECIFIED = 0;
    /** The limited broadcast 255.255.255.255 (RFC 919). */
    public static final int BROADCAST = 0xFFFF_FFFF;

    public static int of(int a, int b, int c, int d) {
        if ((a | b | c | d) >>> 8 != 0) {
            throw new IllegalArgumentException("IPv4 octets must be 0..255: " + a + "." + b + "." + c + "." + d);
        }
        return a << 24 | b << 16 | c << 8 | d;
    }

    public static boolean isUnspecified(int address) {
        return address == 0;
    }

    public static boolean isBroadcast(int address) {
        return address == BROADCAST;
    }

    /** 224.0.0.0/4 (class D). */
    public static boolean isMulticast(int address) {
        return (address >>> 28) == 0xE;
    }

    /** 127.0.0.1, the loopback interface's address. */
    public static final int LOCALHOST = 0x7F000001;

    /** 127.0.0.0/8. */
    public static boolean isLoopback(int address) {
        return (address >>> 24) == 127;
    }

    /** 240.0.0.0/4 (class E, reserved), the limited broadcast included. */
    public static boolean isReserved(int address) {
        return (address >>> 28) == 0xF;
    }

    /**
     * Whether an address names a single host, as RFC 1122 3.2.2 asks of the source of a datagram
     * before an ICMP error may be sent about it: not zero, loopback, broadcast, multicast or class E.
     * (Directed subnet broadcasts need the subnet, so the caller checks those.)
     */
    public static boolean isSingleHost(int address) {
        return address != 0 && !isLoopback(address) && !isMulticast(address) && !isReserved(address);
    }

    /** Dotted quad. */
    public static String toString(int address) {
        return (address >>> 24) + "." + ((address >>> 16) & 0xFF) + "." + ((address >>> 8) & 0xFF) + "." + (address & 0xFF);
    }

    /** Parses a dotted quad ("10.0.0.1"); the error names the text. */
    public static int parse(String text) {
        String[] parts = text.split("\\.", -1);
        if (parts.length != 4) {
            throw new IllegalArgumentException("not an IPv4 address (want a.b.c.d): \"" + text + "\"");
        }
        int address = 0;
        for (String part : parts) {
            if (part.isEmpty() || part.length() > 3 || !part.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
                throw new IllegalArgumentException("not an IPv4 address (bad octet \"" + part + "\"): \"" + text + "\"");
            }
            int octet = Integer.parseInt(part);
            if (octet > 255) {
                throw new IllegalArgumentException("not an IPv4 address (octet " + octet + " > 255): \"" + text + "\"");
            }
            address = address << 8 | octet;
        }
        return address;
    }
}
