package dev.nupa.tests;

import dev.nupa.device.FabricCounters;
import dev.nupa.device.FabricNode;
import dev.nupa.device.FrameHandler;
import dev.nupa.device.ShmFabric;
import java.nio.file.Path;

/**
 * The consumer of {@link ManyProducersTest}, in its own JVM: attaches at {@code address} of an
 * existing fabric and receives from {@code producers} producers at addresses
 * {@code address + 1 + i} carrying id {@code i}, checking every frame ({@link TestFrames.Track}).
 * Once each producer's {@code frames} frames are in, it polls for {@code linger-ms} more so that a
 * duplicate or stray frame would still be counted, then reports.
 *
 * <p>Args: fabric-path address producers frames linger-ms timeout-ms. Prints one RESULT line.
 */
public final class ConsumerMain {
    private ConsumerMain() {
    }

    public static void main(String[] args) {
        Path path = Path.of(args[0]);
        int address = Integer.parseInt(args[1]);
        int producers = Integer.parseInt(args[2]);
        long frames = Long.parseLong(args[3]);
        long lingerNs = Long.parseLong(args[4]) * 1_000_000L;
        long deadline = System.nanoTime() + Long.parseLong(args[5]) * 1_000_000L;
        String error = "none";
        boolean timedOut = false;
        long[] strangers = {0};
        TestFrames.Track[] tracks = new TestFrames.Track[producers];
        for (int i = 0; i < producers; i++) {
            tracks[i] = new TestFrames.Track(i, -1);
        }
        FabricCounters counters = null;
        long ms = 0;
        try (FabricNode node = ShmFabric.attach(path, address, null)) {
            System.out.println("ATTACHED address=" + address + " generation=" + node.generation());
            System.out.flush();
            FrameHandler handler = (src, mem, off, len) -> {
                int i = src - address - 1;
                if (i >= 0 && i < producers) {
                    tracks[i].accept(mem, off, len);
                } else {
                    strangers[0]++;
                }
            };
            IdleRounds idle = new IdleRounds(node);
            long t0 = System.nanoTime();
            long allIn = 0;
            while (true) {
                int n = node.poll(handler, 256);
                idle.after(n);
                long now = System.nanoTime();
                if (allIn == 0) {
                    boolean all = true;
                    for (TestFrames.Track t : tracks) {
                        all &= t.received >= frames;
                    }
                    if (all) {
                        allIn = now;
                        ms = (now - t0) / 1_000_000;
                    }
                } else if (now - allIn > lingerNs) {
                    break;
                }
                if (now - deadline > 0) {
                    timedOut = true;
                    break;
                }
            }
            counters = node.counters();
        } catch (Exception e) {
            error = (e.getClass().getSimpleName() + ":" + e.getMessage()).replace(' ', '_');
            e.printStackTrace(System.out);
        }
        StringBuilder line = new StringBuilder("RESULT address=" + address + " strangers=" + strangers[0]
                + " timedOut=" + timedOut + " ms=" + ms);
        for (int i = 0; i < producers; i++) {
            line.append(' ').append(tracks[i].fields("p" + i + "."));
        }
        if (counters != null) {
            line.append(" corrupt=").append(counters.corrupt()).append(" handlerErrors=").append(counters.handlerErrors())
                    .append(" stallSkips=").append(counters.stallSkips()).append(" framesReceived=")
                    .append(counters.framesReceived());
        }
        line.append(" error=").append(error);
        System.out.println(line);
        System.out.flush();
        System.exit(error.equals("none") && !timedOut ? 0 : 1);
    }
}
