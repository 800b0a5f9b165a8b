"""Fixtures and raw clients shared by the memcached door's tests (no tests in this file).

The door is larder's own: the memcached test modules are marked `larder_only`, so they are
deselected under `--target=redis`. Their expectations come from memcached 1.6.18 (Debian's),
the reference the codec was checked against byte for byte (`crates/larder-memcache`).

Fixtures:
  mcd        a larder with the memcached door on a free port (`.mc_port`), two worker threads,
             shared by a test module.
  mc_server  `mcd`, flushed (RESP FLUSHALL) before each test.
  mc         a `McText` raw text connection to the door.
  mcb        a `McBin` raw binary connection to the door.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import time
from dataclasses import dataclass
from typing import Iterator

import pytest

from conftest import Server, ServerFactory, free_port

HOST = "127.0.0.1"


def start_memcached(*args: str) -> tuple[subprocess.Popen, int]:
    """A real memcached 1.6.18 (the reference) on a free port with `-t 2` and `args`; waits
    until it accepts connections."""
    path = shutil.which("memcached")
    assert path, "memcached is installed with the suite"
    port = free_port()
    argv = [path, "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-t", "2", *args]
    if os.geteuid() == 0:
        argv += ["-u", "nobody"]  # memcached refuses to run as root without -u
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 5
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, port
        except OSError:
            time.sleep(0.02)
    proc.kill()
    raise AssertionError("memcached did not start")


def stop_memcached(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(5)


@pytest.fixture(scope="module")
def real_memcached() -> Iterator[int]:
    """A memcached 1.6.18 shared by a module's tests."""
    proc, port = start_memcached()
    yield port
    stop_memcached(proc)


def start_with_door(factory, *args: str) -> Server:
    """A larder from the `start_server` factory (or a ServerFactory) with the memcached door
    on a free port, remembered as `.mc_port`."""
    last = None
    for _ in range(3):
        port = free_port()
        try:
            srv = factory("--memcached-port", str(port), *args)
        except pytest.fail.Exception as e:  # the port was taken meanwhile: try another
            last = e
            continue
        srv.mc_port = port
        return srv
    raise last  # type: ignore[misc]


@pytest.fixture(scope="module")
def mcd(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    factory = ServerFactory(target, tmp_path_factory.mktemp("mcd"))
    srv = start_with_door(factory, "--threads", "2")
    yield srv
    factory.shutdown_all()


@pytest.fixture
def mc_server(mcd: Server) -> Iterator[Server]:
    with mcd.admin() as conn:
        assert conn.call("FLUSHALL") == "OK"
    yield mcd
    mcd.close_clients()
    assert mcd.alive(), f"server died during the test\n{mcd.log_tail()}"


@pytest.fixture
def mc(mc_server: Server) -> Iterator["McText"]:
    conn = McText(mc_server.mc_port)
    yield conn
    conn.close()


@pytest.fixture
def mcb(mc_server: Server) -> Iterator["McBin"]:
    conn = McBin(mc_server.mc_port)
    yield conn
    conn.close()


# ---------------------------------------------------------------------------------------------
# Text protocol
# ---------------------------------------------------------------------------------------------


class Closed(Exception):
    pass


class McText:
    """A raw text/meta-protocol connection: exact bytes in, exact lines out."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes | str) -> None:
        self.sock.sendall(data.encode() if isinstance(data, str) else data)

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise Closed()
        self.buf += chunk

    def line(self) -> bytes:
        """One reply line, without its \\r\\n."""
        while b"\r\n" not in self.buf:
            self._fill()
        i = self.buf.index(b"\r\n")
        line = bytes(self.buf[:i])
        del self.buf[: i + 2]
        return line

    def exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def data(self, n: int) -> bytes:
        """A data block of `n` bytes and its \\r\\n."""
        block = self.exact(n + 2)
        assert block[-2:] == b"\r\n", block
        return block[:-2]

    def call(self, line: bytes | str, data: bytes | str | None = None) -> bytes:
        """Send a command line (and a data block) and return the first reply line."""
        self.send(self.request(line, data))
        return self.line()

    @staticmethod
    def request(line: bytes | str, data: bytes | str | None = None) -> bytes:
        out = (line.encode() if isinstance(line, str) else line) + b"\r\n"
        if data is not None:
            out += (data.encode() if isinstance(data, str) else data) + b"\r\n"
        return out

    def store(self, cmd: str, key: str, value: bytes | str, flags: int = 0, exptime: int = 0,
              cas: int | None = None, noreply: bool = False) -> bytes | None:
        value = value.encode() if isinstance(value, str) else value
        line = f"{cmd} {key} {flags} {exptime} {len(value)}"
        if cas is not None:
            line += f" {cas}"
        if noreply:
            self.send(self.request(line + " noreply", value))
            return None
        return self.call(line, value)

    def values(self) -> list[tuple[bytes, int, bytes, int | None]]:
        """`VALUE` blocks up to `END`: (key, flags, data, cas or None)."""
        out = []
        while True:
            line = self.line()
            if line == b"END":
                return out
            parts = line.split(b" ")
            assert parts[0] == b"VALUE", line
            cas = int(parts[4]) if len(parts) > 4 else None
            out.append((parts[1], int(parts[2]), self.data(int(parts[3])), cas))

    def get(self, *keys: str, cmd: str = "get") -> dict[bytes, tuple[int, bytes, int | None]]:
        self.send(f"{cmd} {' '.join(keys)}\r\n")
        return {k: (f, d, c) for k, f, d, c in self.values()}

    def get_one(self, key: str) -> bytes | None:
        hit = self.get(key).get(key.encode())
        return hit[1] if hit else None

    def gets(self, key: str) -> tuple[bytes, int] | None:
        hit = self.get(key, cmd="gets").get(key.encode())
        return (hit[1], hit[2]) if hit else None  # type: ignore[return-value]

    def meta(self, line: str, data: bytes | str | None = None) -> tuple[bytes, bytes | None]:
        """A meta command: its header line, and the value when it is `VA`."""
        head = self.call(line, data)
        if head.startswith(b"VA "):
            return head, self.data(int(head.split(b" ")[1]))
        return head, None

    def stats(self, group: str = "") -> dict[str, str]:
        self.send(f"stats {group}".rstrip() + "\r\n")
        out = {}
        while True:
            line = self.line().decode()
            if line == "END":
                return out
            _, name, value = line.split(" ", 2)
            out[name] = value

    def idle(self, wait: float = 0.3) -> bytes:
        """Everything that arrives until the connection has been quiet for `wait` seconds."""
        self.sock.settimeout(wait)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                self.buf += chunk
        except socket.timeout:
            pass
        finally:
            self.sock.settimeout(5.0)
        out = bytes(self.buf)
        self.buf.clear()
        return out

    def is_closed(self, wait: float = 2.0) -> bool:
        self.sock.settimeout(wait)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True
        finally:
            self.sock.settimeout(5.0)


# ---------------------------------------------------------------------------------------------
# Binary protocol
# ---------------------------------------------------------------------------------------------

HEADER = struct.Struct(">BBHBBHIIQ")

OP = {
    "get": 0x00, "set": 0x01, "add": 0x02, "replace": 0x03, "delete": 0x04, "incr": 0x05,
    "decr": 0x06, "quit": 0x07, "flush": 0x08, "getq": 0x09, "noop": 0x0A, "version": 0x0B,
    "getk": 0x0C, "getkq": 0x0D, "append": 0x0E, "prepend": 0x0F, "stat": 0x10, "setq": 0x11,
    "addq": 0x12, "replaceq": 0x13, "deleteq": 0x14, "incrq": 0x15, "decrq": 0x16,
    "quitq": 0x17, "flushq": 0x18, "appendq": 0x19, "prependq": 0x1A, "verbosity": 0x1B,
    "touch": 0x1C, "gat": 0x1D, "gatq": 0x1E, "sasl_list": 0x20, "gatk": 0x23, "gatkq": 0x24,
}

SUCCESS, NOT_FOUND, EXISTS, TOO_LARGE, INVALID, NOT_STORED, NON_NUMERIC = 0, 1, 2, 3, 4, 5, 6
UNKNOWN_COMMAND, OUT_OF_MEMORY = 0x81, 0x82


def packet(op: str | int, key: bytes | str = b"", value: bytes | str = b"", extras: bytes = b"",
           opaque: int = 0, cas: int = 0, magic: int = 0x80) -> bytes:
    key = key.encode() if isinstance(key, str) else key
    value = value.encode() if isinstance(value, str) else value
    opcode = OP[op] if isinstance(op, str) else op
    body = len(extras) + len(key) + len(value)
    return HEADER.pack(magic, opcode, len(key), len(extras), 0, 0, body, opaque, cas) + \
        extras + key + value


def store_extras(flags: int = 0, exptime: int = 0) -> bytes:
    return struct.pack(">II", flags, exptime)


def counter_extras(delta: int, initial: int = 0, exptime: int = 0) -> bytes:
    return struct.pack(">QQI", delta, initial, exptime)


@dataclass
class Resp:
    magic: int
    opcode: int
    status: int
    opaque: int
    cas: int
    extras: bytes
    key: bytes
    value: bytes

    @property
    def flags(self) -> int:
        return struct.unpack(">I", self.extras)[0]

    @property
    def number(self) -> int:
        return struct.unpack(">Q", self.value)[0]


class McBin:
    """A raw binary-protocol connection."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Closed()
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def read(self) -> Resp:
        magic, opcode, key_len, extras_len, _dt, status, body, opaque, cas = HEADER.unpack(
            self._exact(24))
        assert magic == 0x81, hex(magic)
        data = self._exact(body)
        extras, rest = data[:extras_len], data[extras_len:]
        return Resp(magic, opcode, status, opaque, cas, extras, rest[:key_len], rest[key_len:])

    def call(self, op: str | int, key: bytes | str = b"", value: bytes | str = b"",
             extras: bytes = b"", opaque: int = 0, cas: int = 0) -> Resp:
        self.send(packet(op, key, value, extras, opaque, cas))
        return self.read()

    def set(self, key: str, value: bytes | str, flags: int = 0, exptime: int = 0, cas: int = 0,
            op: str = "set") -> Resp:
        return self.call(op, key, value, store_extras(flags, exptime), cas=cas)

    def until_noop(self) -> list[Resp]:
        """Send NOOP and collect every response up to its answer (quiet pipelines)."""
        self.send(packet("noop", opaque=0xFEED))
        out = []
        while True:
            r = self.read()
            if r.opcode == OP["noop"] and r.opaque == 0xFEED:
                return out
            out.append(r)

    def is_closed(self, wait: float = 2.0) -> bool:
        self.sock.settimeout(wait)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True
        finally:
            self.sock.settimeout(5.0)


def wait_for(pred, timeout: float = 5.0, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()
