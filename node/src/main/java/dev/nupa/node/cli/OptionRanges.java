package dev.nupa.node.cli;

import java.util.Map;

import dev.nupa.device.FabricGeometry;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;

/**
 * The one range check of every numeric option of every `nupa` command, made on what the user typed before any
 * command starts: an option out of range is one line naming it and its range (status 2). An option not in the table
 * takes a count, a size or a time, none of which is negative.
 */
final class OptionRanges {
    record Range(double min, double max, boolean minExclusive) {
        boolean holds(double v) {
            return (minExclusive ? v > min : v >= min) && v <= max;
        }

        @Override
        public String toString() {
            String hi = max >= Long.MAX_VALUE ? "" : fmt(max);
            return minExclusive ? "greater than " + fmt(min) + (hi.isEmpty() ? "" : " and at most " + hi) : fmt(min) + ".." + hi;
        }

        private static String fmt(double d) {
            return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
        }
    }

    private static final double ANY = Long.MAX_VALUE;
    private static final Range PORT = new Range(1, 65_535, false);
    private static final Range NON_NEGATIVE = new Range(0, ANY, false);
    private static final Range POSITIVE = new Range(0, ANY, true);
    private static final Range RATE = new Range(0, 1, false);

    /** By "command option" first (where one name means different things), then by option name. */
    private static final Map<String, Range> RANGES = Map.ofEntries(
            Map.entry("--port", PORT), Map.entry("rping -p", PORT), Map.entry("perftest -p", PORT),
            Map.entry("--udp-echo", PORT), Map.entry("--tcp-echo", PORT), Map.entry("--grpc-fabric", PORT),
            Map.entry("--rdma-target", PORT), Map.entry("--filter-port", new Range(0, 65_535, false)),
            Map.entry("--linger", new Range(0, 65_535, false)),
            Map.entry("--timeout", POSITIVE), Map.entry("--run-for", POSITIVE),
            Map.entry("--address", new Range(0, FabricGeometry.MAX_NODES - 1, false)),
            Map.entry("--nodes", new Range(1, FabricGeometry.MAX_NODES, false)),
            // iputils ping: -s 0..65507 (65535 - 20 IP - 8 ICMP); below 8 bytes no send time, so no RTT.
            Map.entry("ping -s", new Range(0, 65_507, false)),
            Map.entry("ping -c", new Range(1, ANY, false)), Map.entry("ping -i", new Range(0.001, ANY, false)),
            Map.entry("ping -W", POSITIVE), Map.entry("ping -w", POSITIVE),
            Map.entry("--trace-sample", RATE), Map.entry("--trace", RATE),
            Map.entry("capture --snaplen", new Range(1, 262_144, false)),
            Map.entry("capture --ring-size", new Range(4096, 1L << 30, false)),
            Map.entry("--seed", new Range(-ANY, ANY, false)), Map.entry("--cpu", new Range(-1, 4095, false)));

    private OptionRanges() {
    }

    /** Checks the options given to the command that runs and to each command above it. */
    static void check(ParseResult parsed) {
        for (ParseResult pr = parsed; pr != null; pr = pr.subcommand()) {
            for (OptionSpec o : pr.matchedOptions()) {
                Object v = o.getValue();
                if (!(v instanceof Number n)) {
                    continue;
                }
                String name = o.longestName();
                Range r = RANGES.get(pr.commandSpec().name() + " " + name);
                if (r == null) {
                    r = RANGES.getOrDefault(name, NON_NEGATIVE);
                }
                if (!r.holds(n.doubleValue())) {
                    throw new ParameterException(pr.commandSpec().commandLine(), name + " " + pr.matchedOption(name).originalStringValues()
                            .getLast() + " is out of range: " + name + " takes " + r);
                }
            }
        }
    }

    /** Runs the command after the check. */
    static int execute(ParseResult parsed) {
        check(parsed);
        return new CommandLine.RunLast().execute(parsed);
    }
}
