package dev.nupa.ip;

import java.util.ArrayList;
import java.util.List;

import dev.nupa.ip.wire.Ipv4Address;
import dev.nupa.l2.Link;
import dev.nupa.l2.NeighborDirectory;

/**
 * The multicast groups a node joined (RFC 1112, host level 2), counted per joiner, and the node's bindings in its
 * node table entry: its address and its groups, which senders on the fabric read in place of IGMP. Held by the
 * node's primary loop ({@link Ipv4Stack}), on its thread.
 */
final class MulticastGroups {
    /** Linux's default net.ipv4.igmp_max_memberships; the node table entry holds a few more. */
    static final int MAX_GROUPS = 20;
    private final int[] groups = new int[MAX_GROUPS];
    private final int[] groupUsers = new int[MAX_GROUPS];
    private int groupCount;
    private final Link link;
    private final NeighborDirectory neighbors;
    private final IpConfig config;
    private final LoopGroup loopGroup;
    private final int loop;

    MulticastGroups(Link link, NeighborDirectory neighbors, IpConfig config, LoopGroup loopGroup, int loop) {
        this.link = link;
        this.neighbors = neighbors;
        this.config = config;
        this.loopGroup = loopGroup;
        this.loop = loop;
    }

    /** Publishes the node's address and the multicast groups it joined in its node table entry (the fabric's IGMP). */
    void publish() {
        List<NeighborDirectory.Binding> own = new ArrayList<>();
        own.add(new NeighborDirectory.Binding(config.address(), config.prefixLength(), link.address()));
        for (int i = 0; i < groupCount; i++) {
            own.add(new NeighborDirectory.Binding(groups[i], 32, link.address()));
        }
        neighbors.publish(own);
    }

    /**
     * Joins multicast group {@code group} (224.0.0.0/4) for the node: datagrams to it are received, and senders on the
     * fabric learn the membership from the node table (no IGMP: the fabric is one link whose members can be read).
     * Counted per joiner; {@link #leave} as often leaves. On the primary loop, which holds the node's bindings.
     */
    void join(int group) {
        link.checkOwner();
        checkGroup(group);
        for (int i = 0; i < groupCount; i++) {
            if (groups[i] == group) {
                groupUsers[i]++;
                return;
            }
        }
        if (groupCount == MAX_GROUPS) {
            throw new IllegalStateException("No buffer space available: node " + Ipv4Address.toString(config.address())
                    + " is in " + MAX_GROUPS + " multicast groups, as many as Linux allows by default"
                    + " (igmp_max_memberships); leave one first");
        }
        groups[groupCount] = group;
        groupUsers[groupCount] = 1;
        groupCount++;
        publish();
    }

    /** Leaves {@code group} once; the node stops receiving it when its last joiner left. Returns whether it had joined. */
    boolean leave(int group) {
        link.checkOwner();
        checkGroup(group);
        for (int i = 0; i < groupCount; i++) {
            if (groups[i] == group) {
                if (--groupUsers[i] == 0) {
                    groupCount--;
                    groups[i] = groups[groupCount];
                    groupUsers[i] = groupUsers[groupCount];
                    publish();
                }
                return true;
            }
        }
        return false;
    }

    private void checkGroup(int group) {
        if (!Ipv4Address.isMulticast(group)) {
            throw new IllegalArgumentException(Ipv4Address.toString(group) + " is not a multicast group address;"
                    + " choose one in 224.0.0.0/4 (e.g. 239.1.2.3)");
        }
        if (loop != 0) {
            throw new IllegalStateException("multicast groups are joined on the node's first event loop, which holds its"
                    + " bindings; this is loop " + loop + " of " + loopGroup);
        }
    }

    /** Whether the node joined {@code group}. */
    boolean contains(int group) {
        for (int i = 0; i < groupCount; i++) {
            if (groups[i] == group) {
                return true;
            }
        }
        return false;
    }
}
