package dev.nupa.roce.verbs;

/**
 * A port's state and attributes ({@code struct ibv_port_attr}, ibv_query_port(3)) in libibverbs' names and values:
 * {@code state} an IBV_PORT_* value ({@link #PORT_DOWN}, {@link #PORT_ACTIVE}), {@code maxMtu} and {@code activeMtu}
 * IBV_MTU_* values ({@link #mtu}), {@code linkLayer} {@link #LINK_LAYER_ETHERNET} as for every RoCE port.
 */
public record PortAttr(int state, int maxMtu, int activeMtu, int gidTblLen, int pkeyTblLen, int linkLayer, int portCapFlags) {
    /** IBV_PORT_DOWN. */
    public static final int PORT_DOWN = 1;
    /** IBV_PORT_ACTIVE. */
    public static final int PORT_ACTIVE = 4;
    /** IBV_PORT_CM_SUP in port_cap_flags: the port takes connection manager MADs (the CM on QP 1). */
    public static final int CAP_CM_SUP = 1 << 16;
    /** IBV_LINK_LAYER_ETHERNET. */
    public static final int LINK_LAYER_ETHERNET = 2;
    /** IBV_MTU_256 .. IBV_MTU_4096 are 1 .. 5. */
    public static final int MTU_256 = 1;
    public static final int MTU_4096 = 5;

    /** The IBV_MTU_* value of an InfiniBand MTU of {@code bytes} (256..4096, a power of two). */
    public static int mtu(int bytes) {
        if (bytes < 256 || bytes > 4096 || Integer.bitCount(bytes) != 1) {
            throw new IllegalArgumentException(bytes + " is not an InfiniBand MTU; use 256, 512, 1024, 2048 or 4096");
        }
        return Integer.numberOfTrailingZeros(bytes) - 7;
    }

    /** The bytes of IBV_MTU_* value {@code mtu} (ibverbs' {@code ibv_mtu_to_num}). */
    public static int bytes(int mtu) {
        if (mtu < MTU_256 || mtu > MTU_4096) {
            throw new IllegalArgumentException("IBV_MTU value " + mtu + " is outside 1..5");
        }
        return 128 << mtu;
    }

    /** Whether the port is IBV_PORT_ACTIVE. */
    public boolean active() {
        return state == PORT_ACTIVE;
    }
}
