package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.ip.SendStatus;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.node.cli.Main;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The GPU node's kernels (native/cuda/nupa-gpu-node.cu, nupa_gpu_node.cuh) run on CPU threads through
 * native/cuda/sim (one thread per CUDA thread, barriers as pthread barriers), against Java nodes on one fabric file:
 * the UDP echo for `nupa udp-check`, `nupa perf udp-lat --peer` and the C node, byte for byte, with hostile frames
 * counted and dropped; the inline reduction for Java senders, every sum checked bit for bit against the one computed
 * here; and a killed GPU node's address reclaimed by a Java node. The same source the GPU runs; nothing here says
 * anything about the GPU's memory model or speed.
 */
@Tag("process")
class GpuNodeSimTest {
    private static final Path NATIVE = Path.of(System.getProperty("user.dir")).getParent().resolve("native");
    private static final Path SIM = NATIVE.resolve("build/nupa-gpu-node-sim");
    private static final int GPU = 5; // 10.0.0.6 in the fabric's plan
    private static final String GPU_IP = "10.0.0.6";
    private static final int MAGIC = 0x4E524544; // "NRED"

    @BeforeAll
    static void build() throws Exception {
        String missing = Linux.missing("make", "cc", "g++");
        Assumptions.assumeTrue(missing == null, () -> "skipping the test: no " + missing + " to build the GPU node's simulation "
                + "(apt-get install build-essential)");
        Linux.Result made = Linux.run(300, "make", "-C", NATIVE.toString(), "all", "sim");
        assertEquals(0, made.status(), "make -C native all sim: " + made.output());
    }

    /** The simulated GPU node, serving as node 5; its first line read. */
    private record Served(Process process, BufferedReader lines, String first) implements AutoCloseable {
        static Served start(Path fabric, String claim, String... service) throws IOException {
            List<String> cmd = new ArrayList<>(List.of(SIM.toString(), "--claim", claim, fabric.toString(), Integer.toString(GPU), GPU_IP + "/24"));
            cmd.addAll(List.of(service));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            p.getOutputStream().close();
            BufferedReader lines = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            return new Served(p, lines, lines.readLine());
        }

        /** SIGTERM: the kernel stops, the node leaves; what it printed after its first line. */
        String stop() throws Exception {
            Linux.ok("kill", "-TERM", Long.toString(process.pid()));
            StringBuilder rest = new StringBuilder();
            for (String line; (line = lines.readLine()) != null; ) {
                rest.append(line).append('\n');
            }
            assertTrue(process.waitFor(30, TimeUnit.SECONDS), "the GPU node stopped");
            assertEquals(0, process.exitValue(), rest.toString());
            return rest.toString();
        }

        @Override
        public void close() {
            process.destroyForcibly();
        }
    }

    /** Both ways of sending into a peer's ring: the protocol's CASes, and stores as the ring's only producer. */
    @ParameterizedTest
    @ValueSource(strings = {"cas", "sole"})
    void theEchoKernelAnswersJavaAndCNodesByteForByteAndDropsWhatIsWrong(String claim) throws Exception {
        Path fabric = createdFabric();
        try (Served gpu = Served.start(fabric, claim, "echo", "7", "32", "120")) {
            assertTrue(gpu.first() != null && gpu.first().startsWith("nupa-gpu-node: node 5 serving UDP echo on port 7 at 10.0.0.6/24 (CPU simulation")
                    && gpu.first().endsWith(claim.equals("sole") ? "claims by store, the only producer)" : "claims by CAS)"),
                    "the simulated GPU node serves: " + gpu.first());
            NupaCli.Run check = NupaCli.nupa("udp-check", "--fabric", fabric.toString(), "--count", "300", "--max-size", "8972", GPU_IP);
            assertEquals(0, check.status(), check.out() + check.err());
            assertTrue(check.out().contains("300 echoed intact, 0 missing"), check.out());
            Linux.Result c = Linux.run(120, CNodeConformanceTest.CNODE.toString(), fabric.toString(), "3", "10.0.0.4/24", "udp", GPU_IP, "7", "0", "1500");
            assertEquals(0, c.status(), c.output());
            assertTrue(c.output().contains("1501 of 1501 datagrams of 0..1500 bytes echoed intact"), c.output());
            NupaCli.Run lat = NupaCli.nupa("perf", "udp-lat", "--peer", GPU_IP, "--fabric", fabric.toString(), "--client-address", "2",
                    "-n", "2000", "--warmup", "200", "--json");
            assertEquals(0, lat.status(), lat.out() + lat.err());
            assertTrue(lat.lastLine().contains("\"peer\":\"10.0.0.6\"") && lat.lastLine().contains("\"iterations\":2000"), lat.out());

            // Hostile frames from a raw node: each counted in its class and dropped, none answered.
            try (FabricNode raw = ShmFabric.attach(fabric, 9, null)) {
                int me = IpConfig.fabricPlan(9).address();
                int gpuIp = IpConfig.fabricPlan(GPU).address();
                byte[] payload = "not for the echo".getBytes(StandardCharsets.US_ASCII);
                MemorySegment badUdp = udpFrame(me, gpuIp, 7, payload);
                badUdp.set(ValueLayout.JAVA_BYTE, 8 + 28, (byte) (badUdp.get(ValueLayout.JAVA_BYTE, 8 + 28) ^ 1)); // the data, after the checksum
                MemorySegment otherPort = udpFrame(me, gpuIp, 9, payload);
                MemorySegment badIp = udpFrame(me, gpuIp, 7, payload);
                badIp.set(ValueLayout.JAVA_BYTE, 8 + 8, (byte) 1); // TTL changed under the header checksum
                for (MemorySegment f : List.of(badUdp, otherPort, badIp)) {
                    assertTrue(raw.offer(GPU, 0, f, 0, (int) f.byteSize()) >= 0, "room in the GPU node's ring");
                }
                // An echo after them comes back, so the kernel has passed them.
                NupaCli.Run after = NupaCli.nupa("udp-check", "--fabric", fabric.toString(), "--count", "5", "--max-size", "100", GPU_IP);
                assertEquals(0, after.status(), after.out() + after.err());

                // A burst that waits in the ring together: the block's batches take it (and the look read ahead beside
                // them), every echo byte for byte; sizes whole in the slot's first read and past it.
                List<byte[]> burst = new ArrayList<>();
                for (int k = 0; k < BURST; k++) {
                    byte[] data = new byte[8 + 7 * k];
                    for (int j = 0; j < data.length; j++) {
                        data[j] = (byte) (k * 31 + j);
                    }
                    MemorySegment.ofArray(data).set(BE_INT, 0, BURST_MAGIC);
                    MemorySegment.ofArray(data).set(BE_INT, 4, k);
                    burst.add(data);
                    MemorySegment f = udpFrame(me, gpuIp, 7, data);
                    assertTrue(raw.offer(GPU, 0, f, 0, (int) f.byteSize()) >= 0, "room in the GPU node's ring for the burst");
                }
                byte[][] echoed = new byte[BURST][];
                int[] got = {0};
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (got[0] < BURST && System.nanoTime() < deadline) {
                    int n = raw.poll((source, mem, off, len) -> {
                        int ulen = len >= 36 ? (mem.get(BE_INT, off + 8 + 24) >>> 16) - 8 : -1;
                        if (source == GPU && ulen >= 8 && 36 + ulen <= len && mem.get(BE_INT, off + 36) == BURST_MAGIC) {
                            int k = mem.get(BE_INT, off + 40);
                            if (k >= 0 && k < BURST && echoed[k] == null) {
                                echoed[k] = mem.asSlice(off + 36, ulen).toArray(ValueLayout.JAVA_BYTE);
                                got[0]++;
                            }
                        }
                    }, 64);
                    if (n == 0) {
                        LockSupport.parkNanos(100_000);
                    }
                }
                for (int k = 0; k < BURST; k++) {
                    assertTrue(echoed[k] != null && Arrays.equals(burst.get(k), echoed[k]), "the burst's datagram " + k + " echoed intact");
                }
            }
            String last = gpu.stop();
            assertTrue(last.contains("nupa-gpu-node: " + (4006 + BURST) + " datagrams echoed; dropped: 1 not UDP, 1 bad checksums, 1 to other ports,"
                    + " 0 sends failed"), last);
            Matcher alone = Pattern.compile("(\\d+) frames came alone").matcher(last);
            assertTrue(alone.find() && Long.parseLong(alone.group(1)) < 4006 + BURST, "some frames went through the block's batches: " + last);
            System.out.println("GpuNodeSimTest: " + check.lastLine() + "; " + c.output().strip() + "; " + lat.out().lines().skip(2).findFirst().orElse("")
                    + "; " + last.strip());
            assertNodeFree(fabric);
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    @Test
    void theReductionKernelSumsJavaSendersVectorsAsTheCpuDoes() throws Exception {
        Path fabric = createdFabric();
        int senders = 3;
        int elements = 4096;
        int chunk = 1000; // the last chunk short
        int rounds = 3;
        try (Served gpu = Served.start(fabric, "sole", "reduce", "9000", Integer.toString(senders), Integer.toString(elements),
                Integer.toString(chunk), "32", "120")) {
            assertTrue(gpu.first() != null && gpu.first().contains("serving reduction on UDP port 9000"), "serves: " + gpu.first());
            List<Sender> all = new ArrayList<>();
            try {
                for (int s = 0; s < senders; s++) {
                    all.add(new Sender(fabric, 10 + s, elements, chunk)); // 10.0.0.11, .12, .13: the sum's order
                }
                int gpuIp = IpConfig.fabricPlan(GPU).address();
                SplittableRandom random = new SplittableRandom(34);
                for (int r = 0; r < rounds; r++) {
                    float[][] v = new float[senders][elements];
                    float[] expected = new float[elements];
                    for (int s = 0; s < senders; s++) {
                        for (int e = 0; e < elements; e++) {
                            v[s][e] = (float) (random.nextDouble() * 2 - 1);
                        }
                    }
                    for (int e = 0; e < elements; e++) {
                        float acc = 0f;
                        for (int s = 0; s < senders; s++) {
                            acc += v[s][e];
                        }
                        expected[e] = acc;
                    }
                    for (int s = 0; s < senders; s++) {
                        all.get(s).send(gpuIp, r, v[s]);
                    }
                    int round = r;
                    ChildJvm.waitUntil("every sender's result of round " + r, 60_000, () -> {
                        boolean done = true;
                        for (Sender s : all) {
                            done &= s.poll(round);
                        }
                        return done;
                    });
                    for (int s = 0; s < senders; s++) {
                        for (int e = 0; e < elements; e++) {
                            assertEquals(Float.floatToRawIntBits(expected[e]), Float.floatToRawIntBits(all.get(s).result[e]),
                                    "round " + r + ", sender " + s + ", element " + e + ": the GPU's sum and the CPU's");
                        }
                    }
                }
            } finally {
                for (Sender s : all) {
                    s.node.close();
                }
            }
            String last = gpu.stop();
            int datagrams = senders * rounds * ((elements + chunk - 1) / chunk);
            assertTrue(last.contains("nupa-gpu-node: " + rounds + " rounds reduced from " + datagrams + " datagrams, " + datagrams
                    + " result datagrams sent; dropped: 0 not UDP, 0 bad checksums, 0 to other ports, 0 bad requests, 0 sends failed"), last);
            System.out.println("GpuNodeSimTest: " + rounds + " rounds of " + senders + " x " + elements + " floats, every sum bit for bit; "
                    + last.strip());
            assertNodeFree(fabric);
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    /** A GPU node whose host process dies is reclaimed as any node: by a Java node's liveness watch (section 8). */
    @Test
    void aKilledGpuNodeIsReclaimedByAJavaNode() throws Exception {
        Path fabric = createdFabric();
        try (ChildJvm java = ChildJvm.start("java-node", Main.class, "node", "--fabric", fabric, "--address", "1");
                Served gpu = Served.start(fabric, "cas", "echo", "7", "4", "120")) {
            java.awaitLine("nupa node:", 60_000);
            assertTrue(gpu.first() != null && gpu.first().contains("serving UDP echo"), "serves: " + gpu.first());
            ChildJvm.waitUntil("the GPU node to be up", 30_000, () -> nodeState(fabric, GPU).equals("UP"));
            Linux.ok("kill", "-KILL", Long.toString(gpu.process().pid()));
            ChildJvm.waitUntil("the Java node to reclaim node 5", 30_000, () -> nodeState(fabric, GPU).equals("FREE"));
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    /** One Java sender of the reduction: a node with its IPv4 stack polled by the test's thread. */
    private static final class Sender {
        final FabricNode node;
        final Link link;
        final Ipv4Stack ip;
        final int port;
        final int elements;
        final int chunk;
        final float[] result;
        final MemorySegment out = Arena.ofAuto().allocate(65_536);
        int round = -1;
        int got;

        Sender(Path fabric, int address, int elements, int chunk) {
            node = ShmFabric.attach(fabric, address, null);
            link = new Link(node);
            ip = new Ipv4Stack(link, new NeighborDirectory(node), IpConfig.fabricPlan(address));
            this.elements = elements;
            this.chunk = chunk;
            result = new float[elements];
            port = ip.bindUdp(40000, (src, srcPort, dst, mem, off, len) -> {
                // [magic][round][first][count] big-endian, then count floats little-endian
                if (len < 16 || mem.get(BE_INT, off) != MAGIC || mem.get(BE_INT, off + 4) != round) {
                    return;
                }
                int first = mem.get(BE_INT, off + 8);
                int count = mem.get(BE_INT, off + 12);
                if (first < 0 || count < 0 || first + count > elements || len != 16 + 4 * count) {
                    return;
                }
                for (int j = 0; j < count; j++) {
                    result[first + j] = mem.get(LE_FLOAT, off + 16 + 4L * j);
                }
                got++;
            });
        }

        void send(int to, int r, float[] v) {
            round = r;
            got = 0;
            for (int first = 0; first < elements; first += chunk) {
                int count = Math.min(chunk, elements - first);
                out.set(BE_INT, 0, MAGIC);
                out.set(BE_INT, 4, r);
                out.set(BE_INT, 8, first);
                out.set(BE_INT, 12, count);
                for (int j = 0; j < count; j++) {
                    out.set(LE_FLOAT, 16 + 4L * j, v[first + j]);
                }
                int rc = ip.sendUdp(port, to, 9000, out, 0, 16 + 4 * count);
                assertEquals(SendStatus.OK, rc, "a datagram of round " + r + ": " + SendStatus.describe(rc));
            }
        }

        /** Polls; whether every chunk of round r came back. */
        boolean poll(int r) {
            link.poll(64, System.nanoTime());
            return round == r && got == (elements + chunk - 1) / chunk;
        }
    }

    private static final ValueLayout.OfInt BE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    /** The echo test's burst: datagrams offered at once, tagged with this and their index. */
    private static final int BURST = 48;
    private static final int BURST_MAGIC = 0x42555253;
    private static final ValueLayout.OfFloat LE_FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** A link frame (docs/link-layer.md 1) from node 9 to the GPU node holding an IPv4/UDP datagram with good checksums. */
    private static MemorySegment udpFrame(int src, int dst, int port, byte[] data) {
        int ipLen = 28 + data.length;
        MemorySegment f = Arena.ofAuto().allocate(8 + ipLen);
        ValueLayout.OfShort be16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
        f.set(be16, 0, (short) GPU);
        f.set(be16, 2, (short) 9);
        f.set(be16, 4, (short) 0x0800);
        f.set(be16, 6, (short) ipLen);
        long ip = 8;
        f.set(ValueLayout.JAVA_BYTE, ip, (byte) 0x45);
        f.set(be16, ip + 2, (short) ipLen);
        f.set(be16, ip + 6, (short) 0x4000);
        f.set(ValueLayout.JAVA_BYTE, ip + 8, (byte) 64);
        f.set(ValueLayout.JAVA_BYTE, ip + 9, (byte) 17);
        f.set(BE_INT, ip + 12, src);
        f.set(BE_INT, ip + 16, dst);
        f.set(be16, ip + 10, (short) checksum(f, ip, 20, 0));
        long udp = ip + 20;
        f.set(be16, udp, (short) 40001);
        f.set(be16, udp + 2, (short) port);
        f.set(be16, udp + 4, (short) (8 + data.length));
        MemorySegment.copy(MemorySegment.ofArray(data), 0, f, udp + 8, data.length);
        long pseudo = (src >>> 16) + (src & 0xFFFF) + (dst >>> 16) + (dst & 0xFFFF) + 17 + 8 + data.length;
        f.set(be16, udp + 6, (short) checksum(f, udp, 8 + data.length, pseudo));
        return f;
    }

    /** The Internet checksum (RFC 1071) of n bytes at off, from sum. */
    private static int checksum(MemorySegment m, long off, int n, long sum) {
        for (int i = 0; i < n; i += 2) {
            int hi = m.get(ValueLayout.JAVA_BYTE, off + i) & 0xFF;
            int lo = i + 1 < n ? m.get(ValueLayout.JAVA_BYTE, off + i + 1) & 0xFF : 0;
            sum += (hi << 8) | lo;
        }
        while ((sum >> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        return (int) (~sum & 0xFFFF);
    }

    private static Path createdFabric() {
        Path fabric = ChildJvm.newFabricPath();
        NupaCli.Run made = NupaCli.here("fabric", "create", "--fabric", fabric.toString());
        assertEquals(0, made.status(), made.err());
        return fabric;
    }

    private static String nodeState(Path fabric, int address) {
        var m = java.util.regex.Pattern.compile("(?m)^\\s+" + address + " (\\w+) ")
                .matcher(NupaCli.here("fabric", "info", "--fabric", fabric.toString()).out());
        return m.find() ? m.group(1) : "FREE";
    }

    private static void assertNodeFree(Path fabric) {
        NupaCli.Run info = NupaCli.here("fabric", "info", "--fabric", fabric.toString());
        assertEquals(0, info.status(), info.err());
        assertTrue(!java.util.regex.Pattern.compile("(?m)^\\s+" + GPU + " (UP|JOINING|RECLAIMING) ").matcher(info.out()).find(),
                "node 5 left: " + info.out());
    }
}
