#!/usr/bin/env python3
"""udp-proxy.py - a UDP relay on loopback that mangles what it relays, for the tests of
--reliable without a lab: loss, duplicates, reordering, foreign datagrams into both ends, and a
cut (it stops relaying after a count).

    udp-proxy.py TARGET_PORT [--loss P] [--dup P] [--reorder P] [--garbage N] [--cut N]
                 [--seed S] [--addr 127.0.0.1]

Prints its own port on stdout, then relays between the first peer that sends to it (the
client) and TARGET_PORT on the same address. --loss, --dup and --reorder act on each datagram
of each direction (reorder: held back until the next one passed); --garbage N sends, after
every N datagrams relayed, three foreign datagrams to each end from the relay's own sockets
(the address the end talks to): random bytes, a --reliable header with a random session, and
a header alone. --cut N: after N datagrams relayed, relay nothing more (both ends hear
silence). At exit (SIGTERM) it prints counts on stderr.
"""
import argparse
import os
import random
import select
import signal
import socket
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target", type=int)
    ap.add_argument("--addr", default="127.0.0.1")
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--dup", type=float, default=0.0)
    ap.add_argument("--reorder", type=float, default=0.0)
    ap.add_argument("--garbage", type=int, default=0)
    ap.add_argument("--cut", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    fam = socket.AF_INET6 if ":" in a.addr else socket.AF_INET
    front = socket.socket(fam, socket.SOCK_DGRAM)
    front.bind((a.addr, 0))
    back = socket.socket(fam, socket.SOCK_DGRAM)
    back.connect((a.addr, a.target))
    for s in (front, back):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    print(front.getsockname()[1], flush=True)
    counts = {"relayed": 0, "dropped": 0, "duplicated": 0, "reordered": 0, "garbage": 0}

    def bye(*_):
        sys.stderr.write(" ".join("%s=%d" % kv for kv in counts.items()) + "\n")
        sys.exit(0)

    signal.signal(signal.SIGTERM, bye)
    client = None
    held = {front: None, back: None}

    def out(to_client, data):
        try:
            if to_client:
                front.sendto(data, client)
            else:
                back.send(data)
        except OSError:
            pass

    def foreign():
        junk = [os.urandom(rnd.randint(1, 200)),
                b"\xffFCR" + rnd.choice(b"ADKECNH").to_bytes(1, "big") + b"\x01\x00\x00"
                + os.urandom(8) + os.urandom(rnd.randint(0, 100)),
                b"\xffFCRD\x01\x00\x00"]
        for j in junk:
            out(True, j)
            out(False, j)
            counts["garbage"] += 2

    while True:
        r, _, _ = select.select([front, back], [], [])
        for s in r:
            try:
                if s is front:
                    data, peer = front.recvfrom(70000)
                    if client is None:
                        client = peer
                    elif peer != client:
                        continue
                else:
                    data = back.recv(70000)
            except OSError:
                continue
            if client is None:
                continue
            to_client = s is back
            if a.cut and counts["relayed"] >= a.cut:
                counts["dropped"] += 1
                continue
            if rnd.random() < a.loss:
                counts["dropped"] += 1
                continue
            if held[s] is None and rnd.random() < a.reorder:
                held[s] = data
                counts["reordered"] += 1
                continue
            out(to_client, data)
            counts["relayed"] += 1
            if rnd.random() < a.dup:
                out(to_client, data)
                counts["duplicated"] += 1
            if held[s] is not None:
                out(to_client, held[s])
                held[s] = None
            if a.garbage and counts["relayed"] % a.garbage == 0:
                foreign()


if __name__ == "__main__":
    main()
