/**
 * The stack as a Vert.x 5 transport: a Netty {@link io.netty.channel.IoHandler}
 * that runs a fabric node's datapath inside the event loop ({@link NupaIoHandler}), and Netty channels over
 * the node's TCP and UDP ({@link NupaSocketChannel}, {@link NupaServerSocketChannel},
 * {@link NupaDatagramChannel}), so that unmodified Vert.x code runs over the fabric with stack and
 * application on one thread. {@link NupaVertx} starts one.
 */
package dev.nupa.transport;
