/** IPv4, ICMP, UDP and UDP sockets. Not built yet (issue 3). */
package dev.nupa.ip;
