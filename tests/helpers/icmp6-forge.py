#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Answers the IPv6 MTU probe's echoes as a host on the rail that sees them
# (a packet socket on IFACE).  Runs until killed (SIGTERM); prints "ready"
# once it listens, then "forged N" or "answered N" (to stderr) as it goes.
# Inside a test's network namespace only.
#
#   icmp6-forge.py IFACE TARGET WRONG HOP
# Forges the verdict: for each echo request to TARGET, an echo reply
# carrying the echo's id, sequence number and payload, but from WRONG (not
# the probed peer), and a "packet too big" (MTU 1280) from HOP quoting the
# echo with another source address in place of the prober's.  Neither is
# the probe's answer.
#
#   icmp6-forge.py late IFACE TARGET MODE
# A slow path's true answer: it keeps the first full-size echo request to
# TARGET and answers it only once the prober has moved on to its small
# echoes (which it never answers), so the answer arrives after the
# full-size round's time.  MODE "reply": TARGET's echo reply, every byte of
# the echo; "cut": TARGET's "packet too big" (MTU 1500) quoting the echo as
# it came.
import signal
import socket
import struct
import sys

ETH_P_IPV6 = 0x86DD
OTHER = "2001:2:0:10::99"
SMALL = 200  # an echo's payload at most this long is a small one


class EchoRequests:
    """Each ICMPv6 echo request to target seen on iface, as (its IPv6
    packet, its source, its ICMPv6 message); n, what the caller did, is
    printed after `word` on SIGTERM."""

    def __init__(self, iface, target, word):
        self.tgt = socket.inet_pton(socket.AF_INET6, target)
        self.word = word
        self.n = 0
        self.sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IPV6))
        self.sniff.bind((iface, ETH_P_IPV6))

    def count(self, k):
        self.n += k
        sys.stderr.write("%s %d\n" % (self.word, self.n))
        sys.stderr.flush()

    def __iter__(self):
        def bye(*_):
            self.count(0)
            sys.exit(0)

        signal.signal(signal.SIGTERM, bye)
        sys.stderr.write("ready\n")
        sys.stderr.flush()
        while True:
            ip = self.sniff.recv(65536)[14:]
            if len(ip) < 48 or ip[6] != 58 or ip[24:40] != self.tgt or ip[40] != 128:
                continue
            ip = ip[:40 + struct.unpack("!H", ip[4:6])[0]]
            yield ip, socket.inet_ntop(socket.AF_INET6, ip[8:24]), ip[40:]


def raw_from(addr):
    s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
    s.bind((addr, 0))
    return s


def forge(iface, target, wrong, hop):
    echoes = EchoRequests(iface, target, "forged")
    out_wrong, out_hop = raw_from(wrong), raw_from(hop)
    for ip, src, echo in echoes:
        # The reply, every byte right but who sends it (the kernel sums it).
        out_wrong.sendto(bytes([129, 0, 0, 0]) + echo[4:], (src, 0))
        # The cut, quoting the echo as another host's.
        quoted = ip[:8] + socket.inet_pton(socket.AF_INET6, OTHER) + ip[24:40] + echo
        ptb = struct.pack("!BBHI", 2, 0, 0, 1280) + quoted[:1280 - 48]
        out_hop.sendto(ptb, (src, 0))
        echoes.count(2)


def late(iface, target, mode):
    echoes = EchoRequests(iface, target, "answered")
    out = raw_from(target)
    full = None
    for ip, src, echo in echoes:
        if len(echo) - 8 > SMALL:
            if full is None:
                full = (ip, src, echo)
            continue
        if full is None:
            continue
        ip, src, echo = full
        if mode == "reply":
            out.sendto(bytes([129, 0, 0, 0]) + echo[4:], (src, 0))
        else:
            out.sendto(struct.pack("!BBHI", 2, 0, 0, 1500) + ip[:1280 - 48], (src, 0))
        full = None
        echoes.count(1)


if __name__ == "__main__":
    if sys.argv[1] == "late":
        late(*sys.argv[2:5])
    else:
        forge(*sys.argv[1:5])
