/**
 * The {@code nupa} command line: {@link dev.nupa.node.cli.Main} and its commands (node, ping, capture, checks, fabric,
 * demo, run), and the perf tools of module perf beside the node's own ({@code perf grpc-endpoint}).
 */
package dev.nupa.node.cli;
