package dev.nupa.tests;

import dev.nupa.ip.Route;
import dev.nupa.node.NodeConfig;
import dev.nupa.node.NupaNode;
import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
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
import io.vertx.core.buffer.Buffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The server side of rdma-core's {@code ibv_rc_pingpong}, on a fabric node, for a Linux Soft-RoCE client beyond a
 * gateway ({@link VmFabricTest}). The client connects over TCP (our TCP, through the gateway) to port 18515 and
 * sends {@code "%04x:%06x:%06x:%s"} and a NUL (LID, QPN, PSN, its GID as 32 hex digits: 52 bytes); the server
 * answers the same for its QP, its GID being {@code ::ffff:} and its IPv4 address (RoCEv2). Then the client sends
 * first, and the server answers each SEND it receives with one of its own, as many as the client's iterations.
 *
 * <p>Args: fabric-path address ip route iterations size timeout-ms. Prints READY, then one RESULT line.
 */
public final class RcPingpongPeerMain {
    static final int PORT = 18515;
    static final int MESSAGE = 52; // sizeof "0000:000000:000000:00000000000000000000000000000000"

    private RcPingpongPeerMain() {
    }

    public static void main(String[] args) throws Exception {
        Path fabric = Path.of(args[0]);
        int address = Integer.parseInt(args[1]);
        int ip = dev.nupa.ip.wire.Ipv4Address.parse(args[2]);
        Route route = Route.parse(args[3]);
        int iterations = Integer.parseInt(args[4]);
        int size = Integer.parseInt(args[5]);
        long timeoutMs = Long.parseLong(args[6]);
        NupaNode node = NupaNode.create(NodeConfig.defaults(fabric, address).withRoutes(List.of(route)))
                .await(30, TimeUnit.SECONDS);
        CountDownLatch done = new CountDownLatch(1);
        String[] outcome = {"timeout"};
        int[] counts = new int[2]; // receives, sends
        boolean[] answered = {false};
        node.vertx().createNetServer().connectHandler(sock -> {
            Buffer in = Buffer.buffer();
            sock.handler(b -> {
                in.appendBuffer(b);
                if (in.length() < MESSAGE || answered[0]) {
                    return; // the client's "done" after our answer needs none
                }
                answered[0] = true;
                String[] f = in.getString(0, MESSAGE - 1, "US-ASCII").split(":");
                int peerQpn = Integer.parseInt(f[1], 16);
                int peerPsn = Integer.parseInt(f[2], 16);
                byte[] gid = HexFormat.of().parseHex(f[3]);
                int peerIp = ((gid[12] & 0xFF) << 24) | ((gid[13] & 0xFF) << 16) | ((gid[14] & 0xFF) << 8) | (gid[15] & 0xFF);
                node.rdma().execute(ctx -> {
                    try {
                        Pingpong p = new Pingpong(ctx, peerIp, peerQpn, peerPsn, iterations, size, counts, outcome, done);
                        String reply = String.format("%04x:%06x:%06x:%s", 0, p.qp.qpNum(), p.psn,
                                "00000000000000000000ffff" + String.format("%08x", ip)) + "\0";
                        sock.write(Buffer.buffer(reply.getBytes(StandardCharsets.US_ASCII)));
                        node.vertx().setPeriodic(1, id -> node.rdma().execute(c -> {
                            if (p.poll()) {
                                node.vertx().cancelTimer(id);
                            }
                        }));
                    } catch (RuntimeException e) {
                        outcome[0] = "error:" + e.getMessage().replace(' ', '_');
                        done.countDown();
                    }
                });
            });
        }).listen(PORT, "0.0.0.0").await(10, TimeUnit.SECONDS);
        System.out.println("READY");
        System.out.flush();
        done.await(timeoutMs, TimeUnit.MILLISECONDS);
        System.out.println("RESULT outcome=" + outcome[0] + " received=" + counts[0] + " sent=" + counts[1]
                + " rocev2_sent=" + node.rdma().context().counter(dev.nupa.roce.verbs.RdmaCounter.ROCEV2_SENT)
                + " rocev2_received=" + node.rdma().context().counter(dev.nupa.roce.verbs.RdmaCounter.ROCEV2_RECEIVED)
                + " bad_icrc=" + node.rdma().context().counter(dev.nupa.roce.verbs.RdmaCounter.BAD_ICRC));
        System.out.flush();
        node.closeAndWait();
        System.exit(outcome[0].equals("ok") ? 0 : 1);
    }

    /** The RDMA side: an RC QP to the client's IP address, receives posted, a SEND answering each receive. */
    private static final class Pingpong {
        final QueuePair qp;
        /** Just under 2^24: the server's 400 packets wrap the PSN (IBA 9.7.1). */
        final int psn = 0xFFFFF0;
        private final CompletionQueue cq;
        private final MemoryRegion mr;
        private final int iterations;
        private final int size;
        private final int[] counts;
        private final String[] outcome;
        private final CountDownLatch done;
        private final WorkCompletion wc = new WorkCompletion();
        private final SendWorkRequest send;
        private int received;
        private int sent;

        Pingpong(RdmaContext ctx, int peerIp, int peerQpn, int peerPsn, int iterations, int size, int[] counts,
                 String[] outcome, CountDownLatch done) {
            this.iterations = iterations;
            this.size = size;
            this.counts = counts;
            this.outcome = outcome;
            this.done = done;
            ProtectionDomain pd = ctx.allocPd();
            cq = ctx.createCq(2 * iterations + 16);
            mr = pd.allocMr(2L * size, Access.LOCAL_WRITE);
            qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.PACKET).withCapacity(iterations + 1, iterations + 1));
            RdmaPeerMain.init(qp);
            RdmaPeerMain.rtrIp(qp, peerIp, peerQpn, peerPsn);
            RdmaPeerMain.rts(qp, psn);
            RecvWorkRequest r = new RecvWorkRequest().wrId(1).local(mr, 0, size);
            for (int i = 0; i < iterations; i++) {
                qp.postRecv(r);
            }
            send = new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED).local(mr, size, size);
        }

        /** Takes completions and answers receives; true once every iteration is done or one failed. */
        boolean poll() {
            while (cq.poll(wc)) {
                if (wc.status != WcStatus.SUCCESS) {
                    outcome[0] = "status-" + WcStatus.name(wc.status);
                    done.countDown();
                    return true;
                }
                if (wc.opcode == WcOpcode.RECV) {
                    received++;
                    qp.postSend(send);
                } else {
                    sent++;
                }
            }
            counts[0] = received;
            counts[1] = sent;
            if (received >= iterations && sent >= iterations) {
                outcome[0] = "ok";
                done.countDown();
                return true;
            }
            return false;
        }
    }
}
