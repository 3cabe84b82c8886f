/**
 * A whole node as a peer of stock perftest ({@code nupa perf perftest}) and of rdma_cm's rping ({@code nupa rping}),
 * speaking their side channels.
 */
package dev.nupa.node.perftest;
