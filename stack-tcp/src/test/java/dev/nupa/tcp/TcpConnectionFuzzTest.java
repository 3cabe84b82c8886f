package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;

import dev.nupa.tcp.Wire.One;
import dev.nupa.tcp.Wire.Seg;
import dev.nupa.tcp.wire.Seq;

/**
 * The connection core against arbitrary segment sequences: whatever arrives,
 * in whatever state, nothing escapes and the invariants hold. Input: one byte picks the start
 * (active open, established, passive open), then 16-byte records, each one segment (flags, offsets
 * of seq/ack near the interesting edges or anywhere, window, options, a payload length) or, when
 * the flag byte says so, a user call (write, read, close, shutdownOutput) or a jump in time.
 */
class TcpConnectionFuzzTest {
    static final int ISS = 1_000;
    static final int IRS = 900_000;

    @FuzzTest(maxDuration = "5m")
    void segments(byte[] input) {
        if (input.length < 1) {
            return;
        }
        TcpConfig cfg = TcpConfig.defaults(1500).withBuffers(4096, 4096).withMaxOutOfOrder(4);
        One o = new One(cfg);
        switch (input[0] & 3) {
            case 0 -> o.c.connect(ISS, o.now);
            case 1 -> o.c.accept(Wire.syn(IRS, 1460, 7, true, true, 5).into(new Segment()), ISS, o.now);
            default -> {
                o.c.connect(ISS, o.now);
                o.inject(new Seg(Segment.SYN | Segment.ACK, IRS, ISS + 1, 4096, 1460, 2, true, true, 7, 1, new int[0],
                        new int[0], new byte[0]));
            }
        }
        for (int at = 1; at + 16 <= input.length; at += 16) {
            int kind = input[at] & 0xFF;
            int flags = input[at + 1] & 0x3F;
            int seq = edge(IRS, o.c.rcvNxt(), input, at + 2);
            int ack = edge(ISS, o.c.sndUna(), input, at + 6);
            int window = ((input[at + 10] & 0xFF) << 8) | (input[at + 11] & 0xFF);
            int len = (input[at + 12] & 0xFF) * 8;
            long dt = (input[at + 13] & 0xFF) * 1_000_000L * (1 + (input[at + 14] & 7));
            try {
                switch (kind % 8) {
                    case 6 -> {
                        if (o.c.writable() > 0 && o.c.state() != TcpState.CLOSED && o.c.state() != TcpState.TIME_WAIT) {
                            tryWrite(o, len + 1);
                        }
                    }
                    case 7 -> {
                        switch (input[at + 15] & 3) {
                            case 0 -> o.c.close(o.now);
                            case 2 -> o.c.shutdownOutput(o.now);
                            default -> o.read(len + 1);
                        }
                    }
                    default -> {
                        Seg s = new Seg(flags, seq, ack, window, (input[at + 15] & 1) != 0 ? 536 + len : -1,
                                (input[at + 15] & 2) != 0 ? input[at + 14] & 0x1F : -1, (input[at + 15] & 4) != 0,
                                (input[at + 15] & 8) != 0, seq ^ ack, ack, new int[0], new int[0], Wire.bytes(len, at));
                        if ((input[at + 15] & 16) != 0) {
                            s = Wire.withSack(s, ack, ack + len, seq, seq + 3 * len);
                        }
                        o.inject(s);
                    }
                }
            } catch (IllegalStateException documented) {
                // write after close and the like: misuse throws, by contract
            }
            o.advance(dt);
            o.sent();
            check(o);
        }
    }

    private static void tryWrite(One o, int n) {
        o.write(Wire.bytes(n, n));
    }

    /** A sequence number near the edge that matters (ISS/IRS, SND.UNA/RCV.NXT) or anywhere. */
    private static int edge(int initial, int current, byte[] in, int at) {
        int v = ((in[at] & 0xFF) << 24) | ((in[at + 1] & 0xFF) << 16) | ((in[at + 2] & 0xFF) << 8) | (in[at + 3] & 0xFF);
        return switch (v & 3) {
            case 0 -> current + (short) (v >>> 8);
            case 1 -> initial + (short) (v >>> 8);
            case 2 -> current + (v >> 2);
            default -> v;
        };
    }

    private static void check(One o) {
        TcpConnection c = o.c;
        assertTrue(Seq.le(c.sndUna(), c.sndNxt()) && Seq.le(c.sndNxt(), c.sndMax()),
                "SND.UNA <= SND.NXT <= SND.MAX: " + c);
        assertTrue(c.readable() >= 0 && c.readable() <= c.config().receiveBuffer(), "receive buffer within bounds: " + c);
        assertTrue(c.unacknowledged() >= 0 && c.unacknowledged() <= c.config().sendBuffer(), "send buffer within bounds: " + c);
        if (c.state() == TcpState.CLOSED) {
            assertTrue(o.closed, "a connection that closed said so: " + c);
        }
    }
}
