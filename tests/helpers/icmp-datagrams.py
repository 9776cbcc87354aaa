#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The ICMP datagrams of the probe's fuzz seed corpus (tests/fixtures/fuzz/icmp/),
# against the round tests/fuzz/targets.c fixes (fuzz_icmp_echoes): echoes
# 198.18.10.150 -> 198.18.10.254, id 0x5a17, sequence 0xfffe, 0xffff, 0,
# 2000 bytes of payload, byte i (i * 7 + 13) & 0xff.  Answers a hop or the
# peer would send, and forgeries an off-path host could.
#   icmp-datagrams.py write DIR
import socket
import struct
import sys

SRC, DST, ID, SEQ0, N = "198.18.10.150", "198.18.10.254", 0x5A17, 0xFFFE, 2000
PAYLOAD = bytes((i * 7 + 13) & 0xFF for i in range(N))


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def icmp(typ, code, rest, body):
    h = struct.pack("!BBH", typ, code, 0) + rest + body
    return h[:2] + struct.pack("!H", csum(h)) + h[4:]


def ip(src, dst, body, df=0x4000, ttl=64):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 0x1234, df, ttl, 1, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + body


def echo(k, payload=PAYLOAD, typ=8):
    return icmp(typ, 0, struct.pack("!HH", ID, (SEQ0 + k) & 0xFFFF), payload)


def cut(k, quote, mtu=1500, hop="198.18.11.1", length=0, echo_bytes=None):
    sent = ip(SRC, DST, echo_bytes if echo_bytes is not None else echo(k), ttl=63)
    return ip(hop, SRC, icmp(3, 4, struct.pack("!BBH", 0, length, mtu), sent[:quote]))


def predictable(ident):
    # What the probe sent before it drew its payload: byte i of the message = i.
    return icmp(8, 0, struct.pack("!HH", ident, 1), bytes(i & 0xFF for i in range(8, 8 + N)))


SEEDS = {
    "reply-whole": ip(DST, SRC, echo(1, typ=0)),
    "reply-short": ip(DST, SRC, echo(2, PAYLOAD[:120], typ=0)),
    "reply-other-bytes": ip(DST, SRC, echo(0, bytes(N), typ=0)),
    "reply-old-seq": ip(DST, SRC, icmp(0, 0, struct.pack("!HH", ID, 0xFFFD), PAYLOAD)),
    "cut-quote-8": cut(0, 28),
    "cut-quote-576": cut(1, 576 - 28),
    "cut-rfc4884": cut(2, 128, length=32),
    "cut-no-mtu": cut(0, 28, mtu=0),
    "cut-mtu-too-big": cut(0, 28, mtu=2028),
    "forged-predictable": cut(0, 64, echo_bytes=predictable(ID)),
    "forged-seq": ip("198.18.11.1", SRC, icmp(3, 4, struct.pack("!HH", 0, 1500),
                                              ip(SRC, DST, icmp(8, 0, struct.pack("!HH", ID, 7), PAYLOAD), ttl=63)[:28])),
    "truncated": cut(0, 28)[:40],
}

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        for name, b in SEEDS.items():
            with open("%s/%s" % (sys.argv[2], name), "wb") as f:
                f.write(b)
    else:
        sys.exit("usage: icmp-datagrams.py write DIR")
