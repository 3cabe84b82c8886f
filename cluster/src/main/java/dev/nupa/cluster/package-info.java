/**
 * Clustered Vert.x on a fabric node: {@link dev.nupa.cluster.NupaCluster} starts one with Vert.x's Hazelcast or Infinispan
 * cluster manager (membership over Linux sockets) and the event bus over the fabric.
 */
package dev.nupa.cluster;
