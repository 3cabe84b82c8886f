package dev.nupa.transport;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.EventLoopGroup;
import io.netty.testsuite.transport.TestsuitePermutation;
import io.netty.testsuite.transport.socket.SocketEchoTest;
import io.netty.testsuite.transport.socket.SocketObjectEchoTest;
import io.netty.testsuite.transport.socket.SocketSpdyEchoTest;
import io.netty.testsuite.transport.socket.SocketConnectTest;
import io.netty.testsuite.transport.socket.CompositeBufferGatheringWriteTest;
import io.netty.testsuite.transport.socket.SocketRstTest;
import io.netty.testsuite.transport.socket.SocketReadPendingTest;
import io.netty.testsuite.transport.socket.SocketMultipleConnectTest;
import io.netty.testsuite.transport.socket.SocketHalfClosedTest;
import io.netty.testsuite.transport.socket.SocketGatheringWriteTest;
import io.netty.testsuite.transport.socket.SocketExceptionHandlingTest;
import io.netty.testsuite.transport.socket.SocketDataReadInitialStateTest;
import io.netty.testsuite.transport.socket.SocketConditionalWritabilityTest;
import io.netty.testsuite.transport.socket.SocketCloseForciblyTest;
import io.netty.testsuite.transport.socket.SocketCancelWriteTest;
import io.netty.testsuite.transport.socket.SocketBufReleaseTest;
import io.netty.testsuite.transport.socket.SocketAutoReadTest;
import io.netty.testsuite.transport.socket.SocketFixedLengthEchoTest;
import io.netty.testsuite.transport.socket.SocketStringEchoTest;
import io.netty.testsuite.transport.socket.SocketFileRegionTest;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Netty's own transport testsuite (io.netty:netty-testsuite 4.2.9, written by Netty's authors)
 * against the NUPA channels: a server node and a client node on one fabric, each under an event
 * loop of the transport, and the tests of the suite classes below run unchanged over them (each
 * with Netty's buffer allocator permutations). The two that cannot run here are disabled below
 * with the reason, so that they show in the report as skipped, not as passed.
 */
class NettyTestsuiteTest {
    private static Path fabric;
    private static EventLoopGroup serverLoop;
    private static EventLoopGroup clientLoop;

    @BeforeAll
    static void start() {
        fabric = Path.of("/dev/shm/nupa-test-netty-" + UUID.randomUUID());
        serverLoop = NupaNetty.eventLoopGroup(StackConfig.defaults(fabric, 0)); // 10.0.0.1
        clientLoop = NupaNetty.eventLoopGroup(StackConfig.defaults(fabric, 1)); // 10.0.0.2
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            clientLoop.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            serverLoop.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
        } finally {
            Files.deleteIfExists(fabric);
        }
    }

    /** The one permutation: NUPA server channel on the server node's loop, NUPA client channel on the client's. */
    static List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> nupa() {
        return List.of(new TestsuitePermutation.BootstrapComboFactory<>() {
            @Override
            public ServerBootstrap newServerInstance() {
                return new ServerBootstrap().group(serverLoop).channel(NupaServerSocketChannel.class);
            }

            @Override
            public Bootstrap newClientInstance() {
                return new Bootstrap().group(clientLoop).channel(NupaSocketChannel.class);
            }
        });
    }

    /** Servers listen on the server node's address (the suite's default is 127.0.0.1, which no node has). */
    static SocketAddress serverAddress() {
        return new InetSocketAddress("10.0.0.1", 0);
    }

    @Nested
    class Echo extends SocketEchoTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class StringEcho extends SocketStringEchoTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class FixedLengthEcho extends SocketFixedLengthEchoTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class FileRegion extends SocketFileRegionTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class AutoRead extends SocketAutoReadTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class BufRelease extends SocketBufReleaseTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class CancelWrite extends SocketCancelWriteTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class CloseForcibly extends SocketCloseForciblyTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class ConditionalWritability extends SocketConditionalWritabilityTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class DataReadInitialState extends SocketDataReadInitialStateTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class ExceptionHandling extends SocketExceptionHandlingTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class GatheringWrite extends SocketGatheringWriteTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class HalfClosed extends SocketHalfClosedTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }

        @Override
        @Test
        @Disabled("blocks its event loop in channelActive until the peer has reset the connection, then expects a write"
                + " to fail: a kernel's stack takes the reset meanwhile, but on the fabric the event loop is the stack, so the"
                + " reset is read only once the handler returns and the write is taken")
        public void testAutoCloseFalseDoesShutdownOutput(TestInfo testInfo) {
        }

    }

    @Nested
    class MultipleConnect extends SocketMultipleConnectTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }

        @Override
        @Test
        @Disabled("binds its server to NetUtil.LOCALHOST itself, which is ::1 where the host has IPv6 (as here): the fabric"
                + " speaks IPv4 only; its loopback is 127.0.0.0/8")
        public void testMultipleConnect(TestInfo testInfo) {
        }
    }

    @Nested
    class ReadPending extends SocketReadPendingTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }

    }

    @Nested
    class Rst extends SocketRstTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class CompositeBufferGatheringWrite extends CompositeBufferGatheringWriteTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class Connect extends SocketConnectTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class SpdyEcho extends SocketSpdyEchoTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }

    @Nested
    class ObjectEcho extends SocketObjectEchoTest {
        @Override
        protected List<TestsuitePermutation.BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
            return nupa();
        }

        @Override
        protected SocketAddress newSocketAddress() {
            return serverAddress();
        }
    }
}
