package dev.nupa.node.cli;

import dev.nupa.node.options.FabricOptions;
import dev.nupa.device.Fabric;
import dev.nupa.device.FabricAccess;
import dev.nupa.device.FabricWindow;
import dev.nupa.device.FabricCounters;
import dev.nupa.device.FabricException;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.FabricLayout;
import dev.nupa.device.NodeInfo;
import dev.nupa.device.ShmFabric;
import dev.nupa.device.WindowInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "fabric", mixinStandardHelpOptions = true, description = "Create, inspect and remove fabric files.",
        subcommands = {FabricCommand.Create.class, FabricCommand.Info.class, FabricCommand.Remove.class})
final class FabricCommand {

    @Command(name = "create", mixinStandardHelpOptions = true, description = "Create a fabric file with the given geometry.")
    static final class Create implements Callable<Integer> {
        @Option(names = "--fabric", paramLabel = "PATH", defaultValue = "/dev/shm/nupa-fabric", description = "Fabric file (default: ${DEFAULT-VALUE}).")
        Path path;
        @Option(names = "--nodes", defaultValue = "64", description = "Node addresses, 1..1024 (default: ${DEFAULT-VALUE}).")
        int nodes;
        @Option(names = "--rings", defaultValue = "1",
                description = "Receive rings per node, 1..16: service levels pick among them, higher levels on higher rings,"
                        + " served first (docs/link-layer.md) (default: ${DEFAULT-VALUE}).")
        int rings;
        @Option(names = "--slots", defaultValue = "256", description = "Slots per ring, a power of two (default: ${DEFAULT-VALUE}).")
        int slots;
        @Option(names = "--max-frame", paramLabel = "BYTES", defaultValue = "9216", description = "Largest frame (default: ${DEFAULT-VALUE}).")
        int maxFrame;
        @Option(names = "--windows", defaultValue = "256", description = "Window table entries (default: ${DEFAULT-VALUE}).")
        int windows;
        @Option(names = "--window-space", paramLabel = "MIB", defaultValue = "64", description = "Window space in MiB (default: ${DEFAULT-VALUE}).")
        long windowMiB;
        @Option(names = "--heartbeat-ms", defaultValue = "100", description = "Heartbeat period (default: ${DEFAULT-VALUE}).")
        long heartbeatMs;
        @Option(names = "--timeout-ms", defaultValue = "1000", description = "Heartbeat timeout before a node is declared dead (default: ${DEFAULT-VALUE}).")
        long timeoutMs;
        @Option(names = "--stall-ms", defaultValue = "1000", description = "How long a claimed, unpublished slot may block a ring (default: ${DEFAULT-VALUE}).")
        long stallMs;
        @Option(names = "--force", description = "Replace an existing file, even one with nodes attached.")
        boolean force;
        @Option(names = "--fabric-group", paramLabel = "GROUP", description = "Create the file mode 0660 with group GROUP (default: 0600, this user's alone).")
        String group;

        @Override
        public Integer call() throws Exception {
            FabricGeometry g = new FabricGeometry(nodes, rings, slots, maxFrame, windows, windowMiB << 20,
                    heartbeatMs * 1_000_000L, timeoutMs * 1_000_000L, stallMs * 1_000_000L);
            if (force) {
                Files.deleteIfExists(path);
            }
            try (Fabric f = ShmFabric.create(path, g, new FabricAccess(group, false))) {
                System.out.printf("created %s: %d bytes, %d nodes x %d ring(s) x %d slots of %d-byte frames, %d windows in %d MiB%n",
                        f.name(), g.totalBytes(), nodes, rings, slots, maxFrame, windows, windowMiB);
            }
            return 0;
        }
    }

    @Command(name = "info", mixinStandardHelpOptions = true, description = "Show a fabric's geometry, nodes, rings, windows and counters.")
    static final class Info implements Callable<Integer> {
        @Mixin
        FabricOptions where;

        @Override
        public Integer call() {
            try (Fabric f = ShmFabric.inspect(where.path())) {
                print(f);
            }
            return 0;
        }
    }

    static void print(Fabric f) {
        FabricGeometry g = f.geometry();
        System.out.printf("fabric %s (layout v%d, created %s)%n", f.name(), dev.nupa.device.FabricLayout.VERSION, Instant.ofEpochMilli(f.createdMillis()));
        printFile(Path.of(f.name()));
        System.out.printf("  geometry: %d nodes, %d ring(s)/node, %d slots/ring, max frame %d B, %d windows, %d MiB window space, %d bytes%n",
                g.maxNodes(), g.ringsPerNode(), g.ringSlots(), g.maxFrame(), g.maxWindows(), g.windowBytes() >> 20, g.totalBytes());
        System.out.printf("  liveness: heartbeat %d ms, timeout %d ms, stall timeout %d ms%n",
                g.heartbeatPeriodNs() / 1_000_000, g.heartbeatTimeoutNs() / 1_000_000, g.stallTimeoutNs() / 1_000_000);
        var nodes = f.nodes();
        if (nodes.isEmpty()) {
            System.out.println("  nodes: none has joined yet");
        } else {
            // Drops by reason (docs/fabric-layout.md, node table counters): back-pressured, to a down peer, late, skipped
            // stalled slots, discarded, corrupt frames, handler errors.
            System.out.printf("  %4s %-10s %4s %8s %10s %6s %12s %14s %12s %14s %8s %6s %6s %6s %8s %8s %8s %8s %8s%n", "node", "state",
                    "gen", "pid", "heartbeat", "queued", "frames-out", "bytes-out", "frames-in", "bytes-in", "backprs", "stalls", "down",
                    "late", "discard", "corrupt", "hdl-err", "irqs-out", "irqs-in");
            for (NodeInfo n : nodes) {
                FabricCounters c = n.counters();
                System.out.printf("  %4d %-10s %4d %8d %10d %6d %12d %14d %12d %14d %8d %6d %6d %6d %8d %8d %8d %8d %8d%n", n.address(),
                        n.state(), n.generation(), n.pid(), n.heartbeat(), n.ringOccupancy(), c.framesSent(), c.bytesSent(),
                        c.framesReceived(), c.bytesReceived(), c.backPressured(), c.stallSkips(), c.sendsToDownPeers(), c.lateDrops(),
                        c.discarded(), c.corrupt(), c.handlerErrors(), c.interruptsSent(), c.interruptsReceived());
            }
        }
        for (Fabric.PublishedCounters p : f.publishedCounters()) {
            System.out.println("  node " + p.owner() + " publishes " + p.title() + ":");
            StringBuilder line = new StringBuilder("   ");
            for (var c : p.counters().entrySet()) {
                String item = " " + c.getKey() + " " + c.getValue();
                if (line.length() + item.length() > 100) {
                    System.out.println(line);
                    line = new StringBuilder("   ");
                }
                line.append(item);
            }
            System.out.println(line);
        }
        var observers = dev.nupa.device.ObserverTable.list(f);
        System.out.println("  capture observers: " + (observers.isEmpty() ? "none" : observers.size()));
        for (var o : observers) { // they hold no node address: `nupa capture` (docs/fabric-layout.md 12)
            System.out.println("    slot " + o.slot() + " pid " + o.pid() + " file "
                    + (o.file() != null ? o.file() : "(foreign bytes: no valid path)") + " watching nodes " + o.nodes());
        }
        var windows = f.windows();
        List<Integer> corrupt = f.corruptEntries();
        if (!corrupt.isEmpty() || f.corruptWindowEntries() > 0) {
            System.out.println("  foreign bytes (shown as absent): node table entries " + (corrupt.isEmpty() ? "none" : corrupt)
                    + ", window table entries " + f.corruptWindowEntries());
        }
        System.out.println("  windows: " + (windows.isEmpty() ? "none" : windows.size()));
        for (WindowInfo w : windows) {
            System.out.printf("    id %d owner %d/%d offset %d length %d access %s%s%s%n", w.id(), w.owner(), w.ownerGeneration(),
                    w.offset(), w.length(), (w.access() & 1) != 0 ? ((w.access() & 2) != 0 ? "rw" : "r") : ((w.access() & 2) != 0 ? "w" : "-"),
                    (w.access() & FabricWindow.DIRECTORY) != 0 ? " (verbs directory)" : "",
                    (w.access() & FabricWindow.COUNTERS) != 0 ? " (counter table)" : "");
        }
    }

    /** The fabric file's owner, group and mode: who may read and write its frames. */
    private static void printFile(Path file) {
        try {
            var a = Files.readAttributes(file, java.nio.file.attribute.PosixFileAttributes.class);
            System.out.printf("  file: owner %s, group %s, mode %s%n", a.owner().getName(), a.group().getName(),
                    java.nio.file.attribute.PosixFilePermissions.toString(a.permissions()));
        } catch (java.io.IOException | UnsupportedOperationException | java.nio.file.InvalidPathException e) {
            // a device's memory (vfio:BDF) or a file gone meanwhile: nothing to show
        }
    }

    @Command(name = "remove", mixinStandardHelpOptions = true, description = "Remove a fabric file, refusing while nodes are up.")
    static final class Remove implements Callable<Integer> {
        @Option(names = "--fabric", paramLabel = "PATH", defaultValue = "/dev/shm/nupa-fabric", description = "Fabric file (default: ${DEFAULT-VALUE}).")
        Path path;
        @Option(names = "--force", description = "Remove even with nodes up (never a file that is not a fabric).")
        boolean force;

        @Override
        public Integer call() throws Exception {
            requireMagic(path);
            if (!force) {
                try (Fabric f = ShmFabric.inspect(path)) {
                    long up = f.nodes().stream().filter(n -> n.state().equals("UP")).count();
                    if (up > 0) {
                        throw new FabricException(up + " node(s) are up on " + path + "; stop them or use --force");
                    }
                }
            }
            Files.deleteIfExists(path);
            System.out.println("removed " + path);
            return 0;
        }

        /** Only a file that starts with the fabric's magic (docs/fabric-layout.md section 3) is a fabric to remove. */
        private static void requireMagic(Path path) throws java.io.IOException {
            if (!Files.exists(path)) {
                throw new FabricException("no fabric at " + path);
            }
            byte[] head = new byte[8];
            int n;
            try (var in = Files.newInputStream(path)) {
                n = in.readNBytes(head, 0, 8);
            }
            if (n < 8 || java.nio.ByteBuffer.wrap(head).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong() != FabricLayout.MAGIC) {
                throw new FabricException(path + " is not a NUPA fabric (no magic " + Long.toHexString(FabricLayout.MAGIC)
                        + " at offset 0); it is left in place");
            }
        }
    }
}
