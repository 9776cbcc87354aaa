#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A slow path's true answer to the IPv6 MTU probe (a packet socket on
# IFACE): it keeps the first full-size echo request to TARGET and answers
# it only once the prober has moved on to its small echoes (which it never
# answers), so the answer arrives after the full-size round's time.  MODE
# "reply": TARGET's echo reply, every byte of the echo; "cut": TARGET's
# "packet too big" (MTU 1500) quoting the echo as it came.  Runs until
# killed (SIGTERM); prints "ready" once it listens, then "answered N" (to
# stderr) as it goes.  Inside a test's network namespace only.
#   icmp6-late.py IFACE TARGET MODE
import signal
import socket
import struct
import sys

ETH_P_IPV6 = 0x86DD
SMALL = 200  # an echo's payload at most this long is a small one


def main():
    iface, target, mode = sys.argv[1:4]
    tgt = socket.inet_pton(socket.AF_INET6, target)
    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IPV6))
    sniff.bind((iface, ETH_P_IPV6))
    out = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    out.bind((target, 0))
    n = 0
    full = None

    def bye(*_):
        sys.stderr.write("answered %d\n" % n)
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
        size = struct.unpack("!H", ip[4:6])[0]
        if size - 8 > SMALL:
            if full is None:
                full = ip[:40 + size]
            continue
        if full is None:
            continue
        src = socket.inet_ntop(socket.AF_INET6, full[8:24])
        echo = full[40:]
        if mode == "reply":
            out.sendto(bytes([129, 0, 0, 0]) + echo[4:], (src, 0))
        else:
            out.sendto(struct.pack("!BBHI", 2, 0, 0, 1500) + full[:1280 - 48], (src, 0))
        full = None
        n += 1
        sys.stderr.write("answered %d\n" % n)
        sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
