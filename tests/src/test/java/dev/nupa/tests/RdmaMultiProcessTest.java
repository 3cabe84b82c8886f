package dev.nupa.tests;

import static dev.nupa.tests.ChildJvm.waitUntil;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.NodeInfo;
import dev.nupa.device.ShmFabric;
import dev.nupa.device.WindowInfo;
import dev.nupa.l2.Link;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * RDMA verbs between two node processes on one fabric file: this JVM is the client (node 0), an
 * {@link RdmaPeerMain} child JVM the server (node 1). They exchange node, QP numbers, PSNs, rkey and
 * address through files; every operation is then checked on real data: WRITE of 1 B .. 1 MiB read back
 * and checksummed by the peer, WRITE_WITH_IMM answered by the peer with the immediate and a checksum,
 * SEND echoed through scatter/gather lists, FETCH_AND_ADD and CMP_AND_SWP to exact values, in both
 * transfer modes (DIRECT's WRITE, READ and atomics placed directly, PACKET's not). Then a peer is killed
 * with SIGKILL mid-stream: the client's outstanding requests end in RETRY_EXC_ERR and WR_FLUSH_ERR, its
 * QPs in ERR, and the fabric reclaims the dead node so a stale direct WRITE cannot reach freed memory.
 *
 * <p>This thread drives the client's context: every wait polls the link and the context on the wall
 * clock, and every wait is bounded.
 */
@Timeout(90)
@Tag("process")
class RdmaMultiProcessTest {
    static final int CLIENT = 0;
    static final int PEER = 1;
    static final long MS = 1_000_000L;
    static final int MIB = 1 << 20;
    /** A fast heartbeat; a generous timeout (a busy 2-core machine must not declare a living peer dead); a
     * dead process on this host is found by its pid within a heartbeat period anyway. */
    static final FabricGeometry GEOMETRY = new FabricGeometry(4, 1, 256, 9216, 32, 32L << 20,
            20 * MS, 5_000 * MS, 1_000 * MS);
    static final int ALL = RdmaPeerMain.ALL;
    static final int CLIENT_PSN = 0x100;
    static final String OK = WcStatus.name(WcStatus.SUCCESS);

    // Client region layout.
    static final long SRC = 0;
    static final long DST = MIB;
    static final long SCATTER = 2L * MIB;
    static final long ATOMIC = 3L * MIB;
    static final long REPLY = 3L * MIB + 512 * 1024;
    static final int REPLY_SLOTS = 64;

    private final Path fabricPath = ChildJvm.newFabricPath();
    private Path dir;
    private Fabric fabric;
    private FabricNode node;
    private Link link;
    private RdmaContext ctx;
    private ProtectionDomain pd;
    private MemoryRegion mr;
    private final Map<TransferMode, QueuePair> qps = new EnumMap<>(TransferMode.class);
    private final Map<TransferMode, CompletionQueue> sendCqs = new EnumMap<>(TransferMode.class);
    private final Map<TransferMode, CompletionQueue> recvCqs = new EnumMap<>(TransferMode.class);
    private ChildJvm peer;
    private Properties peerInfo;
    private long remoteAddr;
    private int rkey;
    private final WorkCompletion wc = new WorkCompletion();
    private int nextReply;

    @AfterEach
    void cleanUp() throws IOException {
        if (peer != null) {
            peer.close();
        }
        if (ctx != null) {
            ctx.close();
        }
        if (link != null) {
            link.close();
        }
        if (node != null) {
            node.close();
        }
        if (fabric != null) {
            fabric.close();
        }
        Files.deleteIfExists(fabricPath);
        if (dir != null) {
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    /** Creates the fabric and this node's context, starts the peer, exchanges connection data and connects both QPs. */
    private void start() throws Exception {
        fabric = ShmFabric.create(fabricPath, GEOMETRY);
        node = fabric.attach(CLIENT);
        link = new Link(node);
        ctx = RdmaContext.open(link, 64, 64, System::nanoTime);
        pd = ctx.allocPd();
        mr = pd.allocMr(4L * MIB, ALL);
        Properties me = new Properties();
        me.setProperty("node", Integer.toString(ctx.node()));
        me.setProperty("psn", Integer.toString(CLIENT_PSN));
        for (TransferMode m : TransferMode.values()) {
            CompletionQueue s = ctx.createCq(4096);
            CompletionQueue r = ctx.createCq(4096);
            QueuePair q = ctx.createQp(pd, QpInitAttr.rc(s, r).withMode(m).withCapacity(1024, 1024));
            RdmaPeerMain.init(q);
            sendCqs.put(m, s);
            recvCqs.put(m, r);
            qps.put(m, q);
            me.setProperty("qpn." + m, Integer.toString(q.qpNum()));
        }
        dir = Files.createTempDirectory("nupa-rdma-mp-");
        RdmaPeerMain.writeProperties(dir.resolve("client.properties"), me);
        peer = ChildJvm.start("rdma-peer", RdmaPeerMain.class, fabricPath, dir, PEER, 120_000);
        Path peerFile = dir.resolve("peer.properties");
        long deadline = System.nanoTime() + 60_000 * MS;
        while (!Files.exists(peerFile)) {
            if (!peer.process.isAlive()) {
                fail("the peer exited (status " + peer.process.exitValue() + ") before it was ready:\n" + peer.output());
            }
            if (System.nanoTime() - deadline > 0) {
                fail("the peer wrote no peer.properties within 60 s:\n" + peer.output());
            }
            Thread.sleep(2);
        }
        peerInfo = RdmaPeerMain.readProperties(peerFile);
        assertEquals(PEER, intOf("node"));
        remoteAddr = Long.parseLong(peerInfo.getProperty("addr"));
        rkey = intOf("rkey");
        assertEquals(RdmaPeerMain.TARGET_BYTES, Long.parseLong(peerInfo.getProperty("length")));
        for (TransferMode m : TransferMode.values()) {
            RdmaPeerMain.rtr(qps.get(m), PEER, intOf("qpn." + m), intOf("psn"));
            RdmaPeerMain.rts(qps.get(m), CLIENT_PSN);
        }
    }

    private int intOf(String key) {
        return Integer.parseInt(peerInfo.getProperty(key));
    }

    // ---- driving the client's context -----------------------------------------------------------

    private void pump() {
        long now = System.nanoTime();
        link.poll(64, now);
        ctx.poll(now);
    }

    /** Polls until {@code cq} yields a completion; fails after {@code timeoutMs}. */
    private WorkCompletion next(CompletionQueue cq, String what, long timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * MS;
        while (!cq.poll(wc)) {
            pump();
            if (System.nanoTime() - deadline > 0) {
                fail("no completion for " + what + " within " + timeoutMs + " ms; peer alive=" + peer.process.isAlive()
                        + ", counters " + ctx.counters() + "\npeer output:\n" + peer.output());
            }
            Thread.onSpinWait();
        }
        return wc.copy();
    }

    private WorkCompletion expectOk(TransferMode m, long wrId, int opcode, String what) {
        WorkCompletion c = next(sendCqs.get(m), what, 10_000);
        assertEquals(OK, WcStatus.name(c.status), m + " " + what + ": " + c);
        assertEquals(wrId, c.wrId, m + " " + what + ": " + c);
        assertEquals(WcOpcode.name(opcode), WcOpcode.name(c.opcode), m + " " + what + ": " + c);
        return c;
    }

    private MemorySegment mem() {
        return mr.memory();
    }

    private static long crc(MemorySegment m, long off, long len) {
        CRC32 c = new CRC32();
        c.update(m.asSlice(off, len).asByteBuffer());
        return c.getValue();
    }

    private static void fill(MemorySegment m, long seed) {
        Random r = new Random(seed);
        byte[] b = new byte[(int) m.byteSize()];
        r.nextBytes(b);
        MemorySegment.copy(b, 0, m, ValueLayout.JAVA_BYTE, 0, b.length);
    }

    private void post(TransferMode m, SendWorkRequest wr) {
        qps.get(m).postSend(wr);
    }

    private void postReplyRecv(TransferMode m, long wrId) {
        long off = REPLY + (long) (nextReply++ % REPLY_SLOTS) * 64;
        qps.get(m).postRecv(new RecvWorkRequest().wrId(wrId).local(mr, off, 64));
        pendingReplyOffset = off;
    }

    private long pendingReplyOffset;

    /** Awaits the peer's SEND_WITH_IMM answer (to a CRC request or a WRITE_WITH_IMM): checks tag and length, returns the CRC. */
    private long awaitCrcReply(TransferMode m, long recvWrId, int tag, int length, String what) {
        long off = pendingReplyOffset;
        WorkCompletion r = next(recvCqs.get(m), what + " reply", 10_000);
        assertEquals(OK, WcStatus.name(r.status), m + " " + what + " reply: " + r);
        assertEquals(recvWrId, r.wrId, m + " " + what + " reply: " + r);
        assertEquals(WcOpcode.name(WcOpcode.RECV), WcOpcode.name(r.opcode), r.toString());
        assertEquals(WorkCompletion.WITH_IMM, r.wcFlags & WorkCompletion.WITH_IMM, "the reply carries an immediate: " + r);
        assertEquals(tag, r.immData, m + " " + what + ": the immediate comes back");
        assertEquals(12, r.byteLen, r.toString());
        assertEquals(length, mem().get(ValueLayout.JAVA_INT, off), m + " " + what + ": the length the peer covered");
        return mem().get(ValueLayout.JAVA_LONG_UNALIGNED, off + 4);
    }

    /** Asks the peer for the CRC-32 of {@code [offset, offset + length)} of its target region, as it sees it. */
    private long peerCrc(TransferMode m, long offset, int length, int tag) {
        long wrId = 900_000 + tag;
        postReplyRecv(m, wrId);
        long req = SCATTER + MIB - 64; // a small request buffer of our own
        mem().set(ValueLayout.JAVA_INT, req, RdmaPeerMain.CRC_REQUEST);
        mem().set(ValueLayout.JAVA_INT, req + 4, tag);
        mem().set(ValueLayout.JAVA_INT, req + 8, (int) offset);
        mem().set(ValueLayout.JAVA_INT, req + 12, length);
        post(m, new SendWorkRequest().wrId(wrId).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(mr, req, 16));
        expectOk(m, wrId, WcOpcode.SEND, "CRC request");
        return awaitCrcReply(m, wrId, tag, length, "CRC request " + offset + "+" + length);
    }

    // ---- 2. every operation, in both modes ------------------------------------------------------

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void everyOperationBetweenTwoProcessesMovesTheRightBytes(TransferMode m) throws Exception {
        long t0 = System.nanoTime();
        start();
        long startMs = (System.nanoTime() - t0) / MS;
        long direct0 = ctx.counter(RdmaCounter.DIRECT_OPS);
        long fallbacks0 = ctx.counter(RdmaCounter.DIRECT_FALLBACKS);
        long directSends0 = ctx.counter(RdmaCounter.DIRECT_SENDS);
        int rdmaOps = 0; // WRITE, READ and atomics posted: what DIRECT places directly
        MemorySegment mem = mem();
        fill(mem.asSlice(SRC, MIB), 11 + m.ordinal());
        Random rnd = new Random(7);

        // WRITE of 1 B .. 1 MiB; the peer checksums what it sees; READ back and compare.
        int[] sizes = {1, 2, 3, 7, 8, 63, 64, 65, 1000, 4095, 4096, 4097, 9000, 65_536, 100_003, 524_288, MIB};
        int tag = 1;
        for (int size : sizes) {
            long so = size == MIB ? 0 : rnd.nextInt(MIB - size);
            long ro = size == MIB ? 0 : rnd.nextInt(MIB - size);
            long dOff = size == MIB ? 0 : rnd.nextInt(MIB - size);
            mem.asSlice(DST, MIB).fill((byte) 0);
            post(m, new SendWorkRequest().wrId(tag).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(mr, SRC + so, size).remote(remoteAddr + ro, rkey));
            expectOk(m, tag, WcOpcode.RDMA_WRITE, "WRITE of " + size);
            assertEquals(crc(mem, SRC + so, size), peerCrc(m, ro, size, tag), m + ": the peer sees the " + size + " bytes written");
            post(m, new SendWorkRequest().wrId(tag).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                    .local(mr, DST + dOff, size).remote(remoteAddr + ro, rkey));
            WorkCompletion rc = expectOk(m, tag, WcOpcode.RDMA_READ, "READ of " + size);
            assertEquals(size, rc.byteLen, rc.toString());
            assertEquals(-1, mem.asSlice(SRC + so, size).mismatch(mem.asSlice(DST + dOff, size)),
                    m + ": READ of " + size + " bytes returns what was written");
            rdmaOps += 2;
            tag++;
        }

        // WRITE_WITH_IMM: the peer answers with the immediate and a checksum of the range written.
        int[] immSizes = {0, 1, 4096, 70_001, MIB};
        for (int size : immSizes) {
            long so = size == MIB ? 0 : rnd.nextInt(MIB - size);
            int ro = size == MIB ? 0 : rnd.nextInt(MIB - size);
            int imm = (tag << 20) | ro;
            long recvId = 800_000 + tag;
            postReplyRecv(m, recvId);
            post(m, new SendWorkRequest().wrId(tag).opcode(WrOpcode.RDMA_WRITE_WITH_IMM).immData(imm)
                    .sendFlags(SendFlags.SIGNALED).local(mr, SRC + so, size).remote(remoteAddr + ro, rkey));
            expectOk(m, tag, WcOpcode.RDMA_WRITE, "WRITE_WITH_IMM of " + size);
            long crc = awaitCrcReply(m, recvId, imm, size, "WRITE_WITH_IMM of " + size);
            assertEquals(crc(mem, SRC + so, size), crc, m + ": the peer's checksum of the " + size + " bytes written with an immediate");
            tag++;
        }

        // SEND echoed: gathered from three pieces, scattered into three others, in order.
        int[] sendSizes = {3, 100, 1024, 3000, 4097, 8000, 8192};
        for (int size : sendSizes) {
            int a = size / 3;
            int b = size / 2;
            int c = size - a - b;
            long g0 = rnd.nextInt(MIB / 4);
            long g1 = MIB / 4 + rnd.nextInt(MIB / 4);
            long g2 = MIB / 2 + rnd.nextInt(MIB / 4);
            mem.asSlice(SCATTER, 64 * 1024).fill((byte) 0);
            RecvWorkRequest r = new RecvWorkRequest().wrId(700_000 + tag);
            r.sg.clear().add(mr, SCATTER + 40_000, 10).add(mr, SCATTER, size / 2).add(mr, SCATTER + 20_000, size); // size >= 3: no empty entry
            qps.get(m).postRecv(r);
            SendWorkRequest s = new SendWorkRequest().wrId(tag).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED);
            s.sg.clear().add(mr, SRC + g0, a).add(mr, SRC + g1, b).add(mr, SRC + g2, c);
            post(m, s);
            expectOk(m, tag, WcOpcode.SEND, "SEND of " + size);
            WorkCompletion e = next(recvCqs.get(m), "echo of " + size, 10_000);
            assertEquals(OK, WcStatus.name(e.status), e.toString());
            assertEquals(700_000 + tag, e.wrId, e.toString());
            assertEquals(size, e.byteLen, "echo of " + size);
            byte[] sent = new byte[size];
            MemorySegment.copy(mem, ValueLayout.JAVA_BYTE, SRC + g0, sent, 0, a);
            MemorySegment.copy(mem, ValueLayout.JAVA_BYTE, SRC + g1, sent, a, b);
            MemorySegment.copy(mem, ValueLayout.JAVA_BYTE, SRC + g2, sent, a + b, c);
            byte[] got = new byte[size];
            int n0 = Math.min(10, size);
            int n1 = Math.min(size / 2, size - n0);
            int n2 = size - n0 - n1;
            MemorySegment.copy(mem, ValueLayout.JAVA_BYTE, SCATTER + 40_000, got, 0, n0);
            MemorySegment.copy(mem, ValueLayout.JAVA_BYTE, SCATTER, got, n0, n1);
            MemorySegment.copy(mem, ValueLayout.JAVA_BYTE, SCATTER + 20_000, got, n0 + n1, n2);
            assertEquals(crc(MemorySegment.ofArray(sent), 0, size), crc(MemorySegment.ofArray(got), 0, size),
                    m + ": echo of " + size + " bytes, gathered and scattered");
            org.junit.jupiter.api.Assertions.assertArrayEquals(sent, got, m + ": echo of " + size);
            tag++;
        }
        // A burst of 40 SENDs in flight at once: every echo comes back, in order, byte for byte.
        int burst = 40;
        int[] burstSizes = new int[burst];
        long[] burstFrom = new long[burst];
        for (int i = 0; i < burst; i++) {
            burstSizes[i] = 1 + rnd.nextInt(RdmaPeerMain.SLOT_BYTES);
            if (burstSizes[i] == 16) {
                burstSizes[i] = 17; // 16 bytes could read as a CRC request
            }
            burstFrom[i] = rnd.nextInt(MIB - RdmaPeerMain.SLOT_BYTES);
            qps.get(m).postRecv(new RecvWorkRequest().wrId(600_000 + i).local(mr, SCATTER + (long) i * RdmaPeerMain.SLOT_BYTES,
                    RdmaPeerMain.SLOT_BYTES));
        }
        for (int i = 0; i < burst; i++) {
            post(m, new SendWorkRequest().wrId(500_000 + i).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED)
                    .local(mr, SRC + burstFrom[i], burstSizes[i]));
        }
        for (int i = 0; i < burst; i++) {
            expectOk(m, 500_000 + i, WcOpcode.SEND, "burst SEND " + i);
        }
        for (int i = 0; i < burst; i++) {
            WorkCompletion e = next(recvCqs.get(m), "burst echo " + i, 10_000);
            assertEquals(OK, WcStatus.name(e.status), e.toString());
            assertEquals(600_000 + i, e.wrId, "echoes in order: " + e);
            assertEquals(burstSizes[i], e.byteLen, e.toString());
            assertEquals(-1, mem.asSlice(SRC + burstFrom[i], burstSizes[i])
                    .mismatch(mem.asSlice(SCATTER + (long) i * RdmaPeerMain.SLOT_BYTES, burstSizes[i])), m + ": burst echo " + i);
        }

        // FETCH_AND_ADD, 500 times with adds 1..500, all in flight: each sees the running sum, the end is exact.
        long counterOff = 512 * 1024 + 64;
        long initial = 1_000_000_007L;
        mem.set(ValueLayout.JAVA_LONG, ATOMIC, initial);
        post(m, new SendWorkRequest().wrId(tag).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(mr, ATOMIC, 8).remote(remoteAddr + counterOff, rkey));
        expectOk(m, tag++, WcOpcode.RDMA_WRITE, "WRITE of the counter");
        rdmaOps++;
        int adds = 500;
        mem.asSlice(ATOMIC, 8L * adds).fill((byte) 0xEE);
        for (int i = 0; i < adds; i++) {
            post(m, new SendWorkRequest().wrId(400_000 + i).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sendFlags(SendFlags.SIGNALED)
                    .local(mr, ATOMIC + 8L * i, 8).remote(remoteAddr + counterOff, rkey).compareAdd(i + 1));
        }
        for (int i = 0; i < adds; i++) {
            expectOk(m, 400_000 + i, WcOpcode.FETCH_ADD, "FETCH_AND_ADD " + i);
        }
        rdmaOps += adds;
        for (int i = 0; i < adds; i++) {
            assertEquals(initial + (long) i * (i + 1) / 2, mem.get(ValueLayout.JAVA_LONG, ATOMIC + 8L * i),
                    m + ": FETCH_AND_ADD " + i + " returns the sum before it");
        }
        long expectedSum = initial + (long) adds * (adds + 1) / 2;
        assertEquals(expectedSum, readLong(m, counterOff, tag++), m + ": the counter after " + adds + " adds");
        rdmaOps++;
        assertEquals(crcOfLong(expectedSum), peerCrc(m, counterOff, 8, tag++), m + ": the peer sees the sum");

        // CMP_AND_SWP: a match swaps, a mismatch leaves the value; each returns the value it found.
        long v = 0x1122334455667788L;
        long w = 0x0102030405060708L;
        long x = 0x7777777777777777L;
        long y = -42L;
        long casOff = counterOff + 8;
        mem.set(ValueLayout.JAVA_LONG, ATOMIC, v);
        post(m, new SendWorkRequest().wrId(tag).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(mr, ATOMIC, 8).remote(remoteAddr + casOff, rkey));
        expectOk(m, tag++, WcOpcode.RDMA_WRITE, "WRITE of the CAS word");
        rdmaOps++;
        long[][] cases = {{v, w, v, w}, {v, x, w, w}, {w, y, w, y}, {w, x, y, y}}; // compare, swap, returned, after
        for (long[] c : cases) {
            mem.set(ValueLayout.JAVA_LONG, ATOMIC + 8, 0);
            post(m, new SendWorkRequest().wrId(tag).opcode(WrOpcode.ATOMIC_CMP_AND_SWP).sendFlags(SendFlags.SIGNALED)
                    .local(mr, ATOMIC + 8, 8).remote(remoteAddr + casOff, rkey).compareAdd(c[0]).swap(c[1]));
            expectOk(m, tag++, WcOpcode.COMP_SWAP, "CMP_AND_SWP");
            rdmaOps++;
            assertEquals(c[2], mem.get(ValueLayout.JAVA_LONG, ATOMIC + 8),
                    m + ": CMP_AND_SWP(" + Long.toHexString(c[0]) + " -> " + Long.toHexString(c[1]) + ") returns the old value");
            assertEquals(c[3], readLong(m, casOff, tag++), m + ": the word after CMP_AND_SWP " + (c[0] == c[2] ? "success" : "failure"));
            rdmaOps++;
        }
        assertEquals(crcOfLong(y), peerCrc(m, casOff, 8, tag++), m + ": the peer sees the swapped word");

        long direct = ctx.counter(RdmaCounter.DIRECT_OPS) - direct0;
        long fallbacks = ctx.counter(RdmaCounter.DIRECT_FALLBACKS) - fallbacks0;
        if (m == TransferMode.DIRECT) {
            assertEquals(rdmaOps, direct, "every WRITE, READ and atomic of the DIRECT QP went direct: " + ctx.counters());
            assertEquals(0, fallbacks, "no direct operation fell back to packets: " + ctx.counters());
            assertTrue(ctx.counter(RdmaCounter.DIRECT_SENDS) - directSends0 > 0,
                    "SENDs into single-buffer receives were placed directly: " + ctx.counters());
        } else {
            assertEquals(0, direct, "the PACKET QP placed nothing directly: " + ctx.counters());
            assertTrue(ctx.counter(RdmaCounter.PACKETS_SENT) > 2 * MIB / 4096, "the PACKET QP moved its bytes as packets: "
                    + ctx.counters());
        }
        assertEquals(QpState.RTS, qps.get(m).state());

        Files.writeString(dir.resolve("stop"), "stop");
        Map<String, String> result = peer.awaitResult(30_000);
        assertEquals("0", result.get("errors"), result.toString());
        assertEquals(Integer.toString(sendSizes.length + burst), result.get("echoes"), result.toString());
        System.out.println("RdmaMultiProcessTest " + m + ": " + (System.nanoTime() - t0) / MS + " ms (peer up after " + startMs
                + " ms); " + rdmaOps + " WRITE/READ/atomics, " + direct + " direct; peer " + result + "; client " + ctx.counters());
    }

    /**
     * On a lossless fabric a READ of several packets is requested once: no retransmission that no timeout
     * caused, no duplicate response.
     */
    @Test
    void aMultiPacketReadOnALosslessFabricIsRequestedOnce() throws Exception {
        start();
        fill(mem().asSlice(SRC, MIB), 5);
        TransferMode m = TransferMode.PACKET;
        post(m, new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(mr, SRC, 3 * 4096).remote(remoteAddr, rkey));
        expectOk(m, 1, WcOpcode.RDMA_WRITE, "WRITE of 3 packets");
        long retx = ctx.counter(RdmaCounter.RETRANSMITS);
        long timeouts = ctx.counter(RdmaCounter.TIMEOUTS);
        long stray = ctx.counter(RdmaCounter.STRAY_RESPONSES) + ctx.counter(RdmaCounter.DUPLICATES);
        post(m, new SendWorkRequest().wrId(2).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                .local(mr, DST, 3 * 4096).remote(remoteAddr, rkey));
        expectOk(m, 2, WcOpcode.RDMA_READ, "READ of 3 packets");
        assertEquals(-1, mem().asSlice(SRC, 3 * 4096).mismatch(mem().asSlice(DST, 3 * 4096)));
        long settle = System.nanoTime() + 50 * MS; // let a duplicate response, if any, arrive
        while (System.nanoTime() - settle < 0) {
            pump();
        }
        assertEquals(ctx.counter(RdmaCounter.TIMEOUTS) - timeouts, ctx.counter(RdmaCounter.RETRANSMITS) - retx,
                "retransmissions beyond those timeouts caused: " + ctx.counters());
        assertEquals(stray, ctx.counter(RdmaCounter.STRAY_RESPONSES) + ctx.counter(RdmaCounter.DUPLICATES),
                "duplicate or stray responses: " + ctx.counters());
    }

    // ---- 3. a peer killed mid-stream ------------------------------------------------------------

    /** One QP's stream: WRITEs and SENDs (each SEND with a receive for its echo), at most {@link #WINDOW} outstanding. */
    private final class OpStream {
        final TransferMode mode;
        final List<Integer> statuses = new ArrayList<>();
        long posted;
        long recvPosted;
        long recvOk;
        long recvFlushed;
        final List<String> recvOther = new ArrayList<>();
        int firstError = -1;
        long completedAtKill = -1;
        long errorAtNs;
        final List<String> outOfOrder = new ArrayList<>();

        OpStream(TransferMode mode) {
            this.mode = mode;
        }

        long completed() {
            return statuses.size();
        }

        boolean settled() {
            return firstError >= 0 && completed() == posted && recvOk + recvFlushed + recvOther.size() == recvPosted;
        }

        void step(SendWorkRequest write, SendWorkRequest send, RecvWorkRequest recv) {
            while (sendCqs.get(mode).poll(wc)) {
                if (wc.wrId != completed()) {
                    outOfOrder.add(wc.toString());
                }
                statuses.add(wc.status);
                if (wc.status != WcStatus.SUCCESS && firstError < 0) {
                    firstError = statuses.size() - 1;
                    errorAtNs = System.nanoTime();
                }
            }
            while (recvCqs.get(mode).poll(wc)) {
                if (wc.status == WcStatus.SUCCESS && wc.byteLen == STREAM_SEND) {
                    recvOk++;
                } else if (wc.status == WcStatus.WR_FLUSH_ERR) {
                    recvFlushed++;
                } else {
                    recvOther.add(wc.toString());
                }
            }
            QueuePair q = qps.get(mode);
            while (firstError < 0 && posted - completed() < WINDOW) {
                long i = posted;
                long slot = i % 128;
                if ((i & 1) == 0) {
                    q.postSend(write.wrId(i).local(mr, SRC + slot * 4096, 4096).remote(remoteAddr + slot * 4096, rkey));
                } else {
                    q.postRecv(recv.wrId(i).local(mr, SCATTER + (i % WINDOW) * STREAM_SEND, STREAM_SEND));
                    recvPosted++;
                    q.postSend(send.wrId(i).local(mr, SRC + MIB / 2 + slot * STREAM_SEND, STREAM_SEND));
                }
                posted++;
            }
        }
    }

    static final int WINDOW = 32;
    static final int STREAM_SEND = 2048;
    static final int BEFORE_KILL = 400;

    @Test
    void aPeerKilledMidStreamFailsTheOutstandingRequestsAndIsReclaimedSoStaleKeysReachNothing() throws Exception {
        long t0 = System.nanoTime();
        start();
        MemorySegment mem = mem();
        fill(mem.asSlice(SRC, MIB), 99);
        long direct0 = ctx.counter(RdmaCounter.DIRECT_OPS);
        List<WindowInfo> peerWindows = fabric.windows().stream().filter(w -> w.owner() == PEER).toList();
        assertTrue(peerWindows.stream().anyMatch(w -> w.length() >= RdmaPeerMain.TARGET_BYTES),
                "the peer's region window is exported: " + fabric.windows());
        SendWorkRequest write = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED);
        SendWorkRequest send = new SendWorkRequest().opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED);
        RecvWorkRequest recv = new RecvWorkRequest();
        Map<TransferMode, OpStream> streams = new EnumMap<>(TransferMode.class);
        for (TransferMode m : TransferMode.values()) {
            streams.put(m, new OpStream(m));
        }
        long deadline = System.nanoTime() + 20_000 * MS;
        long killedAt = 0;
        long pid = peer.pid();
        while (!streams.values().stream().allMatch(OpStream::settled)) {
            pump();
            for (OpStream s : streams.values()) {
                s.step(write, send, recv);
            }
            if (killedAt == 0 && streams.values().stream().allMatch(s -> s.completed() >= BEFORE_KILL)) {
                for (OpStream s : streams.values()) {
                    s.completedAtKill = s.completed();
                }
                peer.process.destroyForcibly(); // SIGKILL; this thread goes on polling
                killedAt = System.nanoTime();
            }
            if (System.nanoTime() - deadline > 0) {
                StringBuilder b = new StringBuilder("the streams did not settle within 20 s (killed: " + (killedAt != 0) + ")");
                streams.values().forEach(s -> b.append("\n  ").append(s.mode).append(": posted ").append(s.posted)
                        .append(", completed ").append(s.completed()).append(", first error at ").append(s.firstError)
                        .append(", receives posted ").append(s.recvPosted).append(" ok ").append(s.recvOk).append(" flushed ")
                        .append(s.recvFlushed));
                fail(b + "\n  counters " + ctx.counters() + "\npeer output:\n" + peer.output());
            }
        }
        assertTrue(peer.process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS), "the peer survived SIGKILL");

        String retryExc = WcStatus.name(WcStatus.RETRY_EXC_ERR);
        String flush = WcStatus.name(WcStatus.WR_FLUSH_ERR);
        StringBuilder report = new StringBuilder();
        for (OpStream s : streams.values()) {
            String what = s.mode + " stream: ";
            assertEquals(List.of(), s.outOfOrder, what + "completions in posting order");
            assertEquals(s.posted, s.completed(), what + "every request completed");
            assertTrue(s.firstError >= s.completedAtKill, what + "nothing failed before the kill (first error at "
                    + s.firstError + ", " + s.completedAtKill + " done at the kill)");
            for (int i = 0; i < s.firstError; i++) {
                assertEquals(OK, WcStatus.name(s.statuses.get(i)), what + "request " + i + " before the first error");
            }
            assertEquals(retryExc, WcStatus.name(s.statuses.get(s.firstError)), what + "the first outstanding request");
            long flushed = 0;
            for (int i = s.firstError + 1; i < s.statuses.size(); i++) {
                assertEquals(flush, WcStatus.name(s.statuses.get(i)), what + "request " + i + " after the first error");
                flushed++;
            }
            assertTrue(flushed >= 1, what + "requests were still outstanding behind the first: " + flushed);
            assertEquals(List.of(), s.recvOther, what + "receives end in SUCCESS (an echo) or WR_FLUSH_ERR");
            assertTrue(s.recvFlushed >= 1, what + "receives were flushed");
            QueuePair q = qps.get(s.mode);
            assertEquals(QpState.ERR, q.state(), what + "the QP is in ERR");
            // A QP in ERR still takes posts, and flushes them.
            q.postSend(write.wrId(777_777).local(mr, SRC, 64).remote(remoteAddr, rkey));
            WorkCompletion late = next(sendCqs.get(s.mode), "a post to the QP in ERR", 5_000);
            assertEquals(flush, WcStatus.name(late.status), what + "a post after the error: " + late);
            assertEquals(777_777, late.wrId);
            report.append("\n  ").append(s.mode).append(": ").append(s.firstError).append(" ok (")
                    .append(s.completedAtKill).append(" at the kill), 1 ").append(retryExc).append(" ")
                    .append((s.errorAtNs - killedAt) / MS).append(" ms after the kill, ").append(flushed).append(" flushed; ")
                    .append(s.recvOk).append(" echoes, ").append(s.recvFlushed).append(" receives flushed");
        }
        assertTrue(ctx.counter(RdmaCounter.DIRECT_OPS) - direct0 >= BEFORE_KILL / 2,
                "the DIRECT stream's WRITEs went direct: " + ctx.counters());

        // The fabric reclaims the dead node: its entry FREE, its windows withdrawn.
        waitUntil("the dead peer's node entry is FREE (nodes " + fabric.nodes() + ")", 10_000, () -> fabric.nodes().stream()
                .anyMatch(n -> n.address() == PEER && n.state().equals("FREE")));
        waitUntil("the dead peer's windows are withdrawn", 10_000,
                () -> fabric.windows().stream().noneMatch(w -> w.owner() == PEER));
        long reclaimedMs = (System.nanoTime() - killedAt) / MS;
        NodeInfo dead = fabric.nodes().stream().filter(n -> n.address() == PEER).findFirst().orElseThrow();
        assertEquals(pid, dead.pid(), "the FREE entry is the killed process's: " + dead);

        // A fresh region, which may take the space the dead peer's windows freed, then a fresh DIRECT QP
        // aimed at the dead peer's QP and a WRITE under its old rkey: it must not go direct, and must fail.
        MemoryRegion fresh = pd.allocMr(2L * MIB, ALL);
        MemorySegment zeros = MemorySegment.ofArray(new byte[2 * MIB]);
        assertEquals(-1, fresh.memory().mismatch(zeros), "a new region starts zeroed");
        List<WindowInfo> mine = fabric.windows().stream().filter(w -> w.owner() == CLIENT).toList();
        boolean reused = mine.stream().anyMatch(w -> peerWindows.stream()
                .anyMatch(p -> w.offset() < p.offset() + p.length() && p.offset() < w.offset() + w.length()));
        CompletionQueue cq = ctx.createCq(16);
        QueuePair stale = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.DIRECT));
        RdmaPeerMain.init(stale);
        RdmaPeerMain.rtr(stale, PEER, intOf("qpn." + TransferMode.DIRECT), intOf("psn"));
        RdmaPeerMain.rts(stale, CLIENT_PSN);
        long direct1 = ctx.counter(RdmaCounter.DIRECT_OPS);
        long fallbacks1 = ctx.counter(RdmaCounter.DIRECT_FALLBACKS);
        stale.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(mr, SRC, RdmaPeerMain.TARGET_BYTES).remote(remoteAddr, rkey));
        assertEquals(0, ctx.counter(RdmaCounter.DIRECT_OPS) - direct1, "a WRITE under the dead peer's rkey went direct");
        assertEquals(1, ctx.counter(RdmaCounter.DIRECT_FALLBACKS) - fallbacks1, "it falls back to packets");
        WorkCompletion c = next(cq, "the stale WRITE", 10_000);
        assertEquals(retryExc, WcStatus.name(c.status), "a WRITE to the dead peer: " + c);
        assertEquals(-1, fresh.memory().mismatch(zeros), "the stale WRITE reached no freed window memory");
        assertEquals(QpState.ERR, stale.state());

        System.out.println("RdmaMultiProcessTest killed peer: " + (System.nanoTime() - t0) / MS + " ms in all; reclaimed (FREE,"
                + " windows withdrawn) within " + reclaimedMs + " ms of SIGKILL; the fresh region "
                + (reused ? "reuses" : "does not overlap") + " the dead peer's window space" + report
                + "\n  client " + ctx.counters());
    }

    private long readLong(TransferMode m, long remoteOff, int wrId) {
        mem().set(ValueLayout.JAVA_LONG, ATOMIC + 16, 0xDEADL);
        post(m, new SendWorkRequest().wrId(wrId).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                .local(mr, ATOMIC + 16, 8).remote(remoteAddr + remoteOff, rkey));
        expectOk(m, wrId, WcOpcode.RDMA_READ, "READ of 8 bytes");
        return mem().get(ValueLayout.JAVA_LONG, ATOMIC + 16);
    }

    private static long crcOfLong(long v) {
        MemorySegment s = MemorySegment.ofArray(new byte[8]);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, v); // native order, as the peer's memory holds it
        return crc(s, 0, 8);
    }
}
