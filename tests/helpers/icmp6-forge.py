#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Forges the IPv6 MTU probe's verdict from a host on the rail that sees its
# echoes (a packet socket on IFACE): for each echo request to TARGET, an echo
# reply carrying the echo's id, sequence number and payload, but from WRONG
# (not the probed peer), and a "packet too big" (MTU 1280) from HOP quoting
# the echo with another source address in place of the prober's.  Neither
# is the probe's answer.  Runs until killed (SIGTERM); prints "ready" once
# it listens, then "forged N" (to stderr) as it goes.  Inside a test's network namespace only.
#   icmp6-forge.py IFACE TARGET WRONG HOP
import signal
import socket
import struct
import sys

ETH_P_IPV6 = 0x86DD
OTHER = "2001:2:0:10::99"


def main():
    iface, target, wrong, hop = sys.argv[1:5]
    tgt = socket.inet_pton(socket.AF_INET6, target)
    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IPV6))
    sniff.bind((iface, ETH_P_IPV6))
    out_wrong = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    out_wrong.bind((wrong, 0))
    out_hop = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    out_hop.bind((hop, 0))
    n = 0

    def bye(*_):
        sys.stderr.write("forged %d\n" % n)
        sys.stderr.flush()
        sys.exit(0)

    signal.signal(signal.SIGTERM, bye)
    sys.stderr.write("ready\n")
    sys.stderr.flush()
    while True:
        f = sniff.recv(65536)
        ip = f[14:]
        if len(ip) < 48 or ip[6] != 58 or ip[24:40] != tgt or ip[40] != 128:
            continue
        src = socket.inet_ntop(socket.AF_INET6, ip[8:24])
        echo = ip[40:40 + struct.unpack("!H", ip[4:6])[0]]
        # The reply, every byte right but who sends it (the kernel sums it).
        out_wrong.sendto(bytes([129, 0, 0, 0]) + echo[4:], (src, 0))
        # The cut, quoting the echo as another host's.
        quoted = ip[:8] + socket.inet_pton(socket.AF_INET6, OTHER) + ip[24:40] + echo
        ptb = struct.pack("!BBHI", 2, 0, 0, 1280) + quoted[:1280 - 48]
        out_hop.sendto(ptb, (src, 0))
        n += 2
        sys.stderr.write("forged %d\n" % n)
        sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
