package dev.nupa.device;

/** What a datapath loop does when a poll found no work (Aeron's idea). */
public interface IdleStrategy {
    /** Called after each poll with the work it did; idles only when {@code workCount} is 0. */
    void idle(int workCount);

    /** Spin forever: lowest latency, one core per loop. */
    IdleStrategy BUSY_SPIN = workCount -> Thread.onSpinWait();
}
