package dev.nupa.tcp;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Test support in the manner of packetdrill: segments as values, a connection whose output is
 * recorded, and helpers to inject segments at a virtual time and check exactly what came out.
 */
final class Wire {
    static final int LOCAL = 0x0A000001;
    static final int REMOTE = 0x0A000002;
    static final long MS = 1_000_000L;

    /** A copy of a segment: header fields, options and payload bytes. */
    record Seg(int flags, int seq, int ack, int window, int mss, int wscale, boolean sackOk, boolean ts, int tsVal,
               int tsEcr, int[] sackLeft, int[] sackRight, byte[] data) {
        static Seg of(Segment s) {
            byte[] d = new byte[s.payloadLength];
            if (s.payloadLength > 0) {
                MemorySegment.copy(s.payload, ValueLayout.JAVA_BYTE, s.payloadOffset, d, 0, s.payloadLength);
            }
            return new Seg(s.flags, s.seq, s.ack, s.window, s.mss, s.windowScale, s.sackPermitted, s.timestamps, s.tsVal,
                    s.tsEcr, java.util.Arrays.copyOf(s.sackLeft, s.sackBlocks), java.util.Arrays.copyOf(s.sackRight, s.sackBlocks), d);
        }

        boolean has(int flag) {
            return (flags & flag) != 0;
        }

        /** Loads this segment into {@code s} for injection. */
        Segment into(Segment s) {
            s.clear();
            s.flags = flags;
            s.seq = seq;
            s.ack = ack;
            s.window = window;
            s.mss = mss;
            s.windowScale = wscale;
            s.sackPermitted = sackOk;
            s.timestamps = ts;
            s.tsVal = tsVal;
            s.tsEcr = tsEcr;
            s.sackBlocks = sackLeft.length;
            System.arraycopy(sackLeft, 0, s.sackLeft, 0, sackLeft.length);
            System.arraycopy(sackRight, 0, s.sackRight, 0, sackRight.length);
            s.payload = MemorySegment.ofArray(data);
            s.payloadOffset = 0;
            s.payloadLength = data.length;
            return s;
        }

        int length() {
            return data.length + (has(Segment.SYN) ? 1 : 0) + (has(Segment.FIN) ? 1 : 0);
        }

        @Override
        public String toString() {
            return into(new Segment()).toString();
        }
    }

    /** Builds segments to inject. */
    static Seg seg(int flags, int seq, int ack, int window, byte[] data) {
        return new Seg(flags, seq, ack, window, -1, -1, false, false, 0, 0, new int[0], new int[0], data);
    }

    static Seg seg(int flags, int seq, int ack, int window) {
        return seg(flags, seq, ack, window, new byte[0]);
    }

    static Seg syn(int seq, int mss, int wscale, boolean sackOk, boolean ts, int tsVal) {
        return new Seg(Segment.SYN, seq, 0, 65_535, mss, wscale, sackOk, ts, tsVal, 0, new int[0], new int[0], new byte[0]);
    }

    static Seg withSack(Seg s, int... edges) {
        int n = edges.length / 2;
        int[] l = new int[n];
        int[] r = new int[n];
        for (int i = 0; i < n; i++) {
            l[i] = edges[2 * i];
            r[i] = edges[2 * i + 1];
        }
        return new Seg(s.flags, s.seq, s.ack, s.window, s.mss, s.wscale, s.sackOk, s.ts, s.tsVal, s.tsEcr, l, r, s.data);
    }

    static Seg withTs(Seg s, int tsVal, int tsEcr) {
        return new Seg(s.flags, s.seq, s.ack, s.window, s.mss, s.wscale, s.sackOk, true, tsVal, tsEcr, s.sackLeft,
                s.sackRight, s.data);
    }

    static byte[] bytes(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (i * 31 + seed);
        }
        return b;
    }

    /** One connection, its output recorded, driven on virtual time. */
    static final class One implements TcpConnection.Events {
        final List<Seg> out = new ArrayList<>();
        final TcpConnection c;
        final Segment in = new Segment();
        long now = 1_000 * MS;
        long deadline = Long.MAX_VALUE;
        TcpError closedWith;
        boolean closed;
        boolean established;
        boolean peerClosed;
        /** Runs as the connection reports it established, from within the input that did it (as a channel's connect). */
        Runnable whenEstablished = () -> { };

        One(TcpConfig config) {
            c = new TcpConnection(LOCAL, 1000, REMOTE, 2000, config, (conn, s) -> out.add(Seg.of(s)), this);
        }

        /** Takes what was sent since the last call. */
        List<Seg> sent() {
            List<Seg> l = new ArrayList<>(out);
            out.clear();
            return l;
        }

        Seg onlySent() {
            List<Seg> l = sent();
            if (l.size() != 1) {
                throw new AssertionError("expected one segment, got " + l);
            }
            return l.get(0);
        }

        void inject(Seg s) {
            c.onSegment(s.into(in), now);
            deadline = c.poll(now);
        }

        /** Moves time to {@code t} (running timers on the way at each deadline). */
        void advanceTo(long t) {
            while (deadline <= t) {
                now = Math.max(now, deadline);
                deadline = c.poll(now);
            }
            now = t;
            deadline = c.poll(now);
        }

        void advance(long ns) {
            advanceTo(now + ns);
        }

        int write(byte[] data) {
            int n = c.write(MemorySegment.ofArray(data), 0, data.length, now);
            deadline = c.poll(now);
            return n;
        }

        byte[] read(int max) {
            byte[] b = new byte[max];
            int n = c.read(MemorySegment.ofArray(b), 0, max, now);
            deadline = c.poll(now);
            return java.util.Arrays.copyOf(b, n);
        }

        @Override
        public void onEstablished(TcpConnection c) {
            established = true;
            whenEstablished.run();
        }

        @Override
        public void onPeerClosed(TcpConnection c) {
            peerClosed = true;
        }

        @Override
        public void onClosed(TcpConnection c, TcpError error) {
            closed = true;
            closedWith = error;
        }
    }
}
