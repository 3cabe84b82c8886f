package dev.nupa.node.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import dev.nupa.tcp.CongestionControls;
import dev.nupa.tcp.TcpConfig;
import dev.nupa.transport.NupaSocketChannelConfig;
import picocli.CommandLine.Option;

/**
 * Socket options of the TCP connections a command opens or serves (`tcp-check`, `node --tcp-echo`),
 * by the names of Linux's socket options. Each is applied over the node's TCP settings
 * ({@code --tcp-buffer}, {@code --mtu}); a value out of range is an IllegalArgumentException whose
 * message names the option.
 */
final class TcpSocketOptions {
    /** Linux's largest TCP_KEEPIDLE and TCP_KEEPINTVL, seconds (MAX_TCP_KEEPIDLE, MAX_TCP_KEEPINTVL). */
    static final int MAX_KEEPALIVE_SECONDS = 32_767;
    /** Linux's largest TCP_KEEPCNT (MAX_TCP_KEEPCNT). */
    static final int MAX_KEEPALIVE_PROBES = 127;
    /** Idle time before keep-alive probes when only --keepalive is given: RFC 1122 4.2.3.6's two hours, as Linux. */
    static final int DEFAULT_KEEPALIVE_IDLE_SECONDS = 7_200;
    private static final long SECOND = 1_000_000_000L;

    @Option(names = "--no-delay", description = "TCP_NODELAY: send small segments at once, without Nagle's algorithm (RFC 9293 3.7.4).")
    boolean noDelay;

    @Option(names = "--delay", description = "Nagle's algorithm: hold a small segment while data is unacknowledged (the default).")
    boolean delay;

    @Option(names = "--keepalive", description = "SO_KEEPALIVE: probe an idle connection and drop it when the probes go "
            + "unanswered (RFC 1122 4.2.3.6): after " + DEFAULT_KEEPALIVE_IDLE_SECONDS + " s idle, 9 probes 75 s apart, unless "
            + "the options below say otherwise.")
    boolean keepAlive;

    @Option(names = "--keepalive-idle", paramLabel = "SECONDS",
            description = "TCP_KEEPIDLE: idle time before the first probe, 1.." + MAX_KEEPALIVE_SECONDS + " (implies --keepalive).")
    Integer keepAliveIdle;

    @Option(names = "--keepalive-interval", paramLabel = "SECONDS",
            description = "TCP_KEEPINTVL: time between unanswered probes, 1.." + MAX_KEEPALIVE_SECONDS + " (implies --keepalive).")
    Integer keepAliveInterval;

    @Option(names = "--keepalive-probes", paramLabel = "N",
            description = "TCP_KEEPCNT: unanswered probes before the connection is dropped, 1.." + MAX_KEEPALIVE_PROBES
                    + " (implies --keepalive).")
    Integer keepAliveProbes;

    @Option(names = "--send-buffer", paramLabel = "BYTES",
            description = "SO_SNDBUF: bytes the send buffer holds, one MSS (MTU - 40) up to 1 GiB (default: --tcp-buffer, or 262144).")
    Integer sendBuffer;

    @Option(names = "--recv-buffer", paramLabel = "BYTES",
            description = "SO_RCVBUF: bytes the receive buffer holds, the most this end advertises; one MSS up to 1 GiB "
                    + "(default: --tcp-buffer, or 262144).")
    Integer recvBuffer;

    @Option(names = "--linger", paramLabel = "SECONDS",
            description = "SO_LINGER on close: 0 resets (RST: unsent data dropped, no TIME-WAIT); 1.." + NupaSocketChannelConfig.MAX_LINGER
                    + " is taken as off on the fabric: close returns at once and the FIN follows the data in the background"
                    + " (default: off).")
    Integer linger;

    @Option(names = "--congestion", paramLabel = "ALGORITHM",
            description = "TCP_CONGESTION: cubic (RFC 9438) or newreno (RFC 6582) (default: cubic).")
    String congestion;

    /** The name of the first option given, or null when none was. */
    String firstGiven() {
        if (noDelay) {
            return "--no-delay";
        }
        if (delay) {
            return "--delay";
        }
        if (keepAlive) {
            return "--keepalive";
        }
        if (keepAliveIdle != null) {
            return "--keepalive-idle";
        }
        if (keepAliveInterval != null) {
            return "--keepalive-interval";
        }
        if (keepAliveProbes != null) {
            return "--keepalive-probes";
        }
        if (sendBuffer != null) {
            return "--send-buffer";
        }
        if (recvBuffer != null) {
            return "--recv-buffer";
        }
        if (linger != null) {
            return "--linger";
        }
        return congestion != null ? "--congestion" : null;
    }

    /**
     * {@code base} with these options; checks every value first.
     *
     * @throws IllegalArgumentException naming the option whose value is out of range
     */
    TcpConfig apply(TcpConfig base) {
        if (noDelay && delay) {
            throw new IllegalArgumentException("--delay and --no-delay are exclusive; give one");
        }
        check("--keepalive-idle", keepAliveIdle, 1, MAX_KEEPALIVE_SECONDS, " seconds");
        check("--keepalive-interval", keepAliveInterval, 1, MAX_KEEPALIVE_SECONDS, " seconds");
        check("--keepalive-probes", keepAliveProbes, 1, MAX_KEEPALIVE_PROBES, "");
        String buffers = " bytes (one MSS at MTU " + (base.mss() + 40) + ", at most 1 GiB)";
        check("--send-buffer", sendBuffer, base.mss(), 1 << 30, buffers);
        check("--recv-buffer", recvBuffer, base.mss(), 1 << 30, buffers);
        check("--linger", linger, 0, NupaSocketChannelConfig.MAX_LINGER, " seconds");
        String algorithm = null;
        if (congestion != null) {
            algorithm = congestion.toLowerCase(Locale.ROOT);
            if (!algorithm.equals("cubic") && !algorithm.equals("newreno")) {
                throw new IllegalArgumentException("--congestion " + congestion + " is unknown; choose one of: "
                        + CongestionControls.KNOWN);
            }
        }
        TcpConfig c = base;
        if (noDelay || delay) {
            c = c.withNoDelay(noDelay);
        }
        if (keepAlive || keepAliveIdle != null || keepAliveInterval != null || keepAliveProbes != null) {
            long idle = keepAliveIdle != null ? keepAliveIdle * SECOND
                    : base.keepAliveIdleNs() > 0 ? base.keepAliveIdleNs() : DEFAULT_KEEPALIVE_IDLE_SECONDS * SECOND;
            long interval = keepAliveInterval != null ? keepAliveInterval * SECOND : base.keepAliveIntervalNs();
            int probes = keepAliveProbes != null ? keepAliveProbes : base.keepAliveProbes();
            c = c.withKeepAlive(idle, interval, probes);
        }
        if (sendBuffer != null || recvBuffer != null) {
            c = c.withBuffers(sendBuffer != null ? sendBuffer : base.sendBuffer(),
                    recvBuffer != null ? recvBuffer : base.receiveBuffer());
        }
        if (algorithm != null) {
            c = c.withCongestionControl(algorithm);
        }
        return c;
    }

    /**
     * Vert.x's socket options ({@code NetClientOptions}, {@code NetServerOptions}) that say what
     * {@code config} says, so that the transport gives each connection that {@link TcpConfig}, plus
     * the linger. Keep-alive timing and congestion control live in the node's TCP defaults, which
     * the commands set to {@code config} too.
     */
    <T extends io.vertx.core.net.TCPSSLOptions> T vertxOptions(T options, TcpConfig config) {
        options.setTcpNoDelay(config.noDelay());
        options.setTcpKeepAlive(config.keepAliveIdleNs() > 0);
        options.setSendBufferSize(config.sendBuffer());
        options.setReceiveBufferSize(config.receiveBuffer());
        if (linger != null) {
            options.setSoLinger(linger);
        }
        return options;
    }

    /** The options in effect, for the commands' first line: {@code config} as {@link #apply} made it. */
    String describe(TcpConfig config) {
        List<String> parts = new ArrayList<>();
        parts.add(config.noDelay() ? "no-delay" : "nagle");
        parts.add(config.keepAliveIdleNs() > 0 ? String.format(Locale.ROOT, "keepalive %d/%d/%d", config.keepAliveIdleNs() / SECOND,
                config.keepAliveIntervalNs() / SECOND, config.keepAliveProbes()) : "no keepalive");
        parts.add("send buffer " + config.sendBuffer());
        parts.add("recv buffer " + config.receiveBuffer());
        parts.add(linger == null ? "no linger" : "linger " + linger);
        parts.add(config.congestionControl());
        return String.join(", ", parts);
    }

    private static void check(String option, Integer value, int min, int max, String unit) {
        if (value != null && (value < min || value > max)) {
            throw new IllegalArgumentException(option + " " + value + " is outside " + min + ".." + max + unit);
        }
    }
}
