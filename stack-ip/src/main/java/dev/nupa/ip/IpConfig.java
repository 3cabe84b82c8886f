package dev.nupa.ip;

import dev.nupa.ip.wire.Ipv4Address;

/**
 * What an IPv4 stack is configured with. Build with {@link #of} and the {@code with...} methods;
 * the constructor checks every value and names the one that is wrong.
 *
 * @param address           this node's IPv4 address
 * @param prefixLength      its subnet (on-link) prefix, 0..32
 * @param verifyChecksums   verify IP/ICMP/UDP/TCP checksums on receive; on the lossless fabric it may be off
 *                          for datagrams from the node's own subnet ({@link #verifiesFrom})
 * @param computeChecksums  compute UDP/TCP checksums on send; on the lossless fabric it may be off for
 *                          datagrams to the node's own subnet ({@link #computesTo}); IP and ICMP checksums
 *                          are always computed
 * @param defaultTtl        TTL of datagrams this node originates (RFC 1700's 64, as Linux)
 * @param forwarding        act as a router for datagrams not addressed to this node (RFC 1812)
 * @param reassemblyTimeoutNs how long fragments of one datagram wait for the rest (RFC 791 suggests 15 s; Linux 30 s)
 * @param reassemblySlots   datagrams reassembled at once; each holds up to 64 KiB, so this bounds memory
 * @param icmpErrorsPerSecond rate of ICMP errors sent (token bucket, RFC 1812 4.3.2.8), 0 = none sent
 * @param icmpErrorBurst    bucket depth
 * @param sendWaitNs        how long a send waits on a full destination ring before failing
 */
public record IpConfig(int address, int prefixLength, boolean verifyChecksums, boolean computeChecksums, int defaultTtl,
                       boolean forwarding, long reassemblyTimeoutNs, int reassemblySlots, int icmpErrorsPerSecond,
                       int icmpErrorBurst, long sendWaitNs) {
    public IpConfig {
        check(prefixLength >= 0 && prefixLength <= 32, "prefix length " + prefixLength + " is outside 0..32");
        check(defaultTtl >= 1 && defaultTtl <= 255, "TTL " + defaultTtl + " is outside 1..255 (RFC 1122 3.2.1.7: never send TTL 0)");
        check(reassemblyTimeoutNs > 0, "reassembly timeout must be positive");
        check(reassemblySlots >= 1 && reassemblySlots <= 4096, "reassembly slots " + reassemblySlots + " is outside 1..4096");
        check(icmpErrorsPerSecond >= 0 && icmpErrorBurst >= 1, "ICMP error rate must be >= 0 per second with a burst >= 1");
        check(sendWaitNs >= 0, "send wait must not be negative");
        check(Ipv4Address.isSingleHost(address), "address " + Ipv4Address.toString(address)
                + " cannot name a host (zero, loopback, multicast or class E); choose a unicast address such as 10.0.0.1");
        if (prefixLength < 31) {
            int host = address & ~Route.mask(prefixLength);
            check(host != 0 && host != ~Route.mask(prefixLength), "address " + Ipv4Address.toString(address) + "/"
                    + prefixLength + " is the network or broadcast address of its subnet; choose a host address inside it");
        }
    }

    /**
     * The fabric's address plan: node N is 10.0.0.(N+1)/24, for nodes 0..253; throws naming the remedy
     * (an explicit address) beyond.
     */
    public static IpConfig fabricPlan(int fabricAddress) {
        if (fabricAddress < 0 || fabricAddress > 253) {
            throw new IllegalArgumentException("fabric address " + fabricAddress + " has no default IPv4 address "
                    + "(10.0.0.(N+1)/24 covers nodes 0..253); give one with --ip");
        }
        return of(Ipv4Address.of(10, 0, 0, fabricAddress + 1), 24);
    }

    /** Defaults: checksums on, TTL 64, no forwarding, 30 s / 64 reassembly slots, 1000 ICMP errors/s (burst 50), 10 ms send wait. */
    public static IpConfig of(int address, int prefixLength) {
        return new IpConfig(address, prefixLength, true, true, 64, false, 30_000_000_000L, 64, 1000, 50, 10_000_000L);
    }

    /** Parses "a.b.c.d/len" (a bare address means /32). */
    public static IpConfig parse(String cidr) {
        int slash = cidr.indexOf('/');
        int address = Ipv4Address.parse(slash < 0 ? cidr : cidr.substring(0, slash));
        int prefix = 32;
        if (slash >= 0) {
            try {
                prefix = Integer.parseInt(cidr.substring(slash + 1));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad prefix length in \"" + cidr + "\" (want a.b.c.d/len)");
            }
        }
        return of(address, prefix);
    }

    public IpConfig withChecksums(boolean verify, boolean compute) {
        return new IpConfig(address, prefixLength, verify, compute, defaultTtl, forwarding, reassemblyTimeoutNs,
                reassemblySlots, icmpErrorsPerSecond, icmpErrorBurst, sendWaitNs);
    }

    public IpConfig withTtl(int ttl) {
        return new IpConfig(address, prefixLength, verifyChecksums, computeChecksums, ttl, forwarding, reassemblyTimeoutNs,
                reassemblySlots, icmpErrorsPerSecond, icmpErrorBurst, sendWaitNs);
    }

    public IpConfig withForwarding(boolean on) {
        return new IpConfig(address, prefixLength, verifyChecksums, computeChecksums, defaultTtl, on, reassemblyTimeoutNs,
                reassemblySlots, icmpErrorsPerSecond, icmpErrorBurst, sendWaitNs);
    }

    public IpConfig withReassembly(long timeoutNs, int slots) {
        return new IpConfig(address, prefixLength, verifyChecksums, computeChecksums, defaultTtl, forwarding, timeoutNs,
                slots, icmpErrorsPerSecond, icmpErrorBurst, sendWaitNs);
    }

    public IpConfig withIcmpErrorRate(int perSecond, int burst) {
        return new IpConfig(address, prefixLength, verifyChecksums, computeChecksums, defaultTtl, forwarding,
                reassemblyTimeoutNs, reassemblySlots, perSecond, burst, sendWaitNs);
    }

    public IpConfig withSendWait(long ns) {
        return new IpConfig(address, prefixLength, verifyChecksums, computeChecksums, defaultTtl, forwarding,
                reassemblyTimeoutNs, reassemblySlots, icmpErrorsPerSecond, icmpErrorBurst, ns);
    }

    /**
     * Whether a datagram from {@code source} has its checksums verified: always, but under the lossless-fabric
     * policy for datagrams from the node's own subnet, which crossed only the fabric. What came from beyond it
     * (through a gateway, from Ethernet) is checked whatever the policy, as Linux checks all but loopback.
     */
    public boolean verifiesFrom(int source) {
        return !toSelf(source) && (verifyChecksums || !inSubnet(source));
    }

    /**
     * Whether a datagram to {@code destination} carries UDP and TCP checksums: always, but under the lossless-fabric
     * policy for datagrams to the node's own subnet, which cross only the fabric. A datagram that leaves the fabric
     * through a gateway carries them whatever the policy, so a Linux peer finds every checksum right.
     */
    public boolean computesTo(int destination) {
        return !toSelf(destination) && (computeChecksums || !inSubnet(destination));
    }

    /**
     * Whether {@code other} is the node itself (127/8 or its address): such datagrams never leave it (its loopback
     * interface carries them), so their checksums are neither computed nor checked, as Linux's lo leaves them. The
     * IP layer drops any from outside that claim such a source (martians).
     */
    private boolean toSelf(int other) {
        return Ipv4Address.isLoopback(other) || other == address;
    }

    /** Whether {@code other} lies in this node's subnet. */
    public boolean inSubnet(int other) {
        int mask = Route.mask(prefixLength);
        return (other & mask) == (address & mask);
    }

    /** The directed broadcast address of this node's subnet (RFC 919/922), or 0 for /31 and /32. */
    public int subnetBroadcast() {
        return prefixLength >= 31 ? 0 : address | ~Route.mask(prefixLength);
    }

    private static void check(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }

    @Override
    public String toString() {
        return Ipv4Address.toString(address) + "/" + prefixLength;
    }
}
