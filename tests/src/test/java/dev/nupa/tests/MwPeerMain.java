package dev.nupa.tests;

import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Route;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.MemoryWindow;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.cm.RdmaCm;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.verbs.MwType;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

/**
 * The fabric node's side of {@code vms/mw-check.c} (Linux Soft-RoCE in a QEMU guest, {@link VmFabricTest}): memory
 * windows of type 2 and SEND_WITH_INVALIDATE between our verbs and rxe, over connections made through our CM with
 * rdma_cm. The guest connects twice; the steps of each connection are in mw-check.c's header. Here:
 * <ol>
 * <li>our window: bound on the guest's QP, advertised, written through by rxe, invalidated by rxe's SEND_WITH_INV
 *   (our receive must carry WITH_INV and that rkey), bound again under a new key, written through again, invalidated
 *   with LOCAL_INV; rxe's next WRITE through it must not land (our region keeps the second pattern) and is NAKed.</li>
 * <li>the guest's window: we WRITE through it, SEND_WITH_INV its rkey, and after the guest says "checked" our
 *   next WRITE through it must complete with REM_ACCESS_ERR; then we disconnect.</li>
 * </ol>
 * Args: fabric-path address ip/len route port timeout-ms. Prints LISTENING, a line per step, one RESULT line; exits
 * 0 when every check held.
 */
public final class MwPeerMain {
    static final int LEN = 4096; // mw-check.c's
    static final int MSG = 64;
    private static final long RECV = 0;
    private static final long SEND = MSG;
    private static final long DATA = 4096;
    private static final ValueLayout.OfLong BE64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt BE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final RoceNode node;
    private final RdmaContext ctx;
    private final RdmaCm cm;
    private final ProtectionDomain pd;
    private final Set<QueuePair> disconnected = new HashSet<>();
    private RdmaCm.ConnectRequest pending;

    private MwPeerMain(RoceNode node, RdmaContext ctx, RdmaCm cm, int port) {
        this.node = node;
        this.ctx = ctx;
        this.cm = cm;
        pd = ctx.allocPd();
        cm.onDisconnect(disconnected::add);
        cm.listen(port, req -> pending = req);
    }

    public static void main(String[] args) throws Exception {
        Path fabricPath = Path.of(args[0]);
        int address = Integer.parseInt(args[1]);
        IpConfig ipConfig = IpConfig.parse(args[2]);
        Route route = Route.parse(args[3]);
        int port = Integer.parseInt(args[4]);
        long deadline = System.nanoTime() + Long.parseLong(args[5]) * 1_000_000L;
        String outcome;
        String counters = "";
        try (RoceNode node = new RoceNode(fabricPath, address, ipConfig, route, deadline)) {
            RdmaContext ctx = node.ctx;
            try (RdmaCm cm = RdmaCm.create(ctx, node.neighbors::lookup, RdmaCm.Options.defaults())) {
                MwPeerMain peer = new MwPeerMain(node, ctx, cm, port);
                System.out.println("LISTENING");
                System.out.flush();
                outcome = peer.ourWindow();
                if (outcome.equals("ok")) {
                    outcome = peer.theGuestsWindow();
                }
                counters = " naks_sent=" + ctx.counter(RdmaCounter.NAKS_SENT) + " bad_icrc=" + ctx.counter(RdmaCounter.BAD_ICRC)
                        + " rocev2_received=" + ctx.counter(RdmaCounter.ROCEV2_RECEIVED);
            }
        } catch (RuntimeException e) {
            outcome = "error:" + String.valueOf(e.getMessage()).replace(' ', '_');
        }
        System.out.println("RESULT outcome=" + outcome + counters);
        System.out.flush();
        System.exit(outcome.equals("ok") ? 0 : 1);
    }

    /**
     * The next connection: a fresh RC QP (with a CQ of its own: the last one's flushed receives stay there) and one
     * receive posted, accepted once the guest's REQ arrives.
     */
    private Connected accept(String what) {
        MemoryRegion mr = pd.allocMr(2 * 4096, Access.LOCAL_WRITE | Access.MW_BIND); // remote access only through a window
        CompletionQueue cq = ctx.createCq(16);
        QueuePair qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.PACKET).withCapacity(16, 4));
        RdmaCm.toInit(qp);
        Connected c = new Connected(qp, cq, mr);
        c.postRecv();
        node.until(() -> pending != null);
        RdmaCm.ConnectRequest req = pending;
        pending = null;
        boolean[] up = {false};
        String[] failed = {null};
        req.accept(qp, new byte[0]).onComplete(ar -> {
            up[0] = ar.succeeded();
            failed[0] = ar.failed() ? ar.cause().getMessage() : null;
        });
        node.until(() -> up[0] || failed[0] != null);
        if (failed[0] != null) {
            throw new IllegalStateException(what + ": accept failed: " + failed[0]);
        }
        System.out.println("mw-peer: " + what + ": connected");
        return c;
    }

    /** Binds {@code mw} on the connection's QP with a new key byte over the region's data area; the new rkey. */
    private int bind(Connected c, MemoryWindow mw) {
        int rkey = MemoryWindow.incRkey(mw.rkey());
        c.qp.postSend(new SendWorkRequest().wrId(10).opcode(WrOpcode.BIND_MW).sendFlags(SendFlags.SIGNALED)
                .bindMw(rkey, c.mr, c.mr.addr() + DATA, LEN, Access.REMOTE_WRITE));
        c.expect(10, WcStatus.SUCCESS);
        return rkey;
    }

    private String ourWindow() {
        Connected c = accept("our window");
        MemorySegment m = c.mr.memory();
        MemoryWindow mw = pd.allocMw(MwType.TYPE_2);
        int key1 = bind(c, mw);
        c.advertise(key1);
        WorkCompletion wc = c.receive();
        if ((wc.wcFlags & WorkCompletion.WITH_INV) == 0 || wc.invalidatedRkey() != key1) {
            return "send-with-inv-not-reported:" + wc.toString().replace(' ', '_');
        }
        if (mw.bound()) {
            return "window-still-bound-after-send-with-inv";
        }
        if (!pattern(m.asSlice(DATA, LEN), 1)) {
            return "first-write-not-landed";
        }
        System.out.println("mw-peer: rxe's WRITE landed; its SEND_WITH_INV invalidated rkey 0x" + Integer.toHexString(key1));
        int key2 = bind(c, mw);
        c.advertise(key2);
        c.receive(); // "written"
        if (!pattern(m.asSlice(DATA, LEN), 2)) {
            return "second-write-not-landed";
        }
        c.qp.postSend(new SendWorkRequest().wrId(11).opcode(WrOpcode.LOCAL_INV).sendFlags(SendFlags.SIGNALED).invalidate(key2));
        c.expect(11, WcStatus.SUCCESS);
        long naks = ctx.counter(RdmaCounter.NAKS_SENT);
        c.send("invalidated", WrOpcode.SEND, 0);
        node.until(() -> disconnected.contains(c.qp)); // after rxe's WRITE through the invalidated window
        if (!pattern(m.asSlice(DATA, LEN), 2)) {
            return "write-through-invalidated-window-landed";
        }
        if (ctx.counter(RdmaCounter.NAKS_SENT) == naks) {
            return "write-through-invalidated-window-not-naked";
        }
        System.out.println("mw-peer: rxe's WRITE through the locally invalidated window was NAKed and changed nothing");
        cm.release(c.qp);
        c.qp.close();
        return "ok";
    }

    private String theGuestsWindow() {
        Connected c = accept("the guest's window");
        MemorySegment m = c.mr.memory();
        c.receive();
        long addr = m.get(BE64, RECV);
        int rkey = m.get(BE32, RECV + 8);
        if (m.get(BE32, RECV + 12) != LEN) {
            return "guest-window-length-" + m.get(BE32, RECV + 12);
        }
        fill(m.asSlice(DATA, LEN), 3);
        c.qp.postSend(new SendWorkRequest().wrId(20).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(c.mr, DATA, LEN).remote(addr, rkey));
        c.expect(20, WcStatus.SUCCESS);
        c.send("invalidate", WrOpcode.SEND_WITH_INV, rkey);
        System.out.println("mw-peer: wrote through the guest's window and sent SEND_WITH_INV for rkey 0x" + Integer.toHexString(rkey));
        c.receive(); // "checked"
        fill(m.asSlice(DATA, LEN), 5);
        c.qp.postSend(new SendWorkRequest().wrId(21).opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                .local(c.mr, DATA, LEN).remote(addr, rkey));
        WorkCompletion wc = c.next();
        if (wc.wrId != 21 || wc.status != WcStatus.REM_ACCESS_ERR) {
            return "write-through-invalidated-guest-window:" + wc.toString().replace(' ', '_');
        }
        System.out.println("mw-peer: rxe refused our WRITE through its invalidated window: " + WcStatus.name(wc.status));
        cm.disconnect(c.qp);
        long drep = System.nanoTime() + 2_000_000_000L; // the DREQ's answer, before the node leaves
        node.until(() -> System.nanoTime() - drep > 0);
        c.qp.close();
        return "ok";
    }

    static void fill(MemorySegment m, int k) {
        for (int i = 0; i < LEN; i++) {
            m.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + k));
        }
    }

    static boolean pattern(MemorySegment m, int k) {
        for (int i = 0; i < LEN; i++) {
            if (m.get(ValueLayout.JAVA_BYTE, i) != (byte) (i * 7 + k)) {
                return false;
            }
        }
        return true;
    }

    /**
     * One connection: its QP, CQ and region (receive slot, send slot, data area), its steps driven by the node's thread. The
     * two sides go in lockstep (each message answers the other's last), so a message's bytes stay in the receive slot
     * until this side has sent again.
     */
    private final class Connected {
        final QueuePair qp;
        final CompletionQueue cq;
        final MemoryRegion mr;

        Connected(QueuePair qp, CompletionQueue cq, MemoryRegion mr) {
            this.qp = qp;
            this.cq = cq;
            this.mr = mr;
        }

        void postRecv() {
            qp.postRecv(new RecvWorkRequest().wrId(1).local(mr, RECV, MSG));
        }

        WorkCompletion next() {
            return node.await(cq);
        }

        void expect(long wrId, int status) {
            WorkCompletion wc = next();
            if (wc.wrId != wrId || wc.status != status) {
                throw new IllegalStateException("expected wr " + wrId + " with " + WcStatus.name(status) + ", got " + wc);
            }
        }

        /** The next message, its receive posted again (the peer sends the next one only after this side's answer). */
        WorkCompletion receive() {
            WorkCompletion wc = next();
            if (wc.wrId != 1 || wc.status != WcStatus.SUCCESS || wc.opcode != WcOpcode.RECV) {
                throw new IllegalStateException("expected a message, got " + wc);
            }
            postRecv();
            return wc;
        }

        void send(String text, int opcode, int invalidate) {
            MemorySegment m = mr.memory();
            m.asSlice(SEND, MSG).fill((byte) 0);
            byte[] b = text.getBytes(StandardCharsets.US_ASCII);
            MemorySegment.copy(MemorySegment.ofArray(b), 0, m, SEND, b.length);
            qp.postSend(new SendWorkRequest().wrId(2).opcode(opcode).sendFlags(SendFlags.SIGNALED).local(mr, SEND, MSG)
                    .invalidate(invalidate));
            expect(2, WcStatus.SUCCESS);
        }

        /** SENDs where the window is: {be64 addr, be32 rkey, be32 length}, as mw-check.c reads it. */
        void advertise(int rkey) {
            MemorySegment m = mr.memory();
            m.asSlice(SEND, MSG).fill((byte) 0);
            m.set(BE64, SEND, mr.addr() + DATA);
            m.set(BE32, SEND + 8, rkey);
            m.set(BE32, SEND + 12, LEN);
            qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(mr, SEND, MSG));
            expect(2, WcStatus.SUCCESS);
        }
    }
}
