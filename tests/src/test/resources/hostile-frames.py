#!/usr/bin/python3
"""Hostile frames at a gateway's Ethernet side, for GatewayHostileFramesTest.

Usage: hostile-frames.py IFACE GATEWAY_MAC GATEWAY_IP FABRIC_NODE_IP LINUX_IP
Sends, on IFACE (the TAP as Linux sees it), every kind of frame the gateway must count and drop, then
floods of ARP and IP fragments, and prints one line per kind: "sent KIND N".
"""
import random
import sys

from scapy.all import ARP, IP, IPv6, TCP, UDP, ICMP, Dot1Q, Ether, Raw, conf, sendp  # noqa: E402

conf.verb = 0
iface, gw_mac, gw_ip, node_ip, linux_ip = sys.argv[1:6]
me = Ether(src=open(f"/sys/class/net/{iface}/address").read().strip())
rnd = random.Random(11)


def send(kind, frames):
    sendp(frames, iface=iface)
    print(f"sent {kind} {len(frames)}", flush=True)


def raw(kind, data, n=1):
    # Frames scapy would pad or fix: written as raw bytes.
    import socket
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    for _ in range(n):
        s.send(data)
    s.close()
    print(f"sent {kind} {n}", flush=True)


prefix_bcast = linux_ip.rsplit(".", 1)[0] + ".255"
gw = me.copy()
gw.dst = gw_mac
# Frames shorter than their protocol's header (a packet socket sends nothing under 14 bytes, Ethernet's own).
head = bytes.fromhex(gw_mac.replace(":", "")) + bytes.fromhex(me.src.replace(":", ""))
raw("short-arp", head + b"\x08\x06" + b"\x00\x01\x08\x00\x06", 5)
raw("short-ipv4", head + b"\x08\x00" + b"\x45\x00\x00", 5)
send("not-for-us", [Ether(src=me.src, dst="02:aa:bb:cc:dd:ee") / IP(src=linux_ip, dst=node_ip) / ICMP()] * 5)
send("multicast", [Ether(src=me.src, dst="01:00:5e:00:00:fb") / IP(src=linux_ip, dst="224.0.0.251") / UDP(dport=5353)] * 5)
send("bad-source-mac", [Ether(src="01:02:03:04:05:06", dst=gw_mac) / IP(src=linux_ip, dst=node_ip) / ICMP()] * 5)
send("vlan", [Ether(src=me.src, dst=gw_mac) / Dot1Q(vlan=7) / IP(src=linux_ip, dst=node_ip) / ICMP()] * 5)
send("ipv6", [Ether(src=me.src, dst=gw_mac) / IPv6(dst="fe80::1") / UDP(dport=9)] * 5)
send("ethertype", [Ether(src=me.src, dst=gw_mac, type=0x88B5) / Raw(b"x" * 46)] * 5)
send("bad-arp", [Ether(src=me.src, dst=gw_mac) / ARP(hwtype=6, op=1, psrc=linux_ip, pdst=gw_ip)] * 5)
send("spoofed", [Ether(src=me.src, dst=gw_mac) / IP(src="10.0.0.9", dst=node_ip) / ICMP()] * 5)
send("bad-ip-checksum", [Ether(src=me.src, dst=gw_mac) / IP(src=linux_ip, dst=node_ip, chksum=0x1234) / ICMP()] * 5)
send("bad-ihl", [Ether(src=me.src, dst=gw_mac) / IP(src=linux_ip, dst=node_ip, ihl=3) / ICMP()] * 5)
send("bad-total-length", [Ether(src=me.src, dst=gw_mac) / IP(src=linux_ip, dst=node_ip, len=1400) / ICMP()] * 5)
send("broadcast", [Ether(src=me.src, dst="ff:ff:ff:ff:ff:ff") / IP(src=linux_ip, dst=prefix_bcast) / UDP(dport=137)] * 5)
send("ttl-1", [Ether(src=me.src, dst=gw_mac) / IP(src=linux_ip, dst=node_ip, ttl=1) / ICMP()] * 5)
# An ARP flood: requests for addresses other than the gateway's, from many senders of the subnet.
prefix = linux_ip.rsplit(".", 1)[0]
send("arp-flood", [Ether(src="02:00:00:%02x:%02x:%02x" % (i >> 16 & 255, i >> 8 & 255, i & 255), dst="ff:ff:ff:ff:ff:ff")
                   / ARP(op=1, hwsrc="02:00:00:%02x:%02x:%02x" % (i >> 16 & 255, i >> 8 & 255, i & 255),
                         psrc="%s.%d" % (prefix, 3 + i % 250), pdst="%s.%d" % (prefix, 3 + (i * 7) % 250))
                   for i in range(3000)])
# A SYN flood from spoofed sources of the subnet to the fabric node's HTTP port: its SYN-ACKs go to addresses
# that never answer ARP, which must not crowd out the neighbors that do (curl goes on meanwhile).
send("syn-flood", [Ether(src=me.src, dst=gw_mac)
                   / IP(src="%s.%d" % (prefix, 3 + rnd.randrange(250)), dst=node_ip)
                   / TCP(sport=rnd.randrange(1024, 65536), dport=8080, flags="S", seq=rnd.randrange(1 << 32))
                   for _ in range(3000)])
# A fragment flood: first fragments that are never completed, towards the fabric node.
send("fragment-flood", [Ether(src=me.src, dst=gw_mac)
                        / IP(src=linux_ip, dst=node_ip, id=rnd.randrange(65536), flags="MF", frag=0, proto=17)
                        / Raw(b"f" * 1000) for _ in range(2000)])
