/**
 * RoCEv2 over the node's IPv4 layer: the one implementation of {@link dev.nupa.roce.verbs.RoceIp}, and the only
 * package of the module that imports {@code dev.nupa.ip}.
 */
package dev.nupa.roce.ip;
