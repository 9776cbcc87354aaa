#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A loopback TCP proxy for the cluster tests' faults: it stands between the
# hook and one etcd member, one HTTP request per connection (it answers with
# "Connection: close"), and does to each request what its rules file says,
# read again at every request:
#
#   drop REGEX [N]   forward the next N (1) requests whose body matches
#                    REGEX to etcd, then close the client's connection
#                    without its answer (etcd applied it; the caller never
#                    hears): a lost answer
#   cut-after REGEX  as drop, then refuse every later connection (a member
#                    partitioned mid-transaction)
#   delay MS         answer every request MS late
#   answer REGEX FILE  answer every request whose body matches REGEX with
#                    FILE's content (HTTP 200, JSON) instead of etcd's: a
#                    faulty or hostile member
#   cut              refuse every connection (accept and close at once)
#
# Every request is logged to LOG as "<what> <path> <first 60 bytes of body>".
# Usage: fault-proxy.py LISTEN_PORT UPSTREAM_PORT RULES LOG
import os
import re
import socket
import sys
import threading
import time

listen_port, upstream_port, rules_path, log_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
lock = threading.Lock()
state = {"cut": False}


def log(line):
    with lock, open(log_path, "a") as f:
        f.write(line + "\n")


def rules():
    try:
        with open(rules_path) as f:
            return [l.split() for l in f if l.strip()]
    except FileNotFoundError:
        return []


def consume(index):
    """Counts one use of the rule at index (drop N): rewritten without it at 0."""
    with lock:
        rs = rules()
        r = rs[index]
        n = int(r[2]) if r[0] == "drop" and len(r) > 2 else 1
        if n > 1:
            rs[index] = [r[0], r[1], str(n - 1)]
        else:
            del rs[index]
        with open(rules_path + ".tmp", "w") as f:
            f.write("".join(" ".join(x) + "\n" for x in rs))
        os.rename(rules_path + ".tmp", rules_path)


def read_request(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None, None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
        if k.strip().lower() == b"expect" and len(body) == 0:
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    head = b"\r\n".join(l for l in head.split(b"\r\n") if not l.lower().startswith(b"expect:"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return None, None
        body += chunk
    return head, body


def handle(conn):
    try:
        if state["cut"]:
            log("cut - -")
            return
        head, body = read_request(conn)
        if head is None:
            return
        path = head.split(b"\r\n")[0].split(b" ")[1].decode(errors="replace")
        text = body.decode(errors="replace")
        action, delay = "forwarded", 0
        for r in rules():
            if r[0] == "answer" and re.search(r[1], text):
                with open(r[2], "rb") as f:
                    forged = f.read()
                log("answered %s %s" % (path, text[:60]))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n" % len(forged) + forged)
                return
        for i, r in enumerate(rules()):
            if r[0] == "cut":
                state["cut"] = True
                log("cut %s -" % path)
                return
            if r[0] == "delay":
                delay = int(r[1])
            elif r[0] in ("drop", "cut-after") and re.search(r[1], text):
                action = "dropped" if r[0] == "drop" else "cut-after"
                consume(i)
                break
        # One request per connection: the answer ends at etcd's close.
        lines = [l for l in head.split(b"\r\n") if not l.lower().startswith(b"connection:")]
        req = b"\r\n".join(lines) + b"\r\nConnection: close\r\n\r\n" + body
        up = socket.create_connection(("127.0.0.1", upstream_port), timeout=30)
        up.sendall(req)
        answer = b""
        while True:
            chunk = up.recv(65536)
            if not chunk:
                break
            answer += chunk
        up.close()
        log("%s %s %s" % (action, path, text[:60]))
        if action == "cut-after":
            state["cut"] = True
        if action != "forwarded":
            return
        if delay:
            time.sleep(delay / 1000)
        conn.sendall(answer)
    except OSError as e:
        log("error %s" % e)
    finally:
        conn.close()


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", listen_port))
    s.listen(256)
    log("listening %d -> %d" % (listen_port, upstream_port))
    while True:
        conn, _ = s.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


main()
