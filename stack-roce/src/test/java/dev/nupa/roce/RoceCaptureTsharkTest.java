package dev.nupa.roce;

import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WrOpcode;
import dev.nupa.roce.wire.Opcode;
import static dev.nupa.roce.RdmaFixture.assertStatus;
import static dev.nupa.roce.RdmaFixture.fill;
import static dev.nupa.roce.RdmaFixture.poll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.l2.Link;
import dev.nupa.l2.PcapWriter;
import dev.nupa.l2.RoceV2;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A link capture of real RDMA traffic (SEND, a multi-packet RDMA WRITE, an RDMA READ of several
 * responses, a FETCH_ADD, and their acknowledges) is written as RoCEv2 and decoded natively by
 * tshark as InfiniBand: every frame, every opcode, no malformed packet, every IPv4 checksum good.
 * tshark (4.0) shows the ICRC but does not check it; this test checks every record's ICRC itself.
 */
@Tag("linux")
class RoceCaptureTsharkTest {
    @TempDir
    Path dir;

    @Test
    void sendWriteReadAndAtomicDecodeInTsharkAsRoceV2() throws Exception {
        Path pcap = dir.resolve("rdma.pcap");
        int records;
        try (RcPair p = new RcPair(TransferMode.PACKET, 1024); PcapWriter w = PcapWriter.open(pcap)) {
            Link sender = p.fx.links.get(0); // node 1's link sees every frame of the pair once, sent or received
            sender.setCapture(w);
            // A SEND of 100 bytes. (Wireshark 4.0's RPC-over-RDMA heuristic calls an RC SEND of fewer than
            // 16 payload bytes malformed, whoever wrote it; a larger one decodes.)
            fill(p.mrA.memory().asSlice(0, 8192), 11);
            p.qb.postRecv(new RecvWorkRequest().wrId(1).local(p.mrB, 0, 4096));
            p.qa.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 100));
            p.fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(p.cqB));
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            // An RDMA WRITE of 3000 bytes at MTU 1024: FIRST, MIDDLE, LAST.
            p.qa.postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 0, 3000).remote(p.mrB.addr() + 8192, p.mrB.rkey()));
            p.fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            // An RDMA READ of 2500 bytes: one request, responses FIRST, MIDDLE, LAST.
            p.qa.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 16_384, 2500).remote(p.mrB.addr() + 8192, p.mrB.rkey()));
            p.fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            assertEquals(-1, p.mrA.memory().asSlice(0, 2500).mismatch(p.mrA.memory().asSlice(16_384, 2500)));
            // A FETCH_ADD and its atomic acknowledge.
            p.mrB.memory().set(ValueLayout.JAVA_LONG, 32_768, 40L);
            p.qa.postSend(new SendWorkRequest().wrId(5).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sendFlags(SendFlags.SIGNALED)
                    .local(p.mrA, 32_768, 8).remote(p.mrB.addr() + 32_768, p.mrB.rkey()).compareAdd(2));
            p.fx.pump();
            assertStatus(WcStatus.SUCCESS, poll(p.cqA));
            assertEquals(42L, p.mrB.memory().get(ValueLayout.JAVA_LONG, 32_768));
            sender.setCapture(null);
            records = (int) w.records();
            assertEquals(0, w.lost());
        }

        // Our own reading first: every record is Ethernet + IPv4 + UDP 4791 + BTH ... + a good ICRC.
        List<Integer> opcodes = new ArrayList<>();
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(pcap)).order(ByteOrder.LITTLE_ENDIAN);
        MemorySegment all = MemorySegment.ofArray(b.array());
        int at = PcapWriter.GLOBAL_HEADER;
        while (at < b.limit()) {
            int included = b.getInt(at + 8);
            int original = b.getInt(at + 12);
            assertEquals(original, included, "nothing cut");
            int eth = at + PcapWriter.RECORD_HEADER;
            assertEquals(0x0800, Short.toUnsignedInt(b.order(ByteOrder.BIG_ENDIAN).getShort(eth + 12)));
            assertEquals(RoceV2.UDP_PORT, Short.toUnsignedInt(b.getShort(eth + 14 + 20 + 2)));
            b.order(ByteOrder.LITTLE_ENDIAN);
            assertTrue(RoceV2.verifyIcrc(all, eth + 14, included - 14 - RoceV2.ICRC_LENGTH), "ICRC of record at " + at);
            opcodes.add(b.get(eth + PcapWriter.ROCE_HEADERS) & 0xFF);
            at = eth + included;
        }
        assertEquals(records, opcodes.size());
        List<Integer> expected = List.of(Opcode.RC_SEND_ONLY, Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_MIDDLE,
                Opcode.RC_RDMA_WRITE_LAST, Opcode.RC_RDMA_READ_REQUEST, Opcode.RC_RDMA_READ_RESPONSE_FIRST,
                Opcode.RC_RDMA_READ_RESPONSE_MIDDLE, Opcode.RC_RDMA_READ_RESPONSE_LAST, Opcode.RC_FETCH_ADD,
                Opcode.RC_ATOMIC_ACKNOWLEDGE, Opcode.RC_ACKNOWLEDGE);
        for (int op : expected) {
            assertTrue(opcodes.contains(op), "opcode " + op + " captured: " + opcodes);
        }

        Assumptions.assumeTrue(tsharkInstalled(), "tshark is absent (apt-get install tshark): skipping the RoCEv2 decode"
                + " check; the pcap's bytes and ICRCs were checked above");
        String fields = tshark(pcap, "-o", "ip.check_checksum:TRUE", "-T", "fields", "-E", "separator=|",
                "-e", "frame.protocols", "-e", "udp.dstport", "-e", "infiniband.bth.opcode", "-e", "ip.checksum.status",
                "-e", "infiniband.invariant.crc");
        List<String> lines = fields.lines().toList();
        assertEquals(records, lines.size(), fields);
        for (int i = 0; i < lines.size(); i++) {
            String[] f = lines.get(i).split("\\|", -1);
            assertTrue(f[0].startsWith("eth:ethertype:ip:udp:infiniband"), "frame " + (i + 1) + ": " + lines.get(i));
            assertEquals("4791", f[1], lines.get(i));
            assertEquals(String.valueOf(opcodes.get(i)), f[2], "frame " + (i + 1) + " opcode: " + lines.get(i));
            assertEquals("1", f[3], "IPv4 header checksum good: " + lines.get(i));
            assertTrue(f[4].startsWith("0x"), "ICRC shown: " + lines.get(i));
        }
        String summary = tshark(pcap);
        System.out.println("RoceCaptureTsharkTest: tshark's summary of the capture:\n" + summary);
        for (String name : List.of("RC Send Only", "RC RDMA Write First", "RC RDMA Write Middle", "RC RDMA Write Last",
                "RC RDMA Read Request", "RC RDMA Read Response First", "RC RDMA Read Response Middle",
                "RC RDMA Read Response Last", "RC Fetch Add", "RC Atomic Acknowledge", "RC Acknowledge")) {
            assertTrue(summary.contains(name), "tshark names \"" + name + "\":\n" + summary);
        }
        String verbose = tshark(pcap, "-V");
        assertTrue(!verbose.contains("Malformed"), "tshark found malformed packets:\n" + verbose);
        assertTrue(verbose.contains("Opcode: Reliable Connection (RC) - FetchAdd (20)"), verbose);
        String bad = tshark(pcap, "-o", "ip.check_checksum:TRUE", "-Y", "_ws.malformed || _ws.expert.severity >= warning"
                + " || ip.checksum.status == 0 || !infiniband");
        assertEquals("", bad.strip(), "tshark found malformed packets, warnings, bad checksums or undecoded frames");
    }

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
        List<String> cmd = new ArrayList<>(List.of("tshark", "-n", "-r", file.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "tshark did not finish");
        assertEquals(0, p.exitValue(), "tshark failed on " + file + ": " + out);
        return out;
    }
}
