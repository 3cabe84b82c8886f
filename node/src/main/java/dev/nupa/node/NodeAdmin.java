package dev.nupa.node;

import java.util.Map;
import java.util.function.Supplier;

import dev.nupa.ip.Ipv4Address;
import dev.nupa.l2.NeighborDirectory;
import dev.nupa.node.admin.AdminService;
import dev.nupa.node.admin.ConnectionsRequest;
import dev.nupa.node.admin.Connections;
import dev.nupa.node.admin.Counter;
import dev.nupa.node.admin.Counters;
import dev.nupa.node.admin.CountersRequest;
import dev.nupa.node.admin.InfoRequest;
import dev.nupa.node.admin.Neighbor;
import dev.nupa.node.admin.Neighbors;
import dev.nupa.node.admin.NeighborsRequest;
import dev.nupa.node.admin.NodeInfo;
import dev.nupa.node.admin.Route;
import dev.nupa.node.admin.Routes;
import dev.nupa.node.admin.RoutesRequest;
import dev.nupa.node.admin.TcpConnection;
import dev.nupa.tcp.TcpLayer;
import dev.nupa.tcp.TcpState;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.server.StatusException;

/**
 * The Admin service of {@code admin.proto} over one node: each call reads the node's state on the node's
 * own event loop (handed over, never read beside it) and answers on the caller's.
 */
final class NodeAdmin extends AdminService {
    /** Connections listed when a request names no limit. */
    static final int DEFAULT_LIST_LIMIT = 1000;

    private final NupaNode node;
    private final String fabric;
    private final long started = System.nanoTime();

    NodeAdmin(NupaNode node, String fabric) {
        this.node = node;
        this.fabric = fabric;
    }

    /** {@code query}'s answer, computed on the node's event loop. */
    private <T> Future<T> onNode(Supplier<T> query) {
        Promise<T> answer = Promise.promise();
        try {
            node.link().execute(() -> {
                try {
                    answer.complete(query.get());
                } catch (RuntimeException e) {
                    answer.fail(e);
                }
            });
        } catch (RuntimeException e) { // the node is closing, or its hand-over queue is full
            answer.fail(new StatusException(GrpcStatus.UNAVAILABLE, "the node cannot take the call now: " + e.getMessage()));
        }
        return answer.future();
    }

    @Override
    public Future<NodeInfo> getInfo(InfoRequest request) {
        return onNode(() -> NodeInfo.newBuilder()
                .setFabric(fabric)
                .setFabricAddress(node.link().address())
                .setIpv4(Ipv4Address.toString(node.ip().address()))
                .setPrefixLength(node.ip().config().prefixLength())
                .setMtu(node.link().mtu())
                .setEventLoops(node.ip().loopGroup().loops())
                .setUptimeMs((System.nanoTime() - started) / 1_000_000)
                .setPid((int) ProcessHandle.current().pid())
                .build());
    }

    @Override
    public Future<Counters> getCounters(CountersRequest request) {
        String layer = request.getLayer();
        String bad = NodeCounters.checkLayer(layer);
        if (bad != null) {
            return Future.failedFuture(new StatusException(GrpcStatus.INVALID_ARGUMENT, bad));
        }
        return onNode(() -> {
            Counters.Builder b = Counters.newBuilder();
            for (NodeCounters.Value v : NodeCounters.snapshot(node, layer)) {
                b.addCounters(Counter.newBuilder().setLayer(v.layer()).setName(v.name()).setValue(v.value()));
            }
            return b.build();
        });
    }

    @Override
    public Future<Connections> listConnections(ConnectionsRequest request) {
        int limit = request.getLimit() == 0 ? DEFAULT_LIST_LIMIT : request.getLimit();
        return onNode(() -> {
            Connections.Builder b = Connections.newBuilder();
            for (TcpLayer.ConnectionView c : node.tcp().list(limit + 1)) {
                if (b.getTcpCount() == limit) {
                    b.setTruncated(true);
                    break;
                }
                b.addTcp(TcpConnection.newBuilder()
                        .setLocal(Ipv4Address.toString(c.localIp()) + ":" + c.localPort())
                        .setRemote(Ipv4Address.toString(c.remoteIp()) + ":" + c.remotePort())
                        .setState(c.state().name())
                        .setRecvQueue(c.recvQueue())
                        .setSendQueue(c.sendQueue()));
            }
            for (Map.Entry<TcpState, Integer> e : node.tcp().states().entrySet()) {
                b.putTcpStates(e.getKey().name(), e.getValue());
            }
            return b.build();
        });
    }

    @Override
    public Future<Neighbors> listNeighbors(NeighborsRequest request) {
        return onNode(() -> {
            Neighbors.Builder b = Neighbors.newBuilder();
            NeighborDirectory directory = node.ip().neighbors();
            directory.rescan(); // as the fabric is now: the directory otherwise learns a peer only when it needs it
            for (NeighborDirectory.Binding n : directory.bindings()) {
                b.addNeighbors(Neighbor.newBuilder().setIpv4(Ipv4Address.toString(n.ipv4()))
                        .setPrefixLength(n.prefixLength()).setFabricAddress(n.node()));
            }
            return b.build();
        });
    }

    @Override
    public Future<Routes> listRoutes(RoutesRequest request) {
        return onNode(() -> {
            Routes.Builder b = Routes.newBuilder();
            for (dev.nupa.ip.Route r : node.ip().routes().routes()) {
                b.addRoutes(Route.newBuilder().setPrefix(Ipv4Address.toString(r.prefix())).setPrefixLength(r.prefixLength())
                        .setGateway(r.onLink() ? "" : Ipv4Address.toString(r.gateway())));
            }
            return b.build();
        });
    }
}
