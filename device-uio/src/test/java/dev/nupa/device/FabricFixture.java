package dev.nupa.device;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;

/**
 * Test support: a uniquely named fabric file under /dev/shm, and everything opened on it, closed
 * (nodes first) and deleted by {@link #close()}.
 */
final class FabricFixture implements AutoCloseable {
    static final long MS = 1_000_000L;

    /** Four nodes, one ring of 8 slots of 256 bytes, 8 windows in 64 KiB; fast heartbeats, a long stall timeout. */
    static FabricGeometry small() {
        return new FabricGeometry(4, 1, 8, 256, 8, 64 * 1024, 10 * MS, 100 * MS, 10_000 * MS);
    }

    final Path path = Path.of("/dev/shm/nupa-test-" + UUID.randomUUID());
    private final Deque<AutoCloseable> open = new ArrayDeque<>();

    Fabric create(FabricGeometry g) {
        return track(ShmFabric.create(path, g));
    }

    Fabric join() {
        return track(ShmFabric.join(path));
    }

    FabricNode attach(Fabric f, int address) {
        return track(f.attach(address));
    }

    synchronized <T extends AutoCloseable> T track(T c) {
        open.push(c);
        return c;
    }

    @Override
    public synchronized void close() {
        while (!open.isEmpty()) {
            try {
                open.pop().close();
            } catch (Exception e) {
                // already closed (a fabric closed by its node, or by the test)
            }
        }
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    // ---- frames -----------------------------------------------------------------------------

    record Received(int source, byte[] data) {
        String text() {
            return new String(data, StandardCharsets.UTF_8);
        }
    }

    /** A handler that copies every frame out of the ring. */
    static final class Collector implements FrameHandler {
        final List<Received> frames = new ArrayList<>();

        @Override
        public void onFrame(int source, MemorySegment memory, long offset, int length) {
            frames.add(new Received(source, memory.asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE)));
        }

        List<String> texts() {
            return frames.stream().map(Received::text).toList();
        }
    }

    static MemorySegment seg(String s) {
        return MemorySegment.ofArray(s.getBytes(StandardCharsets.UTF_8));
    }

    static int send(FabricDevice from, int to, String text) {
        MemorySegment s = seg(text);
        return from.offer(to, s, 0, (int) s.byteSize());
    }

    /** Polls (sleeping briefly in awaitFrames between empty polls) until {@code count} frames arrived or 5 s passed. */
    static void receive(FabricDevice node, Collector c, int count) {
        long deadline = System.nanoTime() + 5_000 * MS;
        while (c.frames.size() < count) {
            if (node.poll(c, 64) == 0) {
                if (System.nanoTime() > deadline) {
                    fail("expected " + count + " frames, got " + c.frames.size() + " within 5 s");
                }
                node.awaitFrames(5 * MS);
            }
        }
    }

    static void waitUntil(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + 5_000 * MS;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after 5 s waiting until " + what);
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }
    }

    /** Takes events until one matches, failing after 5 s; the events skipped are returned through {@code skipped}. */
    static PeerEvent awaitEvent(BlockingQueue<PeerEvent> q, Predicate<PeerEvent> match, List<PeerEvent> skipped) {
        long deadline = System.nanoTime() + 5_000 * MS;
        while (true) {
            long left = deadline - System.nanoTime();
            PeerEvent e;
            try {
                e = left > 0 ? q.poll(left, TimeUnit.NANOSECONDS) : null;
            } catch (InterruptedException ex) {
                throw new RuntimeException(ex);
            }
            if (e == null) {
                fail("no matching peer event within 5 s; saw " + skipped);
            }
            if (match.test(e)) {
                return e;
            }
            skipped.add(e);
        }
    }
}
