package dev.nupa.bench;

import dev.nupa.device.Affinity;
import dev.nupa.device.Fabric;
import dev.nupa.device.FabricDevice;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.FrameHandler;
import dev.nupa.device.ShmFabric;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CyclicBarrier;

/**
 * Where the shm ring's one-way latency goes beyond the message floor: a ping-pong of 64-byte frames between
 * two pinned threads through hand-built rings, each variant adding one step of the ring's protocol
 * (docs/fabric-layout.md, "Rings") to the one before, measured in interleaved turns of {@value #BLOCK} round
 * trips so that a change of vCPU placement weighs on every variant alike (see {@link RdmaVsAeronBench}).
 *
 * <ol>
 *   <li><b>message floor</b>: the frame behind a 16-byte header at one fixed place, published by a release
 *       store of the header word, copied out by the echo (what {@code nupa perf fabric-lat} prints);</li>
 *   <li><b>+ rotation</b>: each frame in the next of 256 slots of 128 bytes, its ctrl word the position + 1;</li>
 *   <li><b>+ head</b>: the consumer also release-stores its head on a line of the ring header;</li>
 *   <li><b>+ claim CAS</b>: the producer claims the position with a CAS on the tail word first;</li>
 *   <li><b>claim ahead</b>: the claim (an atomic add on the tail here) made right after the previous publish
 *       instead, off the critical path, which the real ring cannot do: a claim held while idle blocks every
 *       other producer;</li>
 *   <li><b>ring protocol</b>: + claim CAS, the slot's ctrl read at publish, length and source stored, and
 *       the publish made by a CAS of the ctrl word, as {@code Ring.publish} does;</li>
 *   <li><b>fabric nodes</b>: the real thing, two {@link FabricNode}s of a fresh shm fabric of the default
 *       geometry ({@code offer} and {@code poll}, as {@code nupa perf fabric-lat} uses them).</li>
 * </ol>
 * Printed per variant: the median over turns of its block median against the message floor's block median
 * of the same turn, and the pooled p50 of the half round trip.
 *
 * <p>Run (after {@code mvn -B -q package -pl bench -am -DskipTests}), from the repository root:
 * <pre>
 * $JAVA_HOME/bin/java --enable-native-access=ALL-UNNAMED -cp bench/target/benchmarks.jar \
 *     dev.nupa.bench.RingStepsBench [turns=400] [pin=true|false]
 * </pre>
 */
public final class RingStepsBench {
    static final int BLOCK = 500;
    static final int SIZE = 64;
    static final int SLOTS = 256;
    static final int SLOT = 128;
    static final long RING_HEADER = 256; // tail at 0, head at 64, as the real ring's
    static final long TAIL = 0;
    static final long HEAD = 64;
    static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    /**
     * One variant: its switches and its two rings (ping to the echo, pong back); read-only once made. Each
     * side keeps its positions in a {@link Side} of its own, so no line of the heap is written by both.
     */
    static final class Variant {
        final String name;
        final boolean rotate, head, claim, ahead, protocol;
        final MemorySegment ping;
        final MemorySegment pong;
        final long[] blockMedians;

        Variant(Arena arena, String name, boolean rotate, boolean head, boolean claim, boolean ahead, boolean protocol, int turns) {
            this.name = name;
            this.rotate = rotate;
            this.head = head;
            this.claim = claim;
            this.ahead = ahead;
            this.protocol = protocol;
            this.ping = arena.allocate(RING_HEADER + (long) SLOTS * SLOT, 4096);
            this.pong = arena.allocate(RING_HEADER + (long) SLOTS * SLOT, 4096);
            this.blockMedians = new long[turns];
        }

        long slot(long position) {
            return RING_HEADER + (rotate ? (position & (SLOTS - 1)) * SLOT : 0);
        }

        /** Producer: one frame at {@code position} (unless a claim says otherwise), returns the position used. */
        long send(MemorySegment ring, long position, long aheadClaim, MemorySegment src, long srcOff) {
            long p = position;
            if (ahead) {
                p = aheadClaim;
            } else if (claim || protocol) {
                p = (long) LONG.getVolatile(ring, TAIL);
                if (!LONG.compareAndSet(ring, TAIL, p, p + 1)) {
                    throw new IllegalStateException("single producer lost its claim");
                }
            }
            long s = slot(p);
            MemorySegment.copy(src, srcOff, ring, s + 16, SIZE);
            if (protocol) {
                long before = (long) LONG.getAcquire(ring, s);
                ring.set(ValueLayout.JAVA_INT, s + 8, SIZE);
                ring.set(ValueLayout.JAVA_SHORT, s + 12, (short) 1);
                ring.set(ValueLayout.JAVA_SHORT, s + 14, (short) 1);
                if (!LONG.compareAndSet(ring, s, before, p + 1)) {
                    throw new IllegalStateException("ctrl word moved under its only producer");
                }
            } else {
                LONG.setRelease(ring, s, p + 1);
            }
            return p;
        }

        /** The claim taken ahead for the next frame (the "claim ahead" variant only). */
        long claimNext(MemorySegment ring) {
            return (long) LONG.getAndAdd(ring, TAIL, 1L);
        }

        void await(MemorySegment ring, long position) {
            long s = slot(position);
            while ((long) LONG.getAcquire(ring, s) != position + 1) {
                Thread.onSpinWait();
            }
        }

        void consumed(MemorySegment ring, long position) {
            if (head) {
                LONG.setRelease(ring, HEAD, position + 1);
            }
        }
    }

    /** One thread's state for one variant: the next position, and the claim taken ahead (or -1). */
    static final class Side {
        long position;
        long ahead = -1;
        boolean replied;
        long echoed;
    }

    private static Side[] sides(int n) {
        Side[] s = new Side[n];
        for (int i = 0; i < n; i++) {
            s[i] = new Side();
        }
        return s;
    }

    public static void main(String[] args) throws Exception {
        int turns = 400;
        boolean pin = true;
        for (String a : args) {
            String[] kv = a.split("=", 2);
            if (kv.length != 2 || !(kv[0].equals("turns") || kv[0].equals("pin"))) {
                usage("unknown argument " + a);
            }
            if (kv[0].equals("pin")) {
                pin = Boolean.parseBoolean(kv[1]);
            } else {
                try {
                    turns = Integer.parseInt(kv[1]);
                } catch (NumberFormatException e) {
                    turns = 0;
                }
                if (turns < 10) {
                    usage("turns must be a whole number of at least 10, not " + kv[1]);
                }
            }
        }
        run(turns, pin);
    }

    private static void usage(String problem) {
        System.err.println("ring-steps: " + problem + "; arguments: [turns=N (default 400)] [pin=true|false]");
        System.exit(2);
    }

    private static void run(int n, boolean pin) throws Exception {
        Path path = Path.of("/dev/shm", "nupa-ring-steps-" + ProcessHandle.current().pid());
        try (Arena arena = Arena.ofShared(); Fabric fabric = ShmFabric.create(path, FabricGeometry.defaults().withMaxNodes(2));
             FabricNode a = fabric.attach(0); FabricNode b = fabric.attach(1)) {
            Variant[] vs = {
                new Variant(arena, "message floor", false, false, false, false, false, n),
                new Variant(arena, "+ rotation", true, false, false, false, false, n),
                new Variant(arena, "+ head", true, true, false, false, false, n),
                new Variant(arena, "+ claim CAS", true, true, true, false, false, n),
                new Variant(arena, "claim ahead", true, true, false, true, false, n),
                new Variant(arena, "ring protocol", true, true, true, false, true, n),
            };
            int nodes = vs.length; // the fabric nodes' turn comes after the variants'
            long[] nodeMedians = new long[n];
            MemorySegment frame = arena.allocate(SIZE, 64);
            boolean pinBoth = pin && Runtime.getRuntime().availableProcessors() >= 2;
            CyclicBarrier start = new CyclicBarrier(2);
            int warmTurns = Math.max(20, n / 10);
            // A failed echo would leave the pinger spinning forever: say why and stop the benchmark.
            Thread echo = Thread.ofPlatform().name("ring-steps-echo").uncaughtExceptionHandler((t, e) -> {
                System.err.println("ring-steps: the echo thread failed: " + e);
                Runtime.getRuntime().halt(1);
            }).start(() -> {
                if (pinBoth) {
                    Affinity.pin(1);
                }
                Side[] mine = sides(vs.length + 1);
                await(start);
                for (int t = 0; t < warmTurns + n; t++) {
                    for (int i = 0; i < vs.length; i++) {
                        echoBlock(vs[i], mine[i]);
                    }
                    nodeEchoBlock(b, mine[nodes]);
                }
            });
            if (pinBoth) {
                Affinity.pin(0);
            }
            Side[] mine = sides(vs.length + 1);
            await(start);
            long[] block = new long[BLOCK];
            long[][] pooled = new long[vs.length + 1][n * BLOCK];
            for (int t = 0; t < warmTurns + n; t++) {
                for (int i = 0; i < vs.length; i++) {
                    pingBlock(vs[i], mine[i], frame, block);
                    if (t >= warmTurns) {
                        System.arraycopy(block, 0, pooled[i], (t - warmTurns) * BLOCK, BLOCK);
                        Arrays.sort(block);
                        vs[i].blockMedians[t - warmTurns] = block[BLOCK / 2];
                    }
                }
                nodePingBlock(a, mine[nodes], frame, block);
                if (t >= warmTurns) {
                    System.arraycopy(block, 0, pooled[nodes], (t - warmTurns) * BLOCK, BLOCK);
                    Arrays.sort(block);
                    nodeMedians[t - warmTurns] = block[BLOCK / 2];
                }
            }
            echo.join();
            System.out.printf(Locale.ROOT, "ring steps: 64-byte frames, %d turns of %d round trips, threads %s%n",
                    n, BLOCK, pinBoth ? "pinned to CPUs 0 and 1" : "not pinned");
            System.out.printf(Locale.ROOT, "%-15s %12s %14s%n", "variant", "p50 one-way", "x message floor");
            for (int i = 0; i <= nodes; i++) {
                Arrays.sort(pooled[i]);
                double[] ratios = new double[n];
                for (int t = 0; t < n; t++) {
                    ratios[t] = (double) (i == nodes ? nodeMedians[t] : vs[i].blockMedians[t]) / vs[0].blockMedians[t];
                }
                Arrays.sort(ratios);
                System.out.printf(Locale.ROOT, "%-15s %9.1f ns %14.2f%n", i == nodes ? "fabric nodes" : vs[i].name,
                        pooled[i][pooled[i].length / 2] / 2.0, ratios[n / 2]);
            }
        } finally {
            Files.deleteIfExists(path);
        }
    }

    private static void nodePingBlock(FabricNode a, Side me, MemorySegment frame, long[] rtt) {
        FrameHandler reply = (src, mem, off, len) -> me.replied = mem.get(ValueLayout.JAVA_LONG_UNALIGNED, off) == me.position;
        long prev = System.nanoTime();
        for (int k = 0; k < BLOCK; k++) {
            me.position++;
            frame.set(ValueLayout.JAVA_LONG, 0, me.position);
            me.replied = false;
            offer(a, 1, frame, 0);
            while (!me.replied) {
                if (a.poll(reply, 16) == 0) {
                    Thread.onSpinWait();
                }
            }
            long now = System.nanoTime();
            rtt[k] = now - prev;
            prev = now;
        }
    }

    private static void nodeEchoBlock(FabricNode b, Side me) {
        FrameHandler echo = (src, mem, off, len) -> {
            offer(b, 0, mem, off);
            me.echoed++;
        };
        long end = me.echoed + BLOCK;
        while (me.echoed < end) {
            if (b.poll(echo, 16) == 0) {
                Thread.onSpinWait();
            }
        }
    }

    private static void offer(FabricNode from, int to, MemorySegment src, long off) {
        int rc;
        while ((rc = from.offer(to, src, off, SIZE)) == FabricDevice.BACK_PRESSURED) {
            Thread.onSpinWait();
        }
        if (rc != FabricDevice.OK) {
            throw new IllegalStateException("offer to node " + to + " failed: " + FabricDevice.describe(rc));
        }
    }

    private static void pingBlock(Variant v, Side me, MemorySegment frame, long[] rtt) {
        if (v.ahead && me.ahead < 0) {
            me.ahead = v.claimNext(v.ping);
        }
        long prev = System.nanoTime();
        for (int k = 0; k < BLOCK; k++) {
            long p = v.send(v.ping, me.position, me.ahead, frame, 0);
            if (v.ahead) {
                me.ahead = v.claimNext(v.ping);
            }
            v.await(v.pong, p);
            long got = v.pong.get(ValueLayout.JAVA_LONG_UNALIGNED, v.slot(p) + 16);
            v.consumed(v.pong, p);
            me.position = p + 1;
            long now = System.nanoTime();
            rtt[k] = now - prev + (got & 0); // the echoed frame is read, as a client reads its reply
            prev = now;
        }
    }

    private static void echoBlock(Variant v, Side me) {
        if (v.ahead && me.ahead < 0) {
            me.ahead = v.claimNext(v.pong);
        }
        for (int k = 0; k < BLOCK; k++) {
            long p = me.position;
            v.await(v.ping, p);
            long q = v.send(v.pong, p, me.ahead, v.ping, v.slot(p) + 16);
            if (v.ahead) {
                me.ahead = v.claimNext(v.pong);
            }
            v.consumed(v.ping, p);
            me.position = p + 1;
            if (q != p) {
                throw new IllegalStateException("echo used position " + q + " for frame " + p);
            }
        }
    }

    private static void await(CyclicBarrier b) {
        try {
            b.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
