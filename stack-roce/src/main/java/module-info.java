/**
 * RDMA over the fabric and RoCEv2: the verbs ({@code dev.nupa.roce}), the connection manager, the Vert.x and RxJava
 * adapters. The RC/UD transport behind the verbs ({@code dev.nupa.roce.transport}) and the wire formats
 * ({@code dev.nupa.roce.wire}) are the module's own.
 */
module dev.nupa.roce {
    requires transitive dev.nupa.ip;
    requires transitive io.vertx.core;
    requires transitive io.reactivex.rxjava3;

    exports dev.nupa.roce;
    exports dev.nupa.roce.cm;
    exports dev.nupa.roce.ip;
    exports dev.nupa.roce.ring;
    exports dev.nupa.roce.verbs;
    exports dev.nupa.roce.vertx;
}
