package dev.nupa.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.nupa.ip.IpCounter;
import dev.nupa.l2.LinkCounters;
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
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.datagram.DatagramSocket;
import io.vertx.core.buffer.Buffer;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * One owner per node: UDP sent through Vert.x's DatagramSocket from several worker contexts (threads
 * other than the node's event loop, which is its datapath) while the loop itself posts RDMA WRITEs in packet mode, so both kinds of frame leave the same
 * link at once. Every datagram must arrive intact, every WRITE complete, and neither node may count a
 * link drop or a malformed packet: a link header written by two threads at once shows up here as a
 * frame the receiver drops or misdelivers.
 */
class OneOwnerTest {
    private static final int SENDERS = 4;
    private static final int DATAGRAMS = 20_000;
    private static final int MIN_WRITES = 20_000;
    private static final int WRITE_WINDOW = 32;
    private static final int WRITE_BYTES = 64;
    private static final int PORT = 9;

    @Test
    void udpFromOtherThreadsAndRdmaFromTheLoopLeaveTheLinkIntact() throws Exception {
        Path fabric = Path.of("/dev/shm/nupa-test-owner-" + UUID.randomUUID());
        try {
            NupaNode server = NupaNode.create(NodeConfig.defaults(fabric, 0)).await(10, TimeUnit.SECONDS);
            NupaNode client = NupaNode.create(NodeConfig.defaults(fabric, 1)).await(10, TimeUnit.SECONDS);

            // UDP receiver: checks every datagram's bytes against the pattern its header names.
            AtomicInteger received = new AtomicInteger();
            AtomicInteger corrupt = new AtomicInteger();
            ConcurrentHashMap<Long, Boolean> seen = new ConcurrentHashMap<>();
            Promise<Void> allReceived = Promise.promise();
            DatagramSocket sink = server.vertx().createDatagramSocket();
            sink.handler(d -> {
                Buffer b = d.data();
                if (b.length() < 16 || !intact(b)) {
                    corrupt.incrementAndGet();
                    return;
                }
                if (seen.putIfAbsent(((long) b.getInt(0) << 32) | b.getInt(4), Boolean.TRUE) == null
                        && received.incrementAndGet() == SENDERS * DATAGRAMS) {
                    allReceived.tryComplete();
                }
            });
            sink.listen(PORT, "0.0.0.0").await(10, TimeUnit.SECONDS);

            // RDMA: a connected pair of RC QPs in packet mode; the client's loop keeps WRITEs in flight.
            Rdma s = new Rdma();
            Rdma c = new Rdma();
            Promise<Void> listening = Promise.promise();
            server.rdma().execute(ctx -> {
                s.open(ctx);
                s.qp.modify(new QpAttr().qpState(QpState.INIT).pkeyIndex(0).portNum(1).qpAccessFlags(Access.REMOTE_WRITE),
                        QpAttrMask.STATE | QpAttrMask.PKEY_INDEX | QpAttrMask.PORT | QpAttrMask.ACCESS_FLAGS);
                server.rdma().cm().listen(7471, req -> req.accept(s.qp, new byte[0]));
                listening.complete();
            });
            listening.future().await(10, TimeUnit.SECONDS);
            AtomicBoolean udpDone = new AtomicBoolean();
            AtomicLong writesOk = new AtomicLong();
            AtomicLong writesFailed = new AtomicLong();
            Promise<Void> writesDone = Promise.promise();
            Promise<Void> connected = Promise.promise();
            AtomicReference<Thread> clientLoop = new AtomicReference<>();
            client.rdma().execute(ctx -> {
                clientLoop.set(Thread.currentThread());
                c.open(ctx);
                client.rdma().cm().connect(0x0A000001, 7471, c.qp, new byte[0]).onComplete(ar -> {
                    if (ar.failed()) {
                        connected.fail(ar.cause());
                        return;
                    }
                    // On the client's loop from here on: each completion posts the next WRITE.
                    SendWorkRequest wr = new SendWorkRequest().opcode(WrOpcode.RDMA_WRITE).sendFlags(SendFlags.SIGNALED)
                            .local(c.mr, 0, WRITE_BYTES).remote(s.mr.addr(), s.mr.rkey());
                    WorkCompletion wc = new WorkCompletion();
                    int[] inFlight = {0};
                    long[] posted = {0};
                    Runnable refill = () -> {
                        while (inFlight[0] < WRITE_WINDOW && !(udpDone.get() && posted[0] >= MIN_WRITES)) {
                            c.mr.memory().set(ValueLayout.JAVA_LONG, 0, posted[0]);
                            c.qp.postSend(wr.wrId(posted[0]++));
                            inFlight[0]++;
                        }
                    };
                    c.cq.onEvent(() -> {
                        while (c.cq.poll(wc)) {
                            inFlight[0]--;
                            (wc.status == WcStatus.SUCCESS ? writesOk : writesFailed).incrementAndGet();
                        }
                        c.cq.requestNotify(false);
                        refill.run();
                        if (inFlight[0] == 0) {
                            writesDone.tryComplete();
                        }
                    });
                    c.cq.requestNotify(false);
                    refill.run();
                    connected.complete();
                });
            });
            connected.future().await(10, TimeUnit.SECONDS);

            // UDP senders: each on a worker context of its own, so on a worker thread, never the loop's.
            List<Future<Void>> sends = new ArrayList<>();
            Set<Thread> senderThreads = ConcurrentHashMap.newKeySet();
            for (int k = 0; k < SENDERS; k++) {
                int sender = k;
                Context ctx = ((io.vertx.core.internal.VertxInternal) client.vertx()).createWorkerContext();
                Promise<Void> done = Promise.promise();
                sends.add(done.future());
                ctx.runOnContext(v -> {
                    senderThreads.add(Thread.currentThread());
                    DatagramSocket out = client.vertx().createDatagramSocket();
                    List<Future<Void>> each = new ArrayList<>();
                    for (int i = 0; i < DATAGRAMS; i++) {
                        each.add(out.send(datagram(sender, i), PORT, "10.0.0.1"));
                    }
                    Future.all(each).<Void>mapEmpty().onComplete(done);
                });
            }
            Future.all(sends).await(60, TimeUnit.SECONDS);
            assertTrue(!senderThreads.isEmpty() && !senderThreads.contains(clientLoop.get()), "the senders ran off the node's loop");
            udpDone.set(true);
            awaitQuietly(allReceived.future()); // the assertions below say what is missing
            awaitQuietly(writesDone.future());
            System.out.println("OneOwnerTest: " + received.get() + " datagrams intact, " + corrupt.get() + " corrupt; "
                    + writesOk.get() + " WRITEs ok, " + writesFailed.get() + " failed; link drops: server "
                    + server.link().counters().drops() + ", client " + client.link().counters().drops());

            assertEquals(0, corrupt.get(), "datagrams whose bytes were not what was sent");
            assertEquals(SENDERS * DATAGRAMS, received.get(), "datagrams received");
            assertEquals(0, writesFailed.get(), "RDMA WRITEs that completed in error");
            assertTrue(writesOk.get() >= MIN_WRITES, "RDMA WRITEs completed: " + writesOk.get());
            for (NupaNode n : List.of(server, client)) {
                LinkCounters lc = n.link().counters();
                assertEquals(0, lc.totalDrops(), "link drops on " + n + ": " + lc.drops());
                assertEquals(0, n.ip().counter(IpCounter.IN_HDR_ERRORS), "IP header errors on " + n);
                assertEquals(0, n.ip().counter(IpCounter.UDP_IN_ERRORS), "UDP errors on " + n);
                assertEquals(0, n.rdma().context().counter(RdmaCounter.MALFORMED), "malformed RDMA packets on " + n);
            }
            client.close().await(10, TimeUnit.SECONDS);
            server.close().await(10, TimeUnit.SECONDS);
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    private static void awaitQuietly(Future<Void> f) throws Exception {
        try {
            f.await(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            // not all of it came: counted and asserted by the caller
        }
    }

    /** Sender, sequence, then bytes that follow from both; 16 to 512 bytes long (small: many frames race). */
    private static Buffer datagram(int sender, int seq) {
        int length = 16 + (seq * 37 + sender * 101) % 497;
        Buffer b = Buffer.buffer(length).appendInt(sender).appendInt(seq);
        for (int i = 8; i < length; i++) {
            b.appendByte((byte) (sender * 31 + seq + i));
        }
        return b;
    }

    private static boolean intact(Buffer b) {
        int sender = b.getInt(0);
        int seq = b.getInt(4);
        if (sender < 0 || sender >= SENDERS || seq < 0 || seq >= DATAGRAMS
                || b.length() != 16 + (seq * 37 + sender * 101) % 497) {
            return false;
        }
        for (int i = 8; i < b.length(); i++) {
            if (b.getByte(i) != (byte) (sender * 31 + seq + i)) {
                return false;
            }
        }
        return true;
    }

    /** One side's verbs objects; touched on its node's loop only. */
    private static final class Rdma {
        ProtectionDomain pd;
        CompletionQueue cq;
        MemoryRegion mr;
        QueuePair qp;

        void open(RdmaContext ctx) {
            pd = ctx.allocPd();
            cq = ctx.createCq(64);
            mr = pd.allocMr(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            qp = ctx.createQp(pd, QpInitAttr.rc(cq, cq).withMode(TransferMode.PACKET));
        }
    }
}
