package dev.nupa.roce.verbs;

/**
 * What a context's device is and the limits it enforces ({@code struct ibv_device_attr}, ibv_query_device(3)), in
 * libibverbs' names. Every limit is the one the context's own checks use: creating one object more than {@code maxQp},
 * {@code maxCq}, {@code maxMr}, {@code maxPd} or {@code maxSrq} allows, or asking for more than a per-object limit,
 * throws. {@code maxMr} and {@code maxQp} count what an application may create (QP 0 and 1 and region slot 0 are
 * reserved). {@code maxMrSize}: the context sets no limit of its own, so it is the largest a {@code MemorySegment} can
 * be (Soft-RoCE reports RXE_MAX_MR_SIZE, all ones). {@code maxInlineData} is not in {@code ibv_device_attr}; it is the
 * largest {@code ibv_qp_cap.max_inline_data} a QP is created with. {@code maxResRdAtom}: each QP keeps its own
 * {@code maxQpRdAtom} responder resources, so the device holds that many per QP.
 */
public record DeviceAttr(String fwVer, long nodeGuid, long sysImageGuid, long maxMrSize, int vendorId, int vendorPartId,
        int hwVer, int maxQp, int maxQpWr, int maxSge, int maxCq, int maxCqe, int maxMr, int maxPd, int maxQpRdAtom,
        int maxResRdAtom, int maxQpInitRdAtom, int atomicCap, int maxSrq, int maxSrqWr, int maxSrqSge, int maxPkeys,
        int physPortCnt, int maxInlineData) {
    /** IBV_ATOMIC_NONE: no atomics. */
    public static final int ATOMIC_NONE = 0;
    /** IBV_ATOMIC_HCA: atomic with respect to other atomics of this device (here: of the fabric's nodes). */
    public static final int ATOMIC_HCA = 1;
    /** IBV_ATOMIC_GLOB: atomic with respect to every access to the memory as well. */
    public static final int ATOMIC_GLOB = 2;
}
