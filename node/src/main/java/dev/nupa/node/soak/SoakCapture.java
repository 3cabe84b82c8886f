package dev.nupa.node.soak;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import dev.nupa.perf.Children;

/**
 * Live capture in a soak: rounds of `nupa capture --grpc` from the node that serves gRPC, writing pcap to standard
 * output, read here. Every record must be well formed, and every captured UDP echo datagram of the soak must carry
 * the bytes {@link SoakUdp#fill} puts there. A round may break only when its node was killed meanwhile.
 */
final class SoakCapture implements Runnable {
    private static final int DURATION_S = 5;

    final AtomicLong frames = new AtomicLong();
    final AtomicLong bytesChecked = new AtomicLong();
    final AtomicLong broken = new AtomicLong();
    private final SoakChild node;
    private final int port;
    private final SoakFailures failures;
    private volatile boolean stopping;
    private long refusedSince;

    SoakCapture(SoakChild node, int port, SoakFailures failures) {
        this.node = node;
        this.port = port;
        this.failures = failures;
    }

    void stop() {
        stopping = true;
    }

    @Override
    public void run() {
        while (!stopping) {
            try {
                if (!node.up) {
                    Thread.sleep(100);
                    continue;
                }
                round();
            } catch (Exception e) {
                failures.add("capture: " + e);
                return;
            }
        }
    }

    private void round() throws Exception {
        int generation = node.generation;
        Process p = new ProcessBuilder(Children.javaCommand(SoakChild.JVM, List.of("capture", "--grpc", "127.0.0.1:" + node.grpcPort,
                "--protocol", "udp", "--filter-port", String.valueOf(port), "-w", "-", "--duration", String.valueOf(DURATION_S))))
                .start();
        StringBuilder errors = new StringBuilder();
        Thread errReader = Thread.ofPlatform().daemon().start(() -> {
            try {
                errors.append(new String(p.getErrorStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
            } catch (IOException e) {
                // gone
            }
        });
        String problem;
        try {
            problem = read(p.getInputStream());
        } finally {
            p.getInputStream().close();
        }
        int status = Children.waitFor(p, 30);
        errReader.join(5000);
        String said = errors.toString().strip().replace('\n', ' ');
        if (status != 0 && said.contains("already running") && node.generation == generation) {
            // The node ends the last capture when it sees its stream go, which may come a moment after the client
            // left: try again, but a capture that stays behind for 10 s is a leak.
            long now = System.nanoTime();
            if (refusedSince == 0) {
                refusedSince = now;
            } else if (now - refusedSince > 10_000_000_000L) {
                failures.add("capture: the node kept a finished live capture running for 10 s: " + said);
                refusedSince = now; // counted again if it stays another 10 s
            }
            Thread.sleep(200);
            return;
        }
        refusedSince = 0;
        if (problem == null && status != 0) {
            problem = "nupa capture exited " + status;
        }
        if (problem != null) {
            problem += " (" + said + ")";
            if (node.generation != generation) {
                broken.incrementAndGet(); // its node was killed under it
            } else if (!stopping) {
                failures.add("capture: " + problem);
            }
        }
    }

    /** Reads a pcap stream to its end; null when all of it was well formed, else what was wrong. */
    private String read(InputStream in) throws IOException {
        DataInputStream d = new DataInputStream(in);
        byte[] header = new byte[24];
        try {
            d.readFully(header);
        } catch (EOFException e) {
            return "the pcap stream ended before its header";
        }
        ByteBuffer h = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
        if (h.getInt(0) != 0xa1b23c4d || h.getInt(20) != 1) {
            return "not a nanosecond Ethernet pcap stream: magic " + Integer.toHexString(h.getInt(0));
        }
        byte[] rec = new byte[16];
        while (true) {
            try {
                d.readFully(rec, 0, 1);
            } catch (EOFException e) {
                return null; // a clean end between records
            }
            try {
                d.readFully(rec, 1, 15);
                ByteBuffer r = ByteBuffer.wrap(rec).order(ByteOrder.LITTLE_ENDIAN);
                int included = r.getInt(8);
                int original = r.getInt(12);
                if (included < 0 || included > original || included > 262_144) {
                    return "a record of " + included + " bytes of " + original;
                }
                byte[] frame = new byte[included];
                d.readFully(frame);
                String bad = check(ByteBuffer.wrap(frame));
                if (bad != null) {
                    return bad;
                }
                frames.incrementAndGet();
            } catch (EOFException e) {
                return "the pcap stream ended inside a record";
            }
        }
    }

    /** Checks a captured frame's UDP payload, where it is the soak's echo traffic. */
    private String check(ByteBuffer f) {
        if (f.limit() < 14 + 20 + 8 || f.getShort(12) != 0x0800) {
            return null; // not IPv4 over Ethernet: the filter's business, not the soak's
        }
        int ihl = (f.get(14) & 0x0F) * 4;
        int udp = 14 + ihl;
        if (f.get(23) != 17 || f.limit() < udp + 8) {
            return null;
        }
        int src = f.getShort(udp) & 0xFFFF;
        int dst = f.getShort(udp + 2) & 0xFFFF;
        int length = (f.getShort(udp + 4) & 0xFFFF) - 8;
        int payload = udp + 8;
        if ((src != port && dst != port) || length < 8 || f.limit() < payload + 8) {
            return null;
        }
        long seq = f.getLong(payload);
        int end = Math.min(f.limit(), payload + length); // a record may be cut short
        for (int i = 8; payload + i < end; i++) {
            if (f.get(payload + i) != (byte) (seq * 31 + i * 17)) {
                return "captured datagram " + seq + " differs at byte " + i;
            }
        }
        bytesChecked.addAndGet(end - payload);
        return null;
    }
}
