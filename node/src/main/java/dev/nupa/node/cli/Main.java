package dev.nupa.node.cli;

import dev.nupa.node.perftest.PerftestCommand;
import dev.nupa.node.perftest.RpingCommand;
import dev.nupa.node.soak.SoakCommand;
import dev.nupa.perf.Children;
import dev.nupa.perf.PerfCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The `nupa` command line. Errors print one line and exit non-zero; there are no stack traces for users. */
@Command(name = "nupa", mixinStandardHelpOptions = true, version = "nupa 0.1.0",
        description = "NUPA for the JVM: a userspace network stack over a CXL/PCIe memory fabric.",
        subcommands = {NodeCommand.class, PingCommand.class, RpingCommand.class, CaptureCommand.class, UdpCheckCommand.class, TcpCheckCommand.class, FabricCommand.class, SoakCommand.class,
                PerfCommand.class, DemoCommand.class, DemoNode.class, RunCommand.class,
                CommandLine.HelpCommand.class})
public final class Main {
    public static void main(String[] args) {
        System.exit(run(args));
    }

    /**
     * This process's heap shrinks to its live data + 30% when a collection finds it mostly free (G1 by default keeps
     * up to 70% free), so memory a node's connections held goes back to the system when they end (HeapReturn in the
     * transport). Both ratios are manageable flags; a JVM without them keeps its own.
     */
    private static void shrinkingHeap() {
        try {
            var hs = java.lang.management.ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
            if (Integer.parseInt(hs.getVMOption("MinHeapFreeRatio").getValue()) > 10) {
                hs.setVMOption("MinHeapFreeRatio", "10");
            }
            if (Integer.parseInt(hs.getVMOption("MaxHeapFreeRatio").getValue()) > 30) {
                hs.setVMOption("MaxHeapFreeRatio", "30");
            }
        } catch (RuntimeException e) {
            // Not HotSpot, or the flags were fixed on the command line in a way that refuses these: keep the JVM's.
        }
    }

    /** Runs one command line in this process and returns its exit status; what it prints goes to System.out and System.err. */
    public static int run(String... args) {
        Children.launcher(Main.class); // the perf tools and the demo start their other processes with this command line
        // The nupa command places its own Vert.x instances (nodes, and the perf tools' Linux peers, which must stay on
        // Linux): a NUPA_FABRIC in the environment is for the programs that `nupa run` starts, not for this process.
        System.setProperty("nupa.fabric", "");
        shrinkingHeap();
        CommandLine cl = new CommandLine(new Main());
        cl.getSubcommands().get("perf").addSubcommand(new GrpcEndpointPerf()); // it measures the node's own endpoint
        cl.getSubcommands().get("perf").addSubcommand(new PerftestCommand()); // a whole node against stock perftest
        cl.getSubcommands().get("run").setStopAtPositional(true); // what follows the program's main class is the program's
        cl.setExecutionStrategy(OptionRanges::execute); // every numeric option in range before anything starts
        cl.setParameterExceptionHandler((e, a) -> {
            System.err.println("nupa: " + e.getMessage() + " (see: " + e.getCommandLine().getCommandSpec().qualifiedName()
                    + " --help)");
            return 2;
        });
        cl.setExecutionExceptionHandler((e, commandLine, parsed) -> {
            String msg = e.getMessage() != null ? e.getMessage() : e.toString();
            System.err.println("nupa: " + msg);
            if (System.getenv("NUPA_DEBUG") != null) {
                e.printStackTrace();
            }
            return e instanceof IllegalArgumentException ? 2 : 1;
        });
        return cl.execute(args);
    }
}
