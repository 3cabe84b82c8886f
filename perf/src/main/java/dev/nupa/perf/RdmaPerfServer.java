package dev.nupa.perf;

import dev.nupa.roce.verbs.WorkCompletion;

import dev.nupa.roce.verbs.RdmaCounter;

import dev.nupa.roce.verbs.WcStatus;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import dev.nupa.device.FabricWindow;
import dev.nupa.roce.verbs.TransferMode;
import dev.nupa.roce.verbs.WrOpcode;

/** The server side of an {@link RdmaPerf} tool: answers HELLO, echoes WRITEs or SENDs, serves the floor, as the client asks. */
final class RdmaPerfServer extends RdmaPerfEnd {
    private boolean done;
    private byte pendingOp;
    private int pendingSize;
    private long pendingCount;
    private long pendingStart;
    private int pendingSeq;
    private int clientSrc;
    private int clientPort;
    private final MemorySegment helloReply = java.lang.foreign.Arena.ofAuto().allocate(64, 8);
    private int helloReplyLen;

    RdmaPerfServer(RdmaPerf cmd) {
        super(cmd);
    }

    // ---- server ------------------------------------------------------------------------------

    @Override
    int run() {
        try {
            open(true, Math.max(bufferBytes(), 65_536));
            floorWindow = pn.node.exportWindow(4096, FabricWindow.REMOTE_READ | FabricWindow.REMOTE_WRITE);
            pn.ip.bindUdp(RdmaPerf.CONTROL_PORT, this::serverControl);
            System.out.println(PerfRunner.READY);
            System.out.flush();
            while (!done) {
                pump();
                if (qp != null && !done) {
                    drainSends();
                    drainRecvs();
                }
                if (pendingOp != 0) {
                    byte p = pendingOp;
                    pendingOp = 0;
                    runPhase(p);
                }
                progress(); // the server idles as long as the client likes
            }
            return 0;
        } finally {
            close();
        }
    }

    /**
     * A flushed completion once the client's node has left (the QP went to ERR for it, PEER_DOWN_QP_ERRORS) ends the
     * server's run as its BYE would: the client sends BYE and leaves at once, and which of the two the server sees
     * first is a race.
     */
    @Override
    void check(WorkCompletion w) {
        if (w.status == WcStatus.WR_FLUSH_ERR && ctx.counter(RdmaCounter.PEER_DOWN_QP_ERRORS) > 0) {
            done = true;
            return;
        }
        super.check(w);
    }

    private void serverControl(int src, int srcPort, int dst, MemorySegment m, long off, int len) {
        byte c = len > 0 ? m.get(ValueLayout.JAVA_BYTE, off) : 0;
        clientSrc = src;
        clientPort = srcPort;
        if (c == HELLO && len >= 28) {
            if (qp == null) {
                int node = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 4);
                int qpn = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 8);
                int psn = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 12);
                peerRkey = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 16);
                peerAddr = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 20);
                boolean direct = m.get(ValueLayout.JAVA_BYTE, off + 1) == 1;
                createQp(direct ? TransferMode.DIRECT : TransferMode.PACKET);
                int ourPsn = new SplittableRandom().nextInt(1 << 24);
                connect(node, qpn, psn, ourPsn);
                helloReply.set(ValueLayout.JAVA_BYTE, 0, HELLO);
                helloReply.set(ValueLayout.JAVA_INT_UNALIGNED, 4, qp.qpNum());
                helloReply.set(ValueLayout.JAVA_INT_UNALIGNED, 8, ourPsn);
                helloReply.set(ValueLayout.JAVA_INT_UNALIGNED, 12, mr.rkey());
                helloReply.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, mr.addr());
                helloReply.set(ValueLayout.JAVA_LONG_UNALIGNED, 24, half);
                helloReply.set(ValueLayout.JAVA_INT_UNALIGNED, 32, floorWindow.id());
                helloReply.set(ValueLayout.JAVA_INT_UNALIGNED, 36, floorWindow.key());
                helloReplyLen = 40;
            }
            pn.ip.sendUdp(RdmaPerf.CONTROL_PORT, src, srcPort, helloReply, 0, helloReplyLen); // a repeated HELLO gets the same answer
        } else if (c == BYE) {
            done = true;
        } else if (len >= 28 && c != HELLO) {
            pendingSeq = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 4);
            pendingSize = m.get(ValueLayout.JAVA_INT_UNALIGNED, off + 8);
            pendingCount = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 12);
            pendingStart = m.get(ValueLayout.JAVA_LONG_UNALIGNED, off + 20);
            pendingOp = c;
        }
    }

    private void ack() {
        control.set(ValueLayout.JAVA_BYTE, 0, ACK);
        control.set(ValueLayout.JAVA_INT_UNALIGNED, 4, pendingSeq);
        control.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, received);
        pn.ip.sendUdp(RdmaPerf.CONTROL_PORT, clientSrc, clientPort, control, 0, 16);
    }

    private void runPhase(byte p) {
        int size = pendingSize;
        long count = pendingCount;
        if ((p == WRITE_ECHO || p == SEND_ECHO) && (qp == null || size < 1 || size > half)) {
            throw new IllegalStateException(name + ": the client asked for " + size + "-byte messages; this server's buffer holds "
                    + half + " (start it with the same -s or -a)");
        }
        if (p == WRITE_ECHO) {
            BYTE.setRelease(mem, (long) size - 1, (byte) 0);
        }
        ack();
        switch (p) {
            case FLOOR -> FloorLine.echo(floorWindow.memory(), pendingStart, count);
            case WRITE_ECHO -> writeEcho(size, count);
            case SEND_ECHO -> sendEcho(size, count);
            default -> { // SYNC: the ack carried the receive count
            }
        }
    }

    private void writeEcho(int size, long count) {
        swr.opcode(WrOpcode.RDMA_WRITE).local(mr, half, size).remote(peerAddr, peerRkey);
        for (long i = 0; i < count; i++) {
            echoRound(size);
            drainSends();
            progress();
        }
    }

    /** One echo of write-lat's server (a method of its own, as {@link #writeRound}). */
    private void echoRound(int size) {
        byte v = nextRolling(rolling);
        awaitLast(size, v);
        rolling = v & 0xFF;
        mem.set(ValueLayout.JAVA_BYTE, half + size - 1, v);
        swr.sendFlags(latFlags(size));
        qp.postSend(swr);
    }

    private void sendEcho(int size, long count) {
        swr.opcode(WrOpcode.SEND).local(mr, half, size);
        for (long i = 0; i < count; i++) {
            sendEchoRound(size);
            drainSends();
            progress();
        }
    }

    /** One echo of send-lat's server (a method of its own, as {@link #writeRound}). */
    private void sendEchoRound(int size) {
        for (int looks = 1; drainRecvs() == 0; looks++) {
            look(looks);
        }
        swr.sendFlags(latFlags(size));
        qp.postSend(swr);
    }

}
