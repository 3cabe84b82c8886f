/**
 * Clustered Vert.x on a fabric node: {@link dev.nupa.cluster.NupaCluster} starts one with Vert.x's Hazelcast cluster manager
 * (membership over Linux sockets) and the event bus over the fabric.
 */
package dev.nupa.cluster;
