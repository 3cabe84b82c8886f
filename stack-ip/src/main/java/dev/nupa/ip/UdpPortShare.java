package dev.nupa.ip;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.ip.wire.Ipv4Header;

/**
 * Several sockets on one UDP port, as Linux lets them share it when each sets SO_REUSEADDR, or each sets
 * SO_REUSEPORT (socket(7)). A broadcast reaches every one of them; a unicast datagram reaches one: with SO_REUSEPORT on
 * all of them, the one its flow (source address and port) hashes to, so one peer's datagrams stay in order on one
 * socket; otherwise the socket bound last, as Linux's lookup scores it. On the node's loop only.
 */
final class UdpPortShare implements UdpReceiver {
    private UdpReceiver[] members = new UdpReceiver[0];
    private boolean[] reusePort = new boolean[0];
    private boolean reuseAddr;

    /** Whether a socket with these options may join: all share with SO_REUSEPORT, or all with SO_REUSEADDR. */
    boolean admits(boolean addr, boolean port) {
        if (members.length == 0) {
            return true;
        }
        boolean allPort = true;
        for (boolean p : reusePort) {
            allPort &= p;
        }
        return port && allPort || addr && reuseAddr;
    }

    void add(UdpReceiver r, boolean addr, boolean port) {
        reuseAddr = members.length == 0 ? addr : reuseAddr && addr;
        members = Arrays.copyOf(members, members.length + 1);
        members[members.length - 1] = r;
        reusePort = Arrays.copyOf(reusePort, reusePort.length + 1);
        reusePort[reusePort.length - 1] = port;
    }

    /** Removes {@code r}; returns whether it was a member. */
    boolean remove(UdpReceiver r) {
        for (int i = 0; i < members.length; i++) {
            if (members[i] == r) {
                UdpReceiver[] m = new UdpReceiver[members.length - 1];
                boolean[] p = new boolean[m.length];
                System.arraycopy(members, 0, m, 0, i);
                System.arraycopy(members, i + 1, m, i, m.length - i);
                System.arraycopy(reusePort, 0, p, 0, i);
                System.arraycopy(reusePort, i + 1, p, i, m.length - i);
                members = m;
                reusePort = p;
                return true;
            }
        }
        return false;
    }

    int size() {
        return members.length;
    }

    /** The member a unicast datagram from {@code source}:{@code sourcePort} goes to. */
    UdpReceiver pick(int source, int sourcePort) {
        UdpReceiver[] m = members;
        for (boolean p : reusePort) {
            if (!p) {
                return m[m.length - 1];
            }
        }
        int h = (source * 0x9E3779B9) ^ (sourcePort * 0x85EBCA6B);
        h ^= h >>> 16;
        return m[Math.floorMod(h, m.length)];
    }

    @Override
    public void onDatagram(int sourceAddress, int sourcePort, int destinationAddress, MemorySegment data, long offset,
                           int length) {
        throw new AssertionError("the IP layer hands a shared port's datagrams through onDatagram(Ipv4Header, ...)");
    }

    @Override
    public void onDatagram(Ipv4Header ip, int sourcePort, MemorySegment data, long offset, int length) {
        deliver(ip, false, sourcePort, data, offset, length);
    }

    /** Hands a datagram on: to every member when it went to a broadcast (or multicast) address, else to one. */
    void deliver(Ipv4Header ip, boolean toBroadcast, int sourcePort, MemorySegment data, long offset, int length) {
        UdpReceiver[] m = members;
        if (m.length == 0) {
            return;
        }
        if (toBroadcast || Ipv4Address.isMulticast(ip.destinationAddress())) {
            for (UdpReceiver r : m) {
                r.onDatagram(ip, sourcePort, data, offset, length);
            }
        } else {
            pick(ip.sourceAddress(), sourcePort).onDatagram(ip, sourcePort, data, offset, length);
        }
    }

    @Override
    public void onIcmpError(int type, int code, int destination, int port) {
        for (UdpReceiver r : members) {
            r.onIcmpError(type, code, destination, port);
        }
    }
}
