package dev.nupa.node;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import dev.nupa.gateway.GatewayCounter;
import dev.nupa.ip.IpCounter;
import dev.nupa.l2.DropReason;
import dev.nupa.l2.EtherType;
import dev.nupa.l2.LinkCounters;
import dev.nupa.roce.verbs.RdmaCounter;
import dev.nupa.tcp.TcpCounter;

/**
 * A snapshot of a node's counters, layer by layer, as the gRPC Admin service and the OpenTelemetry metrics
 * give them: each a layer ({@link #LAYERS}), a lower-case name and a value. Taken on the node's event loop.
 */
public final class NodeCounters {
    /** The layers with counters, bottom up, then the gateway's Ethernet side (on a gateway node only). */
    static final List<String> LAYERS = List.of("fabric", "link", "ip", "tcp", "rdma", "gateway");

    /** One counter. */
    public record Value(String layer, String name, long value) {
    }

    private NodeCounters() {
    }

    /** Null if {@code layer} is one of {@link #LAYERS} or empty (all of them), else why not. */
    public static String checkLayer(String layer) {
        return layer.isEmpty() || LAYERS.contains(layer) ? null
                : "no layer \"" + layer + "\"; give " + String.join(", ", LAYERS) + ", or nothing for all";
    }

    /** The counters of {@code layer} (empty: every layer); on the node's event loop. */
    public static List<Value> snapshot(NupaNode node, String layer) {
        List<Value> out = new ArrayList<>();
        boolean all = layer.isEmpty();
        if ((all || layer.equals("fabric")) && node.link().device() instanceof dev.nupa.device.FabricNode fn && fn.lostReason() == null) {
            // The node's own entry (docs/fabric-layout.md 5.1): what its rings saw, repairs of foreign bytes included.
            var f = fn.counters();
            out.add(new Value("fabric", "frames_sent", f.framesSent()));
            out.add(new Value("fabric", "frames_received", f.framesReceived()));
            out.add(new Value("fabric", "back_pressured", f.backPressured()));
            out.add(new Value("fabric", "sends_to_down_peers", f.sendsToDownPeers()));
            out.add(new Value("fabric", "late_drops", f.lateDrops()));
            out.add(new Value("fabric", "stall_skips", f.stallSkips()));
            out.add(new Value("fabric", "handler_errors", f.handlerErrors()));
            out.add(new Value("fabric", "corrupt", f.corrupt()));
            out.add(new Value("fabric", "entry_repairs", fn.entryRepairs()));
            out.add(new Value("fabric", "corrupt_window_entries", fn.fabric().corruptWindowEntries()));
        }
        if (all || layer.equals("link")) {
            LinkCounters lc = node.link().counters();
            for (LinkCounters.Protocol p : lc.protocols()) {
                String proto = p.protocol() == LinkCounters.OTHER ? "other" : EtherType.name(p.protocol()).toLowerCase();
                out.add(new Value("link", proto + "_frames_in", p.framesIn()));
                out.add(new Value("link", proto + "_bytes_in", p.bytesIn()));
                out.add(new Value("link", proto + "_frames_out", p.framesOut()));
                out.add(new Value("link", proto + "_bytes_out", p.bytesOut()));
            }
            for (Map.Entry<DropReason, Long> e : lc.drops().entrySet()) {
                out.add(new Value("link", "drops_" + e.getKey().name().toLowerCase(), e.getValue()));
            }
            out.add(new Value("link", "capture_errors", lc.captureErrors()));
            for (int r = 0; r < lc.ringFrames().size(); r++) {
                out.add(new Value("link", "ring" + r + "_frames_in", lc.ringFrames(r))); // service levels: docs/link-layer.md
            }
            LinkFaultTable.addTo(node.link(), out);
        }
        if (all || layer.equals("ip")) {
            for (Map.Entry<IpCounter, Long> e : node.ip().counters().entrySet()) {
                out.add(new Value("ip", e.getKey().name().toLowerCase(), e.getValue()));
            }
        }
        if (all || layer.equals("tcp")) {
            for (Map.Entry<TcpCounter, Long> e : node.tcp().counters().entrySet()) {
                out.add(new Value("tcp", e.getKey().name().toLowerCase(), e.getValue()));
            }
        }
        if ((all || layer.equals("rdma")) && node.rdma().context() != null) {
            for (Map.Entry<RdmaCounter, Long> e : node.rdma().context().counters().entrySet()) {
                out.add(new Value("rdma", e.getKey().name().toLowerCase(), e.getValue()));
            }
        }
        if ((all || layer.equals("gateway")) && node.gateway() != null && node.gateway().iface() != null) {
            for (Map.Entry<GatewayCounter, Long> e : node.gateway().counters().entrySet()) {
                out.add(new Value("gateway", e.getKey().name().toLowerCase(), e.getValue()));
            }
        }
        return out;
    }
}
