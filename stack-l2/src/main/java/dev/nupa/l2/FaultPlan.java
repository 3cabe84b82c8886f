package dev.nupa.l2;

/**
 * What a {@link FaultyDevice} does to the frames of one direction. Rates are probabilities per
 * frame in [0, 1], drawn from the device's seeded generator.
 *
 * @param drop             the frame vanishes
 * @param duplicate        the frame is delivered (or sent) twice
 * @param reorder          the frame is held back until the next frame of the direction has passed it
 * @param corrupt          one byte of the frame, at index {@code corruptFrom} or later, is flipped
 * @param corruptFrom      the first byte index corruption may touch (e.g. 8 to spare the link header)
 * @param delay            the frame is held back for {@code delayPolls} polls of the device
 * @param delayPolls       how long a delayed frame waits, in polls (at least 1 when {@code delay > 0})
 * @param maxFramesPerPoll at most this many frames per poll: receiving delivers no more per poll;
 *                         sending answers BACK_PRESSURED once this many were sent since the last
 *                         poll. 0 means no limit.
 */
public record FaultPlan(double drop, double duplicate, double reorder, double corrupt, int corruptFrom,
                        double delay, int delayPolls, int maxFramesPerPoll) {

    /** No faults: the device is transparent. */
    public static final FaultPlan NONE = new FaultPlan(0, 0, 0, 0, 0, 0, 0, 0);

    public FaultPlan {
        rate("drop", drop);
        rate("duplicate", duplicate);
        rate("reorder", reorder);
        rate("corrupt", corrupt);
        rate("delay", delay);
        if (corruptFrom < 0) {
            throw new IllegalArgumentException("corruptFrom " + corruptFrom + " is negative");
        }
        if (delayPolls < 0 || (delay > 0 && delayPolls < 1)) {
            throw new IllegalArgumentException("delayPolls " + delayPolls + " must be at least 1 when delay > 0");
        }
        if (maxFramesPerPoll < 0) {
            throw new IllegalArgumentException("maxFramesPerPoll " + maxFramesPerPoll + " is negative (0 means no limit)");
        }
    }

    public FaultPlan withDrop(double rate) {
        return new FaultPlan(rate, duplicate, reorder, corrupt, corruptFrom, delay, delayPolls, maxFramesPerPoll);
    }

    public FaultPlan withDuplicate(double rate) {
        return new FaultPlan(drop, rate, reorder, corrupt, corruptFrom, delay, delayPolls, maxFramesPerPoll);
    }

    public FaultPlan withReorder(double rate) {
        return new FaultPlan(drop, duplicate, rate, corrupt, corruptFrom, delay, delayPolls, maxFramesPerPoll);
    }

    public FaultPlan withCorrupt(double rate) {
        return new FaultPlan(drop, duplicate, reorder, rate, corruptFrom, delay, delayPolls, maxFramesPerPoll);
    }

    public FaultPlan withCorrupt(double rate, int fromByte) {
        return new FaultPlan(drop, duplicate, reorder, rate, fromByte, delay, delayPolls, maxFramesPerPoll);
    }

    public FaultPlan withDelay(double rate, int polls) {
        return new FaultPlan(drop, duplicate, reorder, corrupt, corruptFrom, rate, polls, maxFramesPerPoll);
    }

    public FaultPlan withRateLimit(int framesPerPoll) {
        return new FaultPlan(drop, duplicate, reorder, corrupt, corruptFrom, delay, delayPolls, framesPerPoll);
    }

    /** Whether this plan does nothing. */
    public boolean isNone() {
        return drop == 0 && duplicate == 0 && reorder == 0 && corrupt == 0 && delay == 0 && maxFramesPerPoll == 0;
    }

    private static void rate(String name, double r) {
        if (!(r >= 0 && r <= 1)) {
            throw new IllegalArgumentException(name + " rate " + r + " is outside 0..1");
        }
    }
}
