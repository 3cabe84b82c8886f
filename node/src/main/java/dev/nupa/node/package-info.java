/**
 * A node assembled: {@link dev.nupa.node.NupaNode} and {@link dev.nupa.node.NodeConfig} build it with the transport's
 * node builder (RDMA and a gateway as its layers), and its counters and metrics ({@link dev.nupa.node.NodeCounters},
 * {@link dev.nupa.node.NodeMetrics}). The command line is in {@code node.cli}, the gRPC endpoints in {@code node.grpc}.
 */
package dev.nupa.node;
