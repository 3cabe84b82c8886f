package dev.nupa.cluster;

import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.NetworkConfig;
import io.vertx.core.Completable;
import io.vertx.spi.cluster.hazelcast.ConfigUtil;
import io.vertx.spi.cluster.hazelcast.HazelcastClusterManager;

/**
 * Vert.x's Hazelcast cluster manager, its membership on Linux sockets: bound to {@link ClusterConfig#host} and
 * {@link ClusterConfig#port} alone (no auto-increment, so a taken port fails the start), members found by TCP join at the
 * listed addresses (multicast and auto-detection off), heartbeats every second and a member dropped after
 * {@link ClusterConfig#failureDetection} without one (Hazelcast's deadline failure detector). A join that fails says
 * where Hazelcast was to listen.
 */
final class HazelcastManager extends HazelcastClusterManager {
    private final ClusterConfig cluster;

    private HazelcastManager(Config config, ClusterConfig cluster) {
        super(config);
        this.cluster = cluster;
    }

    @Override
    public void join(Completable<Void> promise) {
        super.join((v, err) -> {
            if (err == null) {
                promise.succeed();
                return;
            }
            promise.fail(StartFailure.of("Hazelcast", cluster, err));
        });
    }

    static HazelcastManager create(ClusterConfig cluster) {
        Config c = ConfigUtil.loadConfig(); // Vert.x's default-cluster.xml: the maps and multimap its registry needs
        c.setClusterName(cluster.name());
        c.setProperty("hazelcast.local.localAddress", cluster.host());
        c.setProperty("hazelcast.socket.bind.any", "false");
        c.setProperty("hazelcast.phone.home.enabled", "false");
        c.setProperty("hazelcast.heartbeat.interval.seconds", "1");
        c.setProperty("hazelcast.max.no.heartbeat.seconds", Long.toString(cluster.failureDetection().toSeconds()));
        // Joins at once: the members are listed, so there is no discovery to wait for (default 5 s).
        c.setProperty("hazelcast.wait.seconds.before.join", "0");
        c.setProperty("hazelcast.graceful.shutdown.max.wait", "10");
        NetworkConfig network = c.getNetworkConfig();
        network.setPort(cluster.port()).setPortAutoIncrement(false);
        JoinConfig join = network.getJoin();
        join.getMulticastConfig().setEnabled(false);
        join.getAutoDetectionConfig().setEnabled(false);
        join.getTcpIpConfig().setEnabled(true).setMembers(cluster.allMembers()).setConnectionTimeoutSeconds(1);
        return new HazelcastManager(c, cluster);
    }
}
