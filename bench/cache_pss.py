#!/usr/bin/env python3
"""Cache file sharing: RSS and PSS of N processes that read one ~1 GiB cache file at once.

Builds a cache file of about --size-gb GiB with `larder cache build` (JSONL streamed into its
standard input: 16-byte keys `key:%012d`, mostly str values of --value-bytes bytes, every 8th
value an i64 and every 8th a list<f32> of 16 numbers). Then, one scenario at a time, starts
reader processes that open the file with the Python binding (`larder_cache`), walk every record
(`items()`) and look each key up again with the typed getter for its type, so every index and
data page is touched, then block on standard input while this script samples
/proc/PID/smaps_rollup and the file's own mapping in /proc/PID/smaps. Scenarios: 1 and N
baseline processes, 1 and N readers of the big file, and optionally N processes that load the
same data into a dict (what each process holds without a shared file). A baseline process is the
same reader run over a 1,000-record file of the same shape, less that file's mapping: the same
interpreter, imports, code paths and heap churn, without the data.

The figure of merit is the copies of the file that the readers add to the machine's total PSS:
(sum of the readers' PSS - sum of as many baseline processes' PSS) / file size. The target
(issue 4) is that 4 readers add no more than one copy. Standard library only; the readers need
an interpreter that imports larder_cache (bindings/python/test.sh installs it into .venv).
See docs/cache-benchmarks.md for method and results.
"""

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import REPO, RESULTS, default_larder_bin, machine_line  # noqa: E402

GIB = 2 ** 30
MIB = 2 ** 20
ROLLUP_FIELDS = ("Rss", "Pss", "Pss_Anon", "Pss_File", "Pss_Shmem", "Shared_Clean",
                 "Shared_Dirty", "Private_Clean", "Private_Dirty", "Anonymous", "Swap")

# The reader: argv = MODE PATH. MODE file: read every record from the mapping; dict: copy every
# record into a dict, close the file, keep the dict. It prints one JSON line when done, then
# waits for its standard input to close.
READER = r"""
import gc, json, sys, time, array
import larder_cache
mode = sys.argv[1]
t0 = time.perf_counter()
n = 0
value_bytes = 0
keep = None
if mode == "file":
    cache = larder_cache.open(sys.argv[2])
    typed = {str: cache.get_str, int: cache.get_int, larder_cache.FloatList: cache.get_f32_list}
    for k, v in cache.items():
        again = typed[type(v)](k)
        if again != v:
            raise SystemExit("mismatch at %r" % (k,))
        value_bytes += len(v) if not isinstance(v, int) else 8
        n += 1
    del k, v, again
    if n != len(cache):
        raise SystemExit("read %d of %d records" % (n, len(cache)))
elif mode == "dict":
    cache = larder_cache.open(sys.argv[2])
    keep = {}
    for k, v in cache.items():
        if isinstance(v, larder_cache.FloatList):
            v = array.array("f", v)
        keep[k] = v
        n += 1
    del k, v, cache
else:
    raise SystemExit("unknown mode " + mode)
gc.collect()
print(json.dumps({"records": n, "value_bytes": value_bytes,
                  "seconds": round(time.perf_counter() - t0, 3)}), flush=True)
sys.stdin.read()
"""

VERSION = "import larder_cache, sys; print(larder_cache.__version__, larder_cache.__file__, " \
          "sys.version.split()[0])"


def default_python():
    venv = os.path.join(REPO, ".venv", "bin", "python")
    return venv if os.access(venv, os.X_OK) else sys.executable


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            name, rest = line.split(":", 1)
            out[name] = int(rest.split()[0]) * 1024
    return out


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def record(i, value_bytes, filler):
    """One JSONL line: mostly str values, every 8th an i64 and every 8th a list<f32>."""
    if i % 8 == 6:
        value = str(i * 7919)
    elif i % 8 == 7:
        value = "[" + ",".join("%d.25" % ((i + j) % 1000) for j in range(16)) + "]"
    else:
        head = "v%012d:" % i
        off = i % 64
        value = '"' + head + filler[off:off + value_bytes - len(head)] + '"'
    return '{"key":"key:%012d","value":%s}\n' % (i, value)


def build(larder_bin, path, n, value_bytes, quiet):
    """Streams n records into `larder cache build`; returns build seconds."""
    filler = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_" * (
        value_bytes // 64 + 2)
    argv = [larder_bin, "cache", "build", path, "--from", "-", "--format", "jsonl", "--f32",
            "--name", "cache_pss"] + (["--quiet"] if quiet else [])
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE)
    batch = 20_000
    for start in range(0, n, batch):
        proc.stdin.write("".join(record(i, value_bytes, filler)
                                 for i in range(start, min(n, start + batch))).encode())
    proc.stdin.close()
    if proc.wait() != 0:
        sys.exit("larder cache build failed (exit %d)" % proc.returncode)
    if not quiet:
        print(file=sys.stderr)
    return time.monotonic() - t0


def smaps_rollup(pid):
    out = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[0].endswith(":") and parts[0][:-1] in ROLLUP_FIELDS:
                out[parts[0][:-1]] = int(parts[1]) * 1024
    return out


def file_mapping(pid, path):
    """Rss and Pss of the mappings of `path` in the process (0 when it has none)."""
    real = os.path.realpath(path)
    rss = pss = 0
    inside = False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            first = line.split(None, 1)[0]
            if not first.endswith(":"):          # a mapping's header line
                fields = line.split(None, 5)
                inside = len(fields) == 6 and fields[5].rstrip("\n") == real
            elif inside and first == "Rss:":
                rss += int(line.split()[1]) * 1024
            elif inside and first == "Pss:":
                pss += int(line.split()[1]) * 1024
    return {"file_rss": rss, "file_pss": pss}


def scenario(python, name, mode, count, path, timeout):
    """Starts `count` readers at once, waits until every one is done, samples them, ends them."""
    argv = [python, "-c", READER, mode, path]
    procs = [subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(count)]
    t0 = time.monotonic()
    try:
        done = []
        for p in procs:
            line = p.stdout.readline()
            if not line:
                sys.exit("a %s reader exited early (exit %s)" % (mode, p.wait()))
            done.append(json.loads(line))
        wall = time.monotonic() - t0
        time.sleep(0.2)
        rows = []
        for p, d in zip(procs, done):
            rows.append({"pid": p.pid, **d, **smaps_rollup(p.pid), **file_mapping(p.pid, path)})
    finally:
        for p in procs:
            try:
                p.stdin.close()
            except OSError:
                pass
        for p in procs:
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    total = {f: sum(r.get(f, 0) for r in rows) for f in ROLLUP_FIELDS + ("file_rss", "file_pss")}
    return {"name": name, "mode": mode, "file": path, "processes": count, "wall_s": round(wall, 2), "rows": rows,
            "total": total}


def mib(v):
    return "%.1f" % (v / MIB)


def render(res):
    a, file_bytes = res["args"], res["file_bytes"]
    out = ["## Cache file shared by %d processes: RSS and PSS\n" % a["readers"],
           "- date: %s; machine: %s; load average before: %s; MemAvailable before: %.1f GiB"
           % (res["date"], res["machine"], res["loadavg"], res["mem_available"] / GIB),
           "- command: `%s`" % res["command"],
           "- file: %s records, %d bytes (%.3f GiB); built by `%s` in %.1f s, JSONL generated"
           " and streamed into `larder cache build` on stdin"
           % (format(res["records"], ","), file_bytes, file_bytes / GIB, res["larder_version"],
              res["build_s"]),
           "- readers: `%s` with larder_cache %s (Python %s); each reads every record (`items()`"
           " plus a typed get per key), then waits while it is sampled"
           % (a["python"], res["binding"]["version"], res["binding"]["python"]),
           "- baseline: the same reader over a %s-record file of the same shape (%d bytes), less"
           " that file's mapping" % (format(res["baseline_records"], ","),
                                     res["baseline_file_bytes"]),
           "- PSS charges a page mapped by k processes 1/k to each, so the sum over processes"
           " counts every resident page once. Copies added = (readers' PSS - baseline PSS) /"
           " file size.\n",
           "| scenario | process | RSS MiB | PSS MiB | Pss_File MiB | Pss_Anon MiB |"
           " Shared_Clean MiB | Private_Clean+Dirty MiB | file mapped MiB (% of file) |"
           " file PSS MiB | read s |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for sc in res["scenarios"]:
        if sc["round"] != 0 and sc["name"] != "dict":
            continue
        name = "%s × %d" % (sc["name"], sc["processes"])
        size = file_bytes if sc["name"] == "file" else res["baseline_file_bytes"]
        for r in sc["rows"] + [dict(sc["total"], pid="sum", seconds=None)]:
            if sc["mode"] == "file":
                mapped = "%s (%.0f%%)" % (mib(r["file_rss"]), 100 * r["file_rss"] / size)
                fpss = mib(r["file_pss"])
            else:
                mapped = fpss = "–"
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name, r["pid"], mib(r["Rss"]), ("**%s**" if r["pid"] == "sum" else "%s")
                % mib(r["Pss"]), mib(r["Pss_File"]), mib(r["Pss_Anon"]),
                mib(r["Shared_Clean"]), mib(r["Private_Clean"] + r["Private_Dirty"]), mapped,
                fpss, "–" if r["seconds"] is None else "%.1f" % r["seconds"]))
    out += ["", "Per round (the table above is round 0; dict: last round):", "",
            "| round | processes | PSS sum MiB | baseline PSS sum MiB | PSS added MiB |"
            " of which cache mapping MiB | of which other MiB | copies of the file added |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    for c in res["copies"]:
        out.append("| %d | %s × %d | %s | %s | %s | %s | %s | %.4f |" % (
            c["round"], c["name"], c["processes"], mib(c["pss"]), mib(c["baseline_pss"]),
            mib(c["added_bytes"]), mib(c["added_bytes"] - c["other_added_bytes"]),
            mib(c["other_added_bytes"]), c["copies"]))
    out += ["", "| processes | rounds | copies of the file added, median [min–max] |"
            " cache-mapping PSS sum / file size | target: %d readers add ≤ 1.0 copy |"
            % a["readers"], "|---|---:|---:|---:|---|"]
    for key in dict.fromkeys((c["name"], c["processes"]) for c in res["copies"]):
        cs = [c for c in res["copies"] if (c["name"], c["processes"]) == key]
        med = statistics.median(c["copies"] for c in cs)
        fc = [c["file_pss_copies"] for c in cs if c["file_pss_copies"] is not None]
        if key[0] != "file":
            verdict = "comparison"
        elif key[1] != a["readers"]:
            verdict = "reference"
        else:
            verdict = "met" if med <= 1.0 else "not met"
        out.append("| %s × %d | %d | **%.4f** [%.4f–%.4f] | %s | %s |" % (
            key[0], key[1], len(cs), med, min(c["copies"] for c in cs),
            max(c["copies"] for c in cs),
            "%.4f–%.4f" % (min(fc), max(fc)) if fc else "–", verdict))
    for note in res["notes"]:
        out.append("\n" + note)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin(),
                    help="default: $CARGO_TARGET_DIR/release/larder, else target/release/larder")
    ap.add_argument("--python", default=default_python(),
                    help="interpreter that imports larder_cache (default: .venv/bin/python)")
    ap.add_argument("--size-gb", type=float, default=1.0, help="file size in GiB, roughly")
    ap.add_argument("--value-bytes", type=int, default=200, help="length of the str values")
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3,
                    help="baseline/reader pairs per process count; medians are reported")
    ap.add_argument("--no-dict", action="store_true",
                    help="skip the comparison of processes that each load a dict")
    ap.add_argument("--dict-mem-max-gb", type=float, default=8.0,
                    help="skip the dict comparison when it would need more than this (GiB)")
    ap.add_argument("--tmp-dir", default=None, help="where the file goes (default: $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the cache file and its directory")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for exits")
    ap.add_argument("--quiet", action="store_true", help="no build progress")
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    if a.value_bytes < 20:
        ap.error("--value-bytes must be at least 20")
    if not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release -p larder-server, or "
                 "--larder-bin" % a.larder_bin)
    probe = subprocess.run([a.python, "-c", VERSION], capture_output=True, text=True)
    if probe.returncode != 0:
        sys.exit("%s cannot import larder_cache: run bindings/python/test.sh, or --python\n%s"
                 % (a.python, probe.stderr.strip()))
    bversion, bfile, pyversion = probe.stdout.split()
    larder_version = subprocess.run([a.larder_bin, "--version"], capture_output=True,
                                    text=True).stdout.strip()

    target = int(a.size_gb * GIB)
    tmp_parent = a.tmp_dir or tempfile.gettempdir()
    free = shutil.disk_usage(tmp_parent).free
    if free < 2 * target + GIB:
        sys.exit("%s has %.1f GiB free; the build needs about %.1f GiB"
                 % (tmp_parent, free / GIB, (2 * target + GIB) / GIB))
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = os.path.join(a.out_dir, stamp + "-cache_pss")
    tmp = tempfile.mkdtemp(prefix="larder-cache-pss-", dir=tmp_parent)
    path = os.path.join(tmp, "pss.lcache")
    small = os.path.join(tmp, "baseline.lcache")
    small_n = 1_000
    mem0, load0 = meminfo()["MemAvailable"], loadavg()
    try:
        # Calibrate bytes per record on a small file, then size the real one from it.
        cal_n = 50_000
        build(a.larder_bin, path, cal_n, a.value_bytes, quiet=True)
        per_record = os.path.getsize(path) / cal_n
        n = max(1, int(target / per_record))
        build(a.larder_bin, small, small_n, a.value_bytes, quiet=True)
        print("building %s records (~%.2f GiB) into %s" % (format(n, ","), n * per_record / GIB,
                                                          path), file=sys.stderr)
        build_s = build(a.larder_bin, path, n, a.value_bytes, a.quiet)
        file_bytes = os.path.getsize(path)
        print("built %d bytes (%.3f GiB) in %.1f s" % (file_bytes, file_bytes / GIB, build_s),
              file=sys.stderr)

        notes = []
        # Each round runs the baseline and the readers back to back, in alternating order:
        # shared-library pages are shared with whatever else runs on the machine, so their
        # PSS drifts, and a baseline taken next to the readers pairs up best.
        plan = []
        for rnd in range(a.rounds):
            for count in (1, a.readers):
                pair = [("baseline", "file", count, small, small_n),
                        ("file", "file", count, path, n)]
                plan += [(rnd,) + p for p in (pair if rnd % 2 == 0 else pair[::-1])]
        if not a.no_dict:
            # A Python dict of these records is ~1.5-2x the file; ask for 2x per process.
            need = 2 * file_bytes * a.readers
            avail = meminfo()["MemAvailable"]
            if need > a.dict_mem_max_gb * GIB or need > avail / 2:
                notes.append("dict comparison skipped: it would need ~%.1f GiB (cap %.1f GiB,"
                             " MemAvailable %.1f GiB)" % (need / GIB, a.dict_mem_max_gb,
                                                          avail / GIB))
            else:
                plan.append((a.rounds - 1, "dict", "dict", a.readers, path, n))
        scenarios = []
        for rnd, name, mode, count, file, records in plan:
            print("round %d: %s × %d ..." % (rnd, name, count), file=sys.stderr, end="",
                  flush=True)
            sc = dict(round=rnd, **scenario(a.python, name, mode, count, file, a.timeout))
            scenarios.append(sc)
            print(" %.1f s, PSS sum %s MiB" % (sc["wall_s"], mib(sc["total"]["Pss"])),
                  file=sys.stderr)
            for r in sc["rows"]:
                if r["records"] != records:
                    sys.exit("a reader read %d of %d records" % (r["records"], records))
        small_bytes = os.path.getsize(small)
    finally:
        if a.keep:
            print("kept %s" % tmp, file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    def baseline_pss(rnd, count):
        sc = next(s for s in scenarios if s["name"] == "baseline" and s["round"] == rnd
                  and s["processes"] == count)
        return sc["total"]["Pss"] - sc["total"]["file_pss"]

    copies = []
    for sc in scenarios:
        if sc["name"] == "baseline":
            continue
        base_pss = baseline_pss(sc["round"], sc["processes"])
        added = sc["total"]["Pss"] - base_pss
        copies.append({"round": sc["round"], "name": sc["name"], "processes": sc["processes"],
                       "pss": sc["total"]["Pss"], "baseline_pss": base_pss,
                       "added_bytes": added, "copies": added / file_bytes,
                       "other_added_bytes": added - sc["total"]["file_pss"],
                       "file_pss_copies": sc["total"]["file_pss"] / file_bytes
                       if sc["mode"] == "file" else None})
    res = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine_line(),
           "loadavg": load0, "mem_available": mem0,
           "command": shlex.join(["python3", os.path.relpath(__file__, REPO)] + sys.argv[1:]),
           "args": vars(a), "larder_version": larder_version,
           "binding": {"version": bversion, "file": bfile, "python": pyversion},
           "records": n, "file_bytes": file_bytes, "build_s": round(build_s, 2),
           "baseline_records": small_n, "baseline_file_bytes": small_bytes,
           "scenarios": scenarios, "copies": copies, "notes": notes,
           "loadavg_after": loadavg()}
    md = render(res)
    with open(base + ".json", "w") as f:
        json.dump(res, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json}" % os.path.relpath(base, os.getcwd()), file=sys.stderr)


if __name__ == "__main__":
    main()
