#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# One ICMPv6 echo of SIZE bytes of payload to DST, never fragmented
# (IPV6_DONTFRAG, path MTU discovery "do"), as `ping -6 -M do -s SIZE` sends
# it (the host has no iputils ping); waits at most 2 s for its reply.
# Run inside a test's network namespace (nsenter -n).  Prints
# "reply SIZE bytes from DST" and exits 0, or says what went wrong and
# exits 1 ("mtu=N" when the interface's MTU refused it unfragmented).
#   ping6-df.py DST SIZE
import errno
import os
import select
import socket
import struct
import sys
import time

IPV6_DONTFRAG = 62
IPV6_MTU_DISCOVER = 23
IPV6_PMTUDISC_DO = 2
IPV6_MTU = 24


def main():
    dst, size = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    s.setsockopt(socket.IPPROTO_IPV6, IPV6_DONTFRAG, 1)
    s.setsockopt(socket.IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO)
    ident = os.getpid() & 0xFFFF
    payload = bytes(i & 0xFF for i in range(size))
    # Type 128, code 0; the kernel fills the checksum of a raw ICMPv6 socket.
    pkt = struct.pack("!BBHHH", 128, 0, 0, ident, 1) + payload
    try:
        s.sendto(pkt, (dst, 0))
    except OSError as e:
        if e.errno == errno.EMSGSIZE:
            s.connect((dst, 0))
            print("message too long, mtu=%d" % s.getsockopt(socket.IPPROTO_IPV6, IPV6_MTU))
        else:
            print("send: %s" % e)
        return 1
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        r, _, _ = select.select([s], [], [], max(0.0, end - time.monotonic()))
        if not r:
            break
        data, peer = s.recvfrom(65535)
        if len(data) >= 8 and data[0] == 129:
            rid, seq = struct.unpack("!HH", data[4:8])
            if rid == ident and seq == 1:
                print("reply %d bytes from %s" % (len(data) - 8, peer[0]))
                return 0 if data[8:] == payload else 1
    print("no reply from %s within 2 s" % dst)
    return 1


if __name__ == "__main__":
    sys.exit(main())
