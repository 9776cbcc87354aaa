#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# LLDP frames for the tests, built from two real switch captures (an NVIDIA
# Onyx SN3700 frame from lshca's docstring, an Aruba CX 8100 frame from
# Microsoft's switch-validation pcap) and variants of them.  The test
# "switch" (tests/integration/lldp.sh) sends them; the fuzz seed corpus
# (tests/fixtures/fuzz/lldp/) holds them too.
#   lldp-frames.py list               the names
#   lldp-frames.py hex NAME           one frame as hex
#   lldp-frames.py write DIR          every frame, one file each
#   lldp-frames.py send IFACE NAME..  each frame once on IFACE (AF_PACKET)
#   lldp-frames.py count IFACE SECS   counts 0x88CC frames received on IFACE
import os
import socket
import sys
import time

DA = "0180c200000e"

ONYX = (
    DA + "b8599fa99c60" + "88cc"
    "020704b8599fa99c00"            # chassis MAC b8:59:9f:a9:9c:00
    "040705457468312f31"            # port ifname "Eth1/1"
    "06020078"                      # TTL 120
    "080120"                        # port description " "
    "0a09616e632d64782d7431"        # system name "anc-dx-t1"
    "0c184d534e333730302c4f6e79782c535776332e392e30393134"
    "0e0400140004"
    "101605010a90fc8502000000000a2b060102010202010100"
)
ONYX_ETS = "fe19" "0080c2" "09" "08" "00030060" "3200003200000000" "0202020202020002"
ONYX_ETS_REC = "fe19" "0080c2" "0a" "00" "00030060" "3200003200000000" "0202020202020002"
ONYX_PFC = "fe060080c20b0808"              # PFC on {3}
ONYX_APP = "fe080080c20c006312b7"          # UDP 4791 -> priority 3
END = "0000"

ARUBA = (
    DA + "882510e5bdb6" + "88cc"
    "020704882510e5bd80" "040705312f312f3139" "06020078" "0a0438313030" "0806312f312f3139"
    "fe060080c20b0208"
    "fe19" "0080c2" "09" "03" "00010200" "3032020000000000" "0202020000000000"
    "fe19" "0080c2" "0a" "00" "00010200" "3032020000000000" "0202020000000000"
    "fe060080c20102c6" "fe0e0080c20302c607564c414e373130" "fe090080c2070100000000"
    "fe0900120f010180000023"
)
ARUBA_MFS = "fe0600120f0423ee"                # 9198
ARUBA_TAIL = "fe06883a30020001" + END


def onyx(pfc=ONYX_PFC, app=ONYX_APP, ttl="0078", extra=""):
    f = ONYX.replace("06020078", "0602" + ttl, 1)
    return f + ONYX_ETS + ONYX_ETS_REC + pfc + app + extra + END


def dscp_app(entries):
    body = "00" + "".join("%02x%04x" % ((prio << 5) | 5, d) for d, prio in entries)
    return "fe%02x0080c20c" % (4 + len(body) // 2) + body


def cee_only():
    ctl = "020a" + "0000" + "00000001" + "00000000"
    pfc = "0606" + "00008000" + "08" + "08"          # enabled, PFC on {3}
    app = "080a" + "00008000" + "12b7" + "011b21" + "08"  # UDP 4791 -> {3}
    body = "001b2102" + ctl + pfc + app
    tlv = "fe%02x" % (len(body) // 2) + body
    return ONYX + tlv + END


FRAMES = {
    # The captures as they came.
    "onyx-sn3700": onyx(),
    "aruba-8100": ARUBA + ARUBA_MFS + ARUBA_TAIL,
    # Variants.
    "pfc4": onyx(pfc="fe060080c20b0810"),
    "no-pfc": onyx(pfc=""),
    "mfs1518": ARUBA + "fe0600120f0405ee" + ARUBA_TAIL,
    "dscp26-0": onyx(app=dscp_app([(26, 0), (46, 5)])),
    "dscp26-3": onyx(app=dscp_app([(26, 3), (46, 5)]), extra="fe0600120f04233a"),
    "cee-only": cee_only(),
    "ttl0": onyx(ttl="0000"),
    "garbage": DA + "020000000001" + "88cc" + "0207" + "04b8599fa99c00" + "04ff" + "0000",
}


def frame(name):
    return bytes.fromhex(FRAMES[name])


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd = argv[1]
    if cmd == "list":
        print("\n".join(FRAMES))
    elif cmd == "hex":
        print(FRAMES[argv[2]])
    elif cmd == "write":
        for n in FRAMES:
            with open("%s/%s" % (argv[2], n), "wb") as f:
                f.write(frame(n))
    elif cmd in ("send", "send-on"):
        # send-on FILE IFACE NAME...: bound, says so in FILE.ready, sends when
        # FILE appears (30 s at most): its start-up is not in the window.
        go = None
        if cmd == "send-on":
            go, argv = argv[2], argv[1:]
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((argv[2], 0))
        if go:
            open(go + ".ready", "w").close()
            end = time.time() + 30
            while not os.path.exists(go) and time.time() < end:
                time.sleep(0.005)
        for n in argv[3:]:
            s.send(frame(n))
    elif cmd == "count":
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88CC))
        s.bind((argv[2], 0))
        s.settimeout(0.2)
        end = time.time() + float(argv[3])
        n = 0
        while time.time() < end:
            try:
                _, addr = s.recvfrom(65536)
            except socket.timeout:
                continue
            if addr[2] != socket.PACKET_OUTGOING:
                n += 1
        print(n)
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
