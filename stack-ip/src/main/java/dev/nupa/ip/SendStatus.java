package dev.nupa.ip;

import dev.nupa.device.FabricDevice;

/**
 * Results of sending a datagram: 0 is success, negative values say why nothing (or, for a datagram
 * in fragments, not all of it) left. The device's own codes ({@link FabricDevice#BACK_PRESSURED},
 * {@link FabricDevice#PEER_DOWN}, ...) pass through unchanged.
 */
public final class SendStatus {
    public static final int OK = FabricDevice.OK;
    /** No route matches the destination. */
    public static final int NO_ROUTE = -10;
    /** The next hop's address is held by no fabric node (the neighbor directory has no binding). */
    public static final int NO_NEIGHBOR = -11;
    /** The datagram exceeds the MTU and must not be fragmented (DF), or exceeds 65535 bytes. */
    public static final int TOO_BIG = -12;

    private SendStatus() {
    }

    public static String describe(int status) {
        return switch (status) {
            case NO_ROUTE -> "no route to host";
            case NO_NEIGHBOR -> "host unreachable (no fabric node holds the address)";
            case TOO_BIG -> "message too long";
            default -> FabricDevice.describe(status);
        };
    }
}
