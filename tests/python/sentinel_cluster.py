"""A master, two replicas and three redis-server --sentinel processes on 127.0.0.1, for
test_sentinel.py and bench/failover_time.py.

The master and the replicas are each larder (LARDER_BIN, or target/release/larder) or
redis-server, so the same harness measures both. Every process is started here and killed
by `Cluster.close()`; every wait has a deadline.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

import redis

REPO_ROOT = Path(__file__).resolve().parents[2]
MASTER_NAME = "mymaster"
DEADLINE_S = 20.0
# `SENTINEL DEBUG` periods for tests (stock: ping 1000, info 10000, publish 2000 ms). With a
# down-after below the ping period, a sentinel that switches to the new master may wait up
# to a ping period before it reconnects, see no PONG within down-after and fail over again
# (sentinelReconnectInstance); a returning old master is converted to a replica four
# publish periods after an INFO shows it, and slaves' INFO comes every info period. The
# ping period stays above 200 ms: a failover only picks a replica whose INFO (every second
# while the master is down) is younger than five ping periods (sentinelSelectSlave).
FAST_SENTINEL = "ping-period 300 info-period 1000 publish-period 500"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(what: str, check: Callable[[], bool], timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (redis.RedisError, OSError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def larder_bin() -> str:
    return os.environ.get("LARDER_BIN", str(REPO_ROOT / "target" / "release" / "larder"))


def redis_bin() -> str:
    return os.environ.get("REDIS_SERVER") or shutil.which("redis-server") or "redis-server"


class Proc:
    """One server process with its log in its own directory."""

    def __init__(self, name: str, argv: list[str], port: int, workdir: Path) -> None:
        self.name, self.argv, self.port, self.workdir = name, argv, port, workdir
        self.log = workdir / "server.log"
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=workdir)

    def client(self, **kw) -> redis.Redis:
        kw.setdefault("socket_timeout", 5)
        kw.setdefault("socket_connect_timeout", 2)
        return redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True, **kw)

    def answers(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited: {self.log.read_text()[-2000:]}")
        try:
            return bool(self.client(socket_timeout=1).ping())
        except (redis.RedisError, OSError):
            return False

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)


class Events:
    """Every event a sentinel publishes, with the monotonic time it arrived."""

    def __init__(self, sentinel: Proc) -> None:
        self.items: list[tuple[float, str, str]] = []
        self._lock = threading.Lock()
        self._pubsub = sentinel.client(socket_timeout=None).pubsub()
        self._pubsub.psubscribe("*")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                m = self._pubsub.get_message(timeout=0.1)
            except (redis.RedisError, OSError, ValueError):
                return
            if m and m["type"] == "pmessage":
                with self._lock:
                    self.items.append((time.monotonic(), m["channel"], m["data"]))

    def first(self, channel: str, starts: str = "", after: float = 0.0) -> float | None:
        with self._lock:
            for t, ch, data in self.items:
                if ch == channel and data.startswith(starts) and t >= after:
                    return t
        return None

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        try:
            self._pubsub.close()
        except (redis.RedisError, OSError):
            pass


class Cluster:
    """A master and two replicas (each `larder` or `redis`), three sentinels."""

    def __init__(self, root: Path, master_kind: str = "larder", replica_kind: str = "redis",
                 down_after_ms: int = 500, failover_timeout_ms: int = 3000,
                 fast_sentinels: bool = False) -> None:
        self.root = root
        self.procs: list[Proc] = []
        # The live server process on each port (a restart replaces the killed one).
        self.servers: dict[int, Proc] = {}
        self.events: list[Events] = []
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.master = self._server(master_kind, "master")
        self.replicas = [self._server(replica_kind, f"replica{i}", of=self.master)
                         for i in range(2)]
        for r in self.replicas:
            until(f"{r.name} in sync",
                  lambda r=r: r.client().info("replication")["master_link_status"] == "up")
        self.sentinels = [self._sentinel(i) for i in range(3)]
        if fast_sentinels:
            for s in self.sentinels:
                s.client().execute_command("SENTINEL", "DEBUG", *FAST_SENTINEL.split())
        self.events = [Events(s) for s in self.sentinels]

    def _dir(self, name: str) -> Path:
        d = self.root / name
        d.mkdir(parents=True, exist_ok=True)
        return d

    def _start(self, name: str, argv_of: Callable[[int, Path], list[str]]) -> Proc:
        d = self._dir(name)
        for _ in range(3):
            port = free_port()
            p = Proc(name, argv_of(port, d), port, d)
            self.procs.append(p)
            try:
                until(f"{name} answers", p.answers, timeout=10)
                return p
            except AssertionError:
                p.kill()
                if "in use" not in p.log.read_text().lower():
                    raise
        raise AssertionError(f"{name} did not start")

    def _server(self, kind: str, name: str, of: Proc | None = None) -> Proc:
        def argv(port: int, d: Path) -> list[str]:
            if kind == "larder":
                a = [larder_bin(), "--port", str(port), "--bind", "127.0.0.1",
                     "--memcached-port", "0", "--http-port", "0", "--dir", str(d)]
                if of is not None:
                    a += ["--replicaof", f"127.0.0.1 {of.port}"]
                return a
            a = [redis_bin(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(d)]
            if of is not None:
                a += ["--replicaof", "127.0.0.1", str(of.port)]
            return a
        p = self._start(name, argv)
        self.servers[p.port] = p
        return p

    def _sentinel(self, i: int) -> Proc:
        def argv(port: int, d: Path) -> list[str]:
            conf = d / "sentinel.conf"
            conf.write_text(
                f"port {port}\nbind 127.0.0.1\ndir {d}\n"
                f"sentinel monitor {MASTER_NAME} 127.0.0.1 {self.master.port} 2\n"
                f"sentinel down-after-milliseconds {MASTER_NAME} {self.down_after_ms}\n"
                f"sentinel failover-timeout {MASTER_NAME} {self.failover_timeout_ms}\n"
                f"sentinel parallel-syncs {MASTER_NAME} 2\n")
            return [redis_bin(), str(conf), "--sentinel"]
        return self._start(f"sentinel{i}", argv)

    def sentinel_addrs(self) -> list[tuple[str, int]]:
        return [("127.0.0.1", s.port) for s in self.sentinels]

    def discovered(self) -> bool:
        """Every sentinel lists both replicas and the two other sentinels."""
        for s in self.sentinels:
            c = s.client()
            reps = c.execute_command("SENTINEL", "REPLICAS", MASTER_NAME)
            sens = c.execute_command("SENTINEL", "SENTINELS", MASTER_NAME)
            if len(reps) != 2 or len(sens) != 2:
                return False
        return True

    def agreed_master(self) -> tuple[str, int] | None:
        """The master's address when the three sentinels name the same one, else None."""
        addrs = set()
        for s in self.sentinels:
            host, port = s.client().execute_command(
                "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
            addrs.add((host, int(port)))
        return addrs.pop() if len(addrs) == 1 else None

    def wait_agreed_master(self) -> tuple[str, int]:
        found: list[tuple[str, int]] = []

        def agreed() -> bool:
            addr = self.agreed_master()
            if addr is not None:
                found.append(addr)
            return addr is not None

        until("the sentinels agree on the master", agreed)
        return found[-1]

    def server_at(self, port: int) -> Proc:
        """The live server process (master or replica) listening on `port`."""
        return self.servers[port]

    def kill_master(self) -> tuple[float, tuple[str, int]]:
        """SIGKILL the master the sentinels agree on; wait until every sentinel published
        +switch-master away from it and the three agree on a new master that says it is
        one. Returns the time from the first +sdown of the killed master to the first
        +switch-master away from it, and the new master's address.

        The master is read from the sentinels, not remembered: with a low failover-timeout
        they may fail over again after the last switch this harness saw. The killed
        process stays listed among the replicas until `restart` replaces it."""
        old = self.wait_agreed_master()
        self.master = self.server_at(old[1])
        self.replicas = [p for p in self.replicas if p.port != old[1]]
        killed_at = time.monotonic()
        dead = self.master
        dead.kill()
        away = f"{MASTER_NAME} {old[0]} {old[1]} "

        def switched() -> bool:
            if not all(e.first("+switch-master", away, after=killed_at) for e in self.events):
                return False
            new = self.agreed_master()
            if new is None or new == old:
                return False
            return self.server_at(new[1]).client().info("replication")["role"] == "master"

        until("+switch-master away from the killed master, agreed by every sentinel",
              switched, timeout=DEADLINE_S * 2)
        sdown = min(t for e in self.events
                    if (t := e.first("+sdown", f"master {MASTER_NAME} {old[0]} {old[1]}",
                                     after=killed_at)) is not None)
        switched_at = min(t for e in self.events
                          if (t := e.first("+switch-master", away, after=killed_at))
                          is not None)
        new = self.agreed_master()
        assert new is not None and new != old
        self.master = self.server_at(new[1])
        self.replicas = [p for p in self.replicas if p.port != new[1]] + [dead]
        return switched_at - sdown, new

    def restart(self, p: Proc) -> Proc:
        """Start a killed process again with its arguments and port; it takes the dead
        one's place among the replicas (Sentinel makes it one)."""
        again = Proc(p.name, p.argv, p.port, p.workdir)
        self.procs.append(again)
        self.replicas = [again if r is p else r for r in self.replicas]
        self.servers[p.port] = again
        until(f"{p.name} answers again", again.answers, timeout=10)
        return again

    def close(self) -> None:
        for e in self.events:
            e.close()
        for p in reversed(self.procs):
            p.kill()
