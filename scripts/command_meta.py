#!/usr/bin/env python3
"""Writes crates/larder-commands/src/server/command_meta.rs: Redis 7.0's command tips and key
specs, as `COMMAND` on a redis-server 7.0 reports them, for larder's COMMAND INFO.

    scripts/command_meta.py [REDIS_SERVER_BINARY]

Starts the redis-server (default: the one on PATH) on a free port, reads `COMMAND` over
RESP2, and writes the table. Run it again only to follow another Redis release, together
with scripts/gen-acl-keyspecs.py (the ACL's view of the same key specs); the file it writes
is committed, and CI never runs this script.
"""

import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "larder-commands", "src", "server", "command_meta.rs")


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.s.recv(1 << 20)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest.decode()
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 20)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode()
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise ValueError(line)

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.reply()


def pairs(flat):
    return dict(zip(flat[0::2], flat[1::2]))


def rust_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def key_spec(spec):
    """One key spec as the helpers of server/command.rs build it (a line or two)."""
    d = pairs(spec)
    begin, find = pairs(d["begin_search"]), pairs(d["find_keys"])
    bs = pairs(begin["spec"]) if begin["spec"] else {}
    fs = pairs(find["spec"]) if find["spec"] else {}
    if begin["type"] == "index":
        b = "index(%d)" % bs["index"]
    elif begin["type"] == "keyword":
        b = "keyword(%s, %d)" % (rust_str(bs["keyword"]), bs["startfrom"])
    else:
        b = "Begin::Unknown"
    if find["type"] == "range":
        f = "range(%d, %d, %d)" % (fs["lastkey"], fs["keystep"], fs["limit"])
    elif find["type"] == "keynum":
        f = "keynum(%d, %d, %d)" % (fs["keynumidx"], fs["firstkey"], fs["keystep"])
    else:
        f = "Find::Unknown"
    flags = "&[%s]" % ", ".join(rust_str(x) for x in d["flags"])
    if "notes" in d:
        return "noted(\n            %s,\n            %s, %s, %s)" % (rust_str(d["notes"]), flags, b, f)
    return "spec(%s, %s, %s)" % (flags, b, f)


def entries(cmds):
    for c in cmds:
        name, first, last, step, tips, specs, subs = c[0], c[3], c[4], c[5], c[7], c[8], c[9]
        yield name, first, last, step, tips, specs
        yield from entries(subs or [])


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "redis-server"
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    work = tempfile.mkdtemp()
    p = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no",
                          "--dir", work], stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                c = Conn(port)
                break
            except OSError:
                time.sleep(0.1)
        version = pairs([x for line in c.call("INFO", "server").split("\r\n") if ":" in line
                         for x in line.split(":", 1)])["redis_version"]
        rows = sorted(entries(c.call("COMMAND")))
    finally:
        p.kill()
        p.wait()
    lines = [
        "//! Redis %s's command tips and key specs, by full name, as its `COMMAND` reports them:" % version,
        "//! what larder's COMMAND INFO says about the commands both servers have. Written by",
        "//! scripts/command_meta.py from a redis-server %s; do not edit by hand." % version,
        "",
        "use super::command::{entry, index, keynum, keyword, noted, range, spec, Begin, Find, Meta};",
        "",
        "#[rustfmt::skip]",
        "pub(super) static META: &[Meta] = &[",
    ]
    for name, first, last, step, tips, specs in rows:
        head = "    entry(%s, (%d, %d, %d), &[%s], &[" % (
            rust_str(name), first, last, step, ", ".join(rust_str(t) for t in tips))
        if not specs:
            lines.append(head + "]),")
            continue
        lines.append(head)
        lines += ["        %s," % key_spec(k) for k in specs]
        lines.append("    ]),")
    lines.append("];")
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%s: %d commands from redis-server %s" % (os.path.relpath(OUT, ROOT), len(rows), version))


if __name__ == "__main__":
    main()
