package dev.nupa.examples;

import java.nio.file.Path;

import dev.nupa.examples.grpc.GreeterGrpcClient;
import dev.nupa.examples.grpc.HelloReply;
import dev.nupa.examples.grpc.HelloRequest;
import dev.nupa.transport.NupaVertx;
import dev.nupa.transport.StackConfig;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.net.SocketAddress;
import io.vertx.grpc.client.GrpcClient;

/**
 * A plain Vert.x HTTP and gRPC client on a fabric node (default 1, 10.0.0.2) calling
 * {@link HelloServer} on another: a few GETs over one keep-alive connection and a gRPC SayHello
 * (stubs generated from hello.proto), printed; then it leaves the fabric.
 */
public final class HelloClient {
    private HelloClient() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 3) {
            System.err.println("usage: HelloClient FABRIC_FILE [NODE_ADDRESS [SERVER_IP]]   (e.g. /dev/shm/f1 1 10.0.0.1)");
            System.exit(2);
        }
        int node = args.length > 1 ? Integer.parseInt(args[1]) : 1;
        String server = args.length > 2 ? args[2] : "10.0.0.1";
        Vertx vertx = NupaVertx.create(StackConfig.defaults(Path.of(args[0]), node));
        try {
            HttpClient client = vertx.createHttpClient();
            for (int i = 0; i < 3; i++) {
                long t0 = System.nanoTime();
                String body = client.request(HttpMethod.GET, 8080, server, "/hello")
                        .compose(req -> req.send().compose(HttpClientResponse::body)).await().toString();
                System.out.printf("GET http://%s:8080/hello -> %s (%.0f us)%n", server, body.strip(), (System.nanoTime() - t0) / 1e3);
            }
            client.close().await();
            GrpcClient grpc = GrpcClient.client(vertx);
            GreeterGrpcClient greeter = GreeterGrpcClient.create(grpc, SocketAddress.inetSocketAddress(HelloServer.GRPC_PORT, server));
            long t0 = System.nanoTime();
            HelloReply reply = greeter.sayHello(HelloRequest.newBuilder().setName("fabric").build()).await();
            System.out.printf("gRPC Greeter.SayHello at %s:%d -> %s (%.0f us)%n", server, HelloServer.GRPC_PORT, reply.getMessage(),
                    (System.nanoTime() - t0) / 1e3);
            grpc.close().await();
        } finally {
            vertx.close().await();
        }
    }
}
