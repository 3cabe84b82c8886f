/**
 * A node assembled ({@link dev.nupa.node.NupaNode}, {@link dev.nupa.node.NodeConfig}: the Vert.x transport, RDMA,
 * a gateway), its gRPC endpoints and OpenTelemetry, and the {@code nupa} command line ({@link dev.nupa.node.Main}),
 * which also serves the perf tools of module perf.
 */
package dev.nupa.node;
