package dev.nupa.l2;

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

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricNode;
import dev.nupa.device.FrameHandler;
import dev.nupa.device.ShmFabric;

/**
 * Test support: a uniquely named fabric file under /dev/shm, and everything opened on it, closed
 * (nodes first) and deleted by {@link #close()}.
 */
final class L2Fixture implements AutoCloseable {
    static final long MS = 1_000_000L;

    /** Four nodes, one ring of 16 slots of 9216 bytes (the default slot: a 9000-byte MTU fits); fast heartbeats, long stall timeout. */
    static FabricGeometry jumbo() {
        return new FabricGeometry(4, 1, 16, 9216, 8, 64 * 1024, 10 * MS, 100 * MS, 10_000 * MS);
    }

    /** Four nodes, one ring of 64 slots of 256 bytes: for many small frames. */
    static FabricGeometry small() {
        return new FabricGeometry(4, 1, 64, 256, 8, 64 * 1024, 10 * MS, 100 * MS, 10_000 * MS);
    }

    final Path path = Path.of("/dev/shm/nupa-l2-test-" + UUID.randomUUID());
    private final Deque<AutoCloseable> open = new ArrayDeque<>();
    private Fabric fabric;

    Fabric create(FabricGeometry g) {
        fabric = track(ShmFabric.create(path, g));
        return fabric;
    }

    FabricNode attach(int address) {
        return track(fabric.attach(address));
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
                // already closed
            }
        }
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    static MemorySegment seg(String s) {
        return MemorySegment.ofArray(s.getBytes(StandardCharsets.UTF_8));
    }

    static MemorySegment bytes(int... b) {
        byte[] a = new byte[b.length];
        for (int i = 0; i < b.length; i++) {
            a[i] = (byte) b[i];
        }
        return MemorySegment.ofArray(a);
    }

    record Packet(int source, byte[] data) {
        String text() {
            return new String(data, StandardCharsets.UTF_8);
        }
    }

    /** A protocol handler (and frame handler) that copies what it gets. */
    static final class Recorder implements ProtocolHandler, FrameHandler {
        final List<Packet> packets = new ArrayList<>();

        @Override
        public void onPacket(int sourceNode, MemorySegment memory, long offset, int length) {
            packets.add(new Packet(sourceNode, memory.asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE)));
        }

        @Override
        public void onFrame(int source, MemorySegment memory, long offset, int length) {
            onPacket(source, memory, offset, length);
        }

        List<String> texts() {
            return packets.stream().map(Packet::text).toList();
        }
    }
}
