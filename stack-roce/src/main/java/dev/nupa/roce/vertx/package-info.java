/**
 * The adapters to Vert.x and RxJava: {@link dev.nupa.roce.vertx.NodeRdma} runs a node's RDMA context and CM on its
 * datapath, the work-ring proxy and RDMA target verticles use it, {@link dev.nupa.roce.vertx.RdmaRx} views a completion queue as a {@code Flowable}.
 */
package dev.nupa.roce.vertx;
