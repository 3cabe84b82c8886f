/**
 * InfiniBand transport (RoCEv2-equivalent) over the fabric, and RoCEv2 itself through the node's IP layer to peers
 * named by IP address: wire types, reliable connected and unreliable datagram queue pairs, verbs.
 */
package dev.nupa.roce;
