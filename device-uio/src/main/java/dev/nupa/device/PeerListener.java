package dev.nupa.device;

/** Called on the node's liveness thread; hop to your own thread or context before doing real work. */
@FunctionalInterface
public interface PeerListener {
    void onPeerEvent(PeerEvent event);
}
