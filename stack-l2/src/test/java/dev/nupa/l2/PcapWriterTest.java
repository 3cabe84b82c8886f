package dev.nupa.l2;

import static dev.nupa.device.FabricDevice.OK;
import static org.junit.jupiter.api.Assertions.*;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** pcap output: exact bytes of the global header and a record, and (where installed) tshark's reading of it. */
@Tag("linux")
class PcapWriterTest {
    /** An ICMP echo request 10.0.0.1 -> 10.0.0.2 (id 7, seq 1, no data), checksums computed by hand. */
    static final byte[] ICMP_ECHO = {
            0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0x66, (byte) 0xde, 10, 0, 0, 1, 10, 0, 0, 2,
            0x08, 0x00, (byte) 0xf7, (byte) 0xf7, 0x00, 0x07, 0x00, 0x01};
    /** 1 700 000 000.123456789 s after the epoch. */
    static final long TS = 1_700_000_000_123_456_789L;

    @TempDir
    Path dir;

    private static byte[] b(int... v) {
        byte[] a = new byte[v.length];
        for (int i = 0; i < v.length; i++) {
            a[i] = (byte) v[i];
        }
        return a;
    }

    private static byte[] concat(byte[]... parts) {
        int n = Arrays.stream(parts).mapToInt(p -> p.length).sum();
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    private static final byte[] GLOBAL_HEADER = b(
            0x4d, 0x3c, 0xb2, 0xa1,   // magic a1b23c4d (nanoseconds), little-endian
            0x02, 0x00, 0x04, 0x00,   // version 2.4
            0, 0, 0, 0,               // thiszone
            0, 0, 0, 0,               // sigfigs
            0x00, 0x00, 0x04, 0x00,   // snaplen 262144
            0x01, 0x00, 0x00, 0x00);  // LINKTYPE_ETHERNET

    private static final byte[] ETHERNET = b(
            0x02, 0, 0, 0, 0x01, 0x02, // destination MAC: node 0x0102
            0x02, 0, 0, 0, 0x00, 0x01, // source MAC: node 1
            0x08, 0x00);               // IPv4

    @Test
    void globalHeaderAndARecordAreExact() throws IOException {
        Path f = dir.resolve("one.pcap");
        try (PcapWriter w = PcapWriter.open(f)) {
            byte[] padded = concat(b(0xAA, 0xAA), ICMP_ECHO, b(0xBB));
            w.capture(TS, true, 1, 0x0102, EtherType.IPV4, MemorySegment.ofArray(padded), 2, ICMP_ECHO.length);
            assertEquals(1, w.records());
        }
        byte[] record = concat(
                b(0x00, 0xf1, 0x53, 0x65),   // ts_sec 1700000000
                b(0x15, 0xcd, 0x5b, 0x07),   // ts_nsec 123456789
                b(42, 0, 0, 0),              // incl_len 14 + 28
                b(42, 0, 0, 0),              // orig_len
                ETHERNET, ICMP_ECHO);
        assertArrayEquals(concat(GLOBAL_HEADER, record), Files.readAllBytes(f));
    }

    @Test
    void aCaptureFileIsTheOwnersAlone() throws IOException {
        Path f = dir.resolve("private.pcap");
        PcapWriter.open(f).close();
        assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(f)));
    }

    @Test
    void framesAreCutToTheSnapshotLength() throws IOException {
        Path f = dir.resolve("snap.pcap");
        try (PcapWriter w = PcapWriter.open(f, 20)) {
            w.capture(0, false, 1, 0x0102, EtherType.IPV4, MemorySegment.ofArray(ICMP_ECHO), 0, ICMP_ECHO.length);
        }
        byte[] got = Files.readAllBytes(f);
        assertEquals(24 + 16 + 20, got.length);
        assertArrayEquals(b(20, 0, 0, 0), Arrays.copyOfRange(got, 16, 20), "snaplen in the global header");
        assertArrayEquals(b(0, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 42, 0, 0, 0), Arrays.copyOfRange(got, 24, 40));
        assertArrayEquals(concat(ETHERNET, Arrays.copyOf(ICMP_ECHO, 6)), Arrays.copyOfRange(got, 40, 60));
        assertThrows(IllegalArgumentException.class, () -> PcapWriter.open(dir.resolve("x"), 13));
        assertThrows(IllegalArgumentException.class, () -> PcapWriter.open(dir.resolve("x"), 262_145));
    }

    @Test
    void manyRecordsSpanBufferFlushes() throws IOException {
        Path f = dir.resolve("many.pcap");
        byte[] big = new byte[9000];
        int n = 100; // 100 x 9030 bytes: many 64 KiB buffers
        try (PcapWriter w = PcapWriter.open(f)) {
            for (int i = 0; i < n; i++) {
                big[0] = (byte) i;
                w.capture(i, true, 0, 1, EtherType.NUPA_RDMA, MemorySegment.ofArray(big), 0, big.length);
            }
        }
        byte[] got = Files.readAllBytes(f);
        int record = 16 + PcapWriter.ROCE_HEADERS + 9000 + 4; // RDMA frames are written as RoCEv2
        assertEquals(24 + n * record, got.length);
        for (int i = 0; i < n; i++) {
            int at = 24 + i * record + 16;
            assertEquals((byte) i, got[at + PcapWriter.ROCE_HEADERS], "record " + i);
            assertTrue(RoceV2.verifyIcrc(MemorySegment.ofArray(got), at + 14, 28 + 9000), "record " + i + " ICRC");
        }
    }

    @Test
    void aClosedWriterCountsLaterFramesAsLost() throws IOException {
        PcapWriter w = PcapWriter.open(dir.resolve("closed.pcap"));
        w.close();
        w.close();
        w.capture(0, true, 0, 1, EtherType.IPV4, MemorySegment.ofArray(ICMP_ECHO), 0, ICMP_ECHO.length);
        assertEquals(1, w.lost());
        assertEquals(0, w.records());
    }

    // ---- RDMA frames as RoCEv2 ------------------------------------------------------------------

    /** An RC SEND_ONLY (BTH: opcode 4, PadCnt 3, P_Key ffff, DestQP 0x12, AckReq, PSN 7), 17 payload bytes and 3 of pad. */
    static final byte[] RDMA_SEND = concat(
            b(0x04, 0x30, 0xff, 0xff, 0x00, 0x00, 0x00, 0x12, 0x80, 0x00, 0x00, 0x07),
            "seventeen bytes!!".getBytes(StandardCharsets.US_ASCII), b(0, 0, 0));

    /** Ethernet (to node 0x0102 from node 1, IPv4), IPv4 169.254.0.1 > 169.254.1.2, UDP 49170 > 4791, as written by hand. */
    static final byte[] ROCE_HEADERS = b(
            0x02, 0, 0, 0, 0x01, 0x02, 0x02, 0, 0, 0, 0x00, 0x01, 0x08, 0x00,
            0x45, 0x00, 0x00, 0x40,   // IPv4, IHL 5, TOS 0, total length 64 = 20 + 8 + 32 + 4
            0x00, 0x00, 0x40, 0x00,   // id 0, DF
            0x40, 0x11, 0xe5, 0xad,   // TTL 64, UDP, header checksum
            169, 254, 0, 1, 169, 254, 1, 2,
            0xc0, 0x12, 0x12, 0xb7,   // source port 0xC000 | DestQP 0x12, destination port 4791
            0x00, 0x2c, 0x00, 0x00);  // UDP length 44 = 8 + 32 + 4, checksum 0 (RoCEv2 allows it)

    /** RFC 1071: the one's complement sum of a valid IPv4 header is 0xFFFF. */
    private static int onesComplementSum(byte[] a, int off, int len) {
        int sum = 0;
        for (int i = 0; i < len; i += 2) {
            sum += (a[off + i] & 0xFF) << 8 | (a[off + i + 1] & 0xFF);
        }
        while (sum >>> 16 != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return sum;
    }

    private static byte[] captureRdma(Path f, int snaplen, int len, int frameLength) throws IOException {
        try (PcapWriter w = PcapWriter.open(f, snaplen)) {
            w.capture(TS, true, 1, 0x0102, EtherType.NUPA_RDMA, MemorySegment.ofArray(RDMA_SEND), 0, len, frameLength);
            assertEquals(1, w.records());
        }
        return Files.readAllBytes(f);
    }

    @Test
    void anRdmaFrameIsWrittenAsIpv4UdpRoceV2WithAValidIcrc() throws IOException {
        byte[] got = captureRdma(dir.resolve("roce.pcap"), PcapWriter.DEFAULT_SNAPLEN, RDMA_SEND.length, RDMA_SEND.length);
        int wire = 14 + 20 + 8 + RDMA_SEND.length + 4;
        assertEquals(78, wire);
        assertEquals(24 + 16 + wire, got.length);
        assertArrayEquals(b(78, 0, 0, 0, 78, 0, 0, 0), Arrays.copyOfRange(got, 32, 40), "included and original length");
        int eth = 40;
        assertArrayEquals(concat(ROCE_HEADERS, RDMA_SEND), Arrays.copyOfRange(got, eth, eth + wire - 4));
        assertEquals(0xFFFF, onesComplementSum(got, eth + 14, 20), "IPv4 header checksum is valid");
        assertTrue(RoceV2.verifyIcrc(MemorySegment.ofArray(got), eth + 14, 20 + 8 + RDMA_SEND.length), "ICRC verifies");
        // The ICRC by the independent bit-at-a-time reference of RoceV2Test, least significant byte first.
        byte[] ip = Arrays.copyOfRange(got, eth + 14, eth + wire);
        assertEquals(RoceV2Test.bitwiseIcrc(ip, ip.length - 4), RoceV2Test.icrcOnTheWire(ip));
        assertEquals(0xA9FE0001, PcapWriter.ipv4(1));
        assertEquals(0xA9FE03E8, PcapWriter.ipv4(1000), "169.254.3.232");
    }

    @Test
    void snaplenCutsAnRdmaRecordAnywhereAndTheOriginalLengthStaysWhole() throws IOException {
        byte[] whole = captureRdma(dir.resolve("whole.pcap"), PcapWriter.DEFAULT_SNAPLEN, RDMA_SEND.length, RDMA_SEND.length);
        byte[] frame = Arrays.copyOfRange(whole, 40, whole.length);
        for (int snap : new int[] {14, 20, 41, 42, 50, 73, 74, 76, 77, 78}) {
            byte[] got = captureRdma(dir.resolve("cut" + snap + ".pcap"), snap, RDMA_SEND.length, RDMA_SEND.length);
            assertEquals(24 + 16 + snap, got.length, "snaplen " + snap);
            assertArrayEquals(b(snap, 0, 0, 0, 78, 0, 0, 0), Arrays.copyOfRange(got, 32, 40), "snaplen " + snap);
            assertArrayEquals(Arrays.copyOf(frame, snap), Arrays.copyOfRange(got, 40, got.length), "snaplen " + snap);
        }
    }

    @Test
    void aCopyCutShortKeepsTheWholeLengthInItsHeadersAndHasNoIcrc() throws IOException {
        byte[] got = captureRdma(dir.resolve("mirror.pcap"), PcapWriter.DEFAULT_SNAPLEN, 20, RDMA_SEND.length);
        assertArrayEquals(b(42 + 20, 0, 0, 0, 78, 0, 0, 0), Arrays.copyOfRange(got, 32, 40));
        assertArrayEquals(concat(ROCE_HEADERS, Arrays.copyOf(RDMA_SEND, 20)), Arrays.copyOfRange(got, 40, got.length),
                "IPv4 and UDP lengths count the whole frame");
    }

    @Test
    void rdmaFramesTooShortForABthStayBehindEtherType8915() throws IOException {
        Path f = dir.resolve("short.pcap");
        try (PcapWriter w = PcapWriter.open(f)) {
            w.capture(0, true, 1, 0x0102, EtherType.NUPA_RDMA, MemorySegment.ofArray(RDMA_SEND), 0, 11);
        }
        byte[] got = Files.readAllBytes(f);
        assertArrayEquals(b(25, 0, 0, 0, 25, 0, 0, 0), Arrays.copyOfRange(got, 32, 40));
        assertArrayEquals(b(0x89, 0x15), Arrays.copyOfRange(got, 52, 54));
        assertArrayEquals(Arrays.copyOf(RDMA_SEND, 11), Arrays.copyOfRange(got, 54, 65));
    }

    // ---- tshark ------------------------------------------------------------------------------

    static boolean tsharkInstalled() {
        try {
            Process p = new ProcessBuilder("sh", "-c", "command -v tshark").redirectErrorStream(true).start();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /** Runs tshark on {@code file} with {@code args}; returns its standard output (stderr is discarded). */
    static String tshark(Path file, String... args) throws IOException, InterruptedException {
        List<String> cmd = new java.util.ArrayList<>(List.of("tshark", "-n", "-r", file.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "tshark did not finish");
        assertEquals(0, p.exitValue(), "tshark failed on " + file + ": " + out);
        return out;
    }

    @Test
    void tsharkDecodesTheFrameAsEthernetAndIpv4() throws Exception {
        Path f = dir.resolve("tshark.pcap");
        try (PcapWriter w = PcapWriter.open(f)) {
            w.capture(TS, true, 1, 0x0102, EtherType.IPV4, MemorySegment.ofArray(ICMP_ECHO), 0, ICMP_ECHO.length);
        }
        Assumptions.assumeTrue(tsharkInstalled(), "tshark is absent (apt-get install tshark): skipping the decode check;"
                + " the byte-exact checks above still ran");
        String out = tshark(f, "-T", "fields", "-E", "separator=|", "-e", "frame.protocols", "-e", "eth.src",
                "-e", "eth.dst", "-e", "ip.src", "-e", "ip.dst", "-e", "icmp.type", "-e", "frame.time_epoch",
                "-e", "_ws.expert.message").strip();
        String[] fields = out.split("\\|", -1);
        assertEquals("eth:ethertype:ip:icmp", fields[0], out);
        assertEquals("02:00:00:00:00:01", fields[1], out);
        assertEquals("02:00:00:00:01:02", fields[2], out);
        assertEquals("10.0.0.1", fields[3], out);
        assertEquals("10.0.0.2", fields[4], out);
        assertEquals("8", fields[5], out);
        assertTrue(fields[6].startsWith("1700000000.123456789"), "nanosecond timestamp: " + out);
        assertEquals("", fields[7].strip(), "no expert warnings (malformed, bad checksum): " + out);
    }

    /** Two links sharing one capture file: the frame appears once sent by node 0 and once received by node 1. */
    @Test
    void aLinkCaptureIsReadByTshark() throws Exception {
        Path f = dir.resolve("link.pcap");
        try (L2Fixture fx = new L2Fixture(); PcapWriter w = PcapWriter.open(f)) {
            fx.create(L2Fixture.jumbo());
            Link a = new Link(fx.attach(0));
            Link b = new Link(fx.attach(1));
            b.register(EtherType.IPV4, (src, mem, off, len) -> { });
            a.setCapture(w);
            b.setCapture(w);
            assertEquals(OK, a.send(1, EtherType.IPV4, MemorySegment.ofArray(ICMP_ECHO), 0, ICMP_ECHO.length));
            assertEquals(1, b.poll(10));
            assertEquals(2, w.records());
        }
        byte[] got = Files.readAllBytes(f);
        assertEquals(24 + 2 * (16 + 14 + ICMP_ECHO.length), got.length);
        byte[] eth = b(0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x00, 0x08, 0x00);
        for (int r = 0; r < 2; r++) {
            int at = 24 + r * (16 + 42) + 16;
            assertArrayEquals(concat(eth, ICMP_ECHO), Arrays.copyOfRange(got, at, at + 42), "record " + r);
        }
        Assumptions.assumeTrue(tsharkInstalled(), "tshark is absent (apt-get install tshark): skipping the decode check");
        String out = tshark(f, "-T", "fields", "-e", "frame.protocols", "-e", "ip.src", "-e", "ip.dst");
        assertEquals(List.of("eth:ethertype:ip:icmp\t10.0.0.1\t10.0.0.2", "eth:ethertype:ip:icmp\t10.0.0.1\t10.0.0.2"),
                out.lines().toList());
    }

    @Test
    void tsharkDecodesAnRdmaFrameAsRoceV2() throws Exception {
        Path f = dir.resolve("roce-tshark.pcap");
        captureRdma(f, PcapWriter.DEFAULT_SNAPLEN, RDMA_SEND.length, RDMA_SEND.length);
        Assumptions.assumeTrue(tsharkInstalled(), "tshark is absent (apt-get install tshark): skipping the decode check");
        String out = tshark(f, "-o", "ip.check_checksum:TRUE", "-T", "fields", "-E", "separator=|",
                "-e", "frame.protocols", "-e", "ip.src", "-e", "ip.dst", "-e", "ip.checksum.status", "-e", "udp.dstport",
                "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn",
                "-e", "infiniband.invariant.crc", "-e", "_ws.expert.message").strip();
        // tshark shows the ICRC's 4 bytes as they lie on the wire, read big-endian: the CRC byte-reversed.
        int icrc = RoceV2.icrc(MemorySegment.ofArray(concat(ROCE_HEADERS, RDMA_SEND)), 14, 28 + RDMA_SEND.length);
        assertEquals("eth:ethertype:ip:udp:infiniband:data|169.254.0.1|169.254.1.2|1|4791|4|0x000012|7|"
                + String.format("0x%08x", Integer.reverseBytes(icrc)) + "|", out);
    }
}
