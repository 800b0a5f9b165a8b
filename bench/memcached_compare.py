#!/usr/bin/env python3
"""Side-by-side memcached benchmark: larder's memcached door against memcached 1.6 on loopback.

Starts both servers (memcached with `-t 2`, larder with `--threads 2`), prefills 100k keys of
256 bytes, then drives each in turn (alternating which goes first every round): SET, GET, the
1:10 SET:GET mix and multi-get of 16 keys, 50 connections, one request in flight per
connection, text and binary protocol. Two load generators:

- `mcgen`, a small C generator embedded below (compiled with cc on first use, like
  resp_compare.py's mixgen): text and binary, exact latency percentiles (1 µs histogram merged
  across its processes);
- memaslap (Debian's libmemcached-tools ships it as `memcaslap`), binary protocol only: its
  text-protocol keys carry control bytes, which larder refuses as protocol.txt says (memcached
  accepts them). Its percentiles are upper bounds of log2 buckets.

Per run it records ops/s, p50/p99/p99.9, server CPU seconds (utime+stime from /proc/PID/stat),
ops per server CPU-second and server RSS. A second phase loads 1M 256-byte items into a fresh
copy of each server and reports RSS growth per item. memtier_benchmark is not packaged in
Debian 12 and is not used.

Standard library only; shared helpers come from resp_compare.py. The method, the exact
commands and the results are in docs/memcached.md.
"""

import argparse
import hashlib
import json
import math
import os
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from resp_compare import (  # noqa: E402
    HOST,
    REPO,
    RESULTS,
    cell,
    default_larder_bin,
    fmt_num,
    free_port,
    machine_busy_seconds,
    machine_line,
    proc_cpu_seconds,
    proc_status,
    ratio_cell,
)

# taskset CPU lists from --server-cpus / --gen-cpus ("" = not pinned).
PIN = {"server": "", "gen": ""}

WORKLOADS = {
    # name: (set proportion, get proportion, multi-get keys, memaslap statistics section)
    "set": (1.0, 0.0, 1, "Set"),
    "get": (0.0, 1.0, 1, "Get"),
    "mixed": (1 / 11, 10 / 11, 1, "Total"),
    "mget16": (0.0, 1.0, 16, "Get"),
}
PROTOCOLS = ("text", "binary")


# ---------------------------------------------------------------- servers


def mc_call(port, line, timeout=5.0):
    """One text-protocol request; returns the answer up to END or the first line."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(line.encode() + b"\r\n")
        buf = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                return buf.decode(errors="replace")
            buf += chunk
            if buf.endswith(b"END\r\n") or (not line.startswith("stats") and buf.endswith(b"\r\n")):
                return buf.decode(errors="replace")


class McServer:
    """A memcached-protocol server on loopback: memcached, or larder's memcached door."""

    def __init__(self, label, kind, argv, port, log_path):
        self.label, self.kind, self.argv, self.port = label, kind, argv, port
        self.log_path = log_path
        self.proc = None
        self.workdir = tempfile.mkdtemp(prefix="larder-mcbench-%s-" % label)

    @classmethod
    def memcached(cls, label, log_path, extra=()):
        port = free_port()
        argv = ["memcached", "-p", str(port), "-U", "0", "-l", HOST, "-t", "2"]
        if os.geteuid() == 0:
            argv += ["-u", "nobody"]  # memcached refuses to run as root without -u
        return cls(label, "memcached", argv + list(extra), port, log_path)

    @classmethod
    def larder(cls, binary, label, log_path, extra=()):
        port = free_port()
        argv = [binary, "--port", str(free_port()), "--bind", HOST, "--memcached-port",
                str(port), "--http-port", "0", "--threads", "2", "--appendonly", "no", "--save", ""] + list(extra)
        return cls(label, "larder", argv, port, log_path)

    def start(self, timeout=30.0):
        if PIN["server"] and self.argv[0] != "taskset":
            self.argv = ["taskset", "-c", PIN["server"]] + self.argv
        self.log = open(self.log_path, "ab")
        self.log.write(("\n==== %s: %s\n" % (self.label, shlex.join(self.argv))).encode())
        self.log.flush()
        self.proc = subprocess.Popen(self.argv, cwd=self.workdir, stdout=self.log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.time() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited at startup; see %s" % (self.label, self.log_path))
            try:
                if mc_call(self.port, "version", timeout=2).startswith("VERSION"):
                    return self
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError("%s did not answer version within %ss" % (self.label, timeout))
            time.sleep(0.05)

    def version(self):
        return mc_call(self.port, "version").split()[-1]

    def stats(self):
        out = {}
        for line in mc_call(self.port, "stats").splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[0] == "STAT":
                out[parts[1]] = parts[2]
        return out

    def flush(self):
        if mc_call(self.port, "flush_all").strip() != "OK":
            raise RuntimeError("%s refused flush_all" % self.label)

    def cpu_seconds(self):
        return proc_cpu_seconds(self.proc.pid)

    def rss_bytes(self):
        return (proc_status(self.proc.pid, "VmRSS") or 0) * 1024

    def threads(self):
        return proc_status(self.proc.pid, "Threads")

    def idle_cpu_fraction(self, seconds=1.0):
        c0, t0 = self.cpu_seconds(), time.perf_counter()
        time.sleep(seconds)
        return (self.cpu_seconds() - c0) / (time.perf_counter() - t0)

    def stop(self):
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


def make_server(a, which, label, log):
    if which == "memcached":
        return McServer.memcached(label, log, shlex.split(a.memcached_args))
    return McServer.larder(a.larder_bin, label, log, shlex.split(a.larder_args))


# ---------------------------------------------------------------- mcgen

MCGEN_C = r'''/* mcgen: a memcached load generator (text or binary protocol) for bench/memcached_compare.py.
 * One thread, epoll, CLIENTS connections, one request in flight per connection (pipeline 1).
 * Every request is a SET or a GET of MGET keys, chosen by a global sequence: SET_W sets in
 * every SET_W + GET_W requests. Keys are key:%012d, uniform over KEYSPACE; values 'x' * VALUE.
 * A request's latency runs from its write to the parse of the end of its answer (STORED or
 * END for text; the response packet, or NOOP's after GETKQs, for binary). Runs for SECONDS,
 * then waits for the answers in flight. Prints one JSON object with a latency histogram at
 * 1 microsecond resolution (merged exactly across processes by the script). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HIST 1000000 /* 1 us buckets up to 1 s; slower answers land in the last one */

typedef struct {
  int fd, want_out, busy, is_get;
  char *wbuf; size_t wlen, wcap, woff;
  char *rbuf; size_t rlen, rcap;
  uint64_t t0;
} conn_t;

static int ep, binary, mget, wset, wget;
static long long keyspace, vlen, seq, sets, gets, keys_hit, keys_missed, errs, done;
static char *val;
static uint32_t *hist;
static uint64_t rng = 88172645463325252ull;

static uint64_t now_ns(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static uint64_t xrand(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
static void die(const char *m) { perror(m); exit(2); }
static void put(conn_t *c, const void *p, size_t n) {
  if (c->wlen + n > c->wcap) {
    while (c->wlen + n > c->wcap) c->wcap = c->wcap ? c->wcap * 2 : 65536;
    if (!(c->wbuf = realloc(c->wbuf, c->wcap))) die("realloc");
  }
  memcpy(c->wbuf + c->wlen, p, n); c->wlen += n;
}
static void watch(conn_t *c, uint32_t id, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.u32 = id};
  if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl");
}
static void flush_out(conn_t *c, uint32_t id) {
  ssize_t w = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
  if (w < 0 && errno != EAGAIN) die("write");
  if (w > 0) c->woff += (size_t)w;
  int more = c->woff < c->wlen;
  if (more != c->want_out) {
    c->want_out = more;
    watch(c, id, more ? EPOLLIN | EPOLLOUT : EPOLLIN);
  }
}
static void make_key(char key[16]) {
  uint64_t r = xrand() % (uint64_t)keyspace;
  memcpy(key, "key:", 4);
  for (int i = 15; i >= 4; i--) { key[i] = (char)('0' + r % 10); r /= 10; }
}
static void bin_header(conn_t *c, uint8_t op, uint16_t klen, uint8_t elen, uint32_t body) {
  uint8_t h[24] = {0};
  h[0] = 0x80; h[1] = op; h[2] = (uint8_t)(klen >> 8); h[3] = (uint8_t)klen; h[4] = elen;
  h[8] = (uint8_t)(body >> 24); h[9] = (uint8_t)(body >> 16); h[10] = (uint8_t)(body >> 8);
  h[11] = (uint8_t)body;
  put(c, h, 24);
}
static void send_request(conn_t *c, uint32_t id) {
  char key[16], line[64];
  c->wlen = c->woff = 0; c->rlen = 0;
  if (seq++ % (wset + wget) < wset) {
    make_key(key); c->is_get = 0; sets++;
    if (binary) {
      static const uint8_t extras[8] = {0};
      bin_header(c, 0x01, 16, 8, (uint32_t)(8 + 16 + vlen));
      put(c, extras, 8); put(c, key, 16); put(c, val, (size_t)vlen);
    } else {
      put(c, "set ", 4); put(c, key, 16);
      int n = snprintf(line, sizeof line, " 0 0 %lld\r\n", vlen);
      put(c, line, (size_t)n); put(c, val, (size_t)vlen); put(c, "\r\n", 2);
    }
  } else {
    c->is_get = 1; gets++;
    if (binary && mget == 1) {
      make_key(key); bin_header(c, 0x00, 16, 0, 16); put(c, key, 16);
    } else if (binary) {
      for (int k = 0; k < mget; k++) { make_key(key); bin_header(c, 0x0d, 16, 0, 16); put(c, key, 16); }
      bin_header(c, 0x0a, 0, 0, 0);
    } else {
      put(c, "get", 3);
      for (int k = 0; k < mget; k++) { make_key(key); put(c, " ", 1); put(c, key, 16); }
      put(c, "\r\n", 2);
    }
  }
  c->busy = 1; c->t0 = now_ns();
  flush_out(c, id);
}
/* Whether the answer in c->rbuf is complete; counts hits and errors when it is. */
static int answer_done(conn_t *c) {
  size_t off = 0; long long hit = 0;
  if (binary) {
    for (;;) {
      if (c->rlen - off < 24) return 0;
      const uint8_t *h = (const uint8_t *)c->rbuf + off;
      uint32_t body = ((uint32_t)h[8] << 24) | ((uint32_t)h[9] << 16) | ((uint32_t)h[10] << 8) | h[11];
      uint16_t status = (uint16_t)((h[6] << 8) | h[7]);
      if (c->rlen - off < 24 + (size_t)body) return 0;
      off += 24 + body;
      if (!c->is_get) { if (status) errs++; return 1; }
      if (mget == 1) { if (status == 0) keys_hit++; else if (status == 1) keys_missed++; else errs++; return 1; }
      if (h[1] == 0x0a) { keys_hit += hit; keys_missed += mget - hit; return 1; }
      if (status == 0) hit++; else errs++;
    }
  }
  for (;;) {
    char *nl = memchr(c->rbuf + off, '\n', c->rlen - off);
    if (!nl) return 0;
    size_t line = off, next = (size_t)(nl - c->rbuf) + 1;
    if (!c->is_get) {
      if (strncmp(c->rbuf + line, "STORED", 6) != 0) errs++;
      return 1;
    }
    if (strncmp(c->rbuf + line, "END", 3) == 0) {
      keys_hit += hit; keys_missed += mget - hit; return 1;
    }
    if (strncmp(c->rbuf + line, "VALUE ", 6) != 0) { errs++; return 1; }
    /* VALUE <key> <flags> <bytes> */
    char *p = nl; while (p > c->rbuf + line && p[-1] != ' ') p--;
    long long n = atoll(p);
    if (c->rlen < next + (size_t)n + 2) return 0;
    off = next + (size_t)n + 2; hit++;
  }
}

int main(int argc, char **argv) {
  if (argc != 12) {
    fprintf(stderr, "usage: mcgen HOST PORT CLIENTS SECONDS KEYSPACE VALUE_BYTES SET_W GET_W"
                    " MGET_KEYS text|binary SEED\n");
    return 2;
  }
  int port = atoi(argv[2]), nclients = atoi(argv[3]);
  double seconds = atof(argv[4]);
  keyspace = atoll(argv[5]); vlen = atoll(argv[6]); wset = atoi(argv[7]); wget = atoi(argv[8]);
  mget = atoi(argv[9]); binary = strcmp(argv[10], "binary") == 0;
  rng ^= (uint64_t)atoll(argv[11]) * 0x9E3779B97F4A7C15ull;
  if (nclients < 1 || seconds <= 0 || keyspace < 1 || keyspace > 1000000000000ll || vlen < 0 ||
      wset < 0 || wget < 0 || wset + wget < 1 || mget < 1 || mget > 100) return 2;
  val = malloc((size_t)vlen + 1); memset(val, 'x', (size_t)vlen);
  hist = calloc(HIST, sizeof(uint32_t));
  conn_t *cs = calloc((size_t)nclients, sizeof(conn_t));
  if (!val || !hist || !cs) die("malloc");
  ep = epoll_create1(0);
  struct sockaddr_in sa = {0}; sa.sin_family = AF_INET; sa.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) { fprintf(stderr, "bad IPv4 address\n"); return 2; }
  for (int i = 0; i < nclients; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("connect");
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl");
    cs[i].fd = fd; cs[i].rcap = 65536;
    if (!(cs[i].rbuf = malloc(cs[i].rcap))) die("malloc");
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
  }
  uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9);
  int in_flight = 0;
  for (int i = 0; i < nclients; i++) { send_request(&cs[i], (uint32_t)i); in_flight++; }
  struct epoll_event evs[256];
  while (in_flight > 0) {
    int ne = epoll_wait(ep, evs, 256, 10000);
    if (ne < 0) { if (errno == EINTR) continue; die("epoll_wait"); }
    if (ne == 0) { fprintf(stderr, "no answer for 10 s (%d in flight)\n", in_flight); return 3; }
    for (int e = 0; e < ne; e++) {
      uint32_t id = evs[e].data.u32; conn_t *c = &cs[id];
      if ((evs[e].events & EPOLLOUT) && c->want_out) flush_out(c, id);
      if (!(evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
      for (;;) {
        if (c->rlen == c->rcap) { c->rcap *= 2; if (!(c->rbuf = realloc(c->rbuf, c->rcap))) die("realloc"); }
        size_t room = c->rcap - c->rlen;
        ssize_t r = read(c->fd, c->rbuf + c->rlen, room);
        if (r == 0) { fprintf(stderr, "server closed the connection\n"); return 3; }
        if (r < 0) { if (errno == EAGAIN) break; die("read"); }
        c->rlen += (size_t)r;
        if (c->busy && answer_done(c)) {
          uint64_t t = now_ns(), us = (t - c->t0) / 1000;
          hist[us < HIST ? us : HIST - 1]++;
          done++; c->busy = 0; in_flight--;
          if (t < end) { send_request(c, id); in_flight++; }
        }
        if ((size_t)r < room) break;
      }
    }
  }
  double el = (double)(now_ns() - start) / 1e9;
  printf("{\"requests\": %lld, \"elapsed_s\": %.6f, \"sets\": %lld, \"gets\": %lld, "
         "\"keys_hit\": %lld, \"keys_missed\": %lld, \"errors\": %lld, \"hist_us\": {",
         done, el, sets, gets, keys_hit, keys_missed, errs);
  int first = 1;
  for (int i = 0; i < HIST; i++) {
    if (!hist[i]) continue;
    printf("%s\"%d\": %u", first ? "" : ", ", i, hist[i]); first = 0;
  }
  printf("}}\n");
  return 0;
}
'''


def build_mcgen():
    """Compile MCGEN_C once per source version into the temp dir; (path, None) or (None, why)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None, "no C compiler (cc) found"
    digest = hashlib.sha1(MCGEN_C.encode()).hexdigest()[:12]
    d = os.path.join(tempfile.gettempdir(), "larder-bench")
    os.makedirs(d, exist_ok=True)
    exe = os.path.join(d, "mcgen-" + digest)
    if not os.path.exists(exe):
        src = exe + ".c"
        with open(src, "w") as f:
            f.write(MCGEN_C)
        r = subprocess.run([cc, "-O2", "-o", exe + ".tmp", src], capture_output=True, text=True)
        if r.returncode != 0:
            return None, "mcgen did not compile: " + r.stderr[-2000:]
        os.replace(exe + ".tmp", exe)
    return exe, None


def mcgen_commands(exe, port, a, workload, protocol, seed):
    """One mcgen command per generator process; the connections are split between them."""
    set_prop, get_prop, division, _ = WORKLOADS[workload]
    wset, wget = (1, 0) if get_prop == 0 else ((0, 1) if set_prop == 0 else (1, 10))
    cmds = []
    for i in range(a.gen_procs):
        clients = a.clients // a.gen_procs + (1 if i < a.clients % a.gen_procs else 0)
        cmds.append([exe, HOST, str(port), str(clients), str(a.duration), str(a.keyspace),
                     str(a.value_bytes), str(wset), str(wget), str(division), protocol,
                     str(seed * 100 + i)])
    return cmds


def pinned_gen(cmd):
    """`cmd` run on the generator's CPUs (`--gen-cpus`), or as is."""
    return ["taskset", "-c", PIN["gen"]] + cmd if PIN["gen"] else cmd


def run_mcgen(cmds, timeout):
    """Runs the generator processes side by side; merges their counts and histograms."""
    cmds = [pinned_gen(c) for c in cmds]
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in cmds]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError("mcgen failed (rc %s): %s" % (p.returncode, err[-500:]))
        outs.append(json.loads(out))
    hist = {}
    for o in outs:
        for k, v in o["hist_us"].items():
            hist[int(k)] = hist.get(int(k), 0) + v
    total = sum(hist.values())
    res = {k: sum(o[k] for o in outs) for k in ("requests", "sets", "gets", "keys_hit",
                                                    "keys_missed", "errors")}
    elapsed = max(o["elapsed_s"] for o in outs)
    res["ops"] = res["requests"]
    res["rps"] = round(res["requests"] / elapsed)
    res["keys_per_s"] = round((res["keys_hit"] + res["keys_missed"] + res["sets"]) / elapsed)
    res["get_misses"] = res["keys_missed"]
    for name, p in (("p50_us", 0.5), ("p99_us", 0.99), ("p999_us", 0.999)):
        rank, acc = math.ceil(p * total), 0
        for us_ in sorted(hist):
            acc += hist[us_]
            if acc >= rank:
                res[name] = us_ + 1  # the bucket holds [us, us + 1)
                break
    res["max_us"] = max(hist) + 1 if hist else None
    return res, "\n".join(json.dumps({k: v for k, v in o.items() if k != "hist_us"})
                          for o in outs)


# ---------------------------------------------------------------- memaslap


def memaslap_config(path, set_prop, get_prop, value_bytes, key_bytes):
    with open(path, "w") as f:
        f.write("key\n%d %d 1\nvalue\n%d %d 1\ncmd\n0 %.6f\n1 %.6f\n" % (
            key_bytes, key_bytes, value_bytes, value_bytes, set_prop, get_prop))


def memaslap_command(tool, port, a, workload, protocol, cfg):
    _, _, division, _ = WORKLOADS[workload]
    cmd = [tool, "-s", "%s:%d" % (HOST, port), "-T", str(a.bench_threads), "-c",
           str(a.clients), "-t", "%ds" % a.duration, "-S", "%ds" % a.duration, "-F", cfg,
           "-w", a.window]
    if division > 1:
        cmd += ["-d", str(division)]
    if protocol == "binary":
        cmd.append("-B")
    return cmd


def parse_memaslap(text, section):
    """TPS and log2-histogram percentiles of one statistics section of memaslap's output.

    memaslap files each latency (µs) in bucket b = ceil(log2(latency)), so bucket b holds
    (2^(b-1), 2^b]; a percentile is reported as the upper bound 2^b of the bucket where the
    cumulative count reaches it (nearest rank)."""
    lines = text.replace("\x1b[1;1H\x1b[2J", "").splitlines()
    tps, ops = None, None
    for i, line in enumerate(lines):
        if line.strip() == "%s Statistics" % section:
            for j in range(i + 1, min(i + 6, len(lines))):
                parts = lines[j].split()
                if parts and parts[0] == "Global":
                    ops, tps = int(parts[2]), int(parts[3])
    dist = {}
    for i, line in enumerate(lines):
        if line.startswith("%s Statistics (" % section):
            dist = {}
            j = i + 1
            while j < len(lines) and "Log2 Dist:" not in lines[j]:
                j += 1
            j += 1
            while j < len(lines) and ":" in lines[j]:
                base, counts = lines[j].split(":", 1)
                for k, c in enumerate(counts.split()):
                    dist[int(base) + k] = int(c)
                j += 1
    total = sum(dist.values())
    pct = {}
    for name, p in (("p50_us", 0.5), ("p99_us", 0.99), ("p999_us", 0.999)):
        if not total:
            pct[name] = None
            continue
        rank, acc = math.ceil(p * total), 0
        for b in sorted(dist):
            acc += dist[b]
            if acc >= rank:
                pct[name] = 2 ** b
                break
    misses = None
    for line in lines:
        if line.startswith("get_misses:"):
            misses = int(line.split()[1])
    return dict(ops=ops, rps=tps, get_misses=misses, events=total, **pct)


def measured_run(server, label_cmd, runner, raw):
    """Runs `runner()` -> (result dict, tool output) against server, measuring the server."""
    st0 = server.stats()
    cpu0, busy0 = server.cpu_seconds(), machine_busy_seconds()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res, text = runner()
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu1, busy1 = server.cpu_seconds(), machine_busy_seconds()
    rss = server.rss_bytes()
    st1 = server.stats()
    raw.write("\n==== %s: %s\n%s\n" % (server.label, label_cmd, text))
    raw.flush()
    cpu = cpu1 - cpu0
    client = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime

    def delta(name):
        return int(st1.get(name, 0)) - int(st0.get(name, 0))

    res.update(wall_s=round(wall, 3), server_cpu_s=round(cpu, 3), server_rss_bytes=rss,
               server_threads=server.threads(), client_cpu_s=round(client, 3),
               foreign_cpu_frac=round(max(0.0, busy1 - busy0 - cpu - client) / wall, 3),
               server_cmd_get=delta("cmd_get"), server_cmd_set=delta("cmd_set"),
               server_get_hits=delta("get_hits"), server_get_misses=delta("get_misses"))
    res["ops_per_cpu_s"] = round(res["ops"] / cpu) if res.get("ops") and cpu > 0 else None
    return res


def run_memaslap(cmd, section, timeout):
    p = subprocess.run(pinned_gen(cmd), capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError("%s failed (rc %s): %s" % (cmd[0], p.returncode, p.stderr[-500:]))
    if "CLIENT_ERROR" in p.stdout or "SERVER_ERROR" in p.stdout:
        raise RuntimeError("memaslap got errors from the server; see the .raw file")
    return parse_memaslap(p.stdout, section), p.stdout + p.stderr


# ---------------------------------------------------------------- memory per item


def load_items(port, n, value_bytes, batch=2000):
    """n items `key:%012d` with `value_bytes`-byte values, pipelined text sets with noreply."""
    value = b"v" * value_bytes
    with socket.create_connection((HOST, port), timeout=60) as s:
        for start in range(0, n, batch):
            req = b"".join(b"set key:%012d 0 0 %d noreply\r\n%s\r\n" % (i, value_bytes, value)
                           for i in range(start, min(n, start + batch)))
            s.sendall(req)
        s.sendall(b"version\r\n")
        buf = b""
        while not buf.endswith(b"\r\n"):
            chunk = s.recv(4096)
            if not chunk:
                raise RuntimeError("connection closed during the load")
            buf += chunk
        if not buf.startswith(b"VERSION"):
            raise RuntimeError("unexpected answer after the load: %r" % buf[:200])


def memory_per_item(a, which, label, log):
    extra = shlex.split(a.memcached_mem_args) if which == "memcached" else []
    if which == "memcached":
        srv = McServer.memcached(label, log, shlex.split(a.memcached_args) + extra)
    else:
        srv = McServer.larder(a.larder_bin, label, log, shlex.split(a.larder_args))
    srv.start()
    try:
        time.sleep(a.settle)
        rss0 = srv.rss_bytes()
        t0 = time.perf_counter()
        load_items(srv.port, a.items, a.value_bytes)
        load_s = time.perf_counter() - t0
        time.sleep(a.settle)
        rss1 = srv.rss_bytes()
        st = srv.stats()
        items = int(st.get("curr_items", 0))
        return dict(server=label, argv=shlex.join(srv.argv), items=items,
                    rss_before=rss0, rss_after=rss1, load_s=round(load_s, 2),
                    bytes_per_item=round((rss1 - rss0) / max(items, 1), 1),
                    server_bytes_stat=int(st.get("bytes", 0)))
    finally:
        srv.stop()


# ---------------------------------------------------------------- report


def us(v, tool):
    if v is None:
        return "–"
    return ("≤%d" % v) if tool == "memaslap" else ("%d" % v)


def render(meta, runs, memory):
    a, b = meta["server_a"], meta["server_b"]
    out = ["# memcached door: %s vs %s" % (a, b), ""]
    out.append("- date: %s; machine: %s" % (meta["date"], meta["machine"]))
    out.append("- command: `%s`" % meta["command"])
    for s in meta["servers"]:
        out.append("- %s: `%s` (version %s, %s threads, idle CPU %.1f%%)" % (
            s["label"], s["argv"], s["version"], s["threads"], 100 * s["idle_cpu_fraction"]))
    out.append("- load: %d connections, one request in flight each, %ds per run, %d-byte values, "
               "16-byte keys, %d round(s), server order alternating every round" % (
                   meta["clients"], meta["duration"], meta["value_bytes"], meta["rounds"]))
    if any(r["tool"] == "mcgen" for r in runs):
        out.append("- mcgen: %d processes; keyspace %d keys, prefilled; latency exact (1 µs "
                   "histogram, nearest rank)" % (meta["gen_procs"], meta["keyspace"]))
    if any(r["tool"] == "memaslap" for r in runs):
        out.append("- memaslap (binary only): `%s`, %d threads, window %s; latency = upper bound "
                   "of its log2 bucket (≤2^k µs)" % (meta["memaslap"], meta["bench_threads"],
                                                       meta["window"]))
    out.append("- background CPU before the run: %.0f%% of one CPU" % (
        100 * meta["background_cpu_frac"]))
    out.append("- mget16: one request fetches 16 keys; ops/s counts requests (keys/s = 16×)")
    out.append("")
    cells = {}
    for r in runs:
        key = (r["tool"], r["protocol"], r["workload"])
        cells.setdefault(key, {}).setdefault(r["round"], {})[r["server"]] = r
    order = [(t, p, w) for t in ("mcgen", "memaslap") for p in PROTOCOLS for w in WORKLOADS]
    rows = [(k, [(rd.get(a), rd.get(b)) for _, rd in sorted(cells[k].items())])
            for k in order if k in cells]

    def vals(pairs, i, k):
        return [p[i].get(k) if p[i] else None for p in pairs]

    def ratio(pairs, k):
        return ratio_cell([(x.get(k), y.get(k)) if x and y else (None, None) for x, y in pairs])

    out.append("## Throughput (median of rounds [min–max]; ratio per round)")
    out.append("")
    out.append("| tool | protocol | workload | %s ops/s | %s ops/s | %s/%s | %s ops/CPU-s | "
               "%s ops/CPU-s | ratio | other CPU |" % (a, b, a, b, a, b))
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for (tool, proto, wl), pairs in rows:
        foreign = max([x.get("foreign_cpu_frac") or 0 for p in pairs for x in p if x] or [0])
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f%% |" % (
            tool, proto, wl, cell(vals(pairs, 0, "rps")), cell(vals(pairs, 1, "rps")),
            ratio(pairs, "rps"), cell(vals(pairs, 0, "ops_per_cpu_s")),
            cell(vals(pairs, 1, "ops_per_cpu_s")), ratio(pairs, "ops_per_cpu_s"),
            100 * foreign))
    out.append("")
    out.append("## Latency, µs (median of rounds)")
    out.append("")
    out.append("| tool | protocol | workload | %s p50 | %s p50 | %s p99 | %s p99 | %s p99.9 | "
               "%s p99.9 | p99 ratio |" % (a, b, a, b, a, b))
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for (tool, proto, wl), pairs in rows:
        def med(i, k):
            v = [x[i][k] for x in pairs if x[i] and x[i].get(k) is not None]
            return us(int(statistics.median(v)), tool) if v else "–"
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            tool, proto, wl, med(0, "p50_us"), med(1, "p50_us"), med(0, "p99_us"),
            med(1, "p99_us"), med(0, "p999_us"), med(1, "p999_us"), ratio(pairs, "p99_us")))
    out.append("")
    out.append("## Resources")
    out.append("")
    out.append("| tool | protocol | workload | %s CPU s | %s CPU s | %s RSS | %s RSS | "
               "misses (%s / %s) |" % (a, b, a, b, a, b))
    out.append("|---|---|---|---|---|---|---|---|")

    def mib(v):
        return "%.0f MiB" % (v / 2 ** 20)

    for (tool, proto, wl), pairs in rows:
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s / %s |" % (
            tool, proto, wl, cell(vals(pairs, 0, "server_cpu_s")),
            cell(vals(pairs, 1, "server_cpu_s")),
            cell(vals(pairs, 0, "server_rss_bytes"), mib),
            cell(vals(pairs, 1, "server_rss_bytes"), mib),
            sum((x[0] or {}).get("get_misses") or 0 for x in pairs),
            sum((x[1] or {}).get("get_misses") or 0 for x in pairs)))
    if memory:
        out.append("")
        out.append("## Memory per item (%d items, %d-byte values, 16-byte keys, RSS growth)" % (
            meta["items"], meta["value_bytes"]))
        out.append("")
        out.append("| server | items | RSS before | RSS after | bytes/item | load s | argv |")
        out.append("|---|---|---|---|---|---|---|")
        for m in memory:
            out.append("| %s | %d | %.1f MiB | %.1f MiB | %.1f | %.1f | `%s` |" % (
                m["server"], m["items"], m["rss_before"] / 2 ** 20, m["rss_after"] / 2 ** 20,
                m["bytes_per_item"], m["load_s"], m["argv"]))
        by = {m["server"]: m["bytes_per_item"] for m in memory}
        if a in by and b in by and by[b]:
            out.append("")
            out.append("%s/%s bytes per item: %.2f×" % (a, b, by[a] / by[b]))
    if meta.get("errors"):
        out.append("")
        out.append("Errors: " + "; ".join(meta["errors"]))
    return "\n".join(out)


# ---------------------------------------------------------------- main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--larder-bin", default=default_larder_bin())
    ap.add_argument("--larder-args", default="", help="extra larder flags, one shell string")
    ap.add_argument("--memcached-args", default="", help="extra memcached flags")
    ap.add_argument("--memcached-mem-args", default="-m 2048",
                    help="memcached flags for the memory phase (its default -m 64 is too small)")
    ap.add_argument("--only-memcached", action="store_true",
                    help="A/A test: a second memcached stands in for larder")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10, help="seconds per run")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 round of 3 s, 100k items")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--tools", default="mcgen,memaslap")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--gen-procs", type=int, default=2, help="mcgen processes (connections split)")
    ap.add_argument("--keyspace", type=int, default=100_000, help="mcgen keys, prefilled")
    ap.add_argument("--bench-threads", type=int, default=2, help="memaslap -T")
    ap.add_argument("--window", default="1k",
                    help="memaslap -w: keys per connection (50 x 1k = 50k keys)")
    ap.add_argument("--value-bytes", type=int, default=256)
    ap.add_argument("--items", type=int, default=1_000_000, help="memory phase; 0 skips it")
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--run-timeout", type=float, default=300)
    ap.add_argument("--out-dir", default=RESULTS)
    ap.add_argument("--tag", default="")
    ap.add_argument("--server-cpus", default="",
                    help="taskset CPU list for both servers (e.g. 0); empty: not pinned")
    ap.add_argument("--gen-cpus", default="",
                    help="taskset CPU list for the load generators (e.g. 1); empty: not pinned")
    a = ap.parse_args(argv)
    PIN["server"], PIN["gen"] = a.server_cpus, a.gen_cpus
    if a.quick:
        a.rounds, a.duration, a.items = 1, 3, min(a.items, 100_000)
    a.key_bytes = 16
    a.workloads = [w for w in a.workloads.split(",") if w]
    a.protocols = [p for p in a.protocols.split(",") if p]
    a.tools = [t for t in a.tools.split(",") if t]
    for w in a.workloads:
        if w not in WORKLOADS:
            ap.error("unknown workload %r" % w)
    return a


def prefill(servers, a):
    for s in servers:
        s.flush()
        load_items(s.port, a.keyspace, a.value_bytes)


def main(argv=None):
    a = parse_args(argv)
    memaslap = shutil.which("memcaslap") or shutil.which("memaslap")
    if not shutil.which("memcached"):
        sys.exit("memcached is needed: apt-get install -y memcached libmemcached-tools")
    if "memaslap" in a.tools and not memaslap:
        print("note: memaslap not found (apt-get install libmemcached-tools); skipped",
              file=sys.stderr)
        a.tools.remove("memaslap")
    mcgen = None
    if "mcgen" in a.tools:
        mcgen, why = build_mcgen()
        if why:
            print("note: mcgen skipped (%s)" % why, file=sys.stderr)
            a.tools.remove("mcgen")
    if not a.only_memcached and not os.access(a.larder_bin, os.X_OK):
        sys.exit("larder binary %s not found: cargo build --release -p larder-server, or pass "
                 "--larder-bin" % a.larder_bin)
    os.makedirs(a.out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-" + a.tag if a.tag else "")
    base = os.path.join(a.out_dir, stamp + "-memcached_compare")
    raw = open(base + ".raw", "w")
    log = base + "-servers.log.raw"
    which_a = "memcached" if a.only_memcached else "larder"
    label_a = "memcached-b" if a.only_memcached else "larder"
    A = make_server(a, which_a, label_a, log)
    B = make_server(a, "memcached", "memcached", log)
    servers = [A, B]
    runs, memory = [], []
    cfgdir = tempfile.mkdtemp(prefix="larder-mcbench-cfg-")
    meta = {"errors": []}
    try:
        for s in servers:
            s.start()
        meta.update({"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine_line(),
                     "command": shlex.join(["python3", os.path.relpath(__file__, REPO)]
                                           + (sys.argv[1:] if argv is None else argv)),
                     "server_a": A.label, "server_b": B.label,
                     "memaslap": os.path.basename(memaslap) if "memaslap" in a.tools else None,
                     "servers": [{"label": s.label, "argv": shlex.join(s.argv),
                                  "version": s.version(), "threads": s.threads(),
                                  "idle_cpu_fraction": round(s.idle_cpu_fraction(), 4)}
                                 for s in servers],
                     "rounds": a.rounds, "duration": a.duration, "clients": a.clients,
                     "gen_procs": a.gen_procs, "keyspace": a.keyspace,
                     "bench_threads": a.bench_threads, "window": a.window,
                     "value_bytes": a.value_bytes, "key_bytes": a.key_bytes, "items": a.items})
        b0, t0 = machine_busy_seconds(), time.perf_counter()
        time.sleep(1.0)
        meta["background_cpu_frac"] = round(
            (machine_busy_seconds() - b0) / (time.perf_counter() - t0), 3)
        print("# %s; background CPU %.0f%% of one CPU" % (
            meta["machine"], 100 * meta["background_cpu_frac"]), file=sys.stderr)
        if meta["background_cpu_frac"] > 0.1:
            print("WARNING: the machine is busy; results will be noisy", file=sys.stderr)
        for rnd in range(a.rounds):
            prefill(servers, a)
            for tool in a.tools:
                for proto in a.protocols:
                    if tool == "memaslap" and proto == "text":
                        continue  # its keys carry control bytes; see the module docstring
                    for wl in a.workloads:
                        order = servers if rnd % 2 == 0 else servers[::-1]
                        for s in order:
                            run_one(a, tool, proto, wl, s, rnd, mcgen, memaslap, cfgdir, raw,
                                    meta, runs)
    finally:
        rcs = {s.label: s.stop() for s in servers}
        raw.close()
        shutil.rmtree(cfgdir, ignore_errors=True)
    meta["server_exit_codes"] = rcs
    if a.items > 0:
        for which, label in ((which_a, label_a), ("memcached", "memcached")):
            print("memory phase: %s, %d items" % (label, a.items), file=sys.stderr)
            try:
                memory.append(memory_per_item(a, which, label, log))
            except (RuntimeError, OSError) as e:
                meta["errors"].append("memory %s: %r" % (label, e))
    md = render(meta, [r for r in runs if "rps" in r], memory)
    with open(base + ".json", "w") as f:
        json.dump({"meta": meta, "runs": runs, "memory": memory}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    print(md)
    print("\nwrote %s.{md,json,raw}" % os.path.relpath(base, os.getcwd()), file=sys.stderr)
    return 1 if meta["errors"] else 0


def run_one(a, tool, proto, wl, s, rnd, mcgen, memaslap, cfgdir, raw, meta, runs):
    """One measured run of one tool, protocol and workload against one server."""
    section = WORKLOADS[wl][3]
    if tool == "mcgen":
        cmds = mcgen_commands(mcgen, s.port, a, wl, proto, rnd + 1)
        label = " && ".join(shlex.join(c) for c in cmds)

        def runner():
            return run_mcgen(cmds, a.run_timeout)
    else:
        set_prop, get_prop, _, _ = WORKLOADS[wl]
        cfg = os.path.join(cfgdir, wl + ".cfg")
        memaslap_config(cfg, set_prop, get_prop, a.value_bytes, a.key_bytes)
        cmd = memaslap_command(memaslap, s.port, a, wl, proto, cfg)
        label = shlex.join(cmd)

        def runner():
            return run_memaslap(cmd, section, a.run_timeout)
    print("round %d %s %s %s %s" % (rnd + 1, tool, proto, wl, s.label), file=sys.stderr)
    try:
        r = measured_run(s, label, runner, raw)
    except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as e:
        r = {"error": repr(e)}
        meta["errors"].append("%s %s %s %s: %r" % (s.label, tool, proto, wl, e))
    r.update(round=rnd + 1, tool=tool, protocol=proto, workload=wl, server=s.label,
             command=label)
    runs.append(r)
    print("  %s ops/s, p50 %s p99 %s p99.9 %s µs, cpu %ss" % (
        fmt_num(r.get("rps")), us(r.get("p50_us"), tool), us(r.get("p99_us"), tool),
        us(r.get("p999_us"), tool), r.get("server_cpu_s")), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
