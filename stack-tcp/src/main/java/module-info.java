/** TCP over the IP layer. */
module dev.nupa.tcp {
    requires transitive dev.nupa.ip;
    requires jdk.management; // BufferBudget reads the heap's limit through HotSpotDiagnosticMXBean

    exports dev.nupa.tcp;
}
