package dev.nupa.examples.client;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import com.google.protobuf.ByteString;
import dev.nupa.node.admin.AdminGrpcClient;
import dev.nupa.node.admin.InfoRequest;
import dev.nupa.node.admin.Neighbor;
import dev.nupa.node.admin.NeighborsRequest;
import dev.nupa.node.admin.NodeInfo;
import dev.nupa.node.sockets.Open;
import dev.nupa.node.sockets.SocketsGrpcClient;
import dev.nupa.node.sockets.TcpClientMessage;
import dev.nupa.node.sockets.TcpServerMessage;
import dev.nupa.node.verbs.Accept;
import dev.nupa.node.verbs.Connect;
import dev.nupa.node.verbs.CreateCq;
import dev.nupa.node.verbs.CreateQp;
import dev.nupa.node.verbs.PostRecv;
import dev.nupa.node.verbs.PostSend;
import dev.nupa.node.verbs.ReadMemory;
import dev.nupa.node.verbs.RegMr;
import dev.nupa.node.verbs.Sge;
import dev.nupa.node.verbs.VerbsEvent;
import dev.nupa.node.verbs.VerbsRequest;
import dev.nupa.node.verbs.WorkCompletion;
import dev.nupa.node.verbs.WriteMemory;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;
import io.vertx.grpc.client.GrpcClientOptions;

/**
 * A program in another process that uses fabric nodes through their gRPC endpoints ({@code nupa node --grpc}),
 * with the stubs generated from the node's {@code .proto} files and Vert.x's gRPC client, over Linux TCP:
 * <ol>
 *   <li>Admin: the node's address and the neighbors it knows;</li>
 *   <li>Sockets (with {@code ECHO_HOST:PORT}): a TCP connection the node opens to an echo server on the fabric,
 *       a line sent through it and read back;</li>
 *   <li>Verbs (with {@code PEER_ENDPOINT}, the endpoint of a second node): a session on each node, the peer's
 *       accepting on port 4791 and ours connecting to it through the CM, then an RDMA WRITE with immediate
 *       from our region into the peer's; both completions are printed and the bytes read back from the peer.</li>
 * </ol>
 * A bearer token, if the endpoints want one, comes from the environment variable {@code NUPA_GRPC_TOKEN}.
 */
public final class NodeClient {
    private static final int RDMA_PORT = 4791;
    private static final int REMOTE_WRITE_READ = 1 | 2 | 4; // IBV_ACCESS_LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ

    private NodeClient() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 3) {
            System.err.println("usage: NodeClient GRPC_HOST:PORT [ECHO_HOST:PORT [PEER_GRPC_HOST:PORT]]"
                    + "   (e.g. 127.0.0.1:50100 10.0.0.2:7 127.0.0.1:50101)");
            System.exit(2);
        }
        Vertx vertx = Vertx.vertx();
        GrpcClient grpc = GrpcClient.client(vertx, new GrpcClientOptions());
        int status = 0;
        try {
            SocketAddress node = address(args[0]);
            NodeInfo info = admin(grpc, node).getInfo(InfoRequest.getDefaultInstance()).await();
            System.out.printf("node %s/%d at fabric address %d of %s, MTU %d%n", info.getIpv4(), info.getPrefixLength(),
                    info.getFabricAddress(), info.getFabric(), info.getMtu());
            for (Neighbor n : admin(grpc, node).listNeighbors(NeighborsRequest.getDefaultInstance()).await().getNeighborsList()) {
                System.out.printf("  neighbor %s/%d at fabric address %d%n", n.getIpv4(), n.getPrefixLength(), n.getFabricAddress());
            }
            if (args.length > 1) {
                echo(grpc, node, args[1]);
            }
            if (args.length > 2) {
                rdmaWrite(grpc, node, address(args[2]), info.getIpv4());
            }
        } catch (Exception e) {
            // One line, as a command line should: a node that is not there, a refused call, a failed request.
            System.err.println("NodeClient: " + e.getClass().getSimpleName() + ": " + e.getMessage()
                    + " (is `nupa node --grpc` running at " + args[0] + (args.length > 2 ? " and " + args[2] : "") + "?)");
            status = 1;
        } finally {
            grpc.close().await();
            vertx.close().await();
        }
        System.exit(status);
    }

    private static AdminGrpcClient admin(GrpcClient grpc, SocketAddress node) {
        return AdminGrpcClient.create(grpc, node);
    }

    /** Sockets.Connect: {@code open}, then the bytes; the answers are {@code opened}, then the peer's bytes. */
    private static void echo(GrpcClient grpc, SocketAddress node, String echoAt) {
        String[] hp = echoAt.split(":");
        byte[] line = "hello through the node\n".getBytes(StandardCharsets.UTF_8);
        Promise<String> opened = Promise.promise();
        Promise<byte[]> echoed = Promise.promise();
        Buffer got = Buffer.buffer();
        long t0 = System.nanoTime();
        SocketsGrpcClient.create(grpc, node).connect((requests, err) -> {
            if (err != null) {
                return;
            }
            requests.write(TcpClientMessage.newBuilder().setOpen(Open.newBuilder().setHost(hp[0]).setPort(Integer.parseInt(hp[1]))).build());
            requests.write(TcpClientMessage.newBuilder().setData(ByteString.copyFrom(line)).build());
            echoed.future().onComplete(ar -> requests.end()); // ending the request stream closes the connection
        }).onSuccess(answers -> answers.handler(m -> {
            if (m.getKindCase() == TcpServerMessage.KindCase.OPENED) {
                opened.tryComplete(m.getOpened().getLocal() + " -> " + m.getOpened().getRemote());
            } else {
                got.appendBytes(m.getData().toByteArray());
                if (got.length() >= line.length) {
                    echoed.tryComplete(got.getBytes());
                }
            }
        }).exceptionHandler(echoed::tryFail)).onFailure(e -> {
            opened.tryFail(e);
            echoed.tryFail(e);
        });
        String conn = opened.future().await();
        byte[] back = echoed.future().await();
        System.out.printf("TCP %s through the node: sent %d bytes, %s back (%.0f us)%n", conn, line.length,
                Arrays.equals(line, back) ? "the same" : "different bytes", (System.nanoTime() - t0) / 1e3);
    }

    /** Two verbs sessions, one per node: the peer's accepts, ours connects, and we WRITE with immediate into the peer's region. */
    private static void rdmaWrite(GrpcClient grpc, SocketAddress node, SocketAddress peerNode, String ourIp) {
        VerbsSession peer = VerbsSession.open(grpc, peerNode);
        VerbsSession ours = VerbsSession.open(grpc, node);
        try {
            VerbsEvent peerMr = peer.call(VerbsRequest.newBuilder().setRegMr(RegMr.newBuilder().setLength(4096).setAccess(REMOTE_WRITE_READ)));
            int peerCq = peer.call(VerbsRequest.newBuilder().setCreateCq(CreateCq.newBuilder().setCqe(16))).getCq();
            int peerQp = peer.call(VerbsRequest.newBuilder().setCreateQp(CreateQp.newBuilder().setSendCq(peerCq).setRecvCq(peerCq))).getQpNum();
            peer.call(VerbsRequest.newBuilder().setPostRecv(PostRecv.newBuilder().setQpNum(peerQp).setWrId(1)));
            Future<VerbsEvent> accepted = peer.send(VerbsRequest.newBuilder().setAccept(Accept.newBuilder().setQpNum(peerQp).setPort(RDMA_PORT)));
            String peerIp = admin(grpc, peerNode).getInfo(InfoRequest.getDefaultInstance()).await().getIpv4();

            int lkey = ours.call(VerbsRequest.newBuilder().setRegMr(RegMr.newBuilder().setLength(4096).setAccess(REMOTE_WRITE_READ)))
                    .getMr().getLkey();
            int cq = ours.call(VerbsRequest.newBuilder().setCreateCq(CreateCq.newBuilder().setCqe(16))).getCq();
            int qp = ours.call(VerbsRequest.newBuilder().setCreateQp(CreateQp.newBuilder().setSendCq(cq).setRecvCq(cq))).getQpNum();
            byte[] text = ("written by " + ourIp + " with RDMA").getBytes(StandardCharsets.UTF_8);
            ours.call(VerbsRequest.newBuilder().setWriteMemory(WriteMemory.newBuilder().setLkey(lkey).setData(ByteString.copyFrom(text))));
            VerbsEvent connected = ours.call(VerbsRequest.newBuilder().setConnect(Connect.newBuilder().setQpNum(qp).setHost(peerIp)
                    .setPort(RDMA_PORT)));
            accepted.await();
            System.out.printf("RDMA: QP %d of %s connected to QP %d of %s%n", qp, ourIp, connected.getConnected().getPeerQpNum(), peerIp);

            ours.call(VerbsRequest.newBuilder().setPostSend(PostSend.newBuilder().setQpNum(qp).setWrId(2).setOpcode(1) // RDMA_WRITE_WITH_IMM
                    .setSendFlags(2) // SIGNALED
                    .setImmData(42).addSg(Sge.newBuilder().setLkey(lkey).setLength(text.length))
                    .setRemoteAddr(peerMr.getMr().getAddr()).setRkey(peerMr.getMr().getRkey())));
            print("our", ours.completion());
            print("the peer's", peer.completion());
            byte[] landed = peer.call(VerbsRequest.newBuilder().setReadMemory(ReadMemory.newBuilder().setLkey(peerMr.getMr().getLkey())
                    .setLength(text.length))).getData().toByteArray();
            System.out.printf("the peer's region now holds \"%s\"%n", new String(landed, StandardCharsets.UTF_8));
        } finally {
            ours.end(); // ending the calls disconnects and destroys what the sessions made
            peer.end();
        }
    }

    private static void print(String whose, WorkCompletion wc) {
        System.out.printf("%s completion: wr_id %d %s opcode %d, %d bytes%s%n", whose, wc.getWrId(), wc.getStatusName(), wc.getOpcode(),
                wc.getByteLen(), wc.getWithImm() ? ", immediate " + wc.getImmData() : "");
    }

    private static SocketAddress address(String hostPort) {
        int colon = hostPort.lastIndexOf(':');
        if (colon < 1) {
            System.err.println("NodeClient: want HOST:PORT, not " + hostPort);
            System.exit(2);
        }
        return SocketAddress.inetSocketAddress(Integer.parseInt(hostPort.substring(colon + 1)), hostPort.substring(0, colon));
    }
}
