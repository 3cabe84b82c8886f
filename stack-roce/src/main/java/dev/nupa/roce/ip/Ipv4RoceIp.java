package dev.nupa.roce.ip;

import dev.nupa.device.FabricDevice;
import dev.nupa.device.PeerEvent;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.SendStatus;
import dev.nupa.ip.UdpReceiver;
import dev.nupa.ip.wire.Ipv4Header;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.l2.RoceV2;
import dev.nupa.roce.verbs.RoceIp;
import java.lang.foreign.MemorySegment;

/** RoCEv2 through the node's {@link Ipv4Stack}: UDP 4791 bound there, and its neighbor directory's lost nodes. */
public final class Ipv4RoceIp implements RoceIp, UdpReceiver, NeighborDirectory.NodeLostListener {
    private final Ipv4Stack stack;
    private Listener listener;

    public Ipv4RoceIp(Ipv4Stack stack) {
        if (stack == null) {
            throw new IllegalArgumentException("Ipv4RoceIp needs the node's IP layer; for fabric peers only, attach none");
        }
        this.stack = stack;
    }

    @Override
    public void open(Listener l) {
        if (listener != null) {
            throw new IllegalStateException("RoCEv2 on " + stack + " is open already; one context speaks it");
        }
        // Set before registering: the liveness thread that finds this in the directory's listeners sees it.
        listener = l;
        try {
            stack.bindUdp(RoceV2.UDP_PORT, this);
        } catch (RuntimeException e) {
            listener = null;
            throw e;
        }
        stack.neighbors().addNodeLostListener(this);
    }

    @Override
    public void close() {
        if (listener != null) {
            stack.unbindUdp(RoceV2.UDP_PORT, this);
            stack.neighbors().removeNodeLostListener(this);
            listener = null;
        }
    }

    @Override
    public Link link() {
        return stack.link();
    }

    @Override
    public int address() {
        return stack.address();
    }

    @Override
    public int maxUdpPayload() {
        return stack.maxUnfragmentedUdpPayload();
    }

    @Override
    public int send(int sourcePort, int destination, MemorySegment packet, long offset, int length) {
        int rc = stack.sendRoceV2(sourcePort, destination, packet, offset, length, 0);
        return rc == SendStatus.OK ? SENT : rc == FabricDevice.BACK_PRESSURED ? BACK_PRESSURED : FAILED;
    }

    @Override
    public void onDatagram(Ipv4Header h, int sourcePort, MemorySegment data, long offset, int length) {
        listener.onDatagram(h.sourceAddress(), h.segment(), h.offset(), h.totalLength(), data, offset, length);
    }

    /** Without the IP header the ICRC cannot be checked; the listener counts the datagram as bad. */
    @Override
    public void onDatagram(int sourceAddress, int sourcePort, int destinationAddress, MemorySegment data, long offset, int length) {
        listener.onDatagram(sourceAddress, null, 0, 0, data, offset, length);
    }

    @Override
    public void onNodeLost(PeerEvent event, int[] addresses) {
        Listener l = listener;
        if (l != null) {
            l.onNodeLost(event.address(), addresses);
        }
    }

    @Override
    public String toString() {
        return stack.toString();
    }
}
