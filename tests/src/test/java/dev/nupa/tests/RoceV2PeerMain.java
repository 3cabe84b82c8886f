package dev.nupa.tests;

import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Route;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.Random;
import java.util.zip.CRC32;

/**
 * One end of {@link RoceV2GatewayTest}, in its own JVM: a fabric node with an IP layer and a verbs context that
 * speaks RoCEv2 through it, polled in one thread. The two ends sit on different fabrics, each behind its own
 * gateway, with Linux routing between the gateways' TAP devices; they swap QP details through files (as perftest
 * does over TCP) and connect by IP address, path MTU 1024, PSNs just under 2^24.
 * <ul>
 * <li>{@code server}: a region of 2 MiB and a page, open to every remote access; when a SEND_WITH_IMM arrives it checks that the
 *   immediate is the CRC-32 of its first MiB, then waits for the client's {@code done} file.</li>
 * <li>{@code client}: RDMA WRITEs a MiB of random bytes to the server, SENDs their CRC-32 as immediate, READs the
 *   MiB back into its second MiB and compares, and does a FETCH_AND_ADD; then writes {@code done}.</li>
 * </ul>
 * Args: fabric-path address ip/len route role exchange-dir timeout-ms. Prints one RESULT line; exits 0 when all held.
 */
public final class RoceV2PeerMain {
    static final int MIB = 1 << 20;

    private RoceV2PeerMain() {
    }

    public static void main(String[] args) throws Exception {
        Path fabricPath = Path.of(args[0]);
        int address = Integer.parseInt(args[1]);
        IpConfig ipConfig = IpConfig.parse(args[2]);
        Route route = Route.parse(args[3]);
        boolean client = args[4].equals("client");
        Path dir = Path.of(args[5]);
        long deadline = System.nanoTime() + Long.parseLong(args[6]) * 1_000_000L;
        String outcome;
        String counters;
        try (RoceNode node = new RoceNode(fabricPath, address, ipConfig, route, deadline)) {
            RdmaContext ctx = node.ctx;
            ProtectionDomain pd = ctx.allocPd();
            MemoryRegion mr = pd.allocMr(2 * MIB + 4096, RdmaPeerMain.ALL);
            CompletionQueue cq = ctx.createCq(64);
            QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.PACKET).withCapacity(64, 64));
            RdmaPeerMain.init(qp);
            int psn = client ? 0xFFFF00 : 0xFFFFF0; // a MiB is 1,024 packets: the client's PSNs wrap
            Properties me = new Properties();
            me.setProperty("ip", Integer.toString(ipConfig.address()));
            me.setProperty("qpn", Integer.toString(qp.qpNum()));
            me.setProperty("psn", Integer.toString(psn));
            me.setProperty("rkey", Integer.toString(mr.rkey()));
            me.setProperty("addr", Long.toString(mr.addr()));
            RdmaPeerMain.writeProperties(dir.resolve((client ? "client" : "server") + ".properties"), me);
            Properties peer = RdmaPeerMain.awaitProperties(dir.resolve((client ? "server" : "client") + ".properties"), deadline);
            RdmaPeerMain.rtrIp(qp, Integer.parseInt(peer.getProperty("ip")), Integer.parseInt(peer.getProperty("qpn")),
                    Integer.parseInt(peer.getProperty("psn")));
            RdmaPeerMain.rts(qp, psn);
            MemorySegment m = mr.memory();
            if (client) {
                outcome = runClient(node, qp, cq, mr, m, Long.parseLong(peer.getProperty("addr")),
                        Integer.parseInt(peer.getProperty("rkey")));
                Files.writeString(dir.resolve("done"), outcome);
            } else {
                qp.postRecv(new RecvWorkRequest().wrId(1).local(mr, 2L * MIB, 64));
                WorkCompletion wc = node.await(cq);
                long crc = crc(m, 0, MIB);
                outcome = wc.status != WcStatus.SUCCESS ? "recv-" + WcStatus.name(wc.status)
                        : (int) crc != wc.immData ? "crc-mismatch" : "ok";
                node.until(() -> Files.exists(dir.resolve("done"))); // the client reads from us meanwhile
            }
            counters = "sent=" + ctx.counter(RdmaCounter.ROCEV2_SENT) + " received=" + ctx.counter(RdmaCounter.ROCEV2_RECEIVED)
                    + " bad_icrc=" + ctx.counter(RdmaCounter.BAD_ICRC) + " retransmits=" + ctx.counter(RdmaCounter.RETRANSMITS)
                    + " send_failed=" + ctx.counter(RdmaCounter.ROCEV2_SEND_FAILED)
                    + " cnps_sent=" + ctx.counter(RdmaCounter.CNPS_SENT) + " cnps_received=" + ctx.counter(RdmaCounter.CNPS_RECEIVED)
                    + " rate_decreases=" + ctx.counter(RdmaCounter.RATE_DECREASES)
                    + " not_rocev2=" + (ctx.counter(RdmaCounter.PACKETS_SENT) - ctx.counter(RdmaCounter.ROCEV2_SENT)
                            - ctx.counter(RdmaCounter.ROCEV2_SEND_FAILED));
        } catch (RuntimeException e) {
            outcome = "error:" + e.getMessage().replace(' ', '_');
            counters = "";
        }
        System.out.println("RESULT outcome=" + outcome + " " + counters);
        System.out.flush();
        System.exit(outcome.equals("ok") ? 0 : 1);
    }

    private static String runClient(RoceNode node, QueuePair qp, CompletionQueue cq, MemoryRegion mr, MemorySegment m,
                                    long remote, int rkey) {
        byte[] data = new byte[MIB];
        new Random(4791).nextBytes(data);
        MemorySegment.copy(MemorySegment.ofArray(data), 0, m, 0, MIB);
        qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(mr, 0, MIB).remote(remote, rkey));
        qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND_WITH_IMM).immData((int) crc(m, 0, MIB))
                .sendFlags(SendFlags.SIGNALED).local(mr, 0, 0));
        qp.postSend(new SendWorkRequest().wrId(3).opcode(WrOpcode.RDMA_READ).sendFlags(SendFlags.SIGNALED)
                .local(mr, MIB, MIB).remote(remote, rkey));
        qp.postSend(new SendWorkRequest().wrId(4).opcode(WrOpcode.ATOMIC_FETCH_AND_ADD).sendFlags(SendFlags.SIGNALED)
                .local(mr, 2L * MIB, 8).remote(remote + 2L * MIB + 8, rkey).compareAdd(5));
        for (int i = 1; i <= 4; i++) {
            WorkCompletion wc = node.await(cq);
            if (wc.status != WcStatus.SUCCESS || wc.wrId != i) {
                return "wr" + wc.wrId + "-" + WcStatus.name(wc.status);
            }
        }
        if (m.asSlice(0, MIB).mismatch(m.asSlice(MIB, MIB)) != -1) {
            return "read-back-differs";
        }
        return m.get(ValueLayout.JAVA_LONG, 2L * MIB) == 0 ? "ok" : "fetch-add-original-not-0";
    }

    static long crc(MemorySegment m, long offset, int length) {
        CRC32 c = new CRC32();
        c.update(m.asSlice(offset, length).asByteBuffer());
        return c.getValue();
    }
}
