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
 * `nupa perf vertx-scaling`: Vert.x HTTP/1.1 (or, with {@code --workload echo}, NetSocket bulk echo) at {@code -c}
 * connections with 1, 2, 4 and 8 event loops a side (each count a `vertx-http --loops N` or `vertx-echo --loops N` run
 * of its own, ours and the Linux peers given the same loops), the requests/s (Gbit/s) of
 * every side at every count, and each side's scaling efficiency: the rate at the most loops over that many times the
 * rate at the fewest (1 when the loops scale perfectly). The figure is ours against the best peer's. Each count's
 * own ratios against its best peers (the child's {@code best_ratio} and {@code best_latency_ratio}) are kept too, and
 * the least rate ratio and the highest p50 ratio over the counts: the goals hold "at every loop count".
 */
@Command(name = "vertx-scaling", mixinStandardHelpOptions = true,
        description = {"Vert.x HTTP/1.1 requests/s (or NetSocket echo Gbit/s) at 1, 2, 4 and 8 event loops a side, ours and each",
                "Linux peer's, and the scaling efficiency (rate at the most loops / (loops x rate at the fewest)) of each."})
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

    @Option(names = "--workload", paramLabel = "http|echo", defaultValue = "http",
            description = "What each count runs: vertx-http (requests/s, p50) or vertx-echo (Gbit/s) (default: ${DEFAULT-VALUE}).")
    String workload;

    @Option(names = "--json", description = "Print one JSON line at the end.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        if (!workload.equals("http") && !workload.equals("echo")) {
            throw new IllegalArgumentException("--workload takes http or echo, not " + workload);
        }
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
        Map<String, List<Long>> p50s = new LinkedHashMap<>(); // side -> p50 (ns) per loop count
        JsonArray atEachCount = new JsonArray();
        double leastRateRatio = Double.NaN;
        double mostLatencyRatio = Double.NaN;
        for (int n : loops) {
            List<String> args = List.of("perf", "vertx-" + workload, "-c", Integer.toString(connections), "--loops", Integer.toString(n),
                    "-t", Double.toString(seconds), "--turns", Integer.toString(turns), "--peers", peers, "--json");
            System.out.printf(Locale.ROOT, "vertx-scaling: %d loop(s) a side: nupa %s%n", n, String.join(" ", args));
            JsonObject r = Children.runJson(args);
            add(rates, p50s, "ours", r.getJsonObject("ours"));
            JsonObject ps = r.getJsonObject("peers");
            for (String p : ps.fieldNames()) {
                add(rates, p50s, p, ps.getJsonObject(p));
            }
            double rr = number(r, "best_ratio");
            double lr = number(r, "best_latency_ratio");
            leastRateRatio = Double.isNaN(leastRateRatio) || rr < leastRateRatio ? rr : leastRateRatio;
            mostLatencyRatio = Double.isNaN(mostLatencyRatio) || lr > mostLatencyRatio ? lr : mostLatencyRatio;
            atEachCount.add(new JsonObject().put("loops", n).put("best_peer", r.getString("best_peer")).put("best_ratio", JsonNumber.orNull(rr))
                    .put("best_latency_peer", r.getString("best_latency_peer")).put("best_latency_ratio", JsonNumber.orNull(lr)));
        }
        int first = loops.getFirst();
        int last = loops.getLast();
        System.out.printf(Locale.ROOT, "vertx-scaling: %s, %d connections; %s per event loop count a side%n",
                workload.equals("http") ? "HTTP/1.1" : "NetSocket echo", connections, workload.equals("http") ? "requests/s" : "Gbit/s");
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
            System.out.printf(Locale.ROOT, "%-10s%s %12.3f%n", e.getKey(), v.stream().map(x -> String.format(Locale.ROOT, " %12.2f", x))
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
        for (int i = 0; i < atEachCount.size(); i++) {
            JsonObject c = atEachCount.getJsonObject(i);
            System.out.printf(Locale.ROOT, "at %d loop(s): ours %sx the best peer's rate (%s)%s%n", c.getInteger("loops"),
                    JsonNumber.orNa(number(c, "best_ratio"), 2), c.getString("best_peer"), c.getString("best_latency_peer") == null ? ""
                            : ", p50 " + JsonNumber.orNa(number(c, "best_latency_ratio"), 3) + "x the lowest (" + c.getString("best_latency_peer") + ")");
        }
        System.out.printf(Locale.ROOT, "over the counts: the least rate ratio %s, the highest p50 ratio %s%n", JsonNumber.orNa(leastRateRatio, 2),
                JsonNumber.orNa(mostLatencyRatio, 3));
        if (json) {
            JsonObject sides = new JsonObject();
            for (Map.Entry<String, Double> e : efficiency.entrySet()) {
                List<Double> r = rates.get(e.getKey()).stream().map(JsonNumber::orNull).toList();
                sides.put(e.getKey(), new JsonObject().put("rates", new JsonArray(r)).put("p50_ns", new JsonArray(p50s.get(e.getKey())))
                        .put("efficiency", JsonNumber.orNull(e.getValue())));
            }
            System.out.println(new JsonObject().put("test", "vertx-scaling").put("workload", workload).put("connections", connections)
                    .put("loops", new JsonArray(loops)).put("sides", sides).put("best_peer", best)
                    .put("best_ratio_at_most_loops", JsonNumber.orNull(rateRatio)).put("efficiency_ratio", JsonNumber.orNull(effRatio))
                    .put("at_each_count", atEachCount).put("least_best_ratio", JsonNumber.orNull(leastRateRatio))
                    .put("most_best_latency_ratio", JsonNumber.orNull(mostLatencyRatio)).encode());
        }
        return 0;
    }

    /** A side's rate and p50 from the child's JSON line, added to that side's lists. */
    private static void add(Map<String, List<Double>> rates, Map<String, List<Long>> p50s, String side, JsonObject r) {
        rates.computeIfAbsent(side, k -> new ArrayList<>()).add(number(r, r.containsKey("gbit_s") ? "gbit_s" : "msgs_s"));
        p50s.computeIfAbsent(side, k -> new ArrayList<>()).add(r.getLong("p50_ns", 0L));
    }

    /** A number in a JSON object; null or absent there (nothing measured) is NaN here. */
    private static double number(JsonObject o, String field) {
        Double r = o.getDouble(field);
        return r != null ? r : Double.NaN;
    }
}
