/** InfiniBand transport (RoCEv2-equivalent) over the fabric: wire types, reliable connected and unreliable datagram queue pairs, verbs. */
package dev.nupa.roce;
