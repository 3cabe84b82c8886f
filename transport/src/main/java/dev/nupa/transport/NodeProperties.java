package dev.nupa.transport;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import dev.nupa.ip.IpConfig;
import dev.nupa.ip.Route;
import dev.nupa.l2.Datapath;

/**
 * The fabric node that system properties or environment variables name, for a program that creates Vert.x itself
 * ({@link NupaVertxProvider}). Each setting is a system property or, when that is not set, an environment variable
 * (the property wins):
 * <ul>
 *   <li>{@code nupa.fabric} / {@code NUPA_FABRIC}: the fabric file (created if missing); unset or empty: no node</li>
 *   <li>{@code nupa.address} / {@code NUPA_ADDRESS}: the fabric address (default -1: the first free)</li>
 *   <li>{@code nupa.ip} / {@code NUPA_IP}: the IPv4 address, A.B.C.D/LEN (default: the fabric's plan, 10.0.0.(N+1)/24)</li>
 *   <li>{@code nupa.routes} / {@code NUPA_ROUTES}: routes beyond the subnet, separated by commas
 *       ({@code 192.168.77.0/24 via 10.0.0.1,default via 10.0.0.9})</li>
 *   <li>{@code nupa.loops} / {@code NUPA_LOOPS}: event loops sharing the address (default 1)</li>
 *   <li>{@code nupa.mtu} / {@code NUPA_MTU}: the link MTU in bytes (default 9000)</li>
 *   <li>{@code nupa.spin} / {@code NUPA_SPIN}: {@code true} to busy-poll without ever sleeping (default false)</li>
 * </ul>
 */
public final class NodeProperties {
    private NodeProperties() {
    }

    /** The node the JVM's system properties or its environment name, or null when neither names a fabric. */
    public static StackConfig fromSystem() {
        return from(System::getProperty, System::getenv);
    }

    /**
     * The node {@code properties} or {@code environment} name (each maps a name to its value or null), or null when
     * neither names a fabric; throws naming the setting and the form wanted when a value is wrong.
     */
    public static StackConfig from(Function<String, String> properties, Function<String, String> environment) {
        Function<String, String> get = name -> {
            String v = properties.apply(name);
            if (v == null) {
                v = environment.apply(envName(name));
            }
            return v == null || v.isBlank() ? null : v.trim();
        };
        String fabric = get.apply("nupa.fabric");
        if (fabric == null) {
            return null;
        }
        StackConfig c = StackConfig.defaults(Path.of(fabric), number(get, "nupa.address", -1, "a fabric address, or -1 for the first free"));
        String ip = get.apply("nupa.ip");
        if (ip != null) {
            c = c.withIp(parse("nupa.ip", ip, IpConfig::parse));
        }
        String routes = get.apply("nupa.routes");
        if (routes != null) {
            List<Route> rs = new ArrayList<>();
            for (String r : routes.split(",")) {
                rs.add(parse("nupa.routes", r, Route::parse));
            }
            c = c.withRoutes(rs);
        }
        int loops = number(get, "nupa.loops", 1, "a number of event loops, 1.." + StackConfig.MAX_LOOPS);
        c = parse("nupa.loops", c, s -> s.withLoops(loops));
        int mtu = number(get, "nupa.mtu", c.mtu(), "an MTU in bytes");
        String spin = get.apply("nupa.spin");
        if (spin != null && !spin.equals("true") && !spin.equals("false")) {
            throw new IllegalArgumentException("nupa.spin (NUPA_SPIN) is \"" + spin + "\"; give true or false");
        }
        Datapath.Idle idle = "true".equals(spin) ? Datapath.Idle.busySpin() : c.idle();
        return new StackConfig(c.fabric(), c.address(), c.geometry(), mtu, idle, c.ip(), c.routes(), c.tcp(),
                c.tcpBufferMemory(), c.loops(), c.linkFaults());
    }

    private static int number(Function<String, String> get, String name, int otherwise, String wanted) {
        String v = get.apply(name);
        if (v == null) {
            return otherwise;
        }
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " (" + envName(name) + ") is \"" + v + "\"; give " + wanted);
        }
    }

    private static <V, T> T parse(String name, V value, Function<V, T> parser) {
        try {
            return parser.apply(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(name + " (" + envName(name) + "): " + e.getMessage(), e);
        }
    }

    private static String envName(String property) {
        return property.toUpperCase(java.util.Locale.ROOT).replace('.', '_');
    }
}
