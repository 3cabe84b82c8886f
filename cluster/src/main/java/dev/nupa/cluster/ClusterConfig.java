package dev.nupa.cluster;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * How a fabric node joins a Vert.x cluster whose members and event-bus subscriptions a cluster manager (Hazelcast or
 * Infinispan, {@link Manager}) keeps, and where the manager's own traffic goes. It goes over Linux sockets: the manager
 * binds {@code host:port} (loopback by default; the host's address for members on other hosts) and finds the others at
 * {@code members}, a fixed list of {@code host:port} (TCP join; no multicast). The event bus's own connections go over
 * the fabric, to the node's IPv4 address and {@code eventBusPort} (0: a free port), see {@link NupaCluster}.
 *
 * @param manager          the cluster manager: Hazelcast or Infinispan (every member of a cluster runs the same one)
 * @param host             the address the manager's membership sockets bind
 * @param port             their port (Hazelcast's default is 5701, JGroups' 7800)
 * @param members          every member's {@code host:port}, this one's included (empty: this one alone)
 * @param name             the cluster's name; members of other names on the same ports do not join it
 * @param failureDetection how long a member may be silent before the others drop it (its consumers with it)
 * @param eventBusPort     the event bus's TCP port on the node's fabric address (0: a free one)
 */
public record ClusterConfig(Manager manager, String host, int port, List<String> members, String name,
                            Duration failureDetection, int eventBusPort) {
    /** Vert.x's cluster managers this module configures. */
    public enum Manager {
        /** Vert.x's Hazelcast cluster manager ({@code vertx-hazelcast}), the default. */
        HAZELCAST,
        /** Vert.x's Infinispan cluster manager ({@code vertx-infinispan}) on a JGroups TCP stack. */
        INFINISPAN;

        /** {@code hazelcast} or {@code infinispan}, as a command line writes it. */
        public static Manager parse(String name) {
            for (Manager m : values()) {
                if (m.toString().equals(name)) {
                    return m;
                }
            }
            throw new IllegalArgumentException("cluster manager \"" + name + "\" is not known: pass hazelcast or infinispan");
        }

        @Override
        public String toString() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    public ClusterConfig {
        if (manager == null) {
            throw new IllegalArgumentException("no cluster manager: pass Manager.HAZELCAST or Manager.INFINISPAN");
        }
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("no membership host: pass the address the cluster manager binds (127.0.0.1 for one machine)");
        }
        checkPort(port, "membership port");
        members = List.copyOf(members);
        for (String m : members) {
            checkMember(m);
        }
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException("no cluster name: members join the cluster of their name; pass one such as \"nupa\"");
        }
        if (failureDetection == null || failureDetection.toSeconds() < 1) {
            throw new IllegalArgumentException("failure detection of " + failureDetection + ": Hazelcast counts in whole seconds; pass 1 s or more");
        }
        if (eventBusPort != 0) {
            checkPort(eventBusPort, "event bus port");
        }
    }

    /**
     * Hazelcast on 127.0.0.1:{@code port}, joining the members at {@code members} ({@code host:port}, this one's
     * included), cluster "nupa", members dropped after 10 s of silence, the event bus on a free port
     * ({@link #withManager} for Infinispan).
     */
    public static ClusterConfig loopback(int port, List<String> members) {
        return new ClusterConfig(Manager.HAZELCAST, "127.0.0.1", port, members, "nupa", Duration.ofSeconds(10), 0);
    }

    public ClusterConfig withManager(Manager manager) {
        return new ClusterConfig(manager, host, port, members, name, failureDetection, eventBusPort);
    }

    public ClusterConfig withHost(String host) {
        return new ClusterConfig(manager, host, port, members, name, failureDetection, eventBusPort);
    }

    public ClusterConfig withName(String name) {
        return new ClusterConfig(manager, host, port, members, name, failureDetection, eventBusPort);
    }

    public ClusterConfig withFailureDetection(Duration failureDetection) {
        return new ClusterConfig(manager, host, port, members, name, failureDetection, eventBusPort);
    }

    public ClusterConfig withEventBusPort(int eventBusPort) {
        return new ClusterConfig(manager, host, port, members, name, failureDetection, eventBusPort);
    }

    /** The members to contact, this one's {@code host:port} among them. */
    List<String> allMembers() {
        String self = host + ":" + port;
        if (members.contains(self)) {
            return members;
        }
        return Stream.concat(Stream.of(self), members.stream()).toList();
    }

    private static void checkPort(int port, String what) {
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException(what + " " + port + " is not a TCP port: pass 1 to 65535");
        }
    }

    private static void checkMember(String member) {
        int colon = member == null ? -1 : member.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("member \"" + member + "\" is not host:port: write each member as 127.0.0.1:5701");
        }
        try {
            checkPort(Integer.parseInt(member.substring(colon + 1)), "member " + member + "'s port");
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("member \"" + member + "\" has no numeric port: write each member as 127.0.0.1:5701");
        }
    }
}
