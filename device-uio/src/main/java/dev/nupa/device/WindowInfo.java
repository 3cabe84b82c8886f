package dev.nupa.device;

/** A snapshot of one active window table entry. */
public record WindowInfo(int id, int owner, int ownerGeneration, long offset, long length, int access) {
}
