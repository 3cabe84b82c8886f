package dev.nupa.device;

import static dev.nupa.device.FabricLayout.LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * A capture file (docs/fabric-layout.md 12.2): made by an observer under /dev/shm, 0600, and mapped by each node it
 * watches. A page of header, then one {@link CaptureRing} per watched node. The observer creates it; a node maps it
 * only after checking it as it checks a fabric file, since its path comes from fabric memory, which is untrusted.
 */
public final class CaptureFile implements AutoCloseable {
    /** "NUPACAP1" read as a little-endian u64. */
    public static final long MAGIC = 0x315041435055504EL;
    public static final int VERSION = 1;
    static final long F_MAGIC = 0;
    static final long F_VERSION = 8;
    static final long F_RINGS = 12;
    static final long F_CAPACITY = 16;
    static final long F_SNAPLEN = 24;
    static final int HEADER = FabricLayout.PAGE;
    public static final long MIN_CAPACITY = 4096;
    public static final long MAX_CAPACITY = 1L << 30;
    public static final String DIRECTORY = "/dev/shm/";
    /** A path (NUL excluded) fits the observer slot's 96 bytes. */
    public static final int MAX_PATH = 95;

    final Path path;
    final MemorySegment mem;
    private final Arena arena;
    final int rings;
    final long capacity;
    final int snaplen;

    private CaptureFile(Path path, MemorySegment mem, Arena arena) {
        this.path = path;
        this.mem = mem;
        this.arena = arena;
        this.rings = mem.get(ValueLayout.JAVA_INT, F_RINGS);
        this.capacity = mem.get(ValueLayout.JAVA_LONG, F_CAPACITY);
        this.snaplen = mem.get(ValueLayout.JAVA_INT, F_SNAPLEN);
    }

    static long size(int rings, long capacity) {
        return HEADER + (long) rings * (CaptureRing.HEADER + capacity);
    }

    long ringBase(int i) {
        return HEADER + (long) i * (CaptureRing.HEADER + capacity);
    }

    int address(int i) {
        return mem.get(ValueLayout.JAVA_INT, ringBase(i) + CaptureRing.R_ADDRESS);
    }

    /** The ring of {@code address}, or -1. */
    int ringOf(int address) {
        for (int i = 0; i < rings; i++) {
            if (address(i) == address) {
                return i;
            }
        }
        return -1;
    }

    /** Whether a path read from fabric memory names a file this code may open: /dev/shm/NAME, NAME plain. */
    static boolean validPath(String p) {
        if (p.length() > MAX_PATH || !p.startsWith(DIRECTORY) || p.length() == DIRECTORY.length()) {
            return false;
        }
        for (int i = DIRECTORY.length(); i < p.length(); i++) {
            char c = p.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
                    || (c == '.' && i > DIRECTORY.length());
            if (!ok) {
                return false; // no '/', so no way out of /dev/shm, and no leading dot (".", "..")
            }
        }
        return true;
    }

    /** Creates the file (it must not exist) 0600, with one ring of {@code capacity} bytes for each of {@code addresses}. */
    static CaptureFile create(Path path, int[] addresses, long capacity, int snaplen) {
        if (Long.bitCount(capacity) != 1 || capacity < MIN_CAPACITY || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("capture ring size " + capacity + " must be a power of two in " + MIN_CAPACITY
                    + ".." + MAX_CAPACITY + " bytes");
        }
        if (snaplen < 1 || snaplen > capacity - CaptureRing.RECORD_HEADER) {
            throw new IllegalArgumentException("snaplen " + snaplen + " must be 1.." + (capacity - CaptureRing.RECORD_HEADER)
                    + " for capture rings of " + capacity + " bytes");
        }
        if (!validPath(path.toString())) {
            throw new IllegalArgumentException("capture file " + path + " must be a plain name under " + DIRECTORY);
        }
        long size = size(addresses.length, capacity);
        try (FileChannel ch = FileChannel.open(path, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
            ch.truncate(size);
            ch.write(java.nio.ByteBuffer.wrap(new byte[1]), size - 1);
            Arena arena = Arena.ofShared();
            MemorySegment mem = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            mem.set(ValueLayout.JAVA_INT, F_VERSION, VERSION);
            mem.set(ValueLayout.JAVA_INT, F_RINGS, addresses.length);
            mem.set(ValueLayout.JAVA_LONG, F_CAPACITY, capacity);
            mem.set(ValueLayout.JAVA_INT, F_SNAPLEN, snaplen);
            for (int i = 0; i < addresses.length; i++) {
                mem.set(ValueLayout.JAVA_INT, HEADER + (long) i * (CaptureRing.HEADER + capacity) + CaptureRing.R_ADDRESS,
                        addresses[i]);
            }
            LONG.setRelease(mem, F_MAGIC, MAGIC);
            return new CaptureFile(path, mem, arena);
        } catch (IOException e) {
            try {
                Files.deleteIfExists(path);
            } catch (IOException ignored) {
                // nothing more to do
            }
            throw new FabricException("cannot create capture file " + path + ": " + e.getMessage()
                    + " (is there room in " + DIRECTORY + "?)", e);
        }
    }

    /**
     * Maps a capture file a node was pointed at, after checking it: a regular file (no link followed) under /dev/shm,
     * owned by this user and written by no one else, whose header and size agree. Throws FabricException naming what is
     * wrong otherwise.
     */
    static CaptureFile open(String name) {
        if (!validPath(name)) {
            throw new FabricException("capture file path " + name + " is not a plain name under " + DIRECTORY);
        }
        Path path = Path.of(name);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS)) {
            PosixFileAttributes a = Files.readAttributes(path, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            if (!a.isRegularFile()) {
                throw new FabricException("capture file " + path + " is not a regular file");
            }
            if (!a.owner().getName().equals(Files.getOwner(Path.of("/proc/self")).getName())) {
                throw new FabricException("capture file " + path + " belongs to user " + a.owner().getName() + ", not to this one");
            }
            if (a.permissions().contains(PosixFilePermission.OTHERS_WRITE) || a.permissions().contains(PosixFilePermission.GROUP_WRITE)) {
                throw new FabricException("capture file " + path + " may be written by other users");
            }
            long size = ch.size();
            if (size < HEADER) {
                throw new FabricException("capture file " + path + " is too small (" + size + " bytes)");
            }
            Arena arena = Arena.ofShared();
            MemorySegment mem = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            try {
                long magic = (long) LONG.getAcquire(mem, F_MAGIC);
                int version = mem.get(ValueLayout.JAVA_INT, F_VERSION);
                int rings = mem.get(ValueLayout.JAVA_INT, F_RINGS);
                long capacity = mem.get(ValueLayout.JAVA_LONG, F_CAPACITY);
                int snaplen = mem.get(ValueLayout.JAVA_INT, F_SNAPLEN);
                if (magic != MAGIC || version != VERSION) {
                    throw new FabricException("capture file " + path + " has no capture header of version " + VERSION);
                }
                if (rings < 1 || rings > 1024 || Long.bitCount(capacity) != 1 || capacity < MIN_CAPACITY
                        || capacity > MAX_CAPACITY || snaplen < 1 || snaplen > capacity - CaptureRing.RECORD_HEADER
                        || size != size(rings, capacity)) {
                    throw new FabricException("capture file " + path + " has a bad header: " + rings + " rings of " + capacity
                            + " bytes, snaplen " + snaplen + ", in " + size + " bytes");
                }
                return new CaptureFile(path, mem, arena);
            } catch (RuntimeException e) {
                arena.close();
                throw e;
            }
        } catch (IOException e) {
            throw new FabricException("cannot open capture file " + path + ": " + e, e);
        }
    }

    /** Unmaps the file; the caller holds no access to it any more. */
    @Override
    public void close() {
        arena.close();
    }
}
