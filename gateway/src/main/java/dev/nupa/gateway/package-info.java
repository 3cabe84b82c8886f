/** The gateway between the fabric and Ethernet (TAP device, Ethernet, ARP, RoCEv2 on the wire): an empty module, reserved for it. */
package dev.nupa.gateway;
