package dev.nupa.perf;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import dev.nupa.device.FabricLayout;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * `nupa perf write-lat | write-bw | send-lat | send-bw | read-lat | read-bw | atomic-lat`: perftest's
 * ib_*_lat / ib_*_bw over one RC queue pair between two processes on the fabric, each side driving its
 * link and verbs context in line on its own thread (no datapath thread).
 *
 * <p><b>Out-of-band exchange</b> (perftest's manual path, over UDP rather than TCP): the client creates
 * its QP and sends a HELLO datagram to the server's control port 9 through the IPv4 stack on the same
 * link, carrying its fabric node, QP number, start PSN, rkey, buffer address, and the transfer mode. The
 * server then creates its QP in that mode, takes it to RTS against the client, and answers with its own
 * QP number, start PSN, rkey, buffer address and size, and the fabric window of the cache-line floor; the
 * client then takes its QP to RTS. HELLO is resent every 10 ms until answered (the server may not be up
 * yet). Later datagrams on the same port sequence the phases (floor rounds, echo rounds, counts), each
 * acknowledged by the server before the client starts it.
 *
 * <p><b>Buffers.</b> Each side registers one window-backed region of two halves: the first is the
 * target peers write into, read from and add to; the second is the source of its own writes and sends.
 *
 * <p><b>Semantics</b> as perftest: write-lat bounces RDMA WRITEs, each side polling the last byte of its
 * target (a rolling value 1..255) and writing back, half round trip reported; send-lat bounces SENDs into
 * pre-posted receives; read-lat and atomic-lat time each READ (FETCH_AND_ADD) to its completion, whole.
 * The bandwidth tools keep {@code --tx-depth} operations outstanding, signalled every {@code --cq-mod}.
 * Latency tools print the cache-line floor (FloorLine) measured in the same run and the p50 ratio;
 * bandwidth tools print single-thread MemorySegment.copy of the same size and the ratio.
 */
abstract class RdmaPerf implements Callable<Integer> {
    enum Op { WRITE, SEND, READ, ATOMIC }

    @Command(name = "write-lat", mixinStandardHelpOptions = true,
            description = "RDMA WRITE ping-pong latency (half round trip, as ib_write_lat), with the one-way cache-line floor and the ratio.")
    static final class WriteLat extends RdmaPerf {
        WriteLat() {
            super("write-lat", Op.WRITE, false);
        }
    }

    @Command(name = "write-bw", mixinStandardHelpOptions = true,
            description = "RDMA WRITE bandwidth (as ib_write_bw), with single-thread MemorySegment.copy of the same size and the ratio.")
    static final class WriteBw extends RdmaPerf {
        WriteBw() {
            super("write-bw", Op.WRITE, true);
        }
    }

    @Command(name = "send-lat", mixinStandardHelpOptions = true,
            description = "SEND ping-pong latency into pre-posted receives (half round trip, as ib_send_lat), with the floor and the ratio.")
    static final class SendLat extends RdmaPerf {
        SendLat() {
            super("send-lat", Op.SEND, false);
        }
    }

    @Command(name = "send-bw", mixinStandardHelpOptions = true,
            description = "SEND bandwidth into pre-posted receives (as ib_send_bw), with MemorySegment.copy and the ratio.")
    static final class SendBw extends RdmaPerf {
        SendBw() {
            super("send-bw", Op.SEND, true);
        }
    }

    @Command(name = "read-lat", mixinStandardHelpOptions = true,
            description = "RDMA READ latency, each read to its completion (as ib_read_lat), with the round-trip cache-line floor.")
    static final class ReadLat extends RdmaPerf {
        ReadLat() {
            super("read-lat", Op.READ, false);
        }
    }

    @Command(name = "read-bw", mixinStandardHelpOptions = true,
            description = "RDMA READ bandwidth (as ib_read_bw), with MemorySegment.copy of the same size and the ratio.")
    static final class ReadBw extends RdmaPerf {
        ReadBw() {
            super("read-bw", Op.READ, true);
        }
    }

    @Command(name = "atomic-lat", mixinStandardHelpOptions = true,
            description = "FETCH_AND_ADD latency, each to its completion (as ib_atomic_lat), with the round-trip cache-line floor.")
    static final class AtomicLat extends RdmaPerf {
        AtomicLat() {
            super("atomic-lat", Op.ATOMIC, false);
        }
    }

    static final int CONTROL_PORT = 9;
    static final int MAX_SIZE = 8 << 20;
    static final int MAX_INLINE = 256;

    @Mixin
    PerfOptions o;

    @Option(names = {"-a", "--all"}, description = "Every size from 2 to 8388608 bytes in powers of two (one row each).")
    boolean all;

    @Option(names = "--mode", paramLabel = "packet|direct", defaultValue = "direct",
            description = "How operations move: direct placement in the peer's windows (a SEND into its next "
                    + "posted receive), or packets through its ring (default: ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = {"-t", "--tx-depth"}, paramLabel = "N", defaultValue = "128",
            description = "Bandwidth tools: operations outstanding (default: ${DEFAULT-VALUE}).")
    int txDepth;

    @Option(names = {"-Q", "--cq-mod"}, paramLabel = "N", defaultValue = "64",
            description = "Bandwidth tools: signal one completion every N operations (default: ${DEFAULT-VALUE}).")
    int cqMod;

    @Option(names = "--warmup", paramLabel = "N", defaultValue = "10000",
            description = "Unmeasured operations first, per size (default: ${DEFAULT-VALUE}; at most -n).")
    long warmup;

    final String name;
    final Op op;
    final boolean bw;

    RdmaPerf(String name, Op op, boolean bw) {
        this.name = name;
        this.op = op;
        this.bw = bw;
    }

    // ---- options and the contract ------------------------------------------------------------

    @Override
    public Integer call() throws Exception {
        o.validate(1, MAX_SIZE);
        if (!mode.equals("packet") && !mode.equals("direct")) {
            throw new IllegalArgumentException("--mode must be packet or direct, not " + mode);
        }
        if (op == Op.ATOMIC && ((o.size != null && o.size != 8) || all)) {
            throw new IllegalArgumentException(name + " moves 8 bytes: -s must be 8 and -a does not apply");
        }
        if (all && o.size != null) {
            throw new IllegalArgumentException("-a and -s are exclusive: -a runs every size");
        }
        if (txDepth < 1 || txDepth > 8192) {
            throw new IllegalArgumentException("--tx-depth must be 1..8192, not " + txDepth);
        }
        if (cqMod < 1) {
            throw new IllegalArgumentException("--cq-mod must be at least 1");
        }
        if (warmup < 0) {
            throw new IllegalArgumentException("--warmup must not be negative");
        }
        if (bw) {
            o.tracesNothing(name);
        }
        if (o.server) {
            return new RdmaPerfServer(this).run();
        }
        if (o.client) {
            return new RdmaPerfClient(this).run();
        }
        long buffer = bufferBytes();
        long windows = roundUp(4 * buffer + (2L << 20), FabricLayout.PAGE);
        List<String> extra = new ArrayList<>(List.of("--mode", mode, "--tx-depth", Integer.toString(txDepth),
                "--cq-mod", Integer.toString(cqMod), "--warmup", Long.toString(warmup)));
        if (all) {
            extra.add("--all");
        }
        return PerfRunner.runBoth(o, name, o.freshGeometry(9216, 256).withWindows(64, windows), extra);
    }

    int defaultSize() {
        return op == Op.ATOMIC ? 8 : bw ? 65_536 : 2;
    }

    long defaultIterations() {
        return all ? 1_000 : bw ? 5_000 : 100_000;
    }

    /** Bytes of each half of a side's region: the largest message this run moves (at least 64 KiB on a server). */
    long bufferBytes() {
        return all ? MAX_SIZE : o.size != null ? o.size : defaultSize();
    }

    int[] sizes(long cap) {
        if (!all) {
            return new int[] {o.size != null ? o.size : defaultSize()};
        }
        List<Integer> s = new ArrayList<>();
        for (long b = 2; b <= Math.min(MAX_SIZE, cap); b <<= 1) {
            s.add((int) b);
        }
        return s.stream().mapToInt(Integer::intValue).toArray();
    }

    static long roundUp(long v, long to) {
        return (v + to - 1) / to * to;
    }

}
