package dev.nupa.device;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * The identity of the file a fabric is mapped from: its file key (device and inode) and the bytes mapped. A
 * mapping outlives its file's name, but not its bytes: a file truncated under a mapping faults every access to
 * the pages it lost (SIGBUS, which the JVM turns into an {@link InternalError}), and a file removed or replaced
 * leaves the node talking to a fabric nobody else joins. Liveness checks it every heartbeat period.
 */
record FabricFile(Path path, Object key, long mapped) {

    /** The file behind {@code name}, or null where it is no regular file (a device's memory, a test's heap). */
    static FabricFile of(String name, long mapped) {
        try {
            Path p = Path.of(name);
            BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
            return a.isRegularFile() && a.fileKey() != null ? new FabricFile(p, a.fileKey(), mapped) : null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Null while the file is the one mapped and holds every mapped byte; else what happened to it, in words. */
    String check() {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return "fabric file " + path + " was removed";
        } catch (IOException e) {
            return null; // cannot look (a transient error): the mapping itself still tells, by faulting
        }
        if (!key.equals(a.fileKey())) {
            return "fabric file " + path + " was replaced by another file";
        }
        if (a.size() < mapped) {
            return "fabric file " + path + " shrank from " + mapped + " to " + a.size() + " bytes";
        }
        return null;
    }

    /** Whether {@code t} is the JVM's report of a fault on mapped memory (a SIGBUS in an access to a segment). */
    static boolean isMappingFault(Throwable t) {
        return t instanceof InternalError && t.getMessage() != null && t.getMessage().contains("unsafe memory access");
    }
}
