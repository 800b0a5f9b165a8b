#!/usr/bin/env python3
"""Generate crates/larder-commands/src/acl/keys/specs.rs: Redis 7.0.15's key specs for every
command and subcommand larder has that has keys in Redis.

Usage: scripts/gen-acl-keyspecs.py <redis-src-dir> [--larder BIN] [--out FILE]

<redis-src-dir> is a checkout of Redis 7.0.15 (its src/commands/*.json are read). larder's
command names come from COMMAND on a larder started from BIN (default
target/release/larder) on a free port. CI never runs this script; its output is committed.
"""

import argparse
import glob
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

FLAGS = ["RO", "RW", "OW", "RM", "ACCESS", "UPDATE", "INSERT", "DELETE", "INCOMPLETE",
         "VARIABLE_FLAGS"]

# Redis's getkeys procs (src/db.c) by name: the variant of `GetKeys` in keys.rs.
PROCS = {
    "setGetKeys": "Set",
    "bitfieldGetKeys": "Bitfield",
    "sortGetKeys": "Sort",
    "sortROGetKeys": "SortRo",
    "migrateGetKeys": "Migrate",
    "georadiusGetKeys": "Georadius",
    "xreadGetKeys": "Xread",
    "sintercardGetKeys": "GENERIC_1_2",
    "zunionInterDiffGetKeys": "GENERIC_1_2",
    "zunionInterDiffStoreGetKeys": "Generic { store: 1, count: 2, first: 3 }",
    "evalGetKeys": "GENERIC_2_3",
    "functionGetKeys": "GENERIC_2_3",
    "lmpopGetKeys": "GENERIC_1_2",
    "blmpopGetKeys": "GENERIC_2_3",
    "zmpopGetKeys": "GENERIC_1_2",
    "bzmpopGetKeys": "GENERIC_2_3",
}


def read_reply(f):
    line = f.readline()
    kind, rest = line[:1], line[1:-2]
    if kind in (b"+", b":"):
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode()
    if kind in (b"*", b"~"):
        return [read_reply(f) for _ in range(int(rest))]
    if kind == b"%":
        return [read_reply(f) for _ in range(2 * int(rest))]
    raise RuntimeError(f"unexpected reply {line!r}")


def larder_names(binary):
    """Every full command name (`get`, `object|encoding`) of a larder started from `binary`."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--memcached-port", "0", "--http-port", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tempfile.mkdtemp())
    try:
        for _ in range(100):
            try:
                conn = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        else:
            sys.exit("larder did not start")
        f = conn.makefile("rb")
        conn.sendall(b"*1\r\n$7\r\nCOMMAND\r\n")
        names = []
        for info in read_reply(f):
            names.append(info[0])
            for sub in info[9] or []:
                names.append(sub[0])
        conn.close()
        return names
    finally:
        proc.terminate()
        proc.wait()


def redis_commands(src):
    """Full lower-case name -> the command's JSON, from src/commands/*.json."""
    out = {}
    for path in glob.glob(os.path.join(src, "src", "commands", "*.json")):
        with open(path) as f:
            for name, cmd in json.load(f).items():
                full = name.lower()
                if "container" in cmd:
                    full = cmd["container"].lower() + "|" + full
                out[full] = cmd
    return out


def rust_spec(ks):
    flags = " | ".join(ks["flags"]) or "0"
    bs = ks["begin_search"]
    if "index" in bs:
        begin = f"Index({bs['index']['pos']})"
    elif "keyword" in bs:
        kw = bs["keyword"]
        begin = f"Keyword {{ keyword: b\"{kw['keyword']}\", startfrom: {kw['startfrom']} }}"
    else:
        begin = "Begin::Unknown"
    fk = ks["find_keys"]
    if "range" in fk:
        r = fk["range"]
        find = f"range({r['lastkey']}, {r['step']}, {r['limit']})"
    elif "keynum" in fk:
        k = fk["keynum"]
        find = f"keynum({k['keynumidx']}, {k['firstkey']}, {k['step']})"
    else:
        find = "Find::Unknown"
    return f"spec({flags}, {begin}, {find})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("redis_src")
    ap.add_argument("--larder", default="target/release/larder")
    ap.add_argument("--out", default="crates/larder-commands/src/acl/keys/specs.rs")
    a = ap.parse_args()
    a.larder = os.path.abspath(a.larder)
    redis = redis_commands(a.redis_src)
    rows = []
    for name in sorted(set(larder_names(a.larder))):
        cmd = redis.get(name)
        if cmd is None:
            continue
        specs = cmd.get("key_specs", [])
        proc = cmd.get("get_keys_function")
        # Redis's doesCommandHaveKeys: a getkeys proc, or a spec that is not NOT_KEY (the
        # shard channel commands' specs are all NOT_KEY).
        if not proc and all("NOT_KEY" in ks["flags"] for ks in specs):
            continue
        for fl in (fl for ks in specs for fl in ks["flags"]):
            assert fl in FLAGS, (name, fl)
        getkeys = PROCS[proc] if proc else "None"
        specs = [rust_spec(ks) for ks in specs]
        line = f"    entry(\"{name}\", {getkeys}, &[{', '.join(specs)}]),\n"
        if len(line) > 100:
            inner = "".join(f"        {sp},\n" for sp in specs)
            line = f"    entry(\"{name}\", {getkeys}, &[\n{inner}    ]),\n"
        rows.append(line)
    with open(a.out, "w") as f:
        f.write("//! Redis 7.0.15's key specs (`src/commands/*.json`) for every command and "
                "subcommand larder\n//! has that has keys in Redis, sorted by full name. "
                "GENERATED by\n//! `scripts/gen-acl-keyspecs.py <redis-src-dir>`: "
                "do not edit.\n\n")
        f.write("use super::flags::*;\nuse super::Begin::{self, Index, Keyword};\n"
                "use super::GetKeys::{self, *};\n"
                "use super::{entry, keynum, range, spec, Entry, Find};\n\n"
                "/// `genericGetKeys` without a destination: the count at 1 or 2, the keys after it.\n"
                "const GENERIC_1_2: GetKeys = Generic {\n    store: 0,\n    count: 1,\n    first: 2,\n};\n"
                "const GENERIC_2_3: GetKeys = Generic {\n    store: 0,\n    count: 2,\n    first: 3,\n};\n\n")
        f.write("#[rustfmt::skip]\npub(super) const SPECS: &[Entry] = &[\n")
        f.write("".join(rows))
        f.write("];\n")


if __name__ == "__main__":
    main()
