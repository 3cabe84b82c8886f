/**
 * The adapters to Vert.x and RxJava: {@link dev.nupa.roce.vertx.RoceVerticle} deploys a node's RDMA context and CM on
 * its datapath, {@link dev.nupa.roce.vertx.RdmaRx} views a completion queue as a {@code Flowable}.
 */
package dev.nupa.roce.vertx;
