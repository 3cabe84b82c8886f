package dev.nupa.ip;

import dev.nupa.ip.wire.Ipv4Address;

/**
 * One route: datagrams to {@code prefix/prefixLength} go to {@code gateway}, or straight to the
 * destination when {@code gateway} is 0 (on-link).
 */
public record Route(int prefix, int prefixLength, int gateway) {
    public Route {
        if (prefixLength < 0 || prefixLength > 32) {
            throw new IllegalArgumentException("route prefix length " + prefixLength + " is outside 0..32");
        }
        if ((prefix & ~mask(prefixLength)) != 0) {
            throw new IllegalArgumentException("route " + Ipv4Address.toString(prefix) + "/" + prefixLength
                    + " has host bits set; did you mean " + Ipv4Address.toString(prefix & mask(prefixLength)) + "/"
                    + prefixLength + "?");
        }
    }

    /** The netmask of a prefix length, e.g. 24 -> 0xFFFFFF00. */
    public static int mask(int prefixLength) {
        return prefixLength == 0 ? 0 : -1 << (32 - prefixLength);
    }

    public boolean matches(int destination) {
        return (destination & mask(prefixLength)) == prefix;
    }

    public boolean onLink() {
        return gateway == 0;
    }

    /**
     * Parses "a.b.c.d/len via g.h.i.j", "default via g.h.i.j" or "a.b.c.d/len" (on-link).
     * The error names the text and the form wanted.
     */
    public static Route parse(String text) {
        String[] parts = text.trim().split("\\s+");
        if (parts.length != 1 && !(parts.length == 3 && parts[1].equals("via"))) {
            throw new IllegalArgumentException("bad route \"" + text + "\" (want PREFIX/LEN [via GATEWAY] or default via GATEWAY)");
        }
        int prefix = 0;
        int len = 0;
        if (!parts[0].equals("default")) {
            int slash = parts[0].indexOf('/');
            if (slash < 0) {
                throw new IllegalArgumentException("bad route \"" + text + "\": the prefix needs a length, e.g. 10.1.0.0/16");
            }
            prefix = Ipv4Address.parse(parts[0].substring(0, slash));
            try {
                len = Integer.parseInt(parts[0].substring(slash + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad route \"" + text + "\": bad prefix length");
            }
        } else if (parts.length == 1) {
            throw new IllegalArgumentException("bad route \"" + text + "\": a default route needs a gateway (default via G)");
        }
        return new Route(prefix, len, parts.length == 3 ? Ipv4Address.parse(parts[2]) : 0);
    }

    @Override
    public String toString() {
        String dst = prefixLength == 0 ? "default" : Ipv4Address.toString(prefix) + "/" + prefixLength;
        return onLink() ? dst + " on-link" : dst + " via " + Ipv4Address.toString(gateway);
    }
}
