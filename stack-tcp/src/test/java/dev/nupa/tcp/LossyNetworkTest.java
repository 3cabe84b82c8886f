package dev.nupa.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;

import dev.nupa.tcp.Wire.Seg;
import dev.nupa.tcp.wire.Seq;

/**
 * Two connections across a seeded simulated network with loss, duplication, reordering and delay,
 * on virtual time: a bulk transfer arrives complete, in order and
 * checksum-equal, and the goodput per loss rate is compared with the committed snapshot
 * {@code stack-tcp/src/test/resources/tcp-goodput-256MiB.txt} (deterministic: same seed, same virtual time).
 * 256 MiB is the size (a few seconds); {@code -Dnupa.tcp.transferMiB=N} runs another, against
 * {@code tcp-goodput-NMiB.txt}; {@code -Dnupa.updateSnapshots=true} rewrites the snapshot.
 */
class LossyNetworkTest {
    static final long US = 1_000L;

    /** A one-way link: 10 Gbit/s, 20 us of propagation delay, and the given faults. */
    static final class Link {
        final double loss;
        final double duplicate;
        final double reorder;
        final SplittableRandom random;
        long busyUntil;
        long delivered;
        long dropped;

        Link(double loss, double duplicate, double reorder, long seed) {
            this.loss = loss;
            this.duplicate = duplicate;
            this.reorder = reorder;
            this.random = new SplittableRandom(seed);
        }

        /** When a segment sent at {@code now} arrives, or -1 if it is lost. */
        long arrival(long now, int bytes) {
            if (random.nextDouble() < loss) {
                dropped++;
                return -1;
            }
            long serialization = (bytes + 40) * 8L / 10; // ns at 10 Gbit/s
            busyUntil = Math.max(busyUntil, now) + serialization;
            long at = busyUntil + 20 * US;
            if (random.nextDouble() < reorder) {
                at += 50 * US + random.nextLong(200 * US); // held back: later segments overtake it
            }
            delivered++;
            return at;
        }
    }

    record Event(long at, long order, boolean toB, Seg seg) {
    }

    /** The result of one transfer. */
    record Result(double lossRate, long bytes, long virtualNs, long retransmits, long timeouts, boolean intact) {
        double goodputGbit() {
            return bytes * 8.0 / virtualNs;
        }
    }

    static Result transfer(long bytes, double loss, double dup, double reorder, long seed) {
        PriorityQueue<Event> wire = new PriorityQueue<>((x, y) -> x.at != y.at ? Long.compare(x.at, y.at)
                : Long.compare(x.order, y.order));
        long[] order = {0};
        long[] now = {1_000_000_000L};
        Link ab = new Link(loss, dup, reorder, seed);
        Link ba = new Link(loss, dup, reorder, seed * 31 + 7);
        TcpConfig cfg = TcpConfig.defaults(9000).withBuffers(1 << 20, 1 << 20).withRto(1_000_000L, 60_000_000_000L);
        TcpConnection[] ends = new TcpConnection[2];
        TcpConnection.Output outA = (c, s) -> send(wire, order, now[0], ab, true, s);
        TcpConnection.Output outB = (c, s) -> send(wire, order, now[0], ba, false, s);
        ends[0] = new TcpConnection(Wire.LOCAL, 1000, Wire.REMOTE, 2000, cfg, outA, null);
        ends[1] = new TcpConnection(Wire.REMOTE, 2000, Wire.LOCAL, 1000, cfg, outB, null);
        CRC32C sentCrc = new CRC32C();
        CRC32C gotCrc = new CRC32C();
        SplittableRandom data = new SplittableRandom(seed ^ 0x5EED);
        byte[] chunk = new byte[64 * 1024];
        byte[] sink = new byte[256 * 1024];
        long written = 0;
        long received = 0;
        long start = now[0];
        Segment in = new Segment();
        ends[0].connect(11, now[0]);
        boolean listening = true;
        long[] deadline = {Long.MAX_VALUE, Long.MAX_VALUE};
        int pending = 0;
        int pendingOff = 0;
        while (received < bytes) {
            // the application: keep A's send buffer full, drain B's receive buffer
            if (ends[0].state() == TcpState.ESTABLISHED || ends[0].state() == TcpState.CLOSE_WAIT) {
                while (written < bytes) {
                    if (pending == 0) {
                        int n = (int) Math.min(chunk.length, bytes - written);
                        for (int i = 0; i < n; i += 8) {
                            long r = data.nextLong();
                            for (int k = 0; k < 8 && i + k < n; k++) {
                                chunk[i + k] = (byte) (r >>> (8 * k));
                            }
                        }
                        sentCrc.update(chunk, 0, n);
                        pending = n;
                        pendingOff = 0;
                    }
                    int w = ends[0].write(MemorySegment.ofArray(chunk), pendingOff, pending, now[0]);
                    if (w == 0) {
                        break;
                    }
                    pending -= w;
                    pendingOff += w;
                    written += w;
                }
            }
            int r;
            while ((r = ends[1].read(MemorySegment.ofArray(sink), 0, sink.length, now[0])) > 0) {
                gotCrc.update(sink, 0, r);
                received += r;
            }
            deadline[0] = ends[0].poll(now[0]);
            deadline[1] = ends[1].poll(now[0]);
            long next = Math.min(Math.min(deadline[0], deadline[1]), wire.isEmpty() ? Long.MAX_VALUE : wire.peek().at);
            if (next == Long.MAX_VALUE) {
                throw new AssertionError("transfer stalled at " + received + " of " + bytes + " bytes: " + ends[0] + " " + ends[0].error() + " "
                        + ends[1]);
            }
            if (now[0] - start > 3_600_000_000_000L) {
                throw new AssertionError("transfer took over an hour of virtual time: " + received + " bytes");
            }
            now[0] = Math.max(now[0], next);
            while (!wire.isEmpty() && wire.peek().at <= now[0]) {
                Event e = wire.poll();
                TcpConnection to = e.toB ? ends[1] : ends[0];
                if (e.toB && listening && e.seg.has(Segment.SYN) && !e.seg.has(Segment.ACK)) {
                    listening = false;
                    to.accept(e.seg.into(in), 22, now[0]);
                } else {
                    to.onSegment(e.seg.into(in), now[0]);
                }
                if (Seq.gt(ends[1].rcvNxt(), ends[0].sndMax())) { // the receiver never gets ahead of what was sent
                    throw new AssertionError("B is ahead of A after " + e.seg + ": " + ends[0] + " " + ends[1]);
                }
            }
        }
        boolean intact = sentCrc.getValue() == gotCrc.getValue() && received == bytes;
        return new Result(loss, bytes, now[0] - start, ends[0].retransmits(), ends[0].timeouts(), intact);
    }

    private static boolean send(PriorityQueue<Event> wire, long[] order, long now, Link link, boolean toB, Segment s) {
        Seg copy = Seg.of(s);
        long at = link.arrival(now, s.payloadLength);
        if (at >= 0) {
            wire.add(new Event(at, order[0]++, toB, copy));
            if (link.random.nextDouble() < link.duplicate) {
                wire.add(new Event(at + 5 * US, order[0]++, toB, copy));
            }
        }
        return true; // the simulated link never refuses: it drops
    }

    @Test
    void bulkTransfersUnderLossReorderingAndDuplicationArriveCompleteAndChecksumEqual() throws IOException {
        long mib = Long.getLong("nupa.tcp.transferMiB", 256);
        List<Result> results = new ArrayList<>();
        for (double loss : new double[] {0.0, 0.01, 0.05}) {
            Result r = transfer(mib << 20, loss, loss == 0 ? 0 : 0.01, loss == 0 ? 0 : 0.02, 42);
            assertTrue(r.intact(), "transfer at " + loss + " loss arrived changed or short");
            if (loss > 0) {
                assertTrue(r.retransmits() > 0, "loss must cause retransmissions");
            }
            results.add(r);
        }
        StringBuilder table = new StringBuilder();
        table.append("# TCP goodput against loss (LossyNetworkTest, seed 42, ").append(mib).append(" MiB, 10 Gbit/s, 20 us one way,\n");
        table.append("# 1% duplication and 2% reordering with loss; virtual time, so deterministic)\n");
        table.append(String.format(Locale.ROOT, "%-6s %14s %12s %12s %9s%n", "loss", "goodput_Gbit/s", "virtual_ms",
                "retransmits", "timeouts"));
        for (Result r : results) {
            table.append(String.format(Locale.ROOT, "%-6s %14.3f %12.3f %12d %9d%n", (int) (r.lossRate() * 100) + "%",
                    r.goodputGbit(), r.virtualNs() / 1e6, r.retransmits(), r.timeouts()));
        }
        System.out.print(table);
        Path snapshot = Path.of("src/test/resources/tcp-goodput-" + mib + "MiB.txt");
        if (!Files.exists(snapshot) && !Boolean.getBoolean("nupa.updateSnapshots")) {
            throw new AssertionError("no goodput snapshot " + snapshot + " for " + mib
                    + " MiB: run once with -Dnupa.updateSnapshots=true, check the table, and commit it");
        }
        if (Boolean.getBoolean("nupa.updateSnapshots")) {
            Files.createDirectories(snapshot.getParent());
            Files.writeString(snapshot, table.toString(), StandardCharsets.UTF_8);
        }
        assertEquals(Files.readString(snapshot, StandardCharsets.UTF_8), table.toString(),
                "goodput changed against the snapshot " + snapshot + " (rerun with -Dnupa.updateSnapshots=true if intended)");
    }
}
