package dev.nupa.perf;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * `nupa perf vertx-scaling`: Vert.x HTTP/1.1 at {@code -c} connections with 1, 2, 4 and 8 event loops a side (each
 * count a `vertx-http --loops N` run of its own, ours and the Linux peers given the same loops), the requests/s of
 * every side at every count, and each side's scaling efficiency: the rate at the most loops over that many times the
 * rate at the fewest (1 when the loops scale perfectly). The figure is ours against the best peer's.
 */
@Command(name = "vertx-scaling", mixinStandardHelpOptions = true,
        description = {"Vert.x HTTP/1.1 requests/s at 1, 2, 4 and 8 event loops a side, ours and each Linux peer's, and the",
                "scaling efficiency (rate at the most loops / (loops x rate at the fewest)) of each."})
final class VertxScaling implements Callable<Integer> {
    @Option(names = {"-c", "--connections"}, paramLabel = "N", defaultValue = "64", description = "Connections (default: ${DEFAULT-VALUE}).")
    int connections;

    @Option(names = "--loops", paramLabel = "LIST", split = ",", defaultValue = "1,2,4,8",
            description = "Event loop counts a side, ascending (default: ${DEFAULT-VALUE}).")
    List<Integer> loops;

    @Option(names = {"-t", "--time"}, paramLabel = "SECONDS", defaultValue = "2", description = "Seconds per turn (default: ${DEFAULT-VALUE}).")
    double seconds;

    @Option(names = "--turns", paramLabel = "N", defaultValue = "3", description = "Turns of each transport per count (default: ${DEFAULT-VALUE}).")
    int turns;

    @Option(names = "--peers", paramLabel = "LIST", defaultValue = "epoll,io_uring,uds", description = "Linux peers, as vertx-http's (default: ${DEFAULT-VALUE}).")
    String peers;

    @Option(names = "--json", description = "Print one JSON line at the end.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        if (loops.isEmpty() || loops.getFirst() < 1 || connections < 1 || turns < 1 || !(seconds > 0)) {
            throw new IllegalArgumentException("need --loops of counts >= 1, -c >= 1, --turns >= 1 and -t > 0");
        }
        for (int i = 1; i < loops.size(); i++) {
            if (loops.get(i) <= loops.get(i - 1)) {
                throw new IllegalArgumentException("--loops must ascend: " + loops);
            }
            if (loops.get(i) > connections) {
                throw new IllegalArgumentException("--loops " + loops.get(i) + " is more than -c " + connections + " connections");
            }
        }
        Map<String, List<Double>> rates = new LinkedHashMap<>(); // side -> rate per loop count
        for (int n : loops) {
            List<String> args = List.of("perf", "vertx-http", "-c", Integer.toString(connections), "--loops", Integer.toString(n),
                    "-t", Double.toString(seconds), "--turns", Integer.toString(turns), "--peers", peers, "--json");
            System.out.printf(Locale.ROOT, "vertx-scaling: %d loop(s) a side: nupa %s%n", n, String.join(" ", args));
            JsonObject r = Children.runJson(args);
            rates.computeIfAbsent("ours", k -> new ArrayList<>()).add(rate(r.getJsonObject("ours")));
            JsonObject ps = r.getJsonObject("peers");
            for (String p : ps.fieldNames()) {
                rates.computeIfAbsent(p, k -> new ArrayList<>()).add(rate(ps.getJsonObject(p)));
            }
        }
        int first = loops.getFirst();
        int last = loops.getLast();
        System.out.printf(Locale.ROOT, "vertx-scaling: HTTP/1.1, %d connections; requests/s per event loop count a side%n", connections);
        System.out.printf(Locale.ROOT, "%-10s%s %12s%n", "side", loops.stream().map(n -> String.format(Locale.ROOT, " %12s", n + " loop(s)"))
                .reduce("", String::concat), "efficiency");
        Map<String, Double> efficiency = new LinkedHashMap<>();
        String best = null;
        for (Map.Entry<String, List<Double>> e : rates.entrySet()) {
            List<Double> v = e.getValue();
            if (v.size() != loops.size()) {
                continue; // a peer that did not run at every count (it was skipped in one run)
            }
            double eff = v.getLast() * first / (last * v.getFirst());
            efficiency.put(e.getKey(), eff);
            System.out.printf(Locale.ROOT, "%-10s%s %12.3f%n", e.getKey(), v.stream().map(x -> String.format(Locale.ROOT, " %12.0f", x))
                    .reduce("", String::concat), eff);
            if (!e.getKey().equals("ours") && (best == null || v.getLast() > rates.get(best).getLast())) {
                best = e.getKey();
            }
        }
        if (best == null) {
            throw new IllegalStateException("no Linux peer ran at every loop count; see the runs above");
        }
        double effRatio = efficiency.get("ours") / efficiency.get(best);
        double rateRatio = rates.get("ours").getLast() / rates.get(best).getLast();
        System.out.printf(Locale.ROOT, "at %d loops: ours %.2fx the best peer's rate (%s); efficiency %.3f against its %.3f (%.2fx)%n",
                last, rateRatio, best, efficiency.get("ours"), efficiency.get(best), effRatio);
        if (json) {
            JsonObject sides = new JsonObject();
            for (Map.Entry<String, Double> e : efficiency.entrySet()) {
                List<Double> r = rates.get(e.getKey()).stream().map(JsonNumber::orNull).toList();
                sides.put(e.getKey(), new JsonObject().put("rates", new JsonArray(r)).put("efficiency", JsonNumber.orNull(e.getValue())));
            }
            System.out.println(new JsonObject().put("test", "vertx-scaling").put("connections", connections)
                    .put("loops", new JsonArray(loops)).put("sides", sides).put("best_peer", best)
                    .put("best_ratio_at_most_loops", JsonNumber.orNull(rateRatio)).put("efficiency_ratio", JsonNumber.orNull(effRatio))
                    .encode());
        }
        return 0;
    }

    /** A side's rate in the child's JSON line; null there (it measured nothing) is NaN here. */
    private static double rate(JsonObject side) {
        Double r = side.getDouble("msgs_s");
        return r != null ? r : Double.NaN;
    }
}
