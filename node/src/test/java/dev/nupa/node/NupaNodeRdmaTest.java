package dev.nupa.node;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.nupa.roce.verbs.Access;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.verbs.QpAttr;
import dev.nupa.roce.verbs.QpAttrMask;
import dev.nupa.roce.verbs.QpState;
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
import io.vertx.core.Promise;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * RDMA inside embedded nodes (docs/embedding.md): a server node listens with the connection manager,
 * a client node connects by IPv4 address, writes into the server's region and sends a message; the
 * verbs run on each node's datapath thread through {@code rdma().execute}.
 */
class NupaNodeRdmaTest {
    private static final int ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

    /** Everything one side owns; touched on its datapath thread only. */
    private static final class Side {
        ProtectionDomain pd;
        CompletionQueue cq;
        MemoryRegion mr;
        QueuePair qp;

        void open(RdmaContext ctx, TransferMode mode) {
            pd = ctx.allocPd();
            cq = ctx.createCq(64);
            mr = pd.allocMr(4096, ALL);
            qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(mode));
        }
    }

    @Test
    void aClientNodeConnectsByAddressWritesAndSendsToAServerNode() throws Exception {
        Path fabric = Path.of("/dev/shm/nupa-node-rdma-" + UUID.randomUUID());
        try {
            NupaNode server = NupaNode.create(NodeConfig.defaults(fabric, 0)).await(10, TimeUnit.SECONDS);
            NupaNode client = NupaNode.create(NodeConfig.defaults(fabric, 1)).await(10, TimeUnit.SECONDS);
            Side s = new Side();
            Side c = new Side();
            Promise<String> received = Promise.promise();
            Promise<Void> listening = Promise.promise();
            // The server: a region to be written, a receive for the message, a listener that accepts.
            server.rdma().execute(ctx -> {
                s.open(ctx, TransferMode.DIRECT); // the SEND lands in the posted receive: no frame wakes this node
                s.qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE),
                        QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
                s.qp.postRecv(new RecvWorkRequest().wrId(9).local(s.mr, 2048, 1024)); // a receive needs INIT first
                server.rdma().cm().listen(7471, req -> {
                    req.accept(s.qp, ("rkey=" + s.mr.rkey() + ",addr=" + s.mr.addr()).getBytes(StandardCharsets.US_ASCII));
                });
                s.cq.onEvent(() -> {
                    WorkCompletion wc = new WorkCompletion();
                    while (s.cq.poll(wc)) {
                        if (wc.status != WcStatus.SUCCESS) {
                            received.tryFail(WcStatus.name(wc.status));
                        } else {
                            byte[] b = s.mr.memory().asSlice(2048, wc.byteLen).toArray(ValueLayout.JAVA_BYTE);
                            received.tryComplete(new String(b, StandardCharsets.US_ASCII) + " / "
                                    + s.mr.memory().getString(0, StandardCharsets.US_ASCII));
                        }
                    }
                    s.cq.requestNotify(false);
                });
                s.cq.requestNotify(false);
                listening.complete();
            });
            listening.future().await(10, TimeUnit.SECONDS);
            // The client: connect to 10.0.0.1 port 7471, learn the region from the private data, write, send.
            Promise<Integer> sent = Promise.promise();
            client.rdma().execute(ctx -> {
                c.open(ctx, TransferMode.DIRECT);
                client.rdma().cm().connect(0x0A000001, 7471, c.qp, new byte[0]).onComplete(ar -> {
                    if (ar.failed()) {
                        sent.fail(ar.cause());
                        return;
                    }
                    String[] kv = new String(ar.result().privateData(), StandardCharsets.US_ASCII).split("\0")[0].split(",");
                    int rkey = Integer.parseInt(kv[0].substring(5));
                    long addr = Long.parseLong(kv[1].substring(5));
                    c.mr.memory().setString(0, "written directly", StandardCharsets.US_ASCII);
                    c.mr.memory().setString(100, "hello over RDMA", StandardCharsets.US_ASCII);
                    c.qp.postSend(new SendWorkRequest().wrId(1).opcode(WrOpcode.RDMA_WRITE).local(c.mr, 0, 17).remote(addr, rkey));
                    // Later, when the handshake's frames are long delivered: the SEND lands in the server's
                    // posted receive and no frame announces it; the server's datapath finds it by itself.
                    client.vertx().setTimer(50, t -> client.rdma().execute(cx -> {
                        c.qp.postSend(new SendWorkRequest().wrId(2).opcode(WrOpcode.SEND).sendFlags(SendFlags.SIGNALED)
                                .local(c.mr, 100, 15));
                        sent.complete((int) cx.counter(RdmaCounter.DIRECT_SENDS));
                    }));
                });
            });
            assertEquals(1, sent.future().await(10, TimeUnit.SECONDS), "the SEND was placed directly");
            assertEquals("hello over RDMA / written directly", received.future().await(10, TimeUnit.SECONDS));
            client.close().await(10, TimeUnit.SECONDS);
            server.close().await(10, TimeUnit.SECONDS);
        } finally {
            Files.deleteIfExists(fabric);
        }
    }
}
