package dev.nupa.perf;

import dev.nupa.l2.Datapath;

/** The perf tools' {@code --idle [adaptive:]SPIN_US,YIELD_US}: an idle strategy for our loops in place of the default. */
final class IdleOption {
    static final String DESCRIPTION = "How our loops idle, fixed: spin SPIN_US after the last work, then yield until YIELD_US, then"
            + " sleep on the fabric's interrupt (e.g. 50,1000); or adaptive:SPIN_US,YIELD_US, polling windows of at most YIELD_US"
            + " (default: the node's adaptive strategy, docs/datapath.md).";

    private IdleOption() {
    }

    /** The strategy {@code spec} names; null: the node's default. */
    static Datapath.Idle parse(String spec) {
        if (spec == null) {
            return dev.nupa.transport.StackConfig.defaults(java.nio.file.Path.of("unused"), 0).idle();
        }
        boolean adaptive = spec.startsWith("adaptive:");
        String[] p = spec.substring(adaptive ? "adaptive:".length() : 0).split(",");
        try {
            if (p.length == 2) {
                long spin = Long.parseLong(p[0].trim()) * 1000;
                long yield = Long.parseLong(p[1].trim()) * 1000;
                if (spin >= 0 && yield >= spin) {
                    return new Datapath.Idle(spin, yield, 10_000_000L, adaptive);
                }
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException("--idle takes SPIN_US,YIELD_US or adaptive:SPIN_US,YIELD_US with 0 <= SPIN_US <= YIELD_US"
                + " (e.g. 50,1000), not " + spec);
    }
}
