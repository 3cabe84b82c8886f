package dev.nupa.roce.verbs;

/** Memory window types, with libibverbs' {@code enum ibv_mw_type} values (IBA 10.6.7). */
public enum MwType {
    /** Bound by the {@code ibv_bind_mw} verb; not supported here. */
    TYPE_1(1),
    /** Bound by a BIND_MW send work request, on the send queue of a QP of the window's domain. */
    TYPE_2(2);

    public final int value;

    MwType(int value) {
        this.value = value;
    }
}
