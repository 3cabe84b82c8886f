package dev.nupa.cluster;

import io.vertx.core.Completable;
import io.vertx.core.Vertx;
import io.vertx.ext.cluster.infinispan.InfinispanClusterManager;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.infinispan.configuration.cache.CacheMode;
import org.infinispan.configuration.global.GlobalConfigurationBuilder;
import org.infinispan.configuration.parsing.ConfigurationBuilderHolder;
import org.infinispan.lifecycle.ComponentStatus;
import org.infinispan.manager.DefaultCacheManager;
import org.infinispan.remoting.transport.jgroups.AbstractJGroupsChannelConfigurator;
import org.infinispan.remoting.transport.jgroups.JGroupsTransport;
import org.jgroups.JChannel;
import org.jgroups.conf.ProtocolConfiguration;

/**
 * Vert.x's Infinispan cluster manager, its membership on a JGroups stack over Linux TCP: bound to
 * {@link ClusterConfig#host} and {@link ClusterConfig#port} alone (no port range, so a taken port fails the start),
 * members found by TCPPING at the listed addresses (no multicast), heartbeats every quarter of
 * {@link ClusterConfig#failureDetection} and a member suspected after it without one (FD_ALL3), then dropped once a
 * second check fails (VERIFY_SUSPECT2). The caches are those of vertx-infinispan's default-infinispan.xml. A join that
 * fails says where JGroups was to listen and leaves nothing running.
 */
final class InfinispanManager extends InfinispanClusterManager {
    private final DefaultCacheManager caches;
    private final ClusterConfig cluster;
    private volatile Vertx vertx;

    private InfinispanManager(DefaultCacheManager caches, ClusterConfig cluster) {
        super(caches); // a cache manager of ours: started in join, stopped in leave (Vert.x's does neither for it)
        this.caches = caches;
        this.cluster = cluster;
    }

    @Override
    public void init(Vertx vertx) {
        this.vertx = vertx;
        super.init(vertx);
    }

    @Override
    public void join(Completable<Void> promise) {
        // Infinispan starts (JGroups binds, joins, the caches start) blocking, so on a worker thread.
        // A start that fails stops what it started (DefaultCacheManager.internalStart: the channel and threads).
        vertx.<Void>executeBlocking(() -> {
            caches.start();
            return null;
        }, false).onComplete((v, err) -> {
            if (err == null) {
                super.join(promise);
                return;
            }
            promise.fail(StartFailure.of("Infinispan", cluster, err));
        });
    }

    @Override
    public void leave(Completable<Void> promise) {
        super.leave((v, err) -> vertx.<Void>executeBlocking(() -> {
            if (caches.getStatus() == ComponentStatus.RUNNING) { // Vert.x leaves after a join that failed too
                caches.stop();
            }
            return null;
        }, false).onComplete((v2, err2) -> {
            if (err != null) {
                promise.fail(err);
            } else if (err2 != null) {
                promise.fail(err2);
            } else {
                promise.succeed();
            }
        }));
    }

    static InfinispanManager create(ClusterConfig cluster) {
        ClassLoader loader = InfinispanManager.class.getClassLoader();
        GlobalConfigurationBuilder global = GlobalConfigurationBuilder.defaultClusteredBuilder();
        global.classLoader(loader).defaultCacheName("distributed-cache");
        global.transport().clusterName(cluster.name())
                .addProperty(JGroupsTransport.CHANNEL_CONFIGURATOR, new Stack(cluster));
        ConfigurationBuilderHolder holder = new ConfigurationBuilderHolder(loader, global);
        // As vertx-infinispan's default-infinispan.xml: the registry's caches on every member, shared data spread.
        holder.newConfigurationBuilder("distributed-cache").clustering().cacheMode(CacheMode.DIST_SYNC);
        for (String replicated : List.of("__vertx.subs", "__vertx.haInfo", "__vertx.nodeInfo")) {
            holder.newConfigurationBuilder(replicated).clustering().cacheMode(CacheMode.REPL_SYNC);
        }
        holder.newConfigurationBuilder("__vertx.distributed.cache.configuration").template(true)
                .clustering().cacheMode(CacheMode.DIST_SYNC);
        return new InfinispanManager(new DefaultCacheManager(holder, false), cluster);
    }

    /**
     * The JGroups stack: Infinispan's default-jgroups-tcp.xml (JGroups 5.4) with TCPPING for MPING (explicit members, no
     * multicast), one port, FD_ALL3 bounded by the configured failure detection and FD_SOCK2 left out (it would bind a
     * second port, 50000 above the first); a SIGKILLed member's heartbeats stop, so FD_ALL3 finds it all the same.
     */
    private static final class Stack extends AbstractJGroupsChannelConfigurator {
        private final List<ProtocolConfiguration> protocols;

        Stack(ClusterConfig cluster) {
            long timeout = cluster.failureDetection().toMillis();
            String hosts = cluster.allMembers().stream()
                    .map(m -> m.substring(0, m.lastIndexOf(':')) + "[" + m.substring(m.lastIndexOf(':') + 1) + "]")
                    .collect(Collectors.joining(","));
            protocols = List.of(
                    protocol("TCP", Map.of("bind_addr", cluster.host(), "bind_port", Integer.toString(cluster.port()),
                            "port_range", "0", "diag.enabled", "false", "sock_conn_timeout", "300ms",
                            "tcp_nodelay", "true", "thread_pool.min_threads", "0", "thread_pool.max_threads", "200",
                            "thread_pool.keep_alive_time", "1m")),
                    protocol("TCPPING", Map.of("initial_hosts", hosts, "port_range", "0")),
                    protocol("MERGE3", Map.of("min_interval", "1s", "max_interval", "5s")),
                    protocol("FD_ALL3", Map.of("timeout", timeout + "ms", "interval", Math.max(250, timeout / 4) + "ms")),
                    protocol("VERIFY_SUSPECT2", Map.of("timeout", "1s")),
                    protocol("pbcast.NAKACK2", Map.of("use_mcast_xmit", "false", "xmit_interval", "200ms")),
                    protocol("UNICAST3", Map.of("conn_close_timeout", "5s", "xmit_interval", "200ms")),
                    protocol("pbcast.STABLE", Map.of("desired_avg_gossip", "5s", "max_bytes", "1M")),
                    protocol("pbcast.GMS", Map.of("print_local_addr", "false", "join_timeout", "2s")),
                    protocol("UFC", Map.of("max_credits", "4m", "min_threshold", "0.40")),
                    protocol("MFC", Map.of("max_credits", "4m", "min_threshold", "0.40")),
                    protocol("FRAG4", Map.of("frag_size", "60k")));
        }

        private static ProtocolConfiguration protocol(String name, Map<String, String> properties) {
            return new ProtocolConfiguration(name, new HashMap<>(properties));
        }

        @Override
        public String getName() {
            return "nupa-tcp";
        }

        @Override
        public JChannel createChannel(String name) throws Exception {
            return amendChannel(new JChannel(this));
        }

        @Override
        public List<ProtocolConfiguration> getProtocolStack() {
            return protocols;
        }

        @Override
        public String getProtocolStackString() {
            return protocols.stream().map(ProtocolConfiguration::getProtocolString).collect(Collectors.joining(":"));
        }
    }
}
