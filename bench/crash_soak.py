#!/usr/bin/env python3
"""Crash soak: kill -9 larder again and again under writers, and check what survives.

Per mode (`--modes`), one larder on one data directory for all its cycles. Each cycle: --writers
connections SET increasing counters (writer w owns keys `w<w>:<k>`, k < --keys-per-writer; its
n-th SET writes the value n to key n mod keys-per-writer, so every key's value only grows, across
cycles too) one command at a time, recording every acknowledged value and when its +OK came
back; a BGSAVE or BGREWRITEAOF is started at a random moment in every --bgsave-every-th cycle;
after a random time in [0.2, --seconds] s the server gets SIGKILL. It is restarted on the same
directory, and once INFO says `loading:0` every key is read back:

- always (with or without `--aof-test-drop-unsynced yes`, which keeps only fsynced log bytes
  in the file, so kill -9 loses what a power loss would): every acknowledged value is there;
- everysec: a value may be older than the last acknowledged one only if the oldest lost
  acknowledgement came less than --everysec-window s before the kill;
- in every mode: no value was never sent, and no key goes back below the value it had after an
  earlier restart.

Prints one line per cycle and a summary per mode; exits 1 on any violation. tests/python/
test_persistence.py runs a few cycles of the same in the suite; this is the long soak.
Standard library only; the server and RESP helpers come from resp_compare.py.
"""

import argparse
import os
import random
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_compare import RESULTS, Resp, Server, default_larder_bin, encode  # noqa: E402

MODES = {
    "always": ["--appendfsync", "always"],
    "always-drop": ["--appendfsync", "always", "--aof-test-drop-unsynced", "yes"],
    "everysec": ["--appendfsync", "everysec"],
    "everysec-drop": ["--appendfsync", "everysec", "--aof-test-drop-unsynced", "yes"],
}


class Writer(threading.Thread):
    """One connection SETting w<id>:<n mod keys> = n for n = next, next+1, ... until stopped
    or the server dies; `acked` holds (key, value, ack time) of every +OK."""

    def __init__(self, port, wid, keys, first, stop):
        super().__init__(daemon=True)
        self.port, self.wid, self.keys, self.next, self.stop = port, wid, keys, first, stop
        self.acked, self.error = [], None

    def run(self):
        v = self.next
        try:
            c = Resp(self.port, timeout=10)
            while not self.stop.is_set():
                key = b"w%d:%d" % (self.wid, v % self.keys)
                c.sock.sendall(encode(b"SET", key, b"%d" % v))
                r = c.reply()
                if r != "OK":
                    self.error = "SET %s %d answered %r" % (key.decode(), v, r)
                    break
                self.acked.append((key, v, time.monotonic()))
                v += 1
        except (OSError, ConnectionError, socket.timeout):
            pass  # killed under us: what was acknowledged is recorded
        finally:
            self.next = v + 1  # v may have been sent without its reply: never reuse it


def wait_loaded(s, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if s.info("persistence").get("loading", "1") == "0":
                return
        except (OSError, ConnectionError):
            pass
        time.sleep(0.01)
    raise RuntimeError("%s still loading after %ss" % (s.label, timeout))


def read_all(port, keys):
    c = Resp(port, timeout=60)
    try:
        out = {}
        for j in range(0, len(keys), 1000):
            chunk = keys[j:j + 1000]
            got = c.call("MGET", *chunk)
            out.update(zip(chunk, got))
        return out
    finally:
        c.close()


def soak(a, mode, log):
    """All cycles of one mode; returns (summary dict, list of violations)."""
    rng = random.Random(a.seed)
    extra = ["--appendonly", "yes", "--save", ""] + MODES[mode] + a.larder_args.split()
    s = Server.larder(a.larder_bin, "larder-" + mode, log, extra)
    shutil.rmtree(s.workdir, ignore_errors=True)
    s.workdir = tempfile.mkdtemp(prefix="crash-%s-" % mode, dir=a.data_root)
    keys = [b"w%d:%d" % (w, k) for w in range(a.writers) for k in range(a.keys_per_writer)]
    floor = {}      # value read back after the last restart
    sent_max = {}   # highest value ever sent per key (upper bound of what may be read back)
    nexts = [1] * a.writers
    violations, lost_ages, restarts, acked_total, jobs = [], [], [], 0, 0
    everysec = mode.startswith("everysec")
    s.start()
    try:
        for cycle in range(a.cycles):
            stop = threading.Event()
            ws = [Writer(s.port, w, a.keys_per_writer, nexts[w], stop) for w in range(a.writers)]
            for w in ws:
                w.start()
            run_for = rng.uniform(0.2, a.seconds)
            started, job = time.monotonic(), None
            if a.bgsave_every and cycle % a.bgsave_every == a.bgsave_every - 1:
                job = "BGSAVE" if (cycle // a.bgsave_every) % 2 == 0 else "BGREWRITEAOF"
                time.sleep(rng.uniform(0, run_for))
                try:
                    s.call(job)
                    jobs += 1
                except Exception as e:  # noqa: BLE001 - reported, the soak goes on
                    violations.append("cycle %d: %s failed: %r" % (cycle, job, e))
            time.sleep(max(0.0, started + run_for - time.monotonic()))
            killed_at = time.monotonic()
            s.proc.kill()
            s.proc.wait()
            s.log.close()
            stop.set()
            for w in ws:
                w.join(timeout=15)
                if w.error:
                    violations.append("cycle %d: writer %d: %s" % (cycle, w.wid, w.error))
            nexts = [w.next for w in ws]
            hist = {}
            for w in ws:
                for key, v, t in w.acked:
                    hist.setdefault(key, []).append((v, t))
                acked_total += len(w.acked)
            for w in ws:  # the value sent without a reply counts as sent too
                for k in range(a.keys_per_writer):
                    key = b"w%d:%d" % (w.wid, k)
                    top = max([v for v, _ in hist.get(key, [])] + [0])
                    # the last one sent may have got no reply, and may be in
                    if (w.next - 1) % a.keys_per_writer == k:
                        top = max(top, w.next - 1)
                    sent_max[key] = max(sent_max.get(key, 0), top)
            t0 = time.perf_counter()
            s.start(timeout=a.restart_timeout)
            wait_loaded(s, a.restart_timeout)
            restarts.append(time.perf_counter() - t0)
            got = read_all(s.port, keys)
            lost_here = 0
            for key in keys:
                raw = got[key]
                val = int(raw) if raw is not None else 0
                last = max([v for v, _ in hist.get(key, [])] + [floor.get(key, 0)])
                if val > sent_max.get(key, 0):
                    violations.append("cycle %d: %s = %d was never sent (max %d)" % (
                        cycle, key.decode(), val, sent_max.get(key, 0)))
                if val < floor.get(key, 0):
                    violations.append("cycle %d: %s went back to %d below %d, read after an "
                                      "earlier restart" % (cycle, key.decode(), val, floor[key]))
                elif val < last:
                    oldest = min(t for v, t in hist.get(key, []) if v > val)
                    age = killed_at - oldest
                    lost_here += 1
                    lost_ages.append(age)
                    if not everysec:
                        violations.append("cycle %d: %s = %d, but %d was acknowledged %.3f s "
                                          "before the kill" % (cycle, key.decode(), val, last,
                                                               age))
                    elif age > a.everysec_window:
                        violations.append("cycle %d: %s = %d lost a write acknowledged %.2f s "
                                          "before the kill (> %.1f s)" % (
                                              cycle, key.decode(), val, age, a.everysec_window))
                floor[key] = val
            print("%-13s cycle %3d: ran %.2fs%s, %6d acked, restart %.3fs, %d keys behind, "
                  "violations so far %d" % (mode, cycle, killed_at - started,
                                            " + " + job if job else "",
                                            sum(len(w.acked) for w in ws), restarts[-1],
                                            lost_here, len(violations)), file=sys.stderr)
        info = s.info("persistence")
    finally:
        if s.proc and s.proc.poll() is None:
            s.stop()
        else:
            shutil.rmtree(s.workdir, ignore_errors=True)
    summary = {"mode": mode, "cycles": a.cycles, "acked": acked_total, "jobs": jobs,
               "restart_max_s": max(restarts), "restart_median_s": sorted(restarts)[len(restarts)
                                                                              // 2],
               "keys_behind": len(lost_ages), "oldest_lost_s": max(lost_ages, default=0.0),
               "aof_fsyncs_last_run": info.get("aof_fsyncs"), "violations": len(violations)}
    return summary, violations


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin())
    ap.add_argument("--larder-args", default="")
    ap.add_argument("--modes", default="always,always-drop,everysec,everysec-drop",
                    help="any of " + ",".join(MODES))
    ap.add_argument("--cycles", type=int, default=30, help="kill -9 cycles per mode")
    ap.add_argument("--seconds", type=float, default=3.0,
                    help="longest run before a kill (each is uniform in [0.2, this])")
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--keys-per-writer", type=int, default=50)
    ap.add_argument("--bgsave-every", type=int, default=3,
                    help="every N-th cycle starts BGSAVE or BGREWRITEAOF (alternately) before "
                         "the kill; 0: never")
    ap.add_argument("--everysec-window", type=float, default=2.5,
                    help="everysec: the oldest lost acknowledgement may be this many s old")
    ap.add_argument("--restart-timeout", type=float, default=120)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-root", help="default: bench/results/crash-soak-data.raw, on the "
                    "repository's disk")
    a = ap.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            ap.error("unknown mode %r" % m)
    if not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release -p larder-server, or "
                 "--larder-bin" % a.larder_bin)
    own_root = not a.data_root
    a.data_root = a.data_root or os.path.join(RESULTS, "crash-soak-data.raw")
    os.makedirs(a.data_root, exist_ok=True)
    log = os.path.join(RESULTS, time.strftime("%Y%m%d-%H%M%S") + "-crash_soak-server.log.raw")
    results, all_violations = [], []
    try:
        for m in modes:
            summary, violations = soak(a, m, log)
            results.append(summary)
            all_violations += ["%s: %s" % (m, v) for v in violations]
    finally:
        if own_root:
            shutil.rmtree(a.data_root, ignore_errors=True)
    print("\n| mode | cycles | acknowledged SETs | BGSAVE/BGREWRITEAOF | restart median s | "
          "restart max s | keys behind their last ack | oldest lost ack s | violations |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print("| %s | %d | %d | %d | %.3f | %.3f | %d | %.3f | **%d** |" % (
            r["mode"], r["cycles"], r["acked"], r["jobs"], r["restart_median_s"],
            r["restart_max_s"], r["keys_behind"], r["oldest_lost_s"], r["violations"]))
    for v in all_violations[:50]:
        print("VIOLATION " + v)
    if len(all_violations) > 50:
        print("... and %d more" % (len(all_violations) - 50))
    print("server log: %s" % os.path.relpath(log, os.getcwd()), file=sys.stderr)
    return 1 if all_violations else 0


if __name__ == "__main__":
    sys.exit(main())
