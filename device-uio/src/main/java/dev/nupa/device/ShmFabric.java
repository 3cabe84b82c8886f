package dev.nupa.device;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The shm backend: the fabric is a file (by default under /dev/shm) that every node process maps.
 * The first node creates it, later nodes join. Creation is race-free: the file is created with
 * CREATE_NEW, sized, and its header's magic is stored last; joiners wait briefly for the magic.
 */
public final class ShmFabric {
    public static final Path DEFAULT_PATH = Path.of("/dev/shm/nupa-fabric");
    private static final long JOIN_WAIT_NS = 2_000_000_000L;

    private ShmFabric() {
    }

    /** Creates a new fabric file; fails if the file exists. */
    public static Fabric create(Path path, FabricGeometry geometry) {
        long size = geometry.totalBytes();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            // Extend to size with one byte at the end: the file stays sparse, and a zero-filled
            // fabric is a valid empty one, so nothing else needs writing.
            ch.write(java.nio.ByteBuffer.wrap(new byte[1]), size - 1);
            Arena arena = Arena.ofShared();
            MemorySegment mem = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            FabricLayout.writeHeader(mem, geometry, System.currentTimeMillis());
            return new Fabric(mem, arena, path.toString(), true);
        } catch (FileAlreadyExistsException e) {
            throw new FabricException("fabric file " + path + " already exists; join it, or remove it to create a new one");
        } catch (IOException e) {
            throw new FabricException("cannot create fabric file " + path + ": " + e.getMessage()
                    + " (is there room in " + path.getParent() + "?)", e);
        }
    }

    /** Maps an existing fabric file, checking magic, version and size. */
    public static Fabric join(Path path) {
        return map(path, true);
    }

    /** Maps an existing fabric file read-only, for tools that only look. */
    public static Fabric inspect(Path path) {
        return map(path, false);
    }

    /**
     * Joins the fabric at {@code path}, or creates it with {@code geometry} if there is none.
     * If it exists with another geometry than a non-null {@code geometry}, that is an error and the
     * existing fabric is left untouched.
     */
    public static Fabric openOrCreate(Path path, FabricGeometry geometry) {
        FabricGeometry wanted = geometry != null ? geometry : FabricGeometry.defaults();
        for (int attempt = 0; ; attempt++) {
            if (!Files.exists(path)) {
                try {
                    return create(path, wanted);
                } catch (FabricException e) {
                    if (!Files.exists(path) || attempt > 3) {
                        throw e;
                    }
                    // another process created it first: join it
                }
            }
            try {
                Fabric f = join(path);
                if (geometry != null && !f.geometry().equals(geometry)) {
                    f.close();
                    throw new FabricException("fabric " + path + " exists with geometry " + f.geometry()
                            + " but " + geometry + " was asked for; remove the file or ask for its geometry");
                }
                return f;
            } catch (FabricNotFound e) {
                if (attempt > 3) {
                    throw new FabricException("fabric file " + path + " keeps disappearing while joining", e);
                }
            }
        }
    }

    /** Attaches as {@code address} to the fabric at {@code path}, creating it if needed; closing the node unmaps it. */
    public static FabricNode attach(Path path, int address, FabricGeometry geometry) {
        Fabric f = openOrCreate(path, geometry);
        try {
            FabricNode node = f.attach(address);
            node.closeFabricOnClose();
            return node;
        } catch (RuntimeException e) {
            f.close();
            throw e;
        }
    }

    private static final class FabricNotFound extends FabricException {
        FabricNotFound(String m) {
            super(m);
        }
    }

    private static boolean isZero(MemorySegment mem, long bytes) {
        for (long i = 0; i < bytes; i += 8) {
            if (mem.get(ValueLayout.JAVA_LONG, i) != 0) {
                return false;
            }
        }
        return true;
    }

    private static Fabric map(Path path, boolean writable) {
        long deadline = System.nanoTime() + JOIN_WAIT_NS;
        while (true) {
            try (FileChannel ch = writable
                    ? FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)
                    : FileChannel.open(path, StandardOpenOption.READ)) {
                long size = ch.size();
                boolean young = size < FabricLayout.PAGE;
                Arena arena = Arena.ofShared();
                MemorySegment mem = young ? MemorySegment.NULL
                        : ch.map(writable ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY, 0, size, arena);
                // A creator sizes the file, then stores the magic last: give it a moment.
                if ((young || (long) FabricLayout.LONG.getAcquire(mem, FabricLayout.H_MAGIC) == 0)
                        && System.nanoTime() < deadline) {
                    arena.close();
                    Fabric.sleepMillis(5);
                    continue;
                }
                if (young) {
                    arena.close();
                    throw new FabricException("fabric file " + path + " is " + size + " bytes, too small to be a NUPA fabric;"
                            + " remove it or point at another file");
                }
                if (mem.get(ValueLayout.JAVA_LONG, FabricLayout.H_MAGIC) == 0 && isZero(mem, FabricLayout.PAGE)) {
                    arena.close();
                    throw new FabricException("fabric file " + path + " was never initialised (its creator died?);"
                            + " remove it and start again");
                }
                try {
                    return new Fabric(mem, arena, path.toString(), writable);
                } catch (RuntimeException e) {
                    arena.close();
                    throw e;
                }
            } catch (NoSuchFileException e) {
                throw new FabricNotFound("no fabric file at " + path + "; create it with `nupa fabric create --fabric "
                        + path + "` or start a node, which creates it");
            } catch (IOException e) {
                throw new FabricException("cannot open fabric file " + path + ": " + e.getMessage(), e);
            }
        }
    }
}
