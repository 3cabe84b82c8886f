package dev.nupa.node;

import picocli.CommandLine.Command;

@Command(name = "perf", mixinStandardHelpOptions = true,
        description = {"Latency and bandwidth tests, each beside a floor or peer measured in the same run.",
                "With no role a test starts both sides as two processes on a fresh fabric file and removes it after;",
                "--server / --client run one side; --json prints one JSON object on the last line."},
        subcommands = {FabricLatency.class, FabricBandwidth.class, IpLatency.Udp.class, IpLatency.Icmp.class, TcpPerf.Lat.class,
                TcpPerf.Bw.class, TcpPerf.Crr.class, RdmaPerf.WriteLat.class, RdmaPerf.WriteBw.class, RdmaPerf.SendLat.class,
                RdmaPerf.SendBw.class, RdmaPerf.ReadLat.class, RdmaPerf.ReadBw.class, RdmaPerf.AtomicLat.class,
                VertxPerf.Http.class, VertxPerf.Echo.class, VertxPerf.Udp.class,
                VertxPerf.Grpc.class, GrpcEndpointPerf.class, PerfSuite.class})
final class PerfCommand {
}
