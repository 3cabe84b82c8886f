/** TCP over the IP layer. */
@SuppressWarnings("requires-automatic") // Agrona names its module in its manifest only
module dev.nupa.tcp {
    requires transitive dev.nupa.ip;
    requires org.agrona; // Long2LongHashMap: the connection and TIME-WAIT indexes
    requires jdk.management; // BufferBudget reads the heap's limit through HotSpotDiagnosticMXBean

    exports dev.nupa.tcp;
    exports dev.nupa.tcp.wire;
}
