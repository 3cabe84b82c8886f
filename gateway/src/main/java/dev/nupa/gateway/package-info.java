/** TAP device, Ethernet, ARP and RoCEv2 on the wire. Not built yet. */
package dev.nupa.gateway;
