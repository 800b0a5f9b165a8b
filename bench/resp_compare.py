#!/usr/bin/env python3
"""Side-by-side RESP benchmark: larder against redis-server on loopback, in one run.

Starts both servers, prefills the keyspace, then drives each server in turn (alternating which
goes first every round) with redis-benchmark for SET and GET, with `mixgen` (a small C load
generator embedded below, compiled with cc on first use) for the 1:10 SET:GET mix, and with
memtier_benchmark for all three where it is installed. Per run it records ops/s, latency
percentiles, server CPU seconds (utime+stime from /proc/PID/stat), ops per server CPU-second and
server RSS, and it prints markdown tables with the spread across rounds. Raw tool output goes to
bench/results/*.raw (gitignored), the numbers to bench/results/*.json, the tables to *.md.

Standard library only. memory_per_key.py and load_pause.py import the helpers from this file.
See bench/README.md for method and pitfalls.
"""

import argparse
import hashlib
import json
import math
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPO, "bench", "results")
CLK_TCK = os.sysconf("SC_CLK_TCK")
HOST = "127.0.0.1"
BIG = 200 * 1024


# ---------------------------------------------------------------- raw RESP over a socket


def encode(*args):
    """One RESP2 command as bytes."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RespError(RuntimeError):
    pass


class Resp:
    """A blocking RESP client: enough for INFO, DBSIZE, FLUSHALL and pipelined loads."""

    def __init__(self, port, host=HOST, timeout=30.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self):
        self.sock.close()

    def _fill(self):
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError("server closed the connection")
        self.buf += data

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[: i + 2]
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data = bytes(self.buf[:n])
        del self.buf[: n + 2]
        return data

    def reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"("):
            return rest.decode()
        if t == b"-":
            return RespError(rest.decode())
        if t == b":":
            return int(rest)
        if t in (b"$", b"=", b"!"):
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t in (b"*", b"~", b">"):
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        if t == b"%":
            return {self.reply(): self.reply() for _ in range(int(rest))}
        if t == b"_":
            return None
        if t == b",":
            return float(rest)
        if t == b"#":
            return rest == b"t"
        raise RespError("unexpected reply line %r" % line)

    def call(self, *args):
        self.sock.sendall(encode(*args))
        r = self.reply()
        if isinstance(r, RespError):
            raise r
        return r

    def info(self, section=None):
        raw = self.call("INFO", section) if section else self.call("INFO")
        out = {}
        for line in raw.decode().splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = v
        return out


def send_all_count_ok(port, commands_iter, expect):
    """Send pipelined commands (an iterator of byte batches) on one connection from a sender
    thread while this thread reads replies; every reply must be +OK. Returns the elapsed time."""
    conn = Resp(port, timeout=120)
    err = []

    def sender():
        try:
            for batch in commands_iter:
                conn.sock.sendall(batch)
        except OSError as e:  # the reader reports the consequence
            err.append(e)

    t0 = time.perf_counter()
    th = threading.Thread(target=sender, daemon=True)
    th.start()
    want, got, tail = 5 * expect, 0, b""
    try:
        while got < want:
            data = conn.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("server closed the connection during load: %r" % err)
            got += len(data)
            if b"-" in data:
                raise RespError("error reply during load: %r" % data[data.index(b"-"):][:200])
            tail = data[-5:]
    except socket.timeout:
        raise RuntimeError("no reply within %ss during a pipelined load of %d SETs"
                           % (conn.sock.gettimeout(), expect)) from None
    finally:
        conn.close()
    th.join()
    if got != want or tail != b"+OK\r\n":
        raise RespError("unexpected reply stream during load (%d bytes, want %d)" % (got, want))
    return time.perf_counter() - t0


def set_batches(keys, value_of, batch):
    """Yield byte batches of SET commands; keys and values are bytes."""
    out = []
    for i, k in enumerate(keys):
        v = value_of(i, k)
        out.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
        if len(out) >= batch:
            yield b"".join(out)
            out = []
    if out:
        yield b"".join(out)


# ---------------------------------------------------------------- server processes


def default_larder_bin():
    """The release binary cargo builds: $CARGO_TARGET_DIR/release/larder, else target/."""
    tdir = os.environ.get("CARGO_TARGET_DIR") or "target"
    return os.path.join(REPO, tdir, "release", "larder")  # join keeps an absolute tdir


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def proc_cpu_split(pid):
    """(utime, stime) of the whole process (all threads), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        data = f.read()
    rest = data[data.rindex(")") + 2:].split()
    return int(rest[11]) / CLK_TCK, int(rest[12]) / CLK_TCK


def proc_cpu_seconds(pid):
    """utime+stime of the whole process (all threads), in seconds."""
    return sum(proc_cpu_split(pid))


def proc_status(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def machine_busy_seconds():
    """CPU seconds the whole machine has spent in user, nice, system and steal time."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + (v[7] if len(v) > 7 else 0)) / CLK_TCK


class Server:
    """One server process on loopback, started in its own scratch directory."""

    def __init__(self, label, kind, argv, port, log_path, taskset=None):
        self.label, self.kind, self.port, self.log_path = label, kind, port, log_path
        self.binary = argv[0]
        self.argv = (["taskset", "-c", taskset] if taskset else []) + argv
        self.proc, self.workdir = None, tempfile.mkdtemp(prefix="larder-bench-%s-" % label)
        self.missing = set()  # commands the server refused; reported, not fatal

    @classmethod
    def redis(cls, label, log_path, extra=(), taskset=None, port=None):
        port = port or free_port()
        argv = ["redis-server", "--port", str(port), "--bind", HOST, "--save", "",
                "--appendonly", "no", "--daemonize", "no", "--logfile", ""] + list(extra)
        return cls(label, "redis", argv, port, log_path, taskset)

    @classmethod
    def larder(cls, binary, label, log_path, extra=(), taskset=None, port=None):
        port = port or free_port()
        # In memory, as the redis-server above: `extra` may turn persistence back on.
        argv = [binary, "--port", str(port), "--bind", HOST, "--memcached-port", "0", "--http-port", "0",
                "--appendonly", "no", "--save", ""] + list(extra)
        return cls(label, "larder", argv, port, log_path, taskset)

    def start(self, timeout=30.0):
        self.log = open(self.log_path, "ab")
        self.log.write(("\n==== %s: %s\n" % (self.label, shlex.join(self.argv))).encode())
        self.log.flush()
        self.proc = subprocess.Popen(self.argv, cwd=self.workdir, stdout=self.log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s at startup; see %s"
                                   % (self.label, self.proc.returncode, self.log_path))
            try:
                c = Resp(self.port, timeout=2)
                c.sock.sendall(encode("PING"))
                c.reply()  # any reply, even an error, means it is serving
                c.close()
                return self
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError("%s did not answer PING within %ss" % (self.label, timeout))
            time.sleep(0.05)

    @property
    def pid(self):
        return self.proc.pid

    def cpu_seconds(self):
        return proc_cpu_seconds(self.pid)

    def cpu_split(self):
        return proc_cpu_split(self.pid)

    def rss_bytes(self):
        return (proc_status(self.pid, "VmRSS") or 0) * 1024

    def threads(self):
        return proc_status(self.pid, "Threads")

    def call(self, *args):
        c = Resp(self.port)
        try:
            return c.call(*args)
        finally:
            c.close()

    def try_call(self, *args):
        """call(), but None where the server answers with an error (a command not there yet)."""
        try:
            return self.call(*args)
        except RespError as e:
            self.missing.add("%s (%s)" % (" ".join(map(str, args)), e))
            return None

    def info(self, section=None):
        """INFO as a dict; empty where the server has no INFO (or not that section)."""
        c = Resp(self.port)
        try:
            return c.info(section)
        except RespError as e:
            self.missing.add("INFO %s (%s)" % (section or "", e))
            return {}
        finally:
            c.close()

    def version(self):
        if self.kind == "redis":
            return self.info("server").get("redis_version", "?")
        try:
            out = subprocess.run([self.binary, "--version"], capture_output=True, text=True,
                                 timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
        return self.info("server").get("larder_version", "?")

    def idle_cpu_fraction(self, seconds=1.0):
        """CPU used while no client is connected: catches threads that spin."""
        c0, t0 = self.cpu_seconds(), time.perf_counter()
        time.sleep(seconds)
        return (self.cpu_seconds() - c0) / (time.perf_counter() - t0)

    def stop(self):
        """SIGTERM (SIGKILL after 20 s); returns the exit status, None if never started."""
        rc = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            rc = self.proc.returncode
            self.log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
        return rc


def key_name(i):
    """redis-benchmark's key:__rand_int__ expansion with -r: 12 zero-padded digits."""
    return b"key:%012d" % i


def verify_keys(server, keyspace, value_bytes, want_dbsize, samples=200, key_of=None):
    """DBSIZE must equal want_dbsize (unless None, or the server has no DBSIZE), and GET of the
    first, the last and random keys must return values of the right length."""
    n = server.try_call("DBSIZE") if want_dbsize is not None else None
    if n is not None and n != want_dbsize:
        raise RuntimeError("%s: DBSIZE %s, expected %s" % (server.label, n, want_dbsize))
    import random
    ids = [0, keyspace - 1] + random.Random(1).sample(range(keyspace), min(samples, keyspace))
    key_of = key_of or key_name
    c = Resp(server.port)
    step = max(1, (1 << 20) // (value_bytes + 16))  # at most ~1 MiB of replies in flight
    try:
        for j in range(0, len(ids), step):
            chunk = ids[j:j + step]
            c.sock.sendall(b"".join(encode("GET", key_of(i)) for i in chunk))
            for i in chunk:
                v = c.reply()
                if not isinstance(v, bytes) or len(v) != value_bytes:
                    raise RuntimeError("%s: GET %s returned %r, expected %d bytes" % (
                        server.label, key_of(i).decode(),
                        v if v is None or isinstance(v, Exception) else len(v), value_bytes))
    except socket.timeout:
        raise RuntimeError("%s: no reply within %ss to pipelined GETs (%d x %d B) while "
                           "verifying the prefill" % (server.label, c.sock.gettimeout(),
                                                      step, value_bytes)) from None
    finally:
        c.close()


def prefill(server, keyspace, value_bytes, memtier_keys=False):
    """FLUSHALL, then SET every key of the keyspace with a value of value_bytes, and verify."""
    server.try_call("FLUSHALL")
    value = b"x" * value_bytes
    batch = max(1, min(1000, (1 << 20) // (value_bytes + 40)))
    t = send_all_count_ok(server.port, set_batches((key_name(i) for i in range(keyspace)),
                                                   lambda i, k: value, batch), keyspace)
    want = keyspace
    if memtier_keys:  # memtier_benchmark names keys key:N without padding
        t += send_all_count_ok(server.port, set_batches((b"key:%d" % i for i in range(keyspace)),
                                                        lambda i, k: value, batch), keyspace)
        want += sum(1 for i in range(keyspace) if b"key:%d" % i != key_name(i))
    verify_keys(server, keyspace, value_bytes, want)
    return t


# ---------------------------------------------------------------- load generators

MIXGEN_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mixgen.c")


def compile_c(source, name, flags=()):
    """Compile one C tool (its source as bytes) into the temp dir, once per source version:
    (path, None), or (None, why) when there is no compiler or it fails."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None, "no C compiler (cc) found: apt-get install -y gcc"
    d = os.path.join(tempfile.gettempdir(), "larder-bench")
    os.makedirs(d, exist_ok=True)
    exe = os.path.join(d, name + "-" + hashlib.sha1(source).hexdigest()[:12])
    if not os.path.exists(exe):
        src = exe + ".c"
        with open(src, "wb") as f:
            f.write(source)
        r = subprocess.run([cc, "-O2", *flags, "-o", exe + ".tmp", src], capture_output=True,
                           text=True)
        if r.returncode != 0:
            return None, "%s did not compile:\n%s" % (name, r.stderr[-3000:])
        os.replace(exe + ".tmp", exe)
    return exe, None


def build_tool(path, flags=()):
    """`compile_c` of bench/<file>.c, exiting when it cannot be built."""
    with open(path, "rb") as f:
        exe, why = compile_c(f.read(), os.path.basename(path)[:-2], flags)
    if not exe:
        sys.exit(why)
    return exe


def build_mixgen():
    """Compile bench/mixgen.c; (path, None) or (None, why)."""
    with open(MIXGEN_SRC, "rb") as f:
        return compile_c(f.read(), "mixgen")


PCT_LINE = re.compile(r"^\s*([\d.]+)% <= ([\d.]+) milliseconds \(cumulative count (\d+)\)")


def parse_redis_benchmark(text, requests):
    """Parse redis-benchmark 7 default (not -q, not --csv) output for one test.

    ops/s and avg/min/p50/p95/p99/max come from its summary (HdrHistogram, 3 significant
    digits). p99.9 is not in the summary: it is the smallest latency L printed in its two
    distribution listings whose cumulative count is at least ceil(0.999 * N), i.e. an upper
    bound on p99.9 at the resolution of those listings."""
    text = text.replace("\r", "\n")
    m = re.search(r"throughput summary: ([\d.]+) requests per second", text)
    if not m:
        raise ValueError("no throughput summary in redis-benchmark output")
    res = {"rps": float(m.group(1))}
    m = re.search(r"avg\s+min\s+p50\s+p95\s+p99\s+max\s*\n\s*([\d.\s]+)\n", text)
    if m:
        vals = [float(x) for x in m.group(1).split()[:6]]
        res.update(zip(("avg_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"), vals))
    points = [(float(lm.group(2)), int(lm.group(3)))
              for lm in (PCT_LINE.match(line) for line in text.splitlines()) if lm]
    total = max((c for _, c in points), default=0)
    if total:
        need = -(-999 * total // 1000)
        res["p999_ms"] = min(v for v, c in points if c >= need)
        res["p999_source"] = "redis-benchmark percentile listing (upper bound)"
    res["completed"] = total or requests
    return res


def parse_memtier(text):
    """Parse the Totals line of memtier_benchmark's ALL STATS table (columns by header name)."""
    header, totals = None, None
    for line in text.splitlines():
        if line.startswith("Type") and "Ops/sec" in line:
            header = [h.strip() for h in re.split(r"\s{2,}", line.strip())]
        elif line.startswith("Totals") and header:
            totals = line.split()
    if not header or not totals:
        raise ValueError("no Totals line in memtier output")
    row = dict(zip(header, totals))

    def num(*names):
        for n in names:
            if n in row and row[n] not in ("---", "-nan", "nan"):
                return float(row[n])
        return None

    return {"rps": num("Ops/sec"), "avg_ms": num("Avg. Latency", "Latency"),
            "p50_ms": num("p50 Latency", "p50.00 Latency"),
            "p99_ms": num("p99 Latency", "p99.00 Latency"),
            "p999_ms": num("p99.9 Latency", "p99.90 Latency"),
            "hits_per_s": num("Hits/sec"), "misses_per_s": num("Misses/sec"),
            "p999_source": "memtier --print-percentiles"}


RATIOS = {"set": (1, 0), "get": (0, 1), "mixed": (1, 10)}


def tool_command(tool, workload, port, a, pipeline, size, requests, keyspace, seed, mixgen):
    """The argv of one load-generator run."""
    if tool == "redis-benchmark":
        cmd = ["redis-benchmark", "-h", HOST, "-p", str(port), "-c", str(a.clients),
               "-n", str(requests), "-d", str(size), "-P", str(pipeline), "-r", str(keyspace),
               "-t", workload]
        if a.bench_threads > 1:
            cmd += ["--threads", str(a.bench_threads)]
    elif tool == "mixgen":
        s, g = RATIOS[workload]
        cmd = [mixgen, HOST, str(port), str(a.clients), str(pipeline), str(requests),
               str(keyspace), str(size), str(s), str(g), str(seed)]
    else:
        s, g = RATIOS[workload]
        cmd = ["memtier_benchmark", "-s", HOST, "-p", str(port), "--protocol=redis",
               "-t", str(a.bench_threads), "-c", str(a.clients), "--pipeline=%d" % pipeline,
               "-d", str(size), "--ratio=%d:%d" % (s, g), "--key-pattern=R:R",
               "--key-prefix=key:", "--key-minimum=0", "--key-maximum=%d" % (keyspace - 1),
               "-n", str(max(1, requests // (a.clients * a.bench_threads))),
               "--distinct-client-seed", "--randomize", "--hide-histogram",
               "--print-percentiles=50,99,99.9"]
    if a.taskset_client:
        cmd = ["taskset", "-c", a.taskset_client] + cmd
    return cmd


def measured_run(server, cmd, raw, parse, timeout):
    """Run one load-generator command against server and measure the server around it."""
    st0 = server.info("stats")
    (user0, sys0), busy0 = server.cpu_split(), machine_busy_seconds()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
        raw.write("\n==== %s: %s\nTIMED OUT after %ss\n%s\n" % (
            server.label, shlex.join(cmd), timeout, out or ""))
        raise RuntimeError("%s timed out after %ss (server stalled?)"
                           % (cmd[0], timeout)) from None
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    (user1, sys1), busy1 = server.cpu_split(), machine_busy_seconds()
    rss = server.rss_bytes()
    st1 = server.info("stats")
    raw.write("\n==== %s: %s\n%s\n%s\n" % (server.label, shlex.join(cmd), p.stdout, p.stderr))
    raw.flush()
    if p.returncode != 0:
        raise RuntimeError("%s failed (rc %s): %s" % (cmd[0], p.returncode, p.stderr[-500:]))
    res = parse(p.stdout)
    cpu = (user1 + sys1) - (user0 + sys0)
    hits = int(st1.get("keyspace_hits", 0)) - int(st0.get("keyspace_hits", 0))
    misses = int(st1.get("keyspace_misses", 0)) - int(st0.get("keyspace_misses", 0))
    client = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
    res.update(wall_s=round(wall, 4), server_cpu_s=round(cpu, 3),
               server_user_s=round(user1 - user0, 3), server_sys_s=round(sys1 - sys0, 3),
               server_rss_bytes=rss,
               server_threads=server.threads(), client_cpu_s=round(client, 3),
               # CPU that neither this server nor the generator used: other processes (the
               # idle server is ~1%); much of it means the run is not trustworthy.
               foreign_cpu_frac=round(max(0.0, busy1 - busy0 - cpu - client) / wall, 3),
               keyspace_hits=hits, keyspace_misses=misses,
               hit_ratio=round(hits / (hits + misses), 4) if hits + misses else None)
    if res["hit_ratio"] is None and res.get("hits", 0) + res.get("misses", 0):
        # no INFO keyspace counters: mixgen counts GET hits and misses itself
        res["hit_ratio"] = round(res["hits"] / (res["hits"] + res["misses"]), 4)
    return res


# ---------------------------------------------------------------- report


def fmt_num(v):
    if v is None:
        return "–"
    if v >= 1e6:
        return "%.2fM" % (v / 1e6)
    if v >= 1e4:
        return "%.0fk" % (v / 1e3)
    if v >= 1e3:
        return "%.1fk" % (v / 1e3)
    if v >= 10:
        return "%.0f" % v
    return "%.3g" % v


def cell(vals, fmt=fmt_num):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "–"
    med, lo, hi = fmt(statistics.median(vals)), fmt(min(vals)), fmt(max(vals))
    return med if lo == hi else "%s [%s–%s]" % (med, lo, hi)


def ratio_cell(pairs):
    rs = [a / b for a, b in pairs if a is not None and b]
    if not rs:
        return "–"
    med = statistics.median(rs)
    if len(rs) == 1 or "%.2f" % min(rs) == "%.2f" % max(rs):
        return "%.2f×" % med
    return "%.2f× [%.2f–%.2f]" % (med, min(rs), max(rs))


def sign_p(k, n):
    """One-sided sign test: the chance of k or more of n rounds at or above a line if each
    round were as likely below it."""
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n


def target_cell(ratios, target):
    """A target column: ✓ when the median per-round ratio reaches `target`, then how many
    rounds reached it and the sign test's p for that count (a median inside the
    round-to-round spread shows as a large p)."""
    if not ratios:
        return "–"
    mark = ("≥ %.1f× ✓" if statistics.median(ratios) >= target else "≥ %.1f× **✗**") % target
    k = sum(r >= target for r in ratios)
    return "%s (%d/%d rounds, p=%.3f)" % (mark, k, len(ratios), sign_p(k, len(ratios)))


TARGET_NOTE = ("(k/n rounds, p): rounds whose ratio reached the target, and the one-sided sign "
               "test's chance of that many if each round were a coin flip")


def size_label(n):
    return "%d KiB" % (n // 1024) if n >= 1024 and n % 1024 == 0 else "%d B" % n


def summarize(runs, a_label, b_label):
    """Group runs by cell; per metric keep the per-round values of A and B, paired by round."""
    cells = {}
    for r in runs:
        key = (r["tool_family"], r["workload"], r["pipeline"], r["value_bytes"])
        cells.setdefault(key, {}).setdefault(r["round"], {})[r["server"]] = r
    rows = []
    order = {"set": 0, "get": 1, "mixed": 2}
    for key in sorted(cells, key=lambda k: (k[0] != "rb", order[k[1]], k[2], k[3])):
        rounds = cells[key]
        pairs = [(rd.get(a_label), rd.get(b_label)) for _, rd in sorted(rounds.items())]
        rows.append((key, pairs))
    return rows


def run_lines(meta):
    """The date and machine, both servers' command lines, versions, threads and idle CPU, and
    the script's own command line: the first lines of every side-by-side report."""
    return [
        "- date: %s; machine: %s" % (meta["date"], meta["machine"]),
        "- servers: %s" % "; ".join(
            "%s = `%s` (%s, %s threads, idle CPU %.1f%%)" % (
                s["label"], s["argv"], s["version"], s["threads"], 100 * s["idle_cpu_fraction"])
            for s in meta["servers"]),
        "- command: `%s`" % meta["command"],
    ]


def render(meta, runs):
    a, b = meta["server_a"], meta["server_b"]
    rows = summarize(runs, a, b)
    out = []
    w = out.append
    w("## RESP side by side: %s vs %s\n" % (a, b))
    out.extend(run_lines(meta))
    w("- %d round(s), servers alternate first/second each round; %d clients; keyspace %s "
      "(200 KiB values: %s), prefilled before the runs of each value size and verified (DBSIZE, "
      "GETs of sample keys), so SET overwrites and GET hits; taskset server=%s client=%s" % (
          meta["rounds"], meta["clients"], meta["keyspace"], meta["big_keyspace"],
          meta["taskset_server"] or "none", meta["taskset_client"] or "none"))
    w("- tools: SET/GET = %s, mixed 1:10 SET:GET = mixgen (embedded C generator, exact "
      "interleave)%s" % (meta["redis_benchmark"], "; memtier rows marked (memtier)"
                         if meta.get("memtier") else "; memtier_benchmark not installed"))
    for err in meta.get("errors", []):
        w("- **ERROR: %s**" % err)
    for label, cmds in (meta.get("refused_commands") or {}).items():
        w("- %s refused: %s (so hit ratios or checks that need them are missing)"
          % (label, "; ".join(cmds)))
    worst = max((r.get("foreign_cpu_frac") or 0 for r in runs), default=0)
    if worst > 0.15 or meta.get("background_cpu_frac", 0) > 0.1:
        w("- **WARNING: the machine was not quiet**: other processes used %.0f%% of a CPU before "
          "the runs and up to %.0f%% during one (column 'other CPU/wall'); treat these numbers "
          "as noisy." % (100 * meta.get("background_cpu_frac", 0), 100 * worst))
    w("- cells: median [min–max] over rounds; ratio = %s/%s, per round, median [min–max]. "
      "Ratios above 1 favour %s for ops/s and ops/CPU-s; below 1 favour it for latency. "
      "p99.9 for redis-benchmark is an upper bound read from its percentile listing. At "
      "pipeline 1 one generator thread saturates near 110k ops/s here (see client CPU/wall), so "
      "compare ops/CPU-s and latency there, not raw ops/s.\n" % (a, b, a))

    def table(title, cols, fn):
        w("### " + title + "\n")
        w("| workload | pipeline | value | " + " | ".join(cols) + " |")
        w("|---|---:|---:|" + "---:|" * len(cols))
        for (fam, wl, p, size), pairs in rows:
            name = wl.upper() if wl != "mixed" else "1:10 SET:GET"
            if fam != "rb":
                name += " (%s)" % fam
            w("| %s | %d | %s | %s |" % (name, p, size_label(size), " | ".join(fn(pairs))))
        w("")

    def col(pairs, side, metric):
        return [(x[side] or {}).get(metric) if x[side] else None for x in pairs]

    def both(pairs, metric, fmt=fmt_num, with_ratio=True):
        av, bv = col(pairs, 0, metric), col(pairs, 1, metric)
        cells_ = [cell(av, fmt), cell(bv, fmt)]
        if with_ratio:
            cells_.append(ratio_cell(list(zip(av, bv))))
        return cells_

    ms = lambda v: "%.3f" % v if v < 10 else "%.1f" % v  # noqa: E731
    table("Throughput and efficiency",
          ["%s ops/s" % a, "%s ops/s" % b, "ratio", "%s ops/CPU-s" % a, "%s ops/CPU-s" % b,
           "ratio"],
          lambda ps: both(ps, "rps") + both(ps, "ops_per_server_cpu_s"))
    table("Latency (ms)",
          ["%s p50" % a, "%s p50" % b, "%s p99" % a, "%s p99" % b, "p99 ratio",
           "%s p99.9" % a, "%s p99.9" % b],
          lambda ps: both(ps, "p50_ms", ms, False) + both(ps, "p99_ms", ms)
          + both(ps, "p999_ms", ms, False))
    mib = lambda v: "%.0f" % (v / 2 ** 20)  # noqa: E731
    pct = lambda v: "%.0f%%" % (100 * v)  # noqa: E731
    table("Resources",
          ["%s CPU s" % a, "%s CPU s" % b, "%s RSS MiB" % a, "%s RSS MiB" % b,
           "client CPU/wall %s" % a, "client CPU/wall %s" % b, "GET hit ratio",
           "other CPU/wall"],
          lambda ps: both(ps, "server_cpu_s", lambda v: "%.2f" % v, False)
          + both(ps, "server_rss_bytes", mib, False)
          + both(ps, "client_busy", pct, False)
          + [cell(col(ps, 0, "hit_ratio") + col(ps, 1, "hit_ratio"), pct),
             cell(col(ps, 0, "foreign_cpu_frac") + col(ps, 1, "foreign_cpu_frac"), pct)])
    return "\n".join(out)


# ---------------------------------------------------------------- main


def machine_line():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return "%d CPUs (%s), %.0f GiB, Linux %s" % (os.cpu_count(), model, mem, platform.release())


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin(),
                    help="default: $CARGO_TARGET_DIR/release/larder, else target/release/larder")
    ap.add_argument("--larder-args", default="", help="extra larder flags, one shell string")
    ap.add_argument("--redis-args", default="", help="extra redis-server flags, one shell string")
    ap.add_argument("--only-redis", action="store_true",
                    help="A/A test: a second redis-server stands in for larder")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 1 round, a fifth of the requests")
    ap.add_argument("--workloads", default="set,get,mixed")
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--sizes", default="256,1,%d" % BIG, help="value sizes in bytes")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--keyspace", type=int, default=100000)
    ap.add_argument("--big-keyspace", type=int, default=2000,
                    help="keyspace for values >= 64 KiB (100k x 200 KiB would be 20 GB a server)")
    ap.add_argument("--requests", type=int, help="per run at pipeline 1 (default 200000)")
    ap.add_argument("--requests-pipelined", type=int,
                    help="per run at pipeline > 1 (default 2000000)")
    ap.add_argument("--requests-big", type=int,
                    help="per run with values >= 64 KiB (default 10000)")
    ap.add_argument("--bench-threads", type=int, default=1,
                    help="load generator threads (redis-benchmark --threads, memtier -t)")
    ap.add_argument("--no-memtier", action="store_true", help="skip memtier even if installed")
    ap.add_argument("--run-timeout", type=float, default=300,
                    help="seconds before one load-generator run counts as stalled")
    ap.add_argument("--taskset-server", help="CPU list for the servers, e.g. 1")
    ap.add_argument("--taskset-client", help="CPU list for the load generators, e.g. 0")
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--tag", default="", help="suffix for the result file names")
    ap.add_argument("--render", metavar="JSON",
                    help="print the tables of an earlier run's JSON and exit")
    a = ap.parse_args(argv)
    div = 5 if a.quick else 1
    a.requests = a.requests or 200000 // div
    a.requests_pipelined = a.requests_pipelined or 2000000 // div
    a.requests_big = a.requests_big or 10000 // div
    if a.quick:
        a.rounds = 1
    a.workloads = [x for x in a.workloads.split(",") if x]
    for x in a.workloads:
        if x not in RATIOS:
            ap.error("unknown workload %r (set, get, mixed)" % x)
    a.pipelines = [int(x) for x in a.pipelines.split(",") if x]
    a.sizes = [int(x) for x in a.sizes.split(",") if x]
    return a


def main(argv=None):
    a = parse_args(argv)
    if a.render:
        with open(a.render) as f:
            data = json.load(f)
        print(render(data["meta"], [r for r in data["runs"] if "rps" in r]))
        return 0
    for tool in ["redis-server", "redis-benchmark"] + (["taskset"] if a.taskset_server
                                                        or a.taskset_client else []):
        if not shutil.which(tool):
            sys.exit("%s not found: apt-get install -y redis-server redis-tools util-linux" % tool)
    if not a.only_redis and not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release, or pass --larder-bin, "
                 "or --only-redis" % a.larder_bin)
    memtier = shutil.which("memtier_benchmark") and not a.no_memtier
    mixgen, why = build_mixgen() if "mixed" in a.workloads else (None, None)
    if why:
        print("note: mixed workload skipped (%s)" % why, file=sys.stderr)

    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = os.path.join(a.out_dir, stamp + "-resp_compare")
    raw = open(base + ".raw", "w")
    log = base + "-servers.log.raw"
    if a.only_redis:
        A = Server.redis("redis-b", log, shlex.split(a.redis_args), a.taskset_server)
    else:
        A = Server.larder(a.larder_bin, "larder", log, shlex.split(a.larder_args),
                          a.taskset_server)
    B = Server.redis("redis", log, shlex.split(a.redis_args), a.taskset_server)
    servers = [A, B]
    runs = []
    try:
        for s in servers:
            s.start()
        server_meta = [{"label": s.label, "argv": shlex.join(s.argv), "version": s.version(),
                        "threads": s.threads(),
                        "idle_cpu_fraction": round(s.idle_cpu_fraction(), 4)}
                       for s in servers]
        meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine_line(),
                "command": shlex.join(["python3", os.path.relpath(__file__, REPO)]
                                      + (sys.argv[1:] if argv is None else argv)),
                "server_a": A.label, "server_b": B.label, "servers": server_meta,
                "rounds": a.rounds, "clients": a.clients, "keyspace": a.keyspace,
                "big_keyspace": a.big_keyspace, "requests": a.requests,
                "requests_pipelined": a.requests_pipelined, "requests_big": a.requests_big,
                "bench_threads": a.bench_threads, "taskset_server": a.taskset_server,
                "taskset_client": a.taskset_client, "memtier": bool(memtier),
                "redis_benchmark": subprocess.run(["redis-benchmark", "--version"],
                                                  capture_output=True, text=True).stdout.strip(),
                "p999_source": {"redis-benchmark": "upper bound from the percentile listing",
                                "mixgen": "exact nearest-rank over every request",
                                "memtier": "memtier --print-percentiles"}}
        b0, t0 = machine_busy_seconds(), time.perf_counter()
        time.sleep(1.0)
        meta["background_cpu_frac"] = round(
            (machine_busy_seconds() - b0) / (time.perf_counter() - t0), 3)
        print("# %s; background CPU %.0f%% of one CPU" % (
            meta["machine"], 100 * meta["background_cpu_frac"]), file=sys.stderr)
        if meta["background_cpu_frac"] > 0.1:
            print("WARNING: the machine is busy; results will be noisy", file=sys.stderr)
        for size in a.sizes:
            try:
                run_size(a, servers, size, memtier, mixgen, raw, meta, runs)
            except (RuntimeError, OSError) as e:  # a stalled or crashed server: keep the rest
                msg = "value size %d abandoned: %r" % (size, e)
                print("FAILED " + msg, file=sys.stderr)
                meta.setdefault("errors", []).append(msg)
    finally:
        rcs = {s.label: s.stop() for s in servers}
        raw.close()
    meta["server_exit_codes"] = rcs
    meta["refused_commands"] = {s.label: sorted(s.missing) for s in servers if s.missing}
    md = render(meta, [r for r in runs if "rps" in r])
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json,raw}" % os.path.relpath(base, os.getcwd()), file=sys.stderr)
    return 1 if meta.get("errors") or any("error" in r for r in runs) else 0


def run_size(a, servers, size, memtier, mixgen, raw, meta, runs):
    """Prefill both servers with values of this size, then every round of every cell."""
    big = size >= 64 * 1024
    keyspace = a.big_keyspace if big else a.keyspace
    for s in servers:
        t = prefill(s, keyspace, size, memtier_keys=bool(memtier))
        print("prefill %s: %d keys x %d B in %.1fs" % (s.label, keyspace, size, t),
              file=sys.stderr)
    for rnd in range(a.rounds):
        order = servers if rnd % 2 == 0 else servers[::-1]
        for wl in a.workloads:
            tools = ([] if wl == "mixed" and not mixgen else
                     ["mixgen" if wl == "mixed" else "redis-benchmark"])
            tools += ["memtier"] if memtier else []
            for pipeline in a.pipelines:
                n = a.requests_big if big else (
                    a.requests if pipeline == 1 else a.requests_pipelined)
                for tool in tools:
                    for s in order:
                        r = run_cell(a, s, tool, wl, pipeline, size, n, keyspace, rnd, mixgen,
                                     raw, meta)
                        runs.append(r)
                        print("round %d %-7s %-15s %-5s P%-2d %6d B  %s" % (
                            rnd, s.label, tool, wl, pipeline, size,
                            "%.0f ops/s p99 %.3f ms cpu %.2fs" % (
                                r["rps"], r.get("p99_ms") or 0, r["server_cpu_s"])
                            if "rps" in r else "FAILED: " + r["error"]), file=sys.stderr)
    for s in servers:
        s.try_call("FLUSHALL")


def run_cell(a, s, tool, wl, pipeline, size, n, keyspace, rnd, mixgen, raw, meta):
    """One load-generator run against one server; a failure is recorded, not raised."""
    r = dict(server=s.label, round=rnd, tool=tool,
             tool_family="memtier" if tool == "memtier" else "rb", workload=wl,
             pipeline=pipeline, value_bytes=size, requests=n, clients=a.clients,
             keyspace=keyspace)
    if s.proc.poll() is not None:
        r["error"] = "server exited with %s" % s.proc.returncode
        return r
    cmd = tool_command(tool, wl, s.port, a, pipeline, size, n, keyspace, 1000 * rnd + pipeline,
                       mixgen)
    parse = {"redis-benchmark": lambda t: parse_redis_benchmark(t, n),
             "mixgen": json.loads, "memtier": parse_memtier}[tool]
    try:
        r.update(measured_run(s, cmd, raw, parse, a.run_timeout))
    except (RuntimeError, ValueError, OSError) as e:
        r["error"] = str(e)
        return r
    r["ops_per_server_cpu_s"] = round(n / r["server_cpu_s"]) if r["server_cpu_s"] else None
    r["client_busy"] = round(r["client_cpu_s"] / r["wall_s"], 3) if r["wall_s"] else None
    r.setdefault("p999_source", meta["p999_source"].get(tool))
    return r


if __name__ == "__main__":
    sys.exit(main())
