package dev.nupa.l2;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * A snapshot of a link's counters, taken by {@link Link#counters()} from any thread.
 *
 * @param protocols     one entry per protocol seen (registered, or sent); byte counts are payload bytes
 *                      (link header excluded). An entry with protocol {@link #OTHER} sums sends of
 *                      protocols beyond the link's table.
 * @param drops         received frames dropped, by reason (every reason present, zero or not)
 * @param captureErrors exceptions thrown by the packet capture
 * @param ringFrames    frames taken from each receive ring, ring 0 first (dropped ones included; docs/link-layer.md,
 *                      "Service levels")
 */
public record LinkCounters(List<Protocol> protocols, Map<DropReason, Long> drops, long captureErrors, List<Long> ringFrames) {
    /** The protocol number of the entry that sums protocols beyond the table. */
    public static final int OTHER = -1;

    public record Protocol(int protocol, long framesIn, long bytesIn, long framesOut, long bytesOut) {
    }

    public LinkCounters {
        protocols = List.copyOf(protocols);
        drops = Map.copyOf(new EnumMap<>(drops));
        ringFrames = List.copyOf(ringFrames);
    }

    /** Frames taken from receive ring {@code ring}, zero for a ring the node does not have. */
    public long ringFrames(int ring) {
        return ring >= 0 && ring < ringFrames.size() ? ringFrames.get(ring) : 0;
    }

    /** The counters of {@code protocol}, zero if it was never seen. */
    public Protocol protocol(int protocol) {
        for (Protocol p : protocols) {
            if (p.protocol() == protocol) {
                return p;
            }
        }
        return new Protocol(protocol, 0, 0, 0, 0);
    }

    public long drops(DropReason reason) {
        return drops.getOrDefault(reason, 0L);
    }

    public long totalDrops() {
        return drops.values().stream().mapToLong(Long::longValue).sum();
    }

    public long framesIn() {
        return protocols.stream().mapToLong(Protocol::framesIn).sum();
    }

    public long framesOut() {
        return protocols.stream().mapToLong(Protocol::framesOut).sum();
    }
}
