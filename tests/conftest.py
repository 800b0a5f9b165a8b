"""Shared fixtures for larder's cross-language integration tests.

The tests drive the real `larder` binary over loopback with real clients. The same tests run
against a real `redis-server` with `--target=redis`; that mode is how the expectations in this
suite are checked: every test not marked `larder_only` must pass against Redis 7.0.

Fixtures:
  server        a shared server per test module, flushed before each test.
  start_server  a factory for a dedicated server with particular flags or a config file.
  r             a redis-py client on the shared server, once per protocol (RESP2 and RESP3).
  raw           a raw socket (`RawConn`) to the shared server.
  rawp          a raw socket after HELLO 2 / HELLO 3, once per protocol.

Environment:
  LARDER_BIN    the larder binary (default: target/release/larder under the repository root).
  REDIS_SERVER  the redis-server binary for --target=redis (default: redis-server on PATH).
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
import redis

REPO_ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
LOG_TAIL_BYTES = 8000


# ---------------------------------------------------------------------------------------------
# pytest options, markers and the failure-report hook
# ---------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--target",
        choices=("larder", "redis"),
        default=os.environ.get("LARDER_TEST_TARGET", "larder"),
        help="server under test: larder (default) or a real redis-server, to check expectations",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "larder_only: larder-specific behaviour; deselected (not skipped) under --target=redis",
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if config.getoption("--target") == "larder" and not larder_bin().exists():
        # One clear message instead of every test failing the same way.
        raise pytest.UsageError(
            f"larder binary not found at {larder_bin()}: build it with "
            "`cargo build --release -p larder-server` or set LARDER_BIN")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--target") != "redis":
        return
    kept, deselected = [], []
    for item in items:
        (deselected if item.get_closest_marker("larder_only") else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Attach the log of every server a failed test touched to its report."""
    outcome = yield
    rep = outcome.get_result()
    if not rep.failed:
        return
    seen: set[int] = set()
    for value in getattr(item, "funcargs", {}).values():
        servers = []
        if isinstance(value, Server):
            servers = [value]
        elif isinstance(value, ServerFactory):
            servers = value.servers
        for srv in servers:
            if id(srv) in seen:
                continue
            seen.add(id(srv))
            rep.sections.append((f"server log: {srv.describe()}", srv.log_tail()))


# ---------------------------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------------------------


def free_port() -> int:
    """A port that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_with_http(factory, *args: str) -> "Server":
    """A larder with its HTTP and memcached doors on free ports: `.http_port`, `.http_url`,
    `.mc_port`. Tries other ports if one was taken meanwhile."""
    last = None
    for _ in range(3):
        http_port, mc_port = free_port(), free_port()
        try:
            srv = factory("--http-port", str(http_port), "--memcached-port", str(mc_port),
                          *args)
        except pytest.fail.Exception as e:
            last = e
            continue
        srv.http_port, srv.mc_port = http_port, mc_port
        srv.http_url = f"http://127.0.0.1:{http_port}"
        return srv
    raise last  # type: ignore[misc]


def larder_bin() -> Path:
    path = Path(os.environ.get("LARDER_BIN", REPO_ROOT / "target" / "release" / "larder"))
    if not path.is_absolute():
        path = REPO_ROOT / path
    return path


class ServerStartError(Exception):
    pass


class PortTaken(ServerStartError):
    pass


def _listens(pid: int, port: int) -> bool:
    """Whether process `pid` holds a socket listening on TCP `port` (from /proc; true where
    /proc cannot tell)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    # local_address is ADDR:PORT in hex; state 0A is LISTEN.
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(fields[9])
        except OSError:
            return True
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return True
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            return True
    return False


class Server:
    """One server process on 127.0.0.1, larder or redis-server, with its log in a file."""

    def __init__(self, target: str, args: list[str], config_text: str | None,
                 redis_args: list[str], workdir: Path) -> None:
        self.target = target
        self.user_args = list(args)
        self.config_text = config_text
        self.redis_args = list(redis_args)
        self.workdir = workdir
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / "server.log"
        self.config_path: Path | None = None
        self.stopped = False
        self.password: str | None = _flag_value(args, "--requirepass")
        self._clients: list[Any] = []

    # -- life cycle ---------------------------------------------------------------------------

    def argv(self) -> list[str]:
        """The command line for this target (larder flags mapped for redis-server)."""
        if self.target == "larder":
            binary = larder_bin()
            if not binary.exists():
                pytest.fail(
                    f"larder binary not found at {binary}: build it with "
                    "`cargo build --release -p larder-server` or set LARDER_BIN",
                    pytrace=False,
                )
            argv = [str(binary)]
            if self.config_path:
                argv += ["--config", str(self.config_path)]
            argv += ["--port", str(self.port), "--bind", "127.0.0.1", "--memcached-port", "0",
                     "--http-port", "0"]
            return argv + self.user_args
        binary = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
        if not binary:
            pytest.fail("redis-server not found: apt-get install -y redis-server redis-tools",
                        pytrace=False)
        argv = [binary]
        if self.config_path:
            argv.append(str(self.config_path))  # redis-server takes its config file first
        # A redis-server master waits repl-diskless-sync-delay (5 s) for more replicas before
        # a full resync; the tests' replicas come one at a time.
        argv += ["--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(self.workdir),
                 "--repl-diskless-sync-delay", "0"]
        argv += _map_args_for_redis(self.user_args) + self.redis_args
        return argv

    def start(self) -> "Server":
        if self.config_text is not None:
            self.config_path = self.workdir / "larder.conf"
            self.config_path.write_text(self.config_text)
        last_error = ""
        for _attempt in range(3):
            self.port = free_port()
            try:
                self._spawn_and_wait()
                return self
            except ServerStartError as e:
                last_error = str(e)
                # Another process may have taken the port between free_port() and bind()
                # (tests run in parallel workers, each starting servers).
                if not isinstance(e, PortTaken) and "in use" not in self.log_tail().lower():
                    break
        pytest.fail(f"{self.describe()} did not start: {last_error}\n--- log ---\n"
                    f"{self.log_tail()}", pytrace=False)

    def _spawn_and_wait(self) -> None:
        self.stopped = False
        with open(self.log_path, "ab") as log:
            log.write(f"### {' '.join(self.argv())}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, cwd=self.workdir)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                raise ServerStartError(f"exited with code {code} during startup")
            if self._answers_ping():
                if not _listens(self.proc.pid, self.port):
                    # What answered is another worker's server, started on the same port
                    # a moment earlier; ours will fail to bind.
                    self.kill()
                    raise PortTaken(f"port {self.port} is another process's")
                return
            time.sleep(0.02)
        self.kill()
        raise ServerStartError(f"no PING reply within {STARTUP_TIMEOUT_S:.0f}s")

    def _answers_ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                data = s.recv(64)
                # +PONG, or -NOAUTH when requirepass is set: either way it is serving.
                # -LOADING: it is still reading its data directory (a client that has not
                # authenticated meets -NOAUTH first, so authenticate to see it).
                if data.startswith(b"-NOAUTH") and self.password is not None:
                    pw = self.password.encode()
                    s.sendall(b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n*1\r\n$4\r\nPING\r\n"
                              % (len(pw), pw))
                    data = b""
                    while data.count(b"\r\n") < 2:
                        chunk = s.recv(64)
                        if not chunk:
                            return False
                        data += chunk
                    data = data.split(b"\r\n", 1)[1]
                return data[:1] in (b"+", b"-") and not data.startswith(b"-LOADING")
        except OSError:
            return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM, then assert a clean exit (code 0) within `timeout` seconds."""
        self.close_clients()
        assert self.proc is not None
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.describe()} did not exit within {timeout}s of SIGTERM",
                        pytrace=False)
        assert code == 0, f"{self.describe()} exited with code {code} after SIGTERM"
        return code

    def wait_exit(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """Wait for the process to exit on its own (SHUTDOWN); returns the exit code."""
        assert self.proc is not None
        self.stopped = True
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.describe()} did not exit within {timeout}s", pytrace=False)

    def kill(self) -> None:
        self.close_clients()
        if self.proc is not None and self.proc.poll() is None:
            self.stopped = True
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT_S)

    # -- clients ------------------------------------------------------------------------------

    def client(self, protocol: int = 3, **kw: Any) -> redis.Redis:
        """A redis-py client; bytes replies unless decode_responses=True is passed."""
        kw.setdefault("decode_responses", False)
        kw.setdefault("socket_timeout", 10)
        kw.setdefault("socket_connect_timeout", 5)
        if self.password is not None:
            kw.setdefault("password", self.password)
        c = redis.Redis(host="127.0.0.1", port=self.port, protocol=protocol, **kw)
        self._clients.append(c)
        return c

    def raw(self, timeout: float = 5.0) -> "RawConn":
        conn = RawConn(self.port, timeout=timeout)
        self._clients.append(conn)
        return conn

    def close_clients(self) -> None:
        for c in self._clients:
            try:
                c.close()
            except Exception:
                pass
        self._clients.clear()

    def admin(self) -> "RawConn":
        """A raw connection, authenticated if the server has a password."""
        conn = RawConn(self.port, timeout=5.0)
        if self.password is not None:
            conn.call("AUTH", self.password)
        return conn

    # -- diagnostics --------------------------------------------------------------------------

    def describe(self) -> str:
        return f"{self.target} on port {self.port} ({self.workdir})"

    def log_tail(self) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return "(no log)"
        return data[-LOG_TAIL_BYTES:].decode(errors="replace")

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def _flag_value(args: list[str], flag: str) -> str | None:
    for i, a in enumerate(args[:-1]):
        if a == flag:
            return args[i + 1]
    return None


def _map_args_for_redis(args: list[str]) -> list[str]:
    """larder flags to redis-server flags; flags redis has no equivalent for are dropped."""
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--threads", "--memcached-port", "--http-port"):
            i += 2
            continue
        out.append(a)
        i += 1
    return out


class ServerFactory:
    """Starts dedicated servers for one test and stops (kills) them at teardown."""

    def __init__(self, target: str, tmp_root: Path) -> None:
        self.target = target
        self.tmp_root = tmp_root
        self.servers: list[Server] = []

    def __call__(self, *args: str, config_text: str | None = None,
                 redis_args: tuple[str, ...] | list[str] = ()) -> Server:
        """Start a server with extra flags (larder spelling) and optionally a config file.

        `redis_args` are appended only under --target=redis, to give the reference server
        settings it needs to meet a bound that larder must meet with its defaults.
        """
        workdir = Path(tempfile.mkdtemp(prefix="srv-", dir=self.tmp_root))
        srv = Server(self.target, list(args), config_text, list(redis_args), workdir)
        self.servers.append(srv)
        return srv.start()

    def spawn(self, *args: str, config_text: str | None = None) -> tuple[int, str]:
        """Run the server expecting it to fail at startup; returns (exit code, output)."""
        workdir = Path(tempfile.mkdtemp(prefix="srv-", dir=self.tmp_root))
        srv = Server(self.target, list(args), config_text, [], workdir)
        if config_text is not None:
            srv.config_path = workdir / "larder.conf"
            srv.config_path.write_text(config_text)
        srv.port = free_port()
        try:
            proc = subprocess.run(srv.argv(), capture_output=True, timeout=STARTUP_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL, cwd=workdir)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{srv.describe()} kept running; a startup error was expected",
                        pytrace=False)
        return proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace")

    def shutdown_all(self) -> None:
        for srv in self.servers:
            srv.kill()


@pytest.fixture(scope="session")
def target(pytestconfig: pytest.Config) -> str:
    return pytestconfig.getoption("--target")


@pytest.fixture(scope="session")
def is_redis(target: str) -> bool:
    return target == "redis"


@pytest.fixture
def start_server(target: str, tmp_path: Path) -> Iterator[ServerFactory]:
    factory = ServerFactory(target, tmp_path)
    yield factory
    factory.shutdown_all()


@pytest.fixture
def redis_factory(tmp_path: Path) -> Iterator[ServerFactory]:
    """Starts stock redis-server processes beside the larder under test (replicas of it,
    masters for it), whatever the target; each is stopped at the end of the test."""
    (tmp_path / "redis").mkdir()
    factory = ServerFactory("redis", tmp_path / "redis")
    yield factory
    factory.shutdown_all()


@pytest.fixture(scope="module")
def _module_server(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    holder: dict[str, Server | None] = {"server": None}
    factory = ServerFactory(target, tmp_path_factory.mktemp("shared"))
    holder["factory"] = factory  # type: ignore[assignment]
    yield holder
    srv = holder["server"]
    if srv is not None and srv.alive():
        srv.stop()
    factory.shutdown_all()


@pytest.fixture
def server(_module_server: dict) -> Iterator[Server]:
    """The module's shared server, started on first use (or again after a test stopped it),
    flushed before each test; clients opened by the test are closed after it."""
    srv: Server | None = _module_server["server"]
    if srv is None or not srv.alive():
        srv = _module_server["factory"]()
        _module_server["server"] = srv
    with srv.admin() as conn:
        assert conn.call("FLUSHALL") == "OK"
    yield srv
    srv.close_clients()
    if not srv.stopped and not srv.alive():
        pytest.fail(f"{srv.describe()} died during the test (exit code {srv.proc.returncode})"
                    f"\n--- log ---\n{srv.log_tail()}", pytrace=False)


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request: pytest.FixtureRequest) -> int:
    return request.param


@pytest.fixture
def r(server: Server, protocol: int) -> redis.Redis:
    """A redis-py client on the shared server, once with RESP2 and once with RESP3."""
    return server.client(protocol=protocol)


@pytest.fixture
def r2(server: Server) -> redis.Redis:
    return server.client(protocol=2)


@pytest.fixture
def r3(server: Server) -> redis.Redis:
    return server.client(protocol=3)


@pytest.fixture
def raw(server: Server) -> "RawConn":
    return server.raw()


@pytest.fixture
def rawp(server: Server, protocol: int) -> "RawConn":
    """A raw connection switched to RESP2 or RESP3 with HELLO, once per protocol."""
    conn = server.raw()
    conn.call("HELLO", str(protocol))
    return conn


# ---------------------------------------------------------------------------------------------
# Raw RESP connection
# ---------------------------------------------------------------------------------------------


class Simple(str):
    """A RESP simple string (`+OK`)."""

    def __repr__(self) -> str:
        return f"Simple({str.__repr__(self)})"


class Err(str):
    """A RESP error reply (`-ERR ...` or a RESP3 blob error), returned rather than raised."""

    def __repr__(self) -> str:
        return f"Err({str.__repr__(self)})"


class Push(list):
    """A RESP3 push frame (`>`)."""


@dataclass
class Frame:
    """One RESP frame exactly as it came: `kind` is the type byte as a str ("+", "$", "%",
    "_", ...); `value` holds nested Frames for aggregates ("%" keeps a list of (k, v) pairs)."""

    kind: str
    value: Any
    attributes: Any = None

    def py(self) -> Any:
        k, v = self.kind, self.value
        if k == "+":
            return Simple(v)
        if k in ("-", "!"):
            return Err(v)
        if k in ("*", "~", ">"):
            if v is None:
                return None
            items = [f.py() for f in v]
            if k == "~":
                try:
                    return set(items)
                except TypeError:
                    return items
            return Push(items) if k == ">" else items
        if k == "%":
            return {_hashable(a.py()): b.py() for a, b in v}
        return v


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


class ConnectionClosed(Exception):
    pass


class RawConn:
    """A plain TCP connection with a small RESP2/RESP3 parser, for tests that need bytes
    exactly: protocol errors, inline commands, pipelining, RESP3 types."""

    def __init__(self, port: int, timeout: float = 5.0, host: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buf = bytearray()
        self.eof = False

    def __enter__(self) -> "RawConn":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    # -- writing ------------------------------------------------------------------------------

    @staticmethod
    def encode(*args: Any) -> bytes:
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif isinstance(a, (int, float)):
                a = str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(parts)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_command(self, *args: Any) -> None:
        self.send(self.encode(*args))

    def call(self, *args: Any) -> Any:
        """Send one command as a multibulk and return its reply as plain Python values."""
        self.send_command(*args)
        return self.read_reply()

    def call_frame(self, *args: Any) -> Frame:
        self.send_command(*args)
        return self.read_frame()

    # -- reading ------------------------------------------------------------------------------

    def _fill(self, timeout: float | None = None) -> bool:
        """Read more bytes into the buffer; False on EOF."""
        if self.eof:
            return False
        self.sock.settimeout(self.timeout if timeout is None else timeout)
        try:
            chunk = self.sock.recv(1 << 16)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def recv_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            if not self._fill():
                raise ConnectionClosed(f"closed after {len(self.buf)} of {n} bytes: "
                                       f"{bytes(self.buf[:200])!r}")
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def read_until_idle(self, idle: float = 0.3, total: float = 5.0) -> bytes:
        """Everything that arrives until nothing comes for `idle` seconds, EOF, or `total`."""
        deadline = time.monotonic() + total
        while time.monotonic() < deadline:
            try:
                if not self._fill(timeout=idle):
                    break
            except socket.timeout:
                break
        out = bytes(self.buf)
        self.buf.clear()
        return out

    def is_closed(self, timeout: float = 2.0) -> bool:
        """True if the server closes the connection within `timeout` (data before EOF is
        kept in the buffer)."""
        deadline = time.monotonic() + timeout
        while not self.eof:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                self._fill(timeout=left)
            except socket.timeout:
                return False
            except OSError:
                self.eof = True
        return True

    def _line(self) -> bytes:
        while True:
            idx = self.buf.find(b"\r\n")
            if idx >= 0:
                line = bytes(self.buf[:idx])
                del self.buf[: idx + 2]
                return line
            if not self._fill():
                if not self.buf:
                    raise ConnectionClosed("closed between lines")
                raise ConnectionClosed(f"closed mid-line: {bytes(self.buf[:200])!r}")

    def read_frame(self) -> Frame:
        line = self._line()
        if not line:
            raise ValueError("empty RESP line")
        kind, rest = chr(line[0]), line[1:]
        if kind == "+":
            return Frame(kind, rest.decode(errors="replace"))
        if kind == "-":
            return Frame(kind, rest.decode(errors="replace"))
        if kind == ":":
            return Frame(kind, int(rest))
        if kind == "(":
            return Frame(kind, int(rest))
        if kind == ",":
            return Frame(kind, _parse_double(rest))
        if kind == "#":
            if rest not in (b"t", b"f"):
                raise ValueError(f"bad boolean {line!r}")
            return Frame(kind, rest == b"t")
        if kind == "_":
            if rest:
                raise ValueError(f"bad null {line!r}")
            return Frame(kind, None)
        if kind in ("$", "!", "="):
            n = int(rest)
            if n < 0:
                return Frame(kind, None)
            body = self.recv_exact(n + 2)
            if body[-2:] != b"\r\n":
                raise ValueError(f"bulk not terminated by CRLF: {body[-10:]!r}")
            data = body[:-2]
            if kind == "!":
                return Frame(kind, data.decode(errors="replace"))
            if kind == "=":
                if data[3:4] != b":":
                    raise ValueError(f"bad verbatim string {data[:10]!r}")
                return Frame(kind, data[4:], attributes={"format": data[:3].decode()})
            return Frame(kind, data)
        if kind in ("*", "~", ">"):
            n = int(rest)
            if n < 0:
                return Frame(kind, None)
            return Frame(kind, [self.read_frame() for _ in range(n)])
        if kind in ("%", "|"):
            n = int(rest)
            pairs = [(self.read_frame(), self.read_frame()) for _ in range(n)]
            if kind == "|":
                inner = self.read_frame()
                inner.attributes = pairs
                return inner
            return Frame(kind, pairs)
        raise ValueError(f"unknown RESP type byte in line {line[:100]!r}")

    def read_reply(self) -> Any:
        return self.read_frame().py()

    def hello3(self) -> dict:
        """Switch this connection to RESP3; returns HELLO's map."""
        rep = self.call("HELLO", "3")
        assert isinstance(rep, dict), rep
        return rep


def _parse_double(rest: bytes) -> float:
    s = rest.decode()
    if s in ("inf", "+inf"):
        return math.inf
    if s == "-inf":
        return -math.inf
    if s.lower() == "nan":
        return math.nan
    return float(s)


# ---------------------------------------------------------------------------------------------
# Small helpers shared by test modules
# ---------------------------------------------------------------------------------------------


def wait_until(predicate: Any, timeout: float = 5.0, interval: float = 0.01) -> bool:
    """Poll `predicate` until it is truthy or `timeout` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def parse_info(text: bytes | str) -> dict[str, dict[str, str]]:
    """INFO text -> {section: {field: value}} (section names lower-case)."""
    if isinstance(text, bytes):
        text = text.decode()
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in text.split("\r\n"):
        if line.startswith("# "):
            current = sections.setdefault(line[2:].strip().lower(), {})
        elif line and ":" in line:
            k, v = line.split(":", 1)
            current[k] = v
    return sections


def make_non_string(client: Any, key: str | bytes) -> bytes:
    """Create `key` holding a non-string value (a list, else a set or a hash) and return its
    TYPE name. Fails when the server has none of those types: WRONGTYPE must be provoked for
    real, never assumed."""
    attempts = (("RPUSH", "list"), ("SADD", "set"), ("HSET", "hash"))
    for cmd, type_name in attempts:
        args = [cmd, key, "f", "v"] if cmd == "HSET" else [cmd, key, "x"]
        if isinstance(client, RawConn):
            reply = client.call(*args)
            failed = isinstance(reply, Err) and "unknown command" in reply
        else:
            try:
                client.execute_command(*args)
                failed = False
            except redis.ResponseError as e:
                failed = "unknown command" in str(e)
        if not failed:
            return type_name.encode()
    pytest.fail("the server has no non-string type (RPUSH/SADD/HSET) to provoke WRONGTYPE")
