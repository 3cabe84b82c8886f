package dev.nupa.node;

import dev.nupa.device.Fabric;
import dev.nupa.device.FabricGeometry;
import dev.nupa.device.ShmFabric;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Start two node processes on a fresh fabric file, stream checked frames both ways, report, and clean up.")
final class DemoCommand implements Callable<Integer> {
    @Option(names = "--frames", defaultValue = "100000", description = "Frames each node sends (default: ${DEFAULT-VALUE}).")
    long frames;

    @Override
    public Integer call() throws Exception {
        if (frames < 1) {
            throw new IllegalArgumentException("--frames must be at least 1");
        }
        Path path = PerfRunner.freshFabricPath("demo");
        FabricGeometry g = FabricGeometry.defaults().withMaxNodes(4);
        System.out.println("nupa demo: two node processes on a fresh fabric " + path);
        ShmFabric.create(path, g).close();
        Process a = null;
        Process b = null;
        try {
            a = Children.start(List.of("demo-node", "--fabric", path.toString(), "--address", "0", "--peer", "1",
                    "--frames", Long.toString(frames)));
            b = Children.start(List.of("demo-node", "--fabric", path.toString(), "--address", "1", "--peer", "0",
                    "--frames", Long.toString(frames)));
            Process[] both = {a, b};
            int status = 0;
            for (Process p : both) {
                String line;
                var out = Children.stdout(p);
                while ((line = out.readLine()) != null) {
                    System.out.println("  " + line);
                }
                int rc = Children.waitFor(p, 300);
                status = status != 0 ? status : rc;
            }
            try (Fabric f = ShmFabric.inspect(path)) {
                FabricCommand.print(f);
            }
            System.out.println(status == 0 ? "demo ok: every frame arrived complete, in order and checksum-equal"
                    : "demo FAILED (status " + status + ")");
            return status;
        } finally {
            Children.kill(a);
            Children.kill(b);
            PerfRunner.deleteQuietly(path);
            System.out.println("cleaned up: removed " + path);
        }
    }
}
