package dev.nupa.perf;

import picocli.CommandLine.Command;

/** `nupa perf`: the command line adds the tools that measure the node itself (grpc-endpoint). */
@Command(name = "perf", mixinStandardHelpOptions = true,
        description = {"Latency and bandwidth tests, each beside a floor or peer measured in the same run.",
                "With no role a test starts both sides as two processes on a fresh fabric file and removes it after;",
                "--server / --client run one side; --json prints one JSON object on the last line."},
        subcommands = {FabricLatency.class, FabricBandwidth.class, IpLatency.Udp.class, IpLatency.Icmp.class, TcpPerf.Lat.class,
                TcpPerf.Bw.class, TcpPerf.Crr.class, RdmaPerf.WriteLat.class, RdmaPerf.WriteBw.class, RdmaPerf.SendLat.class,
                RdmaPerf.SendBw.class, RdmaPerf.ReadLat.class, RdmaPerf.ReadBw.class, RdmaPerf.AtomicLat.class,
                VertxPerf.Http.class, VertxPerf.Echo.class, VertxPerf.Udp.class,
                VertxPerf.Grpc.class, EventBusPerf.class, VertxScaling.class, RingPerf.class, TcpHold.class, QosPerf.class, FirstRequest.class,
                PerfSuite.class})
public final class PerfCommand {
}
