package dev.nupa.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.MessageLite;
import dev.nupa.node.admin.AdminGrpcClient;
import dev.nupa.node.admin.Connections;
import dev.nupa.node.admin.ConnectionsRequest;
import dev.nupa.node.admin.Counter;
import dev.nupa.node.admin.Counters;
import dev.nupa.node.admin.CountersRequest;
import dev.nupa.node.admin.InfoRequest;
import dev.nupa.node.admin.Neighbors;
import dev.nupa.node.admin.NeighborsRequest;
import dev.nupa.node.admin.NodeInfo;
import dev.nupa.node.admin.Routes;
import dev.nupa.node.admin.RoutesRequest;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClient;
import io.vertx.core.net.NetSocket;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.InvalidStatusException;
import io.vertx.grpc.common.GrpcMessageDecoder;
import io.vertx.grpc.common.GrpcMessageEncoder;
import io.vertx.grpc.common.GrpcStatus;
import io.vertx.grpc.common.ServiceMethod;
import io.vertx.grpc.common.ServiceName;
import io.vertx.grpc.health.v1.HealthCheckRequest;
import io.vertx.grpc.health.v1.HealthCheckResponse;
import io.vertx.grpc.reflection.v1.ServerReflectionRequest;
import io.vertx.grpc.reflection.v1.ServerReflectionResponse;
import io.vertx.grpc.reflection.v1.ServiceResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The node's management endpoint, called as a tool in another process would: over Linux TCP with Vert.x's
 * gRPC client, the Admin service's answers checked against the node, the standard health and reflection
 * services, and the bearer token enforced.
 */
class GrpcEndpointTest {
    private Path fabric;
    private NupaNode node;
    private NupaNode peer;
    private GrpcEndpoint endpoint;
    private Vertx tool;
    private GrpcClient grpc;

    @BeforeEach
    void start() throws Exception {
        fabric = Path.of("/dev/shm/nupa-test-grpc-" + UUID.randomUUID());
        node = NupaNode.create(NodeConfig.defaults(fabric, 0)).await(30, TimeUnit.SECONDS);
        peer = NupaNode.create(NodeConfig.defaults(fabric, 1)).await(30, TimeUnit.SECONDS);
        tool = Vertx.vertx();
        grpc = GrpcClient.client(tool);
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (endpoint != null) {
                endpoint.close().await(10, TimeUnit.SECONDS);
            }
            tool.close().await(10, TimeUnit.SECONDS);
            peer.closeAndWait();
            node.closeAndWait();
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    private SocketAddress at() {
        return SocketAddress.inetSocketAddress(endpoint.port(), "127.0.0.1");
    }

    private static final ServiceName ADMIN = ServiceName.create("nupa.admin.v1", "Admin");

    /** One unary call through Vert.x's generic client, with {@code authorization} if not null. */
    private <Req extends MessageLite, Resp> Future<Resp> call(ServiceName service, String method, Req request,
                                                               GrpcMessageDecoder<Resp> decoder, String authorization) {
        ServiceMethod<Resp, Req> m = ServiceMethod.client(service, method, GrpcMessageEncoder.encoder(), decoder);
        return grpc.request(at(), m).compose(req -> {
            if (authorization != null) {
                req.headers().set("authorization", authorization);
            }
            req.end(request);
            return req.response().compose(resp -> resp.last());
        });
    }

    @Test
    void theAdminServiceAnswersWithTheNodesState() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        AdminGrpcClient admin = AdminGrpcClient.create(grpc, at());

        NodeInfo info = admin.getInfo(InfoRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        assertEquals(fabric.toString(), info.getFabric());
        assertEquals(0, info.getFabricAddress());
        assertEquals("10.0.0.1", info.getIpv4());
        assertEquals(24, info.getPrefixLength());
        assertEquals(node.link().mtu(), info.getMtu());
        assertEquals(1, info.getEventLoops());
        assertEquals(ProcessHandle.current().pid(), info.getPid());

        // A TCP connection from the peer node, seen by the Admin service with its addresses and state.
        node.vertx().createNetServer().connectHandler(s -> { }).listen(7, "0.0.0.0").await(10, TimeUnit.SECONDS);
        NetClient nc = peer.vertx().createNetClient();
        NetSocket s = nc.connect(7, "10.0.0.1").await(10, TimeUnit.SECONDS);
        Connections conns = admin.listConnections(ConnectionsRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        assertEquals(1, conns.getTcpCount(), conns.toString());
        assertEquals("10.0.0.1:7", conns.getTcp(0).getLocal());
        assertEquals("10.0.0.2:" + s.localAddress().port(), conns.getTcp(0).getRemote());
        assertEquals("ESTABLISHED", conns.getTcp(0).getState());
        assertEquals(1, conns.getTcpStatesOrThrow("ESTABLISHED"));
        Connections none = admin.listConnections(ConnectionsRequest.newBuilder().setLimit(0).build()).await(10, TimeUnit.SECONDS);
        assertEquals(false, none.getTruncated());

        Counters tcp = admin.getCounters(CountersRequest.newBuilder().setLayer("tcp").build()).await(10, TimeUnit.SECONDS);
        assertEquals(node.tcp().counters().size(), tcp.getCountersCount(), "every TCP counter, and only those");
        assertEquals(1, value(tcp.getCountersList(), "tcp", "connections_accepted"));
        Counters all = admin.getCounters(CountersRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        for (String layer : List.of("link", "ip", "tcp", "rdma")) {
            assertTrue(all.getCountersList().stream().anyMatch(c -> c.getLayer().equals(layer)), "counters of " + layer);
        }
        assertTrue(value(all.getCountersList(), "ip", "in_receives") > 0);
        InvalidStatusException bad = assertInstanceOf(InvalidStatusException.class, assertThrows(Exception.class,
                () -> admin.getCounters(CountersRequest.newBuilder().setLayer("udp").build()).await(10, TimeUnit.SECONDS)));
        assertEquals(GrpcStatus.INVALID_ARGUMENT, bad.actualStatus());

        Neighbors neighbors = admin.listNeighbors(NeighborsRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        assertTrue(neighbors.getNeighborsList().stream().anyMatch(n -> n.getIpv4().equals("10.0.0.2") && n.getFabricAddress() == 1),
                "the peer node is a neighbor: " + neighbors);
        Routes routes = admin.listRoutes(RoutesRequest.getDefaultInstance()).await(10, TimeUnit.SECONDS);
        assertTrue(routes.getRoutesList().stream().anyMatch(r -> r.getPrefix().equals("10.0.0.0") && r.getPrefixLength() == 24
                && r.getGateway().isEmpty()), "the on-link route of the subnet: " + routes);
        s.close().await(10, TimeUnit.SECONDS);
        nc.close().await(10, TimeUnit.SECONDS);
    }

    private static long value(List<Counter> counters, String layer, String name) {
        return counters.stream().filter(c -> c.getLayer().equals(layer) && c.getName().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no counter " + layer + "." + name)).getValue();
    }

    @Test
    void healthAndReflectionAnswerAsTheStandardServices() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, null).await(10, TimeUnit.SECONDS);
        HealthCheckResponse health = call(ServiceName.create("grpc.health.v1", "Health"), "Check",
                HealthCheckRequest.newBuilder().setService(GrpcEndpoint.ADMIN_SERVICE).build(),
                GrpcMessageDecoder.<HealthCheckResponse>decoder(HealthCheckResponse.newBuilder()), null).await(10, TimeUnit.SECONDS);
        assertEquals(HealthCheckResponse.ServingStatus.SERVING, health.getStatus());

        ServerReflectionResponse listed = call(ServiceName.create("grpc.reflection.v1", "ServerReflection"),
                "ServerReflectionInfo", ServerReflectionRequest.newBuilder().setListServices("").build(),
                GrpcMessageDecoder.<ServerReflectionResponse>decoder(ServerReflectionResponse.newBuilder()), null).await(10, TimeUnit.SECONDS);
        List<String> names = listed.getListServicesResponse().getServiceList().stream().map(ServiceResponse::getName).toList();
        assertTrue(names.contains(GrpcEndpoint.ADMIN_SERVICE), "reflection lists the Admin service: " + names);
    }

    @Test
    void withATokenACallWithoutItIsRefusedAndOneWithItAnswered() throws Exception {
        endpoint = GrpcEndpoint.start(node, fabric.toString(), "127.0.0.1", 0, "s3cret-token").await(10, TimeUnit.SECONDS);
        for (String wrong : new String[] {null, "Bearer guess", "s3cret-token"}) {
            Exception e = assertThrows(Exception.class, () -> call(ADMIN, "GetInfo", InfoRequest.getDefaultInstance(),
                    GrpcMessageDecoder.<NodeInfo>decoder(NodeInfo.newBuilder()), wrong).await(10, TimeUnit.SECONDS));
            assertEquals(GrpcStatus.UNAUTHENTICATED, assertInstanceOf(InvalidStatusException.class, e).actualStatus(),
                    "refused with " + wrong);
        }
        assertEquals(3, endpoint.refused());
        NodeInfo info = call(ADMIN, "GetInfo", InfoRequest.getDefaultInstance(), GrpcMessageDecoder.<NodeInfo>decoder(NodeInfo.newBuilder()),
                "Bearer s3cret-token").await(10, TimeUnit.SECONDS);
        assertEquals("10.0.0.1", info.getIpv4());
    }

    @Test
    void withoutATokenTheEndpointListensOnLoopbackOnly() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> GrpcEndpoint.start(node, fabric.toString(), "0.0.0.0", 0, null).await(10, TimeUnit.SECONDS));
        assertTrue(e.getMessage().contains("bearer token"), e.getMessage());
    }
}
