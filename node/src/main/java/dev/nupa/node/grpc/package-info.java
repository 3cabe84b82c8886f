/**
 * A node's gRPC endpoints: the Admin, Sockets and Verbs services ({@link dev.nupa.node.grpc.GrpcEndpoint}).
 */
package dev.nupa.node.grpc;
