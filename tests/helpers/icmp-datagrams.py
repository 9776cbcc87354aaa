#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The ICMP datagrams of the probe's fuzz seed corpus (tests/fixtures/fuzz/icmp/),
# against the round tests/fuzz/targets.c fixes (fuzz_icmp_echoes): echoes
# 198.18.10.150 -> 198.18.10.254, id 0x5a17, sequence 0xfffe, 0xffff, 0,
# 2000 bytes of payload, byte i (i * 7 + 13) & 0xff.  Answers a hop or the
# peer would send, and forgeries an off-path host could.
# The ICMPv6 ones (tests/fixtures/fuzz/icmp6/): the same round from
# fd00:10::150 to fd00:10::254, each seed the sender's address (16 bytes, as
# the raw ICMPv6 socket's recvfrom names it) then the ICMPv6 message.
#   icmp-datagrams.py write DIR
#   icmp-datagrams.py write6 DIR
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

SRC6, DST6, HOP6 = "fd00:10::150", "fd00:10::254", "fd00:10::1"


def icmp6(src, dst, typ, code, rest, body):
    # The checksum over the pseudo-header too (RFC 8200 8.1), as the kernel fills it.
    h = struct.pack("!BBH", typ, code, 0) + rest + body
    ph = (socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst)
          + struct.pack("!I3xB", len(h), 58))
    return h[:2] + struct.pack("!H", csum(ph + h)) + h[4:]


def ip6(src, dst, body, hops=64):
    return (struct.pack("!IHBB", 6 << 28, len(body), 58, hops) + socket.inet_pton(socket.AF_INET6, src)
            + socket.inet_pton(socket.AF_INET6, dst) + body)


def echo6(k, payload=PAYLOAD, typ=128, src=SRC6, dst=DST6, seq=None):
    seq = (SEQ0 + k) & 0xFFFF if seq is None else seq
    return icmp6(src, dst, typ, 0, struct.pack("!HH", ID, seq), payload)


def from6(addr, msg):
    return socket.inet_pton(socket.AF_INET6, addr) + msg


def cut6(k, quote, mtu=1500, hop=HOP6, echo_bytes=None, src=SRC6):
    sent = ip6(src, DST6, echo_bytes if echo_bytes is not None else echo6(k, src=src), hops=63)
    return from6(hop, icmp6(hop, SRC6, 2, 0, struct.pack("!I", mtu), sent[:quote]))


SEEDS6 = {
    "reply-whole": from6(DST6, echo6(1, typ=129, src=DST6, dst=SRC6)),
    "reply-short": from6(DST6, echo6(2, PAYLOAD[:120], typ=129, src=DST6, dst=SRC6)),
    "reply-other-bytes": from6(DST6, echo6(0, bytes(N), typ=129, src=DST6, dst=SRC6)),
    "reply-old-seq": from6(DST6, echo6(0, typ=129, src=DST6, dst=SRC6, seq=0xFFFD)),
    "reply-other-source": from6(HOP6, echo6(1, typ=129, src=HOP6, dst=SRC6)),
    "cut-quote-8": cut6(0, 48),
    "cut-quote-1232": cut6(1, 1280 - 48),
    "cut-mtu-too-big": cut6(0, 48, mtu=2048),
    "cut-mtu-below-1280": cut6(0, 48, mtu=1000),
    "cut-no-mtu": cut6(0, 48, mtu=0),
    "cut-other-source": cut6(0, 1232, src="fd00:10::151"),
    "forged-predictable": cut6(0, 64, echo_bytes=icmp6(SRC6, DST6, 128, 0, struct.pack("!HH", ID, 1),
                                                        bytes(i & 0xFF for i in range(8, 8 + N)))),
    "forged-seq": cut6(0, 1232, echo_bytes=echo6(0, seq=7)),
    "truncated": cut6(0, 48)[:16 + 8 + 44],
}

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in ("write", "write6"):
        for name, b in (SEEDS if sys.argv[1] == "write" else SEEDS6).items():
            with open("%s/%s" % (sys.argv[2], name), "wb") as f:
                f.write(b)
    else:
        sys.exit("usage: icmp-datagrams.py write|write6 DIR")
