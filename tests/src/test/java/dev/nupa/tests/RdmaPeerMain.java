package dev.nupa.tests;

import dev.nupa.device.FabricNode;
import dev.nupa.device.ShmFabric;
import dev.nupa.l2.Link;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Properties;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.CRC32;

/**
 * The server side of {@link RdmaMultiProcessTest}, in its own JVM: a verbs context on its own fabric
 * node with a 1 MiB window-backed target region (every access) and one RC QP per {@link TransferMode}.
 * It reads the client's {@code client.properties} from the exchange directory, connects, posts its
 * receives and publishes {@code peer.properties} (written to a temporary name, then renamed). Then it
 * serves in one polling thread until the directory holds a {@code stop} file:
 * <ul>
 * <li>a SEND is echoed back as a SEND of the same bytes (the receive is posted again once the echo
 *   completes);</li>
 * <li>a 16-byte SEND that starts with {@link #CRC_REQUEST} ({@code magic, tag, offset, length} as
 *   ints) is answered by a SEND_WITH_IMM whose immediate is the tag and whose 12-byte payload is
 *   {@code length} (int) and the CRC-32 (long) of those bytes of the target region, as this process
 *   sees them;</li>
 * <li>a WRITE_WITH_IMM is answered the same way, the immediate echoed, the range being
 *   {@code [imm & 0xFFFFF, + byte_len)}.</li>
 * </ul>
 * Args: fabric-path exchange-dir address timeout-ms. Prints {@code READY} when served, then one RESULT line.
 */
public final class RdmaPeerMain {
    static final int TARGET_BYTES = 1 << 20;
    static final int SLOTS = 64;
    static final int SLOT_BYTES = 8192;
    static final int CRC_REQUEST = 0x43524331; // "CRC1"
    static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
    /** Retry timeout 14: 4.096 us * 2^14, about 67 ms of wall-clock time per try. */
    static final int TIMEOUT = 14;
    static final TransferMode[] MODES = TransferMode.values();

    private RdmaPeerMain() {
    }

    public static void main(String[] args) throws Exception {
        Path fabricPath = Path.of(args[0]);
        Path dir = Path.of(args[1]);
        int address = Integer.parseInt(args[2]);
        long deadline = System.nanoTime() + Long.parseLong(args[3]) * 1_000_000L;
        long echoes = 0;
        long crcReplies = 0;
        long errors = 0;
        String error = "none";
        boolean stopped = false;
        try (FabricNode node = ShmFabric.attach(fabricPath, address, null);
             Link link = new Link(node);
             RdmaContext ctx = RdmaContext.open(link, 64, 64, System::nanoTime)) {
            ProtectionDomain pd = ctx.allocPd();
            MemoryRegion target = pd.allocMr(TARGET_BYTES, ALL);
            // In a fabric window: the client's DIRECT QP places its SENDs straight into these receives.
            MemoryRegion slots = pd.allocMr((long) MODES.length * SLOTS * SLOT_BYTES, Access.LOCAL_WRITE);
            CompletionQueue cq = ctx.createCq(4096);
            QueuePair[] qps = new QueuePair[MODES.length];
            for (int m = 0; m < MODES.length; m++) {
                qps[m] = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(MODES[m]).withCapacity(1024, 1024));
                init(qps[m]);
            }
            Properties client = awaitProperties(dir.resolve("client.properties"), deadline);
            int clientNode = Integer.parseInt(client.getProperty("node"));
            int clientPsn = Integer.parseInt(client.getProperty("psn"));
            int psn = 0xABC000 + address;
            for (int m = 0; m < MODES.length; m++) {
                int destQpn = Integer.parseInt(client.getProperty("qpn." + MODES[m]));
                rtr(qps[m], clientNode, destQpn, clientPsn);
                rts(qps[m], psn);
            }
            RecvWorkRequest recv = new RecvWorkRequest(1);
            for (int m = 0; m < MODES.length; m++) {
                for (int s = 0; s < SLOTS; s++) {
                    int slot = m * SLOTS + s;
                    qps[m].postRecv(recv.wrId(slot).local(slots, (long) slot * SLOT_BYTES, SLOT_BYTES));
                }
            }
            Properties me = new Properties();
            me.setProperty("node", Integer.toString(ctx.node()));
            me.setProperty("psn", Integer.toString(psn));
            me.setProperty("rkey", Integer.toString(target.rkey()));
            me.setProperty("addr", Long.toString(target.addr()));
            me.setProperty("length", Long.toString(target.length()));
            me.setProperty("pid", Long.toString(ProcessHandle.current().pid()));
            for (int m = 0; m < MODES.length; m++) {
                me.setProperty("qpn." + MODES[m], Integer.toString(qps[m].qpNum()));
            }
            writeProperties(dir.resolve("peer.properties"), me);
            System.out.println("READY node=" + ctx.node() + " pid=" + ProcessHandle.current().pid());
            System.out.flush();

            Path stop = dir.resolve("stop");
            WorkCompletion wc = new WorkCompletion();
            SendWorkRequest send = new SendWorkRequest(1);
            MemorySegment target0 = target.memory();
            MemorySegment slot0 = slots.memory();
            CRC32 crc = new CRC32();
            int idle = 0;
            long spins = 0;
            while (true) {
                long now = System.nanoTime();
                int work = link.poll(64, now);
                ctx.poll(now);
                while (cq.poll(wc)) {
                    work++;
                    int slot = (int) wc.wrId;
                    int m = slot / SLOTS;
                    long off = (long) slot * SLOT_BYTES;
                    if (wc.status != WcStatus.SUCCESS) {
                        errors++;
                        System.out.println("completion error: " + wc);
                        continue;
                    }
                    if (wc.opcode == WcOpcode.SEND) {
                        qps[m].postRecv(recv.wrId(slot).local(slots, off, SLOT_BYTES)); // its echo or reply is done
                    } else if (wc.opcode == WcOpcode.RECV || wc.opcode == WcOpcode.RECV_RDMA_WITH_IMM) {
                        int tag;
                        long from;
                        int length;
                        if (wc.opcode == WcOpcode.RECV_RDMA_WITH_IMM) {
                            tag = wc.immData;
                            from = wc.immData & 0xFFFFF;
                            length = wc.byteLen;
                        } else if (wc.byteLen == 16 && slot0.get(ValueLayout.JAVA_INT, off) == CRC_REQUEST) {
                            tag = slot0.get(ValueLayout.JAVA_INT, off + 4);
                            from = slot0.get(ValueLayout.JAVA_INT, off + 8);
                            length = slot0.get(ValueLayout.JAVA_INT, off + 12);
                        } else {
                            echoes++;
                            qps[m].postSend(send.wrId(slot).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED)
                                    .local(slots, off, wc.byteLen));
                            continue;
                        }
                        long sum = -1;
                        if (from >= 0 && length >= 0 && from + length <= TARGET_BYTES) {
                            crc.reset();
                            crc.update(target0.asSlice(from, length).asByteBuffer());
                            sum = crc.getValue();
                        }
                        slot0.set(ValueLayout.JAVA_INT, off, length);
                        slot0.set(ValueLayout.JAVA_LONG_UNALIGNED, off + 4, sum);
                        crcReplies++;
                        qps[m].postSend(send.wrId(slot).opcode(WrOpcode.SEND_WITH_IMM).immData(tag)
                                .sendFlags(SendFlags.SIGNALED).local(slots, off, 12));
                    } else {
                        errors++;
                        System.out.println("unexpected completion: " + wc);
                    }
                }
                if (work > 0) {
                    idle = 0;
                } else if (++idle > 2_000) {
                    LockSupport.parkNanos(20_000); // two cores: leave one to the client when nothing moves
                } else if (idle > 200) {
                    Thread.yield();
                } else {
                    Thread.onSpinWait();
                }
                if ((++spins & 0xFF) == 0) {
                    if (Files.exists(stop)) {
                        stopped = true;
                        break;
                    }
                    if (System.nanoTime() - deadline > 0) {
                        error = "timed_out_before_stop";
                        break;
                    }
                }
            }
        } catch (Exception e) {
            error = (e.getClass().getSimpleName() + ":" + e.getMessage()).replace(' ', '_');
            e.printStackTrace(System.out);
        }
        System.out.println("RESULT echoes=" + echoes + " crcReplies=" + crcReplies + " errors=" + errors
                + " stopped=" + stopped + " error=" + error);
        System.out.flush();
        System.exit(error.equals("none") && errors == 0 ? 0 : 1);
    }

    // ---- connection setup, shared with the test -------------------------------------------------

    static void init(QueuePair q) {
        int access = Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;
        q.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(access),
                QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
    }

    static void rtr(QueuePair q, int destNode, int destQpn, int peerPsn) {
        q.modify(new QpAttr().qpState(QpState.RTR).destNode(destNode).pathMtu(4096).destQpNum(destQpn)
                .rqPsn(peerPsn).maxDestRdAtomic(16).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
    }

    /** INIT to RTR against a RoCEv2 peer at IPv4 address {@code ip}, path MTU 1024 (Ethernet's, as rxe's). */
    static void rtrIp(QueuePair q, int ip, int destQpn, int peerPsn) {
        q.modify(new QpAttr().qpState(QpState.RTR).destIp(ip).pathMtu(1024).destQpNum(destQpn).rqPsn(peerPsn)
                        .maxDestRdAtomic(4).minRnrTimer(1),
                QpAttrMask.STATE | QpAttrMask.AV | QpAttrMask.PATH_MTU | QpAttrMask.DEST_QPN | QpAttrMask.RQ_PSN
                        | QpAttrMask.MAX_DEST_RD_ATOMIC | QpAttrMask.MIN_RNR_TIMER);
    }

    static void rts(QueuePair q, int psn) {
        q.modify(new QpAttr().qpState(QpState.RTS).sqPsn(psn).timeout(TIMEOUT).retryCnt(7).rnrRetry(7)
                .maxRdAtomic(16), QpAttrMask.STATE | QpAttrMask.SQ_PSN | QpAttrMask.TIMEOUT | QpAttrMask.RETRY_CNT
                | QpAttrMask.RNR_RETRY | QpAttrMask.MAX_QP_RD_ATOMIC);
    }

    /** Writes {@code p} to a temporary name and renames it into place, so a reader never sees half a file. */
    static void writeProperties(Path file, Properties p) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try (Writer w = Files.newBufferedWriter(tmp)) {
            p.store(w, null);
        }
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    }

    static Properties readProperties(Path file) throws IOException {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file)) {
            p.load(r);
        }
        return p;
    }

    static Properties awaitProperties(Path file, long deadline) throws IOException, InterruptedException {
        while (!Files.exists(file)) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException(file + " never appeared");
            }
            Thread.sleep(1);
        }
        return readProperties(file);
    }
}
