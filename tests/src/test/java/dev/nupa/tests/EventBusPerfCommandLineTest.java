package dev.nupa.tests;

import static dev.nupa.tests.NupaCli.assertOneLineError;
import static dev.nupa.tests.NupaCli.here;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.tests.NupaCli.Run;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * `nupa perf vertx-eventbus` as a user meets it: its report and last JSON line (ours, each Linux peer, the best peer of
 * each figure), io_uring where the kernel lets it run, one-line refusals, and the fresh fabric file removed. No timing is
 * checked.
 */
@Tag("process")
class EventBusPerfCommandLineTest {
    @Test
    void reportsRequestReplyAndPublishBesideEachLinuxPeer() throws Exception {
        Path fabrics = Files.createTempDirectory(Path.of("/dev/shm"), "nupa-perf-test-");
        try {
            Run r = NupaCli.nupa(180, Map.of("NUPA_FABRIC_DIR", fabrics.toString()), "perf", "vertx-eventbus", "-t", "0.2",
                    "--turns", "1", "--warmup-time", "0.1", "--subscribers", "2", "--peers", "io_uring,epoll", "--json");
            assertEquals(0, r.status(), r.out() + r.err());
            String ratio = "([0-9.]+|null)"; // null: the peer measured none of it in any turn (a short turn on a loaded machine)
            String peer = "\\{\"msgs_s\":[0-9.]+,\"p50_ns\":[0-9]+,\"p99_ns\":[0-9]+,\"publish_msgs_s\":[0-9.]+,\"ratio\":" + ratio + ","
                    + "\"latency_ratio\":" + ratio + ",\"p99_ratio\":" + ratio + ",\"publish_ratio\":" + ratio + "\\}";
            assertTrue(Pattern.compile("^\\{\"test\":\"vertx-eventbus\",\"size\":16,\"outstanding\":1,\"subscribers\":2,\"turns\":1,"
                    + "\"ours\":\\{\"msgs_s\":[0-9.]+,\"p50_ns\":[0-9]+,\"p99_ns\":[0-9]+,\"publish_msgs_s\":[0-9.]+\\},"
                    + "\"peers\":\\{(\"io_uring\":" + peer + ",)?\"epoll\":" + peer + "\\},"
                    + "\"best_peer\":\"(io_uring|epoll)\",\"best_ratio\":" + ratio + ",\"best_latency_peer\":\"(io_uring|epoll)\","
                    + "\"best_latency_ratio\":" + ratio + ",\"best_publish_peer\":\"(io_uring|epoll)\",\"best_publish_ratio\":" + ratio + "\\}$")
                    .matcher(r.lastLine()).find(), r.out());
            assertTrue(r.out().contains("\"io_uring\":{") != r.out().contains("peer io_uring skipped: "), r.out());
            assertTrue(r.out().contains("publish to 2 subscribers"), r.out());
            try (Stream<Path> left = Files.list(fabrics)) {
                assertEquals(List.of(), left.toList(), "the fresh fabric file is removed afterwards");
            }
        } finally {
            try (Stream<Path> left = Files.list(fabrics)) {
                for (Path p : left.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(fabrics);
        }
    }

    @Test
    void refusesWhatItCannotMeasureInOneLine() {
        assertOneLineError(here("perf", "vertx-eventbus", "--peers", "uds"), 2, "--peers takes epoll and io_uring here");
        assertOneLineError(here("perf", "vertx-eventbus", "-w", "100"), 2, "-w a multiple of 64");
        assertOneLineError(here("perf", "vertx-eventbus", "--cluster-manager", "zookeeper"), 2,
                "cluster manager \"zookeeper\" is not known: pass hazelcast or infinispan");
    }
}
