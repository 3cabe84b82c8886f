package dev.nupa.bench;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The CPU cost of the IP stack: one UDP echo between two stacks in this thread. One op = A sends a
 * datagram to B, B's poll receives it and echoes it in place from its handler, A's poll receives the
 * echo ({@link UdpEchoCore}): four passes through the stack and two through a ring, on one core (no cross-core transfer).
 * Run with {@code -prof gc}: gc.alloc.rate.norm should be ~0.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
@State(Scope.Thread)
public class UdpEchoBench {
    @Param({"64", "1472", "20000"})
    int size;

    @Param({"true", "false"})
    boolean checksums;

    private UdpEchoCore core;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        core = new UdpEchoCore(checksums, size);
    }

    @Benchmark
    public long echo() {
        return core.echo();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        core.close();
    }
}
