package dev.nupa.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.ShmFabric;
import dev.nupa.ip.EchoListener;
import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Ipv4Stack;
import dev.nupa.node.NodeConfig;
import dev.nupa.node.NupaNode;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import io.vertx.core.Promise;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.net.NetSocket;

/**
 * A full fabric: 1,024 nodes, of which 1,015 are C nodes (libnupa's nupa-cnode, serving ICMP and UDP echo) and 9 are
 * Java nodes in this JVM. All join; a Java node pings every other node and has every C node echo a UDP datagram; it
 * streams TCP to the 8 other Java nodes, spread over the table; 100 C nodes killed at once are reclaimed by liveness.
 * It prints what it measured (join time, the C nodes' CPU use at idle, the time to reclaim the 100) on a RESULT line:
 * figures, not pass/fail conditions (docs/figures.md says how they were taken).
 */
@Tag("process")
@RunsAlone // its thousand processes take both CPUs of a small machine: a test beside it starves
class FabricScaleTest {
    private static final int NODES = 1024;
    private static final int DRIVER = 0;
    private static final int[] JAVA_PEERS = {127, 255, 383, 511, 639, 767, 895, 1023};
    private static final int KILL_FROM = 400; // 400..499: C nodes only
    private static final int KILLED = 100;

    @BeforeAll
    static void build() throws Exception {
        CNodeConformanceTest.build();
    }

    /** Node a holds 10.0.0.0/16's host a + 1. */
    private static int ip(int a) {
        return 0x0A000000 | (a + 1);
    }

    private static String ipText(int a) {
        int ip = ip(a);
        return (ip >>> 24) + "." + ((ip >>> 16) & 255) + "." + ((ip >>> 8) & 255) + "." + (ip & 255);
    }

    private static boolean isJava(int a) {
        if (a == DRIVER) {
            return true;
        }
        for (int p : JAVA_PEERS) {
            if (p == a) {
                return true;
            }
        }
        return false;
    }

    /** User plus system CPU time of a process so far, in clock ticks (/proc/PID/stat fields 14 and 15). */
    private static long cpuTicks(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(f[11]) + Long.parseLong(f[12]);
        } catch (Exception e) {
            return 0;
        }
    }

    /** Looks every 100 ms (each look maps the whole fabric) until the condition holds; fails after the timeout. */
    private static void waitFor(String what, long timeoutMs, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after " + timeoutMs + " ms waiting until " + what);
            }
            Thread.sleep(100); // between looks at the condition: each look maps the whole 1,024-node fabric
        }
    }

    private static long upCount(Path fabric) {
        try (Fabric f = ShmFabric.inspect(fabric)) {
            return f.nodes().stream().filter(n -> n.state().equals("UP")).count();
        }
    }

    @Test
    void aThousandAndTwentyFourNodesJoinAnswerAndAreReclaimed() throws Exception {
        Path fabric = ChildJvm.newFabricPath();
        FabricGeometry g = FabricGeometry.defaults().withMaxNodes(NODES).withRing(32, 9216);
        ShmFabric.create(fabric, g).close();
        Map<Integer, Process> cnodes = new HashMap<>();
        List<NupaNode> java = new ArrayList<>();
        Map<Integer, MemoryRegion> regions = new HashMap<>();
        try {
            long t0 = System.nanoTime();
            for (int a = 0; a < NODES; a++) {
                if (!isJava(a)) {
                    cnodes.put(a, new ProcessBuilder(CNodeConformanceTest.CNODE.toString(), fabric.toString(), Integer.toString(a),
                            ipText(a) + "/16", "serve", "600").redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                            .start());
                }
            }
            NupaNode driver = NupaNode.create(NodeConfig.defaults(fabric, DRIVER).withIp(IpConfig.of(ip(DRIVER), 16))).await(60, TimeUnit.SECONDS);
            java.add(driver);
            for (int p : JAVA_PEERS) {
                NupaNode peer = NupaNode.create(NodeConfig.defaults(fabric, p).withIp(IpConfig.of(ip(p), 16))).await(60, TimeUnit.SECONDS);
                peer.vertx().createNetServer().connectHandler(s -> s.pipeTo(s)).listen(7000, "0.0.0.0").await(10, TimeUnit.SECONDS);
                regions.put(p, rdmaTarget(peer));
                java.add(peer);
            }
            waitFor("all " + NODES + " nodes up", 180_000, () -> upCount(fabric) == NODES);
            double joinSeconds = (System.nanoTime() - t0) / 1e9;

            BitSet pinged = ping(driver.ip());
            assertEquals(NODES - 1, pinged.cardinality(), "echo replies from every other node; missing: " + missingOf(pinged));
            BitSet echoed = udpEcho(driver);
            assertEquals(cnodes.size(), echoed.cardinality(), "a UDP echo from every C node");
            for (int i = 0; i < JAVA_PEERS.length; i++) {
                int p = JAVA_PEERS[i];
                tcpRoundTrip(driver, p);
                rdmaWrite(driver, p, java.get(i + 1), regions.get(p));
            }

            // Idle: the C nodes' CPU over ten seconds, all of them together.
            Map<Integer, Long> before = new HashMap<>();
            cnodes.forEach((a, pr) -> before.put(a, cpuTicks(pr.pid())));
            long w0 = System.nanoTime();
            Thread.sleep(10_000); // a measuring interval, not a wait for a condition
            double wall = (System.nanoTime() - w0) / 1e9;
            long ticks = 0;
            for (var e : cnodes.entrySet()) {
                ticks += cpuTicks(e.getValue().pid()) - before.get(e.getKey());
            }
            double idleVcpu = ticks / 100.0 / wall; // USER_HZ is 100 on Linux

            long k0 = System.nanoTime();
            for (int a = KILL_FROM; a < KILL_FROM + KILLED; a++) {
                cnodes.remove(a).destroyForcibly();
            }
            waitFor("the " + KILLED + " killed nodes reclaimed", 60_000, () -> {
                try (Fabric f = ShmFabric.inspect(fabric)) {
                    return f.nodes().stream().filter(n -> n.address() >= KILL_FROM && n.address() < KILL_FROM + KILLED)
                            .allMatch(n -> n.state().equals("FREE"));
                }
            });
            double reclaimSeconds = (System.nanoTime() - k0) / 1e9;
            assertEquals(NODES - KILLED, upCount(fabric), "the others stay up");
            System.out.printf("RESULT nodes=%d join_s=%.1f pinged=%d udp_echoed=%d tcp_and_rdma_peers=%d idle_cpu_vcpu=%.3f idle_cpu_per_node_pct=%.4f"
                    + " reclaim_%d_s=%.2f heartbeat_timeout_s=%.1f%n", NODES, joinSeconds, pinged.cardinality(), echoed.cardinality(),
                    JAVA_PEERS.length, idleVcpu, idleVcpu * 100 / (NODES - java.size()), KILLED, reclaimSeconds, g.heartbeatTimeoutNs() / 1e9);
        } finally {
            cnodes.values().forEach(Process::destroyForcibly);
            for (Process p : cnodes.values()) {
                p.waitFor(10, TimeUnit.SECONDS);
            }
            for (NupaNode n : java) {
                n.closeAndWait();
            }
            Files.deleteIfExists(fabric);
        }
    }

    private static List<Integer> missingOf(BitSet got) {
        List<Integer> out = new ArrayList<>();
        for (int a = 0; a < NODES; a++) {
            if (a != DRIVER && !got.get(a)) {
                out.add(a);
            }
        }
        return out;
    }

    /** One echo request to every other node, 16 outstanding at most, each retried twice; returns who answered. */
    private static BitSet ping(Ipv4Stack ip) throws InterruptedException {
        BitSet got = new BitSet();
        Map<Integer, Integer> byIp = new ConcurrentHashMap<>();
        for (int a = 0; a < NODES; a++) {
            byIp.put(ip(a), a);
        }
        int id = 0x5CA1;
        EchoListener l = new EchoListener() {
            @Override
            public void onEchoReply(int from, int sequence, int ttl, MemorySegment data, long offset, int length, long now) {
                Integer a = byIp.get(from);
                if (a != null) {
                    synchronized (got) {
                        got.set(a);
                        got.notifyAll();
                    }
                }
            }

            @Override
            public void onError(int from, int type, int code, int sequence, long now) {
            }
        };
        ip.addEchoListener(id, l);
        MemorySegment data = Arena.ofAuto().allocate(56);
        try {
            for (int attempt = 0; attempt < 3; attempt++) {
                List<Integer> todo = new ArrayList<>();
                for (int a = 0; a < NODES; a++) {
                    if (a != DRIVER && !got.get(a)) {
                        todo.add(a);
                    }
                }
                for (int i = 0; i < todo.size(); i += 16) {
                    List<Integer> batch = todo.subList(i, Math.min(todo.size(), i + 16));
                    for (int a : batch) {
                        int dst = ip(a);
                        ip.link().call(() -> ip.sendEchoRequest(dst, id, a, data, 0, 56));
                    }
                    long deadline = System.nanoTime() + 2_000_000_000L;
                    synchronized (got) {
                        while (!batch.stream().allMatch(got::get) && System.nanoTime() < deadline) {
                            got.wait(50);
                        }
                    }
                }
            }
        } finally {
            ip.removeEchoListener(id, l);
        }
        return got;
    }

    /** A datagram to every C node's UDP echo (port 7), 16 outstanding at most, each retried twice; returns who echoed it intact. */
    private static BitSet udpEcho(NupaNode driver) throws Exception {
        BitSet got = new BitSet();
        DatagramSocket s = driver.vertx().createDatagramSocket();
        s.handler(p -> {
            String text = p.data().toString();
            String host = p.sender().host();
            for (int a = 0; a < NODES; a++) {
                if (ipText(a).equals(host) && text.equals("scale-" + a)) {
                    synchronized (got) {
                        got.set(a);
                        got.notifyAll();
                    }
                }
            }
        });
        s.listen(40000, "0.0.0.0").await(10, TimeUnit.SECONDS);
        try {
            for (int attempt = 0; attempt < 3; attempt++) {
                List<Integer> todo = new ArrayList<>();
                for (int a = 0; a < NODES; a++) {
                    if (!isJava(a) && !got.get(a)) {
                        todo.add(a);
                    }
                }
                for (int i = 0; i < todo.size(); i += 16) {
                    List<Integer> batch = todo.subList(i, Math.min(todo.size(), i + 16));
                    for (int a : batch) {
                        s.send("scale-" + a, 7, ipText(a));
                    }
                    long deadline = System.nanoTime() + 2_000_000_000L;
                    synchronized (got) {
                        while (!batch.stream().allMatch(got::get) && System.nanoTime() < deadline) {
                            got.wait(50);
                        }
                    }
                }
            }
        } finally {
            s.close().await(10, TimeUnit.SECONDS);
        }
        return got;
    }

    /** 256 KiB through a Java peer's TCP echo, checked byte for byte. */
    private static void tcpRoundTrip(NupaNode driver, int peer) throws Exception {
        byte[] sent = new byte[256 * 1024];
        for (int i = 0; i < sent.length; i++) {
            sent[i] = (byte) (i * 31 + peer);
        }
        Buffer back = Buffer.buffer();
        NetSocket so = driver.vertx().createNetClient().connect(7000, ipText(peer)).await(30, TimeUnit.SECONDS);
        so.handler(b -> {
            synchronized (back) {
                back.appendBuffer(b);
            }
        });
        so.write(Buffer.buffer(sent)).await(30, TimeUnit.SECONDS);
        ChildJvm.waitUntil("the echo from node " + peer, 30_000, () -> {
            synchronized (back) {
                return back.length() >= sent.length;
            }
        });
        so.close().await(10, TimeUnit.SECONDS);
        assertArrayEquals(sent, back.getBytes(), "TCP bytes echoed by node " + peer);
    }

    private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;

    /** A region on {@code peer} that accepts RDMA WRITEs, and a listener on CM port 7471 that hands out its key. */
    private static MemoryRegion rdmaTarget(NupaNode peer) throws Exception {
        Promise<MemoryRegion> ready = Promise.promise();
        peer.rdma().execute(ctx -> {
            var pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(16);
            MemoryRegion mr = pd.allocMr(4096, ACCESS);
            peer.rdma().cm().listen(7471, req -> {
                QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq));
                req.accept(qp, ("rkey=" + mr.rkey() + ",addr=" + mr.addr()).getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            });
            ready.complete(mr);
        });
        return ready.future().await(30, TimeUnit.SECONDS);
    }

    /** Connects to {@code peer}'s listener, RDMA-WRITEs a marked string into its region and checks it landed there. */
    private static void rdmaWrite(NupaNode driver, int peer, NupaNode peerNode, MemoryRegion target) throws Exception {
        String mark = "written over RDMA to node " + peer;
        Promise<Void> done = Promise.promise();
        driver.rdma().execute(ctx -> {
            var pd = ctx.allocPd();
            CompletionQueue cq = ctx.createCq(16);
            MemoryRegion mr = pd.allocMr(4096, ACCESS);
            QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq));
            driver.rdma().cm().connect(ip(peer), 7471, qp, new byte[0]).onComplete(ar -> {
                if (ar.failed()) {
                    done.fail(ar.cause());
                    return;
                }
                String[] kv = new String(ar.result().privateData(), java.nio.charset.StandardCharsets.US_ASCII).split("\0")[0].split(",");
                mr.memory().setString(0, mark, java.nio.charset.StandardCharsets.US_ASCII);
                cq.onEvent(() -> {
                    WorkCompletion wc = new WorkCompletion();
                    while (cq.poll(wc)) {
                        if (wc.status == WcStatus.SUCCESS) {
                            done.tryComplete();
                        } else {
                            done.tryFail("RDMA WRITE to node " + peer + ": " + WcStatus.name(wc.status));
                        }
                    }
                    cq.requestNotify(false);
                });
                cq.requestNotify(false);
                qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                        .local(mr, 0, mark.length() + 1).remote(Long.parseLong(kv[1].substring(5)), Integer.parseInt(kv[0].substring(5))));
            });
        });
        done.future().await(30, TimeUnit.SECONDS);
        Promise<String> landed = Promise.promise();
        peerNode.rdma().execute(ctx -> landed.complete(target.memory().getString(0, java.nio.charset.StandardCharsets.US_ASCII)));
        assertEquals(mark, landed.future().await(10, TimeUnit.SECONDS), "the bytes in node " + peer + "'s region");
    }
}
