package dev.nupa.l2;

import java.util.Locale;

import dev.nupa.device.FabricDevice;

/**
 * Faults a node injects into the frames its link receives, as Linux's netem does on an interface: for
 * trying an application or the stack under loss, duplication, reordering and corruption on a fabric that
 * has none. Only arriving frames are touched (a link sends through zero-copy claims, which
 * {@link FaultyDevice} passes through), so both ends of a path are given faults to impair both of its
 * directions. Seeded, so a run can be repeated.
 *
 * @param plan what happens to the frames the node receives
 * @param seed the seed of the generator that draws the faults
 */
public record LinkFaults(FaultPlan plan, long seed) {
    public LinkFaults {
        if (plan == null) {
            throw new IllegalArgumentException("a fault plan is needed (FaultPlan.NONE for none)");
        }
    }

    /**
     * Parses {@code drop=P,duplicate=P,reorder=P,corrupt=P,seed=N} (any of them, each at most once; rates in
     * 0..1). Corruption flips one byte past the link header, so it is the IP layer's checksums that find it.
     */
    public static LinkFaults parse(String spec) {
        FaultPlan p = FaultPlan.NONE.withCorrupt(0, LinkHeader.LENGTH);
        long seed = 1;
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (String part : spec.split(",")) {
            String[] kv = part.trim().split("=", 2);
            String key = kv[0].trim().toLowerCase(Locale.ROOT);
            if (kv.length != 2 || !seen.add(key)) {
                throw new IllegalArgumentException("link faults \"" + spec + "\": give each of drop, duplicate, reorder, corrupt"
                        + " and seed at most once as KEY=VALUE, e.g. drop=0.02,reorder=0.05");
            }
            String v = kv[1].trim();
            try {
                switch (key) {
                    case "drop" -> p = p.withDrop(Double.parseDouble(v));
                    case "duplicate" -> p = p.withDuplicate(Double.parseDouble(v));
                    case "reorder" -> p = p.withReorder(Double.parseDouble(v));
                    case "corrupt" -> p = p.withCorrupt(Double.parseDouble(v), LinkHeader.LENGTH);
                    case "seed" -> seed = Long.parseLong(v);
                    default -> throw new IllegalArgumentException("link faults \"" + spec + "\": unknown fault \"" + key
                            + "\"; the faults are drop, duplicate, reorder and corrupt, with seed");
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("link faults \"" + spec + "\": " + key + " takes a number, not \"" + v + "\"");
            }
        }
        return new LinkFaults(p, seed);
    }

    /** {@code device} with these faults on the frames it receives; {@code salt} varies the seed per device of a node. */
    public FabricDevice wrap(FabricDevice device, int salt) {
        return plan.isNone() ? device : FaultyDevice.receiving(device, seed * 31 + salt, plan);
    }
}
