#!/usr/bin/env python3
"""Bytes per element of the data types: larder against redis-server, each server fresh and alone.

Five data sets, each from a fixed, seeded generator (DATASETS below; the same bytes go to both
servers), loaded over one raw socket with large pipelined writes of pre-generated RESP:

  hashes   1M hashes `h:{i}`, 10 fields `f0`..`f9`, values `v%07d` (8 bytes, never integers)
  intsets  100k sets `s:{i}` of 100 distinct integers drawn from [0, 10^6)
  zset     one sorted set `zset` of 1M members `m:{i}`, scores uniform in [0, 1e6)
  lists    1M lists `l:{i}` of 5 items `x%09d` (10 bytes, never integers)
  strset   one set `sset` of 1M members `m:{i}`

For each data set and server: start the server fresh, read RSS (VmRSS) and INFO memory
`used_memory` after `--settle` idle seconds, load, wait again, read them again, check the data
(DBSIZE, the size of sample keys, sample values and scores, OBJECT ENCODING), stop the server.
Reported: bytes per element and per key from both readings, the larder/redis ratio, and the
target ratio (0.8x where Redis 7.0 uses hashtable/skiplist/quicklist, 1.0x for listpack/intset).
Standard library only; helpers come from resp_compare.py. See bench/README.md.
"""

import argparse
import hashlib
import json
import os
import random
import shlex
import socket
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import (  # noqa: E402
    REPO, RESULTS, Resp, RespError, Server, default_larder_bin, machine_line)

GEN_VERSION = 1  # bump when a generator changes: the cached protocol files are keyed on it


def cmd(*args):
    """One RESP2 command; args are bytes."""
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


# ---------------------------------------------------------------- the data sets
#
# Each generator yields RESP commands (bytes) and is a pure function of (scale, seed): the
# protocol is written once to a cache file and streamed, unchanged, to every server.


def gen_hashes(n, seed):
    for i in range(n):
        args = [b"HSET", b"h:%d" % i]
        for j in range(10):
            args += [b"f%d" % j, b"v%07d" % ((10 * i + j) % 10 ** 7)]
        yield cmd(*args)


def intset_members(n, seed):
    rng = random.Random(seed)
    for _ in range(n):
        yield rng.sample(range(10 ** 6), 100)


def gen_intsets(n, seed):
    for i, members in enumerate(intset_members(n, seed)):
        yield cmd(b"SADD", b"s:%d" % i, *(b"%d" % m for m in members))


def zset_score(rng):
    return repr(rng.random() * 1e6).encode()  # repr round-trips: the server parses this double


def gen_zset(n, seed, batch=1000):
    rng = random.Random(seed)
    for lo in range(0, n, batch):
        args = [b"ZADD", b"zset"]
        for i in range(lo, min(n, lo + batch)):
            args += [zset_score(rng), b"m:%d" % i]
        yield cmd(*args)


def list_item(i, k):
    return b"x%09d" % ((5 * i + k) % 10 ** 9)


def gen_lists(n, seed):
    for i in range(n):
        yield cmd(b"RPUSH", b"l:%d" % i, *(list_item(i, k) for k in range(5)))


def gen_strset(n, seed, batch=1000):
    for lo in range(0, n, batch):
        yield cmd(b"SADD", b"sset", *(b"m:%d" % i for i in range(lo, min(n, lo + batch))))


# name: generator, full size (the count that --scale multiplies), what that count counts,
# elements per counted unit, keys per counted unit (None: one key in all), the encoding Redis
# 7.0 uses with its default limits, target larder/redis ratio, description for the report.
DATASETS = {
    "hashes": dict(gen=gen_hashes, full=1_000_000, per=10, keys_per=1, redis_enc="listpack",
                   target=1.0, what="hashes `h:{i}`, i in [0, N); 10 fields `f0`..`f9`; value"
                   " of field j = `v%07d` % ((10i+j) mod 10^7), 8 bytes, not an integer"),
    "intsets": dict(gen=gen_intsets, full=100_000, per=100, keys_per=1, redis_enc="intset",
                    target=1.0, what="sets `s:{i}`, i in [0, N); 100 distinct integers each, "
                    "`random.Random(seed).sample(range(10**6), 100)` per key in key order"),
    "zset": dict(gen=gen_zset, full=1_000_000, per=1, keys_per=None, redis_enc="skiplist",
                 target=0.8, what="one sorted set `zset`; members `m:{i}`, i in [0, N); score of"
                 " m:{i} = the i-th `random.Random(seed).random() * 1e6` (uniform [0, 1e6)), "
                 "sent as Python repr; ZADD 1000 pairs a command"),
    "lists": dict(gen=gen_lists, full=1_000_000, per=5, keys_per=1, redis_enc="quicklist",
                  target=0.8, what="lists `l:{i}`, i in [0, N); 5 items (RPUSH) "
                  "`x%09d` % ((5i+k) mod 10^9), 10 bytes, not integers"),
    "strset": dict(gen=gen_strset, full=1_000_000, per=1, keys_per=None, redis_enc="hashtable",
                   target=0.8, what="one set `sset`; members `m:{i}`, i in [0, N); SADD 1000 "
                   "members a command"),
}


def dataset_size(name, scale):
    return max(1, round(DATASETS[name]["full"] * scale))


def protocol_file(name, n, seed, tmp_dir, gen=None, prefix="dtmem"):
    """Write a data set's commands (gen(n, seed), by default DATASETS[name]'s) to a cache file
    once; returns (path, commands)."""
    gen = gen or DATASETS[name]["gen"]
    src = hashlib.sha1(repr((GEN_VERSION, prefix, name, n, seed)).encode()).hexdigest()[:12]
    path = os.path.join(tmp_dir, "%s-%s-%d-%s.resp" % (prefix, name, n, src))
    meta = path + ".count"
    if os.path.exists(path) and os.path.exists(meta):
        with open(meta) as f:
            return path, int(f.read())
    t0, count = time.perf_counter(), 0
    with open(path + ".tmp", "wb", buffering=1 << 20) as f:
        for c in gen(n, seed):
            f.write(c)
            count += 1
    os.replace(path + ".tmp", path)
    with open(meta, "w") as f:
        f.write(str(count))
    print("generated %s: %d commands, %.0f MB in %.1fs" % (
        os.path.basename(path), count, os.path.getsize(path) / 1e6, time.perf_counter() - t0),
        file=sys.stderr)
    return path, count


def short_error(msg):
    """An error reply without Redis's ", with args beginning with: ..." tail."""
    return msg.split(", with args beginning with")[0][:200]


def pipe_file(port, path, commands, timeout=300):
    """Stream a file of RESP commands on one connection (sendfile, from a sender thread) while
    this thread counts the replies: single-line ones (integers, errors) or bulk strings (an ID
    from XADD). Returns (seconds, first error reply or None)."""
    conn = Resp(port, timeout=timeout)
    err = []

    def sender():
        try:
            with open(path, "rb") as f:
                conn.sock.sendfile(f)
        except OSError as e:
            err.append(e)

    t0 = time.perf_counter()
    th = threading.Thread(target=sender, daemon=True)
    th.start()
    replies, pending, skip, first_error = 0, b"", False, None
    try:
        while replies < commands:
            data = conn.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("server closed the connection during load: %r" % err)
            lines = (pending + data).split(b"\r\n")
            pending = lines.pop()
            if not skip and b"$" not in data and b"-" not in data:
                replies += len(lines)  # integers only: the common case, counted at once
                continue
            for x in lines:
                if skip:  # the data line of a bulk reply
                    skip = False
                    continue
                replies += 1
                if x[:1] == b"$" and x != b"$-1":
                    skip = True
                elif x[:1] == b"-" and first_error is None:
                    first_error = x[:160].decode(errors="replace")
    except socket.timeout:
        raise RuntimeError("no reply within %ss during the load (%d of %d replies)"
                           % (timeout, replies, commands)) from None
    finally:
        conn.close()
    th.join()
    if replies != commands or pending or skip:
        raise RespError("unexpected reply stream: %d replies for %d commands" % (replies, commands))
    return time.perf_counter() - t0, first_error


# ---------------------------------------------------------------- checks after the load


def check(server, name, n, seed):
    """Verify the loaded data on a sample; returns the OBJECT ENCODING of a sample key."""
    c = Resp(server.port, timeout=60)
    try:
        def expect(what, got, want):
            if got != want:
                raise RuntimeError("%s: %s %s: got %r, expected %r" % (
                    server.label, name, what, got, want))

        d = DATASETS[name]
        keys = n if d["keys_per"] else 1
        try:
            expect("DBSIZE", c.call("DBSIZE"), keys)
        except RespError:
            server.missing.add("DBSIZE")
        sample = sorted({0, n - 1} | set(random.Random(7).sample(range(n), min(n, 50))))
        if name == "hashes":
            for i in sample:
                expect("HLEN h:%d" % i, c.call("HLEN", b"h:%d" % i), 10)
                expect("HGET h:%d f7" % i, c.call("HGET", b"h:%d" % i, b"f7"),
                       b"v%07d" % ((10 * i + 7) % 10 ** 7))
            key = b"h:0"
        elif name == "intsets":
            members = list(intset_members(n, seed))
            for i in sample:
                expect("SCARD s:%d" % i, c.call("SCARD", b"s:%d" % i), 100)
                expect("SISMEMBER s:%d" % i, c.call("SISMEMBER", b"s:%d" % i,
                                                    members[i][-1]), 1)
            key = b"s:0"
        elif name == "zset":
            expect("ZCARD zset", c.call("ZCARD", b"zset"), n)
            rng = random.Random(seed)
            scores = [zset_score(rng) for _ in range(n)]
            for i in sample:
                got = c.call("ZSCORE", b"zset", b"m:%d" % i)
                expect("ZSCORE m:%d" % i, float(got), float(scores[i]))
            key = b"zset"
        elif name == "lists":
            for i in sample:
                expect("LLEN l:%d" % i, c.call("LLEN", b"l:%d" % i), 5)
                expect("LINDEX l:%d 3" % i, c.call("LINDEX", b"l:%d" % i, 3), list_item(i, 3))
            key = b"l:0"
        else:
            expect("SCARD sset", c.call("SCARD", b"sset"), n)
            for i in sample:
                expect("SISMEMBER m:%d" % i, c.call("SISMEMBER", b"sset", b"m:%d" % i), 1)
            key = b"sset"
        try:
            enc = c.call("OBJECT", "ENCODING", key)
            return enc.decode() if isinstance(enc, bytes) else str(enc)
        except RespError as e:
            server.missing.add("OBJECT ENCODING (%s)" % e)
            return None
    finally:
        c.close()


def used_memory(server):
    v = server.info("memory").get("used_memory")
    return int(v) if v is not None else None


LIMITS = ("hash-max-listpack-entries", "hash-max-listpack-value", "set-max-intset-entries",
          "zset-max-listpack-entries", "zset-max-listpack-value", "list-max-listpack-size")


def limits(server):
    out = {}
    for k in LIMITS:
        try:
            v = server.call("CONFIG", "GET", k)
        except (RespError, OSError):
            v = None
        if isinstance(v, list) and len(v) == 2:
            out[k] = v[1].decode()
        elif isinstance(v, dict) and v:
            out[k] = list(v.values())[0].decode()
    return out


def measure(server, name, n, path, commands, a):
    """One data set on one fresh server; a refused command is recorded, not raised."""
    d = DATASETS[name]
    elements = n * d["per"]
    r = {"server": server.label, "dataset": name, "n": n, "elements": elements,
         "keys": n if d["keys_per"] else 1}
    server.start()
    try:
        r["version"], r["argv"], r["limits"] = server.version(), shlex.join(server.argv), \
            limits(server)
        time.sleep(a.settle)
        rss0, used0 = server.rss_bytes(), used_memory(server)
        t, error = pipe_file(server.port, path, commands, a.load_timeout)
        if error:
            r["error"] = "refused: " + short_error(error)
            return r
        time.sleep(a.settle)
        rss1, used1 = server.rss_bytes(), used_memory(server)
        r["encoding"] = check(server, name, n, a.seed)
        r.update(load_s=round(t, 3), elements_per_s=round(elements / t),
                 rss_before=rss0, rss_after=rss1, rss_per_element=(rss1 - rss0) / elements,
                 rss_per_key=(rss1 - rss0) / r["keys"],
                 used_memory_before=used0, used_memory_after=used1,
                 used_per_element=(used1 - used0) / elements
                 if used0 is not None and used1 is not None else None)
    except (RuntimeError, OSError) as e:
        r["error"] = str(e)
    finally:
        r["exit_code"] = server.stop()
    return r


# ---------------------------------------------------------------- report


def render(meta, runs):
    a, b = meta["server_a"], meta["server_b"]
    out = []
    w = out.append
    w("## Bytes per element by data type: %s vs %s\n" % (a, b))
    w("- date: %s; machine: %s" % (meta["date"], meta["machine"]))
    w("- command: `%s`" % meta["command"])
    for s in meta["servers"]:
        w("- %s = `%s` (%s); limits: %s" % (s["server"], s["argv"], s["version"], ", ".join(
            "%s %s" % kv for kv in sorted(s["limits"].items())) or "–"))
    w("- each data set on a fresh server, alone; pre-generated RESP streamed over one socket; "
      "readings after %.1f s idle; %d round(s), medians [min–max]; scale %g, seed %d"
      % (meta["settle"], meta["rounds"], meta["scale"], meta["seed"]))
    w("- RSS is VmRSS (what the machine pays); used_memory is whatever each server counts. "
      "Ratio = %s/%s of RSS bytes per element, per round; target: 0.8× where Redis uses "
      "hashtable/skiplist/quicklist, 1.0× for listpack/intset.\n" % (a, b))
    w("| data set | elements | %s enc | %s enc | %s RSS B/elem | %s RSS B/elem | RSS ratio | "
      "target | %s used B/elem | %s used B/elem | used ratio | %s B/key | %s B/key |"
      % (a, b, a, b, a, b, a, b))
    w("|---|---:|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")

    def cell(vals, fmt="%.1f"):
        vals = [v for v in vals if v is not None]
        if not vals:
            return "–"
        m, lo, hi = (fmt % x for x in (statistics.median(vals), min(vals), max(vals)))
        return m if lo == hi else "%s [%s–%s]" % (m, lo, hi)

    for name in meta["datasets"]:
        rs = {lab: [r for r in runs if r["dataset"] == name and r["server"] == lab]
              for lab in (a, b)}
        errs = ["%s: %s" % (r["server"], r["error"]) for lab in (a, b) for r in rs[lab]
                if "error" in r]
        ok = {lab: [r for r in rs[lab] if "error" not in r] for lab in (a, b)}
        rounds = sorted({r["round"] for r in runs if r["dataset"] == name})
        pair = [(next((r for r in ok[a] if r["round"] == k), None),
                 next((r for r in ok[b] if r["round"] == k), None)) for k in rounds]
        ratios = [x["rss_per_element"] / y["rss_per_element"] for x, y in pair
                  if x and y and y["rss_per_element"] > 0]
        uratios = [x["used_per_element"] / y["used_per_element"] for x, y in pair
                   if x and y and x["used_per_element"] is not None
                   and y["used_per_element"]]
        target = DATASETS[name]["target"]
        verdict = "–" if not ratios else (
            "≤ %.1f× ✓" % target if statistics.median(ratios) <= target
            else "≤ %.1f× **✗**" % target)
        enc = {lab: "/".join(sorted({str(r.get("encoding")) for r in ok[lab]})) or "–"
               for lab in (a, b)}
        n = next((r["elements"] for r in runs if r["dataset"] == name), 0)
        multi = DATASETS[name]["keys_per"] is not None
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, "{:,}".format(n), enc[a], enc[b],
            cell([r["rss_per_element"] for r in ok[a]]),
            cell([r["rss_per_element"] for r in ok[b]]),
            cell(ratios, "%.2f×"), verdict,
            cell([r["used_per_element"] for r in ok[a]]),
            cell([r["used_per_element"] for r in ok[b]]),
            cell(uratios, "%.2f×"),
            cell([r["rss_per_key"] for r in ok[a]], "%.0f") if multi else "–",
            cell([r["rss_per_key"] for r in ok[b]], "%.0f") if multi else "–"))
        for e in errs:
            out.append("|   ↳ **%s** | | | | | | | | | | | | |" % e.replace("|", "\\|"))
    w("\nData sets (N = full size × scale; every generator is in bench/datatype_memory.py):\n")
    for name in meta["datasets"]:
        d = DATASETS[name]
        w("- **%s** (N = %s; Redis 7.0 encoding with its default limits: %s): %s" % (
            name, "{:,}".format(dataset_size(name, meta["scale"])), d["redis_enc"], d["what"]))
    w("\nLoad time per data set (median s): " + "; ".join(
        "%s %s" % (name, " / ".join("%s %s" % (lab, cell(
            [r["load_s"] for r in runs if r["dataset"] == name and r["server"] == lab
             and "load_s" in r], "%.1f")) for lab in (a, b)))
        for name in meta["datasets"]))
    return "\n".join(out)


# ---------------------------------------------------------------- main


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin(),
                    help="default: $CARGO_TARGET_DIR/release/larder, else target/release/larder")
    ap.add_argument("--larder-args", default="", help="extra larder flags, one shell string")
    ap.add_argument("--redis-args", default="", help="extra redis-server flags, one shell string")
    ap.add_argument("--only-redis", action="store_true",
                    help="A/A test: a second redis-server stands in for larder")
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    help="comma-separated subset of: " + ", ".join(DATASETS))
    ap.add_argument("--scale", type=float,
                    help="multiply every data set's key (or member) count, e.g. 0.1 (default 1)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: --scale 0.02 (unless given), 0.3 s settle")
    ap.add_argument("--rounds", type=int, default=1, help="fresh servers per data set and round")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds idle before each reading")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--load-timeout", type=float, default=300)
    ap.add_argument("--taskset-server")
    ap.add_argument("--tmp-dir", default=os.path.join(tempfile.gettempdir(), "larder-bench"),
                    help="where the generated protocol files are cached")
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--tag", default="")
    ap.add_argument("--render", metavar="JSON", help="print the table of an earlier run's JSON")
    a = ap.parse_args(argv)
    if a.render:
        with open(a.render) as f:
            data = json.load(f)
        print(render(data["meta"], data["runs"]))
        return 0
    if a.scale is None:
        a.scale = 0.02 if a.quick else 1.0
    if a.quick:
        a.settle = min(a.settle, 0.3)
    a.datasets = [x for x in a.datasets.split(",") if x]
    for x in a.datasets:
        if x not in DATASETS:
            ap.error("unknown data set %r (%s)" % (x, ", ".join(DATASETS)))
    if not a.only_redis and not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release -p larder-server, or "
                 "--larder-bin, or --only-redis" % a.larder_bin)
    os.makedirs(a.out_dir, exist_ok=True)
    os.makedirs(a.tmp_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = os.path.join(a.out_dir, stamp + "-datatype_memory")
    log = base + "-servers.log.raw"

    def server_a():
        if a.only_redis:
            return Server.redis("redis-b", log, shlex.split(a.redis_args), a.taskset_server)
        return Server.larder(a.larder_bin, "larder", log, shlex.split(a.larder_args),
                             a.taskset_server)

    def server_b():
        return Server.redis("redis", log, shlex.split(a.redis_args), a.taskset_server)

    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine_line(),
            "command": shlex.join(["python3", os.path.relpath(os.path.abspath(__file__), REPO)]
                                  + (sys.argv[1:] if argv is None else argv)),
            "server_a": "redis-b" if a.only_redis else "larder", "server_b": "redis",
            "datasets": a.datasets, "scale": a.scale, "seed": a.seed, "rounds": a.rounds,
            "settle": a.settle, "servers": []}
    runs = []
    for name in a.datasets:
        n = dataset_size(name, a.scale)
        path, commands = protocol_file(name, n, a.seed, a.tmp_dir)
        for rnd in range(a.rounds):
            makers = [server_a, server_b] if rnd % 2 == 0 else [server_b, server_a]
            for make in makers:
                r = measure(make(), name, n, path, commands, a)
                r["round"] = rnd
                runs.append(r)
                if not any(s["server"] == r["server"] for s in meta["servers"]) \
                        and "argv" in r:
                    meta["servers"].append({k: r[k] for k in ("server", "argv", "version",
                                                              "limits")})
                print("%-8s round %d %-8s %s" % (
                    name, rnd, r["server"], "FAILED: " + r["error"] if "error" in r else
                    "rss +%.1f B/elem, used_memory +%s B/elem, %s, load %.1fs" % (
                        r["rss_per_element"], "–" if r["used_per_element"] is None else
                        "%.1f" % r["used_per_element"], r["encoding"], r["load_s"])),
                    file=sys.stderr)
    md = render(meta, runs)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "args": vars(a), "runs": runs}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json}" % os.path.relpath(base, os.getcwd()), file=sys.stderr)
    return 1 if any("error" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
