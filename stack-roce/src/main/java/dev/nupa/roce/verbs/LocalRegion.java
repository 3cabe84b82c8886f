package dev.nupa.roce.verbs;

/**
 * A registered region as a local scatter/gather entry names it ({@code struct ibv_sge}'s addr and lkey): what
 * {@link ScatterGather#add(LocalRegion, long, int)} reads. The verbs' memory region implements it.
 */
public interface LocalRegion {
    /** The region's first address; {@code addr() + i} is its byte {@code i}. */
    long addr();

    int lkey();
}
