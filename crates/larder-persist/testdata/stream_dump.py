#!/usr/bin/env python3
"""Capture the golden stream DUMP payloads in redis-7.0.15-stream-dump.txt.

With `--check-larder` it instead RESTOREs the payloads larder writes
(larder-stream-payloads.txt, kept by the Rust tests) and checks that the server reports what
each line says.

Run `python3 crates/larder-persist/testdata/stream_dump.py` (needs redis-server 7.0.15 on
PATH and the `redis` package). It starts a redis-server with default settings on a free
port, builds each stream below, and writes one line per key:

    <key> <payload hex> <expected JSON>

The JSON is what the server itself reports for the key after building it: XRANGE's entries
([id, [field, value, ...]] with bytes as hex), and XINFO STREAM FULL's length, last id,
max deleted id, entries added, recorded first entry id, and per group its name, last delivered id,
entries read (null when Redis cannot tell), PEL ([id, consumer, delivery time, delivery
count]) and consumers ([name, seen time, [pending ids]]). Delivery and seen times are
wall-clock, so each run gives different payloads for the keys with groups; the Rust tests
check every line against its own JSON, whatever the times are.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "redis-7.0.15-stream-dump.txt")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build(r):
    """Build every stream; returns the key names in order."""
    keys = []

    def key(name):
        keys.append(name)
        return name

    # One entry.
    r.xadd(key("st_one"), {"f": "v"}, id="1-1")
    # Many entries with the same fields: cut into nodes of 100 entries.
    k = key("st_many")
    for i in range(1, 451):
        r.xadd(k, {"name": f"user-{i}", "n": i, "score": i * -7}, id=f"{1000 + i // 3}-{i % 3}")
    # Different field sets, integer and text values, empty and long values, a seq delta
    # below the master's, ms from the clock's range.
    k = key("st_fields")
    ms = 1_700_000_000_000
    r.xadd(k, {"a": "1", "b": "two"}, id=f"{ms}-5")
    r.xadd(k, {"a": "-3", "b": ""}, id=f"{ms}-9")
    r.xadd(k, {"b": "1", "a": "2"}, id=f"{ms + 1}-0")
    r.xadd(k, {"x": "y"}, id=f"{ms + 1}-1")
    r.xadd(k, {"a": "01", "b": "9223372036854775807", "c": "-9223372036854775808"},
           id=f"{ms + 20}-0")
    r.xadd(k, {"a": "z" * 70, "b": "q" * 5000}, id=f"{ms + 300}-3")
    r.xadd(k, {"a": "after the big one", "b": "3.5"}, id=f"{ms + 301}-0")
    r.xadd(k, {"long field name " * 4: "v", "a": "w"}, id=f"{ms + 302}-18446744073709551615")
    # Entries large enough to be cut by stream-node-max-bytes before 100 entries.
    k = key("st_bytes")
    for i in range(1, 60):
        r.xadd(k, {"payload": ("%04d" % i) * (20 + i * 3), "i": i}, id=f"5-{i}")
    # Deleted entries: tombstones inside nodes, the first entry of a node, a whole node.
    k = key("st_deleted")
    for i in range(1, 251):
        r.xadd(k, {"v": i}, id=f"7-{i}")
    r.xdel(k, "7-1", "7-2", "7-50", "7-101", *[f"7-{i}" for i in range(201, 251)])
    # Trimmed streams: exact MAXLEN (tombstones in the first node), approximate (whole
    # nodes), MINID.
    for name, trim in [("st_trim_exact", {"maxlen": 130, "approximate": False}),
                       ("st_trim_approx", {"maxlen": 130, "approximate": True}),
                       ("st_trim_minid", {"minid": "9-77", "approximate": False})]:
        k = key(name)
        for i in range(1, 301):
            r.xadd(k, {"f": i, "g": "x"}, id=f"9-{i}")
        r.xtrim(k, **trim)
    # Empty streams: everything deleted; and a group on a new stream.
    k = key("st_empty_deleted")
    r.xadd(k, {"a": "1"}, id="3-1")
    r.xadd(k, {"a": "2"}, id="3-2")
    r.xdel(k, "3-1", "3-2")
    r.xgroup_create(key("st_empty_group"), "g", id="$", mkstream=True)
    # XSETID with ENTRIESADDED and MAXDELETEDID.
    k = key("st_setid")
    r.xadd(k, {"a": "1"}, id="10-1")
    r.xadd(k, {"a": "2"}, id="10-2")
    r.execute_command("XSETID", k, "500-7", "ENTRIESADDED", 1000, "MAXDELETEDID", "400-0")
    # Groups: pending entries for several consumers, acks, claims, a consumer without
    # pending entries, a group whose entries read Redis cannot tell, a group name that
    # sorts before the others.
    k = key("st_groups")
    for i in range(1, 21):
        r.xadd(k, {"job": i, "kind": "email" if i % 2 else "sms"}, id=f"20-{i}")
    r.xgroup_create(k, "workers", id="0")
    r.xreadgroup("workers", "alice", {k: ">"}, count=5)
    r.xreadgroup("workers", "bob", {k: ">"}, count=3)
    r.xreadgroup("workers", "carol", {k: ">"}, count=2, noack=True)
    r.xack(k, "workers", "20-2", "20-7")
    r.xclaim(k, "workers", "bob", 0, ["20-3", "20-4"])
    r.xclaim(k, "workers", "bob", 0, ["20-4"])
    r.xgroup_createconsumer(k, "workers", "idle")
    r.xgroup_create(k, "middle", id="20-10")
    r.xgroup_create(k, "Audit", id="$")
    r.xreadgroup("Audit", "a1", {k: "0"})
    r.xdel(k, "20-1")
    return keys


def hexs(b):
    return b.hex()


def expected(r, k):
    ents = [[i.decode(), [hexs(x) for kv in f.items() for x in kv]]
            for i, f in r.xrange(k)]
    info = r.xinfo_stream(k, full=True)
    groups = []
    for g in info["groups"]:
        consumers = [[hexs(c[b"name"]), c[b"seen-time"],
                      [p[0].decode() for p in c[b"pending"]]] for c in g["consumers"]]
        groups.append({
            "name": hexs(g["name"]),
            "last_id": g["last-delivered-id"].decode(),
            "entries_read": g["entries-read"],
            "pel": [[p[0].decode(), hexs(p[1]), p[2], p[3]] for p in g["pending"]],
            "consumers": consumers,
        })
    return {
        "entries": ents,
        "length": info["length"],
        "last_id": info["last-generated-id"].decode(),
        "max_deleted_id": info["max-deleted-entry-id"].decode(),
        "entries_added": info["entries-added"],
        "first_id": info["recorded-first-entry-id"].decode(),
        "groups": groups,
    }


def check_larder(r):
    """RESTORE each payload larder wrote and compare what the server reports."""
    path = os.path.join(HERE, "larder-stream-payloads.txt")
    bad = 0
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            k, payload, want = line.rstrip("\n").split(" ", 2)
            r.restore(k, 0, bytes.fromhex(payload))
            got = expected(r, k)
            if got != json.loads(want):
                bad += 1
                print(f"{k}: restored as {got}, larder expected {want}")
            else:
                print(f"{k}: restored equal")
    if bad:
        sys.exit(1)


def main():
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(["redis-server", "--port", str(port), "--dir", tmp,
                                 "--save", "", "--appendonly", "no"],
                                stdout=subprocess.DEVNULL)
        try:
            r = redis.Redis(port=port)
            for _ in range(100):
                try:
                    r.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            version = r.info("server")["redis_version"]
            if version != "7.0.15":
                sys.exit(f"redis-server {version}, not 7.0.15")
            if sys.argv[1:] == ["--check-larder"]:
                check_larder(r)
                return
            keys = build(r)
            lines = ["# DUMP output of redis-server 7.0.15 for streams (default configuration),",
                     "# made by stream_dump.py: key, payload in hex, what the server reported."]
            for k in keys:
                lines.append(f"{k} {r.dump(k).hex()} "
                             f"{json.dumps(expected(r, k), separators=(',', ':'))}")
        finally:
            proc.terminate()
            proc.wait()
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
