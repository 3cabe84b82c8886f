/**
 * The gateway as a verticle: {@link dev.nupa.gateway.vertx.GatewayVerticle} opens the TAP, runs the Ethernet side on
 * the node's datapath and watches the TAP on a thread of its own. The rest of the module imports no Vert.x.
 */
package dev.nupa.gateway.vertx;
