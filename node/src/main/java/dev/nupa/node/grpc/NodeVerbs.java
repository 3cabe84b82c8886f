package dev.nupa.node.grpc;

import dev.nupa.node.telemetry.RdmaTelemetry;
import dev.nupa.node.NupaNode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import com.google.protobuf.ByteString;
import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.node.verbs.Connected;
import dev.nupa.node.verbs.Done;
import dev.nupa.node.verbs.Failed;
import dev.nupa.node.verbs.Sge;
import dev.nupa.node.verbs.VerbsEvent;
import dev.nupa.node.verbs.VerbsRequest;
import dev.nupa.node.verbs.VerbsService;
import dev.nupa.roce.CompletionQueue;
import dev.nupa.roce.MemoryRegion;
import dev.nupa.roce.ProtectionDomain;
import dev.nupa.roce.QpInitAttr;
import dev.nupa.roce.verbs.QpState;
import dev.nupa.roce.QueuePair;
import dev.nupa.roce.RdmaContext;
import dev.nupa.roce.verbs.RdmaException;
import dev.nupa.roce.verbs.RecvWorkRequest;
import dev.nupa.roce.verbs.ScatterGather;
import dev.nupa.roce.verbs.SendFlags;
import dev.nupa.roce.verbs.SendWorkRequest;
import dev.nupa.roce.verbs.WcOpcode;
import dev.nupa.roce.verbs.WcStatus;
import dev.nupa.roce.verbs.WorkCompletion;
import dev.nupa.roce.verbs.WrOpcode;
import dev.nupa.roce.cm.RdmaCm;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.streams.ReadStream;
import io.vertx.core.streams.WriteStream;

/**
 * The Verbs service of {@code verbs.proto}: a client's verbs session on the node's RDMA context. A session owns a
 * protection domain and the regions, completion queues and queue pairs it creates; they are released on the
 * datapath when its call ends, however it ends (connections disconnected first, so peers learn it).
 *
 * <p>Threading: requests arrive on the endpoint's context and run, in order, on the node's event loop (the
 * datapath, where the RDMA context lives); answers and completions go back to the endpoint's context. Completions
 * are drained when a queue raises its event (re-armed before each drain, so none is missed), at most
 * {@link #DRAIN_BATCH} at a time, and not while the call's answer stream is full: then the queues hold them,
 * and the session stops reading requests until the client reads again.
 */
final class NodeVerbs extends VerbsService {
    /** Memory one session may register, in all, unless the endpoint is told otherwise (--grpc-verbs-memory). */
    static final long DEFAULT_SESSION_MEMORY = 256L << 20;
    /** Memory all sessions of the node may register together, unless told otherwise (--grpc-verbs-node-memory). */
    static final long DEFAULT_NODE_MEMORY = 1L << 30;
    /** The most one ReadMemory returns: well inside gRPC's usual 4 MiB message limit and Vert.x's 256 KiB. */
    static final int MAX_READ = 128 * 1024;
    static final int DRAIN_BATCH = 256;
    private static final int MAX_SGE = 16;

    private final NupaNode node;
    private final Context nodeContext;
    private volatile long sessionMemory;
    private volatile long nodeMemoryLimit = DEFAULT_NODE_MEMORY;
    /** Bytes all sessions hold registered; sessions run on several contexts, so they count here atomically. */
    private final java.util.concurrent.atomic.AtomicLong nodeMemory = new java.util.concurrent.atomic.AtomicLong();
    private final Set<Session> sessions = ConcurrentHashMap.newKeySet();
    /** Spans of signaled work requests, from post to completion; null when the node is not traced. */
    private final Tracer tracer;

    NodeVerbs(NupaNode node, long sessionMemory) {
        this.node = node;
        this.nodeContext = node.vertx().getOrCreateContext();
        this.tracer = node.openTelemetry() != null ? node.openTelemetry().getTracer("dev.nupa.node.verbs") : null;
        sessionMemory(sessionMemory);
    }

    /** The memory a session may register in all; sessions under way keep what they hold. */
    void sessionMemory(long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("a verbs session's memory limit must be positive, not " + bytes);
        }
        this.sessionMemory = bytes;
    }

    /** The memory all sessions together may register; what sessions hold already stays theirs. */
    void nodeMemory(long bytes) {
        if (bytes < 1) {
            throw new IllegalArgumentException("the verbs sessions' node-wide memory limit must be positive, not " + bytes);
        }
        this.nodeMemoryLimit = bytes;
    }

    /** Bytes all sessions hold registered now. */
    long nodeMemoryUsed() {
        return nodeMemory.get();
    }

    /** Counts {@code length} more bytes node-wide, or throws, counting nothing, when that would pass the node's limit. */
    private void takeNodeMemory(long length) {
        long limit = nodeMemoryLimit;
        while (true) {
            long held = nodeMemory.get();
            if (length > limit - held) {
                throw new IllegalArgumentException("cannot register " + length + " bytes: the node's verbs sessions register "
                        + limit + " bytes in all and hold " + held + " (" + sessions.size() + " sessions); destroy regions"
                        + " or end sessions first (the node's --grpc-verbs-node-memory sets the limit)");
            }
            if (nodeMemory.compareAndSet(held, held + length)) {
                return;
            }
        }
    }

    @Override
    protected void session(ReadStream<VerbsRequest> requests, WriteStream<VerbsEvent> events) {
        Session s = new Session(requests, events, Vertx.currentContext());
        sessions.add(s);
        requests.handler(s::onRequest);
        requests.endHandler(v -> s.end(true));
        NodeSockets.onGone(requests, () -> s.end(false));
        events.drainHandler(v -> s.onDrain());
    }

    /** Sessions whose calls are under way. */
    int sessions() {
        return sessions.size();
    }

    /** Releases every session still open (the endpoint closes); completes when the datapath has done so. */
    Future<?> close() {
        List<Future<?>> all = new ArrayList<>();
        for (Session s : List.copyOf(sessions)) {
            all.add(s.end(false));
        }
        return Future.join(all);
    }

    static final AttributeKey<Long> QP_NUM = RdmaTelemetry.QP_NUM;
    static final AttributeKey<Long> WR_ID = RdmaTelemetry.WR_ID;
    static final AttributeKey<Long> BYTES = AttributeKey.longKey("nupa.bytes");
    static final AttributeKey<String> STATUS = RdmaTelemetry.STATUS;

    private static VerbsEvent failed(long id, String why) {
        return VerbsEvent.newBuilder().setId(id).setFailed(Failed.newBuilder().setMessage(why)).build();
    }

    private static VerbsEvent done(long id) {
        return VerbsEvent.newBuilder().setId(id).setDone(Done.getDefaultInstance()).build();
    }

    private final class Session {
        // The endpoint's side.
        private final ReadStream<VerbsRequest> requests;
        private final WriteStream<VerbsEvent> events;
        private final Context endpoint;
        private boolean answered;
        private Promise<Void> released;
        /** The answer stream is full: no draining, no reading, until it drains. */
        private volatile boolean held;

        // The datapath's side.
        private ProtectionDomain pd;
        private final Map<Integer, CompletionQueue> cqs = new HashMap<>();
        private int nextCq = 1;
        private final Map<Integer, QueuePair> qps = new HashMap<>();
        private final Map<Integer, MemoryRegion> regions = new HashMap<>();
        private final Map<Integer, Arena> arenas = new HashMap<>();
        private final Set<Integer> ports = new HashSet<>();
        private long memory;
        private boolean closed;
        private boolean drainScheduled;
        private final WorkCompletion wc = new WorkCompletion();
        /** Spans of signaled sends not completed yet, by QP number and wr_id. */
        private final Map<Long, Span> posted = new HashMap<>();
        private final SendWorkRequest send = new SendWorkRequest(MAX_SGE);
        private final RecvWorkRequest recv = new RecvWorkRequest(MAX_SGE);

        Session(ReadStream<VerbsRequest> requests, WriteStream<VerbsEvent> events, Context endpoint) {
            this.requests = requests;
            this.events = events;
            this.endpoint = endpoint;
        }

        // ---- endpoint ------------------------------------------------------------------------

        void onRequest(VerbsRequest m) {
            // The call's span (vertx-opentelemetry keeps it in the request's context): parent of the work requests' spans.
            io.opentelemetry.context.Context parent = tracer != null ? io.opentelemetry.context.Context.current() : null;
            nodeContext.runOnContext(v -> {
                if (closed) {
                    return;
                }
                VerbsEvent e;
                try {
                    e = execute(m, parent);
                } catch (RdmaException | IllegalArgumentException | IllegalStateException | IndexOutOfBoundsException ex) {
                    e = failed(m.getId(), ex.getMessage());
                } catch (RuntimeException ex) { // not a misuse the checks name: still answered, never left hanging
                    e = failed(m.getId(), "the node could not do it: " + ex);
                }
                if (e != null) {
                    answer(e);
                }
            });
        }

        /** From any thread: writes {@code e} on the endpoint's context. */
        void answer(VerbsEvent e) {
            endpoint.runOnContext(v -> write(e));
        }

        private void write(VerbsEvent e) {
            if (answered) {
                return;
            }
            events.write(e);
            if (!held && events.writeQueueFull()) {
                held = true;
                requests.pause();
            }
        }

        void onDrain() {
            if (held) {
                held = false;
                requests.resume();
                nodeContext.runOnContext(v -> drain());
            }
        }

        /** Ends the session: its resources are released on the datapath, then the call is answered OK if {@code ok}. */
        synchronized Future<Void> end(boolean ok) {
            if (released != null) {
                return released.future();
            }
            released = Promise.promise();
            sessions.remove(this);
            Promise<Void> p = released;
            nodeContext.runOnContext(v -> {
                release();
                p.complete();
                endpoint.runOnContext(x -> {
                    if (!answered) {
                        answered = true;
                        if (ok) {
                            events.end();
                        }
                    }
                });
            });
            return released.future();
        }

        // ---- datapath ------------------------------------------------------------------------

        private RdmaContext ctx() {
            return node.rdma().context();
        }

        private ProtectionDomain pd() {
            if (pd == null) {
                pd = ctx().allocPd();
            }
            return pd;
        }

        private VerbsEvent execute(VerbsRequest m, io.opentelemetry.context.Context parent) {
            long id = m.getId();
            return switch (m.getOpCase()) {
                case REG_MR -> regMr(id, m.getRegMr().getLength(), m.getRegMr().getAccess());
                case CREATE_CQ -> createCq(id, m.getCreateCq().getCqe());
                case CREATE_QP -> {
                    var c = m.getCreateQp();
                    QpInitAttr init = QpInitAttr.rc(cq(c.getSendCq()), cq(c.getRecvCq()))
                            .withCapacity(c.getMaxSendWr() == 0 ? 128 : c.getMaxSendWr(), c.getMaxRecvWr() == 0 ? 128 : c.getMaxRecvWr());
                    QueuePair qp = ctx().createQp(pd(), init);
                    qps.put(qp.qpNum(), qp);
                    RdmaCm.toInit(qp);
                    yield VerbsEvent.newBuilder().setId(id).setQpNum(qp.qpNum()).build();
                }
                case CONNECT -> {
                    var c = m.getConnect();
                    QueuePair qp = qp(c.getQpNum());
                    node.rdma().cm().connect(Ipv4Address.parse(c.getHost()), c.getPort(), qp, c.getPrivateData().toByteArray())
                            .onComplete(ar -> answer(connected(id, ar)));
                    yield null;
                }
                case ACCEPT -> accept(id, m.getAccept().getQpNum(), m.getAccept().getPort(), m.getAccept().getPrivateData().toByteArray());
                case POST_SEND -> {
                    var p = m.getPostSend();
                    QueuePair qp = qp(p.getQpNum());
                    if (qp.state() == QpState.INIT || qp.state() == QpState.RTR) {
                        throw new IllegalStateException("QP " + qp.qpNum() + " is not connected yet (" + qp.state()
                                + "); post sends after its Connect or Accept is answered");
                    }
                    send.wrId(p.getWrId()).opcode(p.getOpcode()).sendFlags(p.getSendFlags()).immData(p.getImmData())
                            .remote(p.getRemoteAddr(), p.getRkey()).compareAdd(p.getCompareAdd()).swap(p.getSwap());
                    gather(send.sg, p.getSgList());
                    Span span = tracer != null && (p.getSendFlags() & SendFlags.SIGNALED) != 0 ? startSpan(p, parent) : null;
                    try {
                        qp.postSend(send);
                    } catch (RuntimeException ex) {
                        if (span != null) {
                            span.setStatus(StatusCode.ERROR, ex.getMessage());
                            span.end();
                        }
                        throw ex;
                    }
                    if (span != null) {
                        span.addEvent("posted");
                        Span previous = posted.put(key(qp.qpNum(), p.getWrId()), span);
                        if (previous != null) { // the same wr_id again before its completion: the first one's span ends here
                            previous.setStatus(StatusCode.ERROR, "wr_id reused before its completion");
                            previous.end();
                        }
                    }
                    yield done(id);
                }
                case POST_RECV -> {
                    var p = m.getPostRecv();
                    QueuePair qp = qp(p.getQpNum());
                    recv.wrId(p.getWrId());
                    gather(recv.sg, p.getSgList());
                    qp.postRecv(recv);
                    yield done(id);
                }
                case WRITE_MEMORY -> {
                    var w = m.getWriteMemory();
                    MemorySegment at = range(w.getLkey(), w.getOffset(), w.getData().size());
                    MemorySegment.copy(w.getData().toByteArray(), 0, at, ValueLayout.JAVA_BYTE, 0, w.getData().size());
                    yield done(id);
                }
                case READ_MEMORY -> {
                    var r = m.getReadMemory();
                    if (r.getLength() > MAX_READ) {
                        throw new IllegalArgumentException("ReadMemory returns at most " + MAX_READ + " bytes, not "
                                + Integer.toUnsignedString(r.getLength()) + "; read in pieces");
                    }
                    byte[] data = range(r.getLkey(), r.getOffset(), r.getLength()).toArray(ValueLayout.JAVA_BYTE);
                    yield VerbsEvent.newBuilder().setId(id).setData(ByteString.copyFrom(data)).build();
                }
                case DISCONNECT -> {
                    node.rdma().cm().disconnect(qp(m.getDisconnect().getQpNum()));
                    yield done(id);
                }
                case DESTROY -> destroy(id, m.getDestroy());
                case OP_NOT_SET -> throw new IllegalArgumentException("a VerbsRequest carries one operation (reg_mr, create_cq,"
                        + " create_qp, connect, accept, post_send, post_recv, write_memory, read_memory, disconnect, destroy); this one"
                        + " carries none");
            };
        }

        private Span startSpan(dev.nupa.node.verbs.PostSend p, io.opentelemetry.context.Context parent) {
            long bytes = 0;
            for (Sge e : p.getSgList()) {
                bytes += Integer.toUnsignedLong(e.getLength());
            }
            return tracer.spanBuilder("verbs " + WrOpcode.name(p.getOpcode())).setParent(parent)
                    .setAttribute(QP_NUM, (long) p.getQpNum()).setAttribute(WR_ID, p.getWrId()).setAttribute(BYTES, bytes)
                    .startSpan();
        }

        /** A send's completion ends its span. */
        private void completed(WorkCompletion wc) {
            Span span = posted.remove(key(wc.qpNum, wc.wrId));
            if (span != null) {
                span.addEvent("completed").setAttribute(STATUS, WcStatus.name(wc.status));
                if (wc.status != WcStatus.SUCCESS) {
                    span.setStatus(StatusCode.ERROR, WcStatus.name(wc.status));
                }
                span.end();
            }
        }

        private static long key(int qpNum, long wrId) {
            return (long) qpNum << 40 ^ wrId;
        }

        private VerbsEvent regMr(long id, long length, int access) {
            long limit = sessionMemory;
            if (length < 1 || length > limit - memory) {
                throw new IllegalArgumentException("cannot register " + Long.toUnsignedString(length) + " bytes: a session"
                        + " registers 1 byte to " + limit + " in all and holds " + memory + "; destroy regions first"
                        + " (the node's --grpc-verbs-memory sets the limit)");
            }
            takeNodeMemory(length);
            Arena arena = Arena.ofShared();
            MemoryRegion mr;
            try {
                mr = pd().regMr(arena.allocate(length, 64), access);
            } catch (RuntimeException | OutOfMemoryError e) {
                arena.close();
                nodeMemory.addAndGet(-length);
                throw e;
            }
            regions.put(mr.lkey(), mr);
            arenas.put(mr.lkey(), arena);
            memory += length;
            return VerbsEvent.newBuilder().setId(id).setMr(dev.nupa.node.verbs.MemoryRegion.newBuilder()
                    .setLkey(mr.lkey()).setRkey(mr.rkey()).setAddr(mr.addr()).setLength(mr.length())).build();
        }

        private VerbsEvent createCq(long id, int cqe) {
            CompletionQueue cq = ctx().createCq(cqe);
            int handle = nextCq++;
            cqs.put(handle, cq);
            cq.onEvent(this::scheduleDrain);
            cq.requestNotify(false);
            return VerbsEvent.newBuilder().setId(id).setCq(handle).build();
        }

        private VerbsEvent accept(long id, int qpNum, int port, byte[] privateData) {
            QueuePair qp = qp(qpNum);
            RdmaCm cm = node.rdma().cm();
            cm.listen(port, request -> {
                cm.unlisten(port);
                ports.remove(port);
                if (closed || qps.get(qpNum) != qp) {
                    request.reject(new byte[0]);
                    return;
                }
                request.accept(qp, privateData).onComplete(ar -> answer(connected(id, ar)));
            });
            ports.add(port);
            return null;
        }

        private VerbsEvent connected(long id, io.vertx.core.AsyncResult<RdmaCm.Connection> ar) {
            if (ar.failed()) {
                return failed(id, ar.cause().getMessage());
            }
            RdmaCm.Connection c = ar.result();
            return VerbsEvent.newBuilder().setId(id).setConnected(Connected.newBuilder().setQpNum(c.qp().qpNum())
                    .setPeerNode(c.peerNode()).setPeerQpNum(c.peerQpn()).setPrivateData(ByteString.copyFrom(c.privateData()))
                .setPeerIp(dev.nupa.ip.wire.Ipv4Address.toString(c.peerIp()))).build();
        }

        private VerbsEvent destroy(long id, dev.nupa.node.verbs.Destroy d) {
            switch (d.getWhatCase()) {
                case QP_NUM -> {
                    QueuePair qp = qp(d.getQpNum());
                    node.rdma().cm().release(qp);
                    qp.close();
                    qps.remove(d.getQpNum());
                }
                case CQ -> {
                    CompletionQueue cq = cq(d.getCq());
                    cq.close(); // throws while a QP uses it
                    cqs.remove(d.getCq());
                }
                case LKEY -> {
                    MemoryRegion mr = region(d.getLkey());
                    mr.close();
                    regions.remove(d.getLkey());
                    memory -= mr.length();
                    nodeMemory.addAndGet(-mr.length());
                    arenas.remove(d.getLkey()).close();
                }
                case WHAT_NOT_SET -> throw new IllegalArgumentException("Destroy names a qp_num, a cq or an lkey");
            }
            return done(id);
        }

        private void gather(ScatterGather sg, List<Sge> list) {
            if (list.size() > MAX_SGE) {
                throw new IllegalArgumentException(list.size() + " scatter/gather entries exceed the " + MAX_SGE + " a request takes here");
            }
            sg.clear();
            for (Sge e : list) {
                range(e.getLkey(), e.getOffset(), e.getLength());
                sg.add(regions.get(e.getLkey()), e.getOffset(), e.getLength());
            }
        }

        /** The bytes [offset, offset + length) of the session's region {@code lkey}, checked. */
        private MemorySegment range(int lkey, long offset, int length) {
            MemoryRegion mr = region(lkey);
            long len = Integer.toUnsignedLong(length);
            if (offset < 0 || offset > mr.length() || len > mr.length() - offset) {
                throw new IllegalArgumentException("bytes " + Long.toUnsignedString(offset) + ".." + Long.toUnsignedString(offset + len)
                        + " lie outside region " + Integer.toUnsignedString(lkey) + " of " + mr.length() + " bytes");
            }
            return mr.memory().asSlice(offset, len);
        }

        private MemoryRegion region(int lkey) {
            MemoryRegion mr = regions.get(lkey);
            if (mr == null) {
                throw new IllegalArgumentException("no region with lkey " + Integer.toUnsignedString(lkey)
                        + " in this session; use the lkey its RegMr answered");
            }
            return mr;
        }

        private CompletionQueue cq(int handle) {
            CompletionQueue cq = cqs.get(handle);
            if (cq == null) {
                throw new IllegalArgumentException("no completion queue " + handle + " in this session; use the handle its CreateCq answered");
            }
            return cq;
        }

        private QueuePair qp(int qpNum) {
            QueuePair qp = qps.get(qpNum);
            if (qp == null) {
                throw new IllegalArgumentException("no queue pair " + qpNum + " in this session; use the qp_num its CreateQp answered");
            }
            return qp;
        }

        private void scheduleDrain() {
            if (!drainScheduled && !closed) {
                drainScheduled = true;
                nodeContext.runOnContext(v -> drain());
            }
        }

        private void drain() {
            drainScheduled = false;
            if (closed || held) {
                return;
            }
            List<VerbsEvent> out = new ArrayList<>();
            for (Map.Entry<Integer, CompletionQueue> e : cqs.entrySet()) {
                CompletionQueue cq = e.getValue();
                cq.requestNotify(false); // before polling: a completion pushed after the last poll raises the event again
                while (out.size() < DRAIN_BATCH && cq.poll(wc)) {
                    out.add(completion(e.getKey(), wc));
                    if (!posted.isEmpty() && wc.opcode < WcOpcode.RECV) {
                        completed(wc);
                    }
                }
            }
            if (out.size() == DRAIN_BATCH) {
                scheduleDrain();
            }
            if (!out.isEmpty()) {
                endpoint.runOnContext(v -> out.forEach(this::write));
            }
        }

        private static VerbsEvent completion(int cq, WorkCompletion wc) {
            return VerbsEvent.newBuilder().setCompletion(dev.nupa.node.verbs.WorkCompletion.newBuilder()
                    .setCq(cq).setWrId(wc.wrId).setStatus(wc.status).setStatusName(WcStatus.name(wc.status)).setOpcode(wc.opcode)
                    .setByteLen(wc.byteLen).setImmData(wc.immData).setWithImm((wc.wcFlags & WorkCompletion.WITH_IMM) != 0)
                    .setQpNum(wc.qpNum).setSrcQp(wc.srcQp)).build();
        }

        /** Disconnects and destroys everything the session holds; each step on its own, so one failure leaks nothing else. */
        private void release() {
            if (closed) {
                return;
            }
            closed = true;
            RdmaCm cm = node.rdma().cm();
            for (int port : ports) {
                cm.unlisten(port);
            }
            for (QueuePair qp : qps.values()) {
                quietly(() -> cm.release(qp));
                quietly(qp::close);
            }
            for (CompletionQueue cq : cqs.values()) {
                quietly(cq::close);
            }
            for (MemoryRegion mr : regions.values()) {
                quietly(mr::close);
            }
            for (Arena a : arenas.values()) {
                quietly(a::close);
            }
            nodeMemory.addAndGet(-memory);
            memory = 0;
            if (pd != null) {
                quietly(pd::close);
            }
            for (Span s : posted.values()) {
                s.setStatus(StatusCode.ERROR, "the session ended before the completion");
                s.end();
            }
            posted.clear();
            ports.clear();
            qps.clear();
            cqs.clear();
            regions.clear();
            arenas.clear();
        }

        private static void quietly(Runnable r) {
            try {
                r.run();
            } catch (RuntimeException e) {
                // the node is shutting this session down either way; the rest is still released
            }
        }
    }
}
