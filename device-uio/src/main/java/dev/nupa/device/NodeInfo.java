package dev.nupa.device;

/** A snapshot of one node table entry, with the occupancy of its receive rings. */
public record NodeInfo(int address, String state, int generation, long pid, long heartbeat, long joinedMillis,
                       long ringOccupancy, FabricCounters counters) {
}
