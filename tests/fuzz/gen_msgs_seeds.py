#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Seeds for fuzz_agent_msgs (tests/fuzz/corpus_msgs): sessions as an
agent would send them for that target's four SPECs (common/proto.h's
layouts), each packet as a 2-byte little-endian length and its bytes.

  python3 tests/fuzz/gen_msgs_seeds.py DIR
"""
import os
import struct
import sys

FROM, HELLO, PROBE, SYM, EVENT, STAT, END, CONFIG, DETACH, DETACHED, HIST, AUTH, READY = \
    range(1, 14)
VERSION = 4
ATTACH = 4
PID = 4242


def msg(kind, body):
    body += b"\0" * (-(len(body) + 8) % 8)
    return struct.pack("<II", kind, 8 + len(body)) + body


def frm(image=1):
    return msg(FROM, struct.pack("<iIQ", PID, 0, image))


def hello(nspecs=4, version=VERSION, origin=ATTACH):
    return msg(HELLO, struct.pack("<iiIIII16s", PID, 1, version, nspecs, 0, origin,
                                  b"target"))


def probe(pid_id, spec, err=0, what=0, flags=1, texts=("ev", "f+0x0/0x10 [prog]", "/prog", "")):
    t = b"".join(x.encode() + b"\0" for x in texts)
    return msg(PROBE, struct.pack("<IIiHHiIQQQ", pid_id, spec, err, what, flags, 1, 0,
                                  0x1000 + spec, 0x1000 + spec, 0x400000) + t)


def sym(addr, text):
    return msg(SYM, struct.pack("<Q", addr) + text.encode() + b"\0")


def event(pid_id, payload, caller=0, faults=0):
    head = struct.pack("<QQQiiII16s", 1000, 0x1000, caller, PID, 0, pid_id, faults, b"thr")
    body = head + payload
    body += b"\0" * (-(len(body) + 8) % 8)
    return struct.pack("<II", EVENT, 8 + len(body)) + body


def stat(pid_id, hits):
    return msg(STAT, struct.pack("<IIQQ", pid_id, 0, hits, 0))


def hist(spec, entries, entry_size):
    data = b"".join(e.ljust(entry_size, b"\0")[:entry_size] for e in entries)
    return msg(HIST, struct.pack("<IIIIQQ", spec, len(entries), entry_size, 1, len(entries), 0)
               + data)


def end(reason=3, setup_failed=0):
    return msg(END, struct.pack("<QII", 0, setup_failed, reason))


def detached():
    return msg(DETACHED, struct.pack("<iI", 99, 0))


def packets(*pkts):
    return b"".join(struct.pack("<H", len(p)) + p for p in pkts)


def seeds():
    nums = b"".join(struct.pack("<Q", v) for v in (7, 0xfffe, 0x41, 0, 0x1000, 0x2d, 5))
    s = b"hello\0" + b"x" * 40
    ev0 = nums[:24] + s.ljust(64, b"\0") + nums
    stack = struct.pack("<Q", 3) + b"".join(struct.pack("<Q", 0x1000 + i) for i in range(8))
    entry = struct.pack("<QQ", 0, 5) + b"comm".ljust(16, b"\0") + struct.pack("<QQ", 0x1003, PID)
    yield "session", packets(
        frm() + hello(),
        frm() + probe(0, 0) + probe(1, 1, texts=("b", "g+0x0/0x20 [prog]", "/prog", "")),
        frm() + probe(2, 2) + probe(3, 3) + msg(READY, b""),
        frm() + sym(0x1000, "f+0x0/0x10 [prog]") + sym(0x1003, "k+0x3/0x10 [prog]"),
        frm() + event(0, ev0) + event(1, nums + s, caller=0x1003) + event(2, stack),
        frm() + event(3, nums, faults=1),
        frm() + stat(0, 1) + stat(1, 1) + stat(2, 1) + stat(3, 5),
        frm() + hist(3, [entry, entry], 48),
        frm() + end() + detached())
    yield "failures", packets(
        frm() + hello(),
        frm() + probe(0xffffffff, 1, err=-2, what=2, texts=("b", "", "/prog", "no such")),
        frm() + probe(0xffffffff, 2, flags=4) + probe(0, 0, flags=3) +
        probe(0xffffffff, 0, err=-22, flags=2, texts=("a", "f", "/prog", "blacklisted")),
        frm() + end(0, 1))
    yield "images", packets(
        frm(1) + hello(), frm(2) + hello(origin=1), frm(1) + probe(0, 0),
        frm(2) + probe(0, 3), frm(2) + event(0, nums), frm(1) + end(0), frm(3) + end())
    yield "version", packets(frm() + hello(version=VERSION + 1))
    yield "hist", packets(frm() + hello(), frm() + hist(3, [entry], 56),
                          frm() + hist(2, [entry], 48))
    yield "wrong", packets(frm() + hello(nspecs=3), hello(), frm() + probe(0, 9))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(out, "seed-" + name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
