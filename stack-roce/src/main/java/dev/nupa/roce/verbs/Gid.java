package dev.nupa.roce.verbs;

/**
 * A 128-bit GID ({@code union ibv_gid}) as its two 64-bit halves, {@code global.subnet_prefix} and
 * {@code global.interface_id}, most significant byte first. A RoCEv2 GID for an IPv4 address is the IPv4-mapped IPv6
 * address {@code ::ffff:a.b.c.d} (IBA annex A17.8; Linux's RoCE GID table holds one per IPv4 address of the netdev).
 */
public record Gid(long subnetPrefix, long interfaceId) {
    /** {@code ::ffff:a.b.c.d} for IPv4 address {@code ipv4}. */
    public static Gid ofIpv4(int ipv4) {
        return new Gid(0, 0xFFFF_0000_0000L | (ipv4 & 0xFFFF_FFFFL));
    }

    /** Whether this is an IPv4-mapped GID. */
    public boolean isIpv4() {
        return subnetPrefix == 0 && (interfaceId >>> 32) == 0xFFFF;
    }

    /** The IPv4 address of an IPv4-mapped GID; throws for any other. */
    public int ipv4() {
        if (!isIpv4()) {
            throw new IllegalStateException("GID " + this + " does not map an IPv4 address");
        }
        return (int) interfaceId;
    }

    /** The 16 bytes, network order (as {@code ibv_gid.raw}). */
    public byte[] raw() {
        byte[] b = new byte[16];
        for (int i = 0; i < 8; i++) {
            b[i] = (byte) (subnetPrefix >>> (56 - 8 * i));
            b[8 + i] = (byte) (interfaceId >>> (56 - 8 * i));
        }
        return b;
    }

    @Override
    public String toString() {
        if (isIpv4()) {
            return "::ffff:" + RoceIp.toString(ipv4());
        }
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            long half = i < 4 ? subnetPrefix : interfaceId;
            s.append(i == 0 ? "" : ":").append(Integer.toHexString((int) (half >>> (48 - 16 * (i % 4))) & 0xFFFF));
        }
        return s.toString();
    }
}
