"""A differential test of the memcached door: the same raw bytes go to a real memcached 1.6.18
(Debian's) and to larder, started with the same item size limit (`-I` and
`--memcached-item-size-max`), and the replies must be identical, byte for byte, after the
normalisations below.

Each case runs on a fresh connection of each server, at the same time on both. It ends with
a marker request (`mn` in text, a NOOP with a marker opaque in binary) whose answer says that
every reply has come; a connection the server closes instead ends the reply with `<closed>`.
Keys are unique per case (`{k}`; `{kN}` is a unique key of exactly N bytes), so the cases do
not see each other's items.

Normalised, because they legitimately differ:
- CAS values (`VALUE` lines of gets/gats, meta `c` flags, `me`'s `cas=`, binary headers): each
  server numbers its writes itself;
- `me`'s `cls=`, `size=` and `la=`: slab classes and item sizes are memcached's allocator's,
  and the last access is a clock reading.

Cases where larder differs on purpose are in test_memcached_limits.py, with the reason.
"""

from __future__ import annotations

import re
import socket
import struct
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

import pytest

from conftest import ServerFactory
from test_memcached_support import HEADER, packet, start_memcached, start_with_door

pytestmark = pytest.mark.larder_only

HOST = "127.0.0.1"
MARKER_OPAQUE = 0x5E471EE1
CASE_TIMEOUT_S = 2.0


class Pair:
    """A real memcached and a larder with the same item size limit."""

    def __init__(self, memcached: int, larder: int) -> None:
        self.memcached = memcached
        self.larder = larder
        self.pool = ThreadPoolExecutor(2)
        self.serial = 0

    def key(self, n: int | None = None) -> bytes:
        """A key no other case uses; of exactly `n` bytes when given."""
        self.serial += 1
        k = f"d{self.serial}_".encode()
        return k if n is None else (k + b"x" * n)[:n]

    def both(self, run: Callable[[int], bytes]) -> tuple[bytes, bytes]:
        a = self.pool.submit(run, self.memcached)
        b = self.pool.submit(run, self.larder)
        return a.result(), b.result()


def pair_fixture(memcached_args: list[str], larder_args: list[str]):
    @pytest.fixture(scope="module")
    def fixture(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
        proc, port = start_memcached(*memcached_args)
        factory = ServerFactory(target, tmp_path_factory.mktemp("mc-diff"))
        srv = start_with_door(factory, "--threads", "2", *larder_args)
        pair = Pair(port, srv.mc_port)
        yield pair
        pair.pool.shutdown()
        factory.shutdown_all()
        proc.terminate()
        proc.wait(5)

    return fixture


# memcached refuses -I below 1024, and a -I under 512 KiB needs a smaller slab chunk.
pair_1m = pair_fixture(["-I", "1m"], ["--memcached-item-size-max", "1048576"])
pair_1k = pair_fixture(["-I", "1024", "-o", "slab_chunk_max=512"],
                       ["--memcached-item-size-max", "1024"])


# ---------------------------------------------------------------------------------------------
# Running one case
# ---------------------------------------------------------------------------------------------


def _connect(port: int) -> socket.socket:
    s = socket.create_connection((HOST, port), timeout=CASE_TIMEOUT_S)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _recv(s: socket.socket, buf: bytearray) -> bool:
    """Reads more into `buf`; False once the server closed the connection."""
    try:
        chunk = s.recv(65536)
    except ConnectionResetError:
        return False
    except socket.timeout:
        buf += b"<timeout>"
        return False
    buf += chunk
    return bool(chunk)


def text_exchange(port: int, payload: bytes) -> bytes:
    """Sends `payload` then `mn`; the replies up to the marker's `MN` (a payload holding `mn`
    of its own waits for its MN too), or up to the close."""
    want = payload.count(b"mn\r\n") + 1
    s = _connect(port)
    try:
        s.sendall(payload + b"mn\r\n")
        buf = bytearray()
        while not (buf.endswith(b"MN\r\n") and buf.count(b"MN\r\n") >= want):
            if not _recv(s, buf):
                return bytes(buf) + b"<closed>"
        return bytes(buf[: -len(b"MN\r\n")])
    finally:
        s.close()


def binary_exchange(port: int, payload: bytes) -> bytes:
    """Sends `payload` then a marker NOOP; the response packets up to the marker's, or up
    to the close."""
    s = _connect(port)
    try:
        s.sendall(payload + packet("noop", opaque=MARKER_OPAQUE))
        buf = bytearray()
        out = bytearray()
        while True:
            while len(buf) < HEADER.size:
                if not _recv(s, buf):
                    return bytes(out + buf) + b"<closed>"
            body = struct.unpack(">I", buf[8:12])[0]
            while len(buf) < HEADER.size + body:
                if not _recv(s, buf):
                    return bytes(out + buf) + b"<closed>"
            pkt = bytes(buf[: HEADER.size + body])
            del buf[: HEADER.size + body]
            if pkt[1] == 0x0A and struct.unpack(">I", pkt[12:16])[0] == MARKER_OPAQUE:
                return bytes(out)
            out += pkt
    finally:
        s.close()


CAS_TEXT = [
    (re.compile(rb"^(VALUE \S+ \d+ \d+) \d+\r$", re.M), rb"\1 <cas>\r"),
    (re.compile(rb"^((?:VA|HD|EN|NF|NS|EX|OK) .*?)\bc\d+", re.M), rb"\1c<cas>"),
    (re.compile(rb" cas=\d+"), b" cas=<cas>"),
    (re.compile(rb" cls=\d+"), b" cls=<cls>"),
    (re.compile(rb" size=\d+"), b" size=<size>"),
    (re.compile(rb" la=\d+"), b" la=<la>"),
]


def normalise_text(reply: bytes) -> bytes:
    for pattern, repl in CAS_TEXT:
        reply = pattern.sub(repl, reply)
    return reply


def normalise_binary(reply: bytes) -> bytes:
    """Blanks the CAS field of every response packet; keeps a trailing `<closed>`."""
    out = bytearray()
    rest = reply
    while len(rest) >= HEADER.size and rest[0] == 0x81:
        body = struct.unpack(">I", rest[8:12])[0]
        pkt = bytearray(rest[: HEADER.size + body])
        if any(pkt[16:24]):
            pkt[16:24] = b"CAS=====" if len(pkt) >= 24 else pkt[16:24]
        out += pkt
        rest = rest[HEADER.size + body:]
    return bytes(out + rest)


def expand(pair: Pair, template: bytes) -> bytes:
    """Replaces `{k}` with a fresh key (the same one throughout the case) and each `{kN}`
    with a fresh key of N bytes."""
    key = pair.key()
    out = template.replace(b"{k}", key)
    for n in sorted({int(m) for m in re.findall(rb"\{k(\d+)\}", out)}):
        out = out.replace(b"{k%d}" % n, pair.key(n))
    return out


def check_text(pair: Pair, template: bytes) -> bytes:
    payload = expand(pair, template)
    mc, ld = pair.both(lambda port: text_exchange(port, payload))
    assert normalise_text(ld) == normalise_text(mc), f"request {payload[:300]!r}"
    return mc


def check_binary(pair: Pair, build: Callable[[bytes], bytes]) -> bytes:
    payload = build(pair.key())
    mc, ld = pair.both(lambda port: binary_exchange(port, payload))
    assert normalise_binary(ld) == normalise_binary(mc), f"request {payload[:300]!r}"
    return mc


# ---------------------------------------------------------------------------------------------
# Text protocol: classic commands
# ---------------------------------------------------------------------------------------------

SET = b"set {k} 5 0 3\r\nabc\r\n"

TEXT_CASES = [
    # get family
    b"get {k}\r\n",
    SET + b"get {k}\r\n",
    SET + b"gets {k}\r\n",
    SET + b"get {k} {k} nokey{k}\r\n",
    b"get\r\n",
    b"gets\r\n",
    b"get {k250}\r\n",
    b"get {k251}\r\n",
    b"get a {k251} b\r\n",
    b"bget {k}\r\n",
    SET + b"gat 100 {k}\r\n",
    SET + b"gats 0 {k}\r\n",
    SET + b"gat -1 {k}\r\nget {k}\r\n",
    b"gat 10\r\n",
    b"gat\r\n",
    b"gat abc {k}\r\n",
    b"gat 1x {k}\r\n",
    b"gats 99999999999 {k}\r\n",
    b"gat 10 {k251}\r\n",
    # set family
    b"set {k} 0 0 1\r\na\r\n",
    b"set {k} 0 0 0\r\n\r\nget {k}\r\n",
    b"set {k} 0 0 1 noreply\r\na\r\nget {k}\r\n",
    b"set {k} 4294967295 0 1\r\na\r\nget {k}\r\n",
    b"set {k} 4294967296 0 1\r\na\r\n",
    b"set {k} -1 0 1\r\na\r\n",
    b"set {k} abc 0 1\r\na\r\n",
    b"set {k} 0x10 0 1\r\na\r\n",
    b"set {k} 0 abc 1\r\na\r\n",
    b"set {k} 0 -1 1\r\na\r\nget {k}\r\n",
    b"set {k} 0 99999999999 1\r\na\r\n",
    b"set {k} 0 0 abc\r\na\r\n",
    b"set {k} 0 0 -1\r\n",
    b"set {k} 0 0 2147483647\r\n",
    b"set {k} 0 0 1x\r\na\r\n",
    b"set {k} 0 0 +1\r\na\r\n",
    b"set {k} 0 0 01\r\na\r\n",
    b"set {k} 0 0\r\n",
    b"set {k} 0\r\n",
    b"set {k}\r\n",
    b"set\r\n",
    b"set {k} 0 0 1 noreply extra\r\na\r\n",
    b"set {k} abc 0 1 noreply\r\na\r\n",
    b"set {k250} 0 0 1\r\na\r\nget {k250}\r\n",
    b"set {k251} 0 0 1\r\na\r\n",
    b"set {k} 0 0 1\r\nab\r\n",
    b"set {k} 0 0 3\r\na\r\n\r\n",
    b"set {k} 0 0 1\r\na\n",
    b"set {k} 0 0 1\na\r\nget {k}\n",
    b"  set {k} 0 0 1\r\na\r\n",
    b"set  {k}  0  0  1\r\na\r\n",
    b"add {k} 0 0 1\r\na\r\n",
    SET + b"add {k} 0 0 1\r\na\r\n",
    b"replace {k} 0 0 1\r\na\r\n",
    SET + b"replace {k} 7 0 1\r\nz\r\nget {k}\r\n",
    b"append {k} 0 0 1\r\na\r\n",
    SET + b"append {k} 9 0 2\r\nde\r\nget {k}\r\n",
    SET + b"prepend {k} 9 0 2\r\nde\r\nget {k}\r\n",
    SET + b"append {k} x 0 2\r\nde\r\n",
    b"cas {k} 0 0 1 1\r\na\r\n",
    SET + b"cas {k} 0 0 1 999999\r\na\r\n",
    b"cas {k} 0 0 1 abc\r\na\r\n",
    b"cas {k} 0 0 1 -1\r\na\r\n",
    b"cas {k} 0 0 1\r\na\r\n",
    b"cas {k} 0 0 1 1 noreply\r\na\r\n",
    b"cas {k} 0 0 1 1 noreply x\r\na\r\n",
    # delete
    b"delete {k}\r\n",
    SET + b"delete {k}\r\nget {k}\r\n",
    SET + b"delete {k} 0\r\n",
    SET + b"delete {k} 1\r\n",
    SET + b"delete {k} noreply\r\nget {k}\r\n",
    SET + b"delete {k} 0 noreply\r\n",
    b"delete {k} 1 noreply\r\n",
    b"delete {k} 0 0\r\n",
    b"delete\r\n",
    b"delete {k} a b c\r\n",
    b"delete {k251}\r\n",
    # incr / decr
    b"incr {k} 1\r\n",
    b"set {k} 0 0 2\r\n10\r\nincr {k} 5\r\ndecr {k} 3\r\ndecr {k} 100\r\n",
    b"set {k} 0 0 20\r\n18446744073709551615\r\nincr {k} 2\r\n",
    b"set {k} 0 0 1\r\n9\r\nincr {k} 1\r\nget {k}\r\n",
    SET + b"incr {k} 1\r\n",
    SET + b"decr {k} 1\r\n",
    b"set {k} 0 0 2\r\n-1\r\nincr {k} 1\r\n",
    b"incr {k} abc\r\n",
    b"incr {k} -1\r\n",
    b"incr {k} 18446744073709551616\r\n",
    b"incr {k} 18446744073709551615\r\n",
    b"decr {k} 1x\r\n",
    b"incr {k}\r\n",
    b"incr\r\n",
    b"incr {k} 1 noreply\r\n",
    b"incr {k} 1 noreply x\r\n",
    b"incr {k} abc noreply\r\n",
    b"incr {k251} 1\r\n",
    # touch
    b"touch {k} 10\r\n",
    SET + b"touch {k} 10\r\n",
    SET + b"touch {k} -1\r\nget {k}\r\n",
    b"touch {k} abc\r\n",
    b"touch {k}\r\n",
    b"touch {k} 10 noreply\r\n",
    b"touch {k} abc noreply\r\n",
    b"touch {k251} 10\r\n",
    # flush_all, verbosity, version, quit and unknown lines
    b"flush_all 0\r\n",
    b"flush_all noreply\r\n",
    b"flush_all 0 noreply\r\n",
    b"flush_all abc\r\n",
    b"flush_all -1\r\n",
    # A delay, the extra word ignored; the immediate flush after it replaces the delayed one
    # (a delayed flush left pending would empty both servers under the later cases).
    b"flush_all 1 2\r\nflush_all 0\r\n",
    b"flush_all 1 2 3\r\n",
    b"verbosity 1\r\n",
    b"verbosity 0 noreply\r\n",
    b"verbosity\r\n",
    b"verbosity abc\r\n",
    b"verbosity -1\r\n",
    b"verbosity 1 2\r\n",
    b"verbosity 1 2 3\r\n",
    b"version\r\n",
    b"version x\r\n",
    b"quit\r\n",
    b"quit\r\nget {k}\r\n",
    b"\r\n",
    b"\n",
    b"bogus\r\n",
    b"GET {k}\r\n",
    b"get\t{k}\r\n",
    b"stats bogus\r\n",
    b"stats detail\r\n",
    b"stats detail bogus\r\n",
    b"x" * 3000 + b"\r\n",
    b"set " + b"k" * 3000 + b" 0 0 1\r\na\r\n",
    b"get " + b"k" * 3000 + b"\r\n",
    b"get " + b"k " * 4000 + b"\r\n",
    b"x" * 16382 + b"\r\n",
    b"x" * 16383 + b"\r\n",
    b"x" * 20000 + b"\r\n",
    b"get " + b"k " * 10000 + b"\r\n",
    b"set {k} 0 0 3\r\n100\r\ndecr {k} 1\r\n",
    b"ms a2V5 2 b\r\nhi\r\nmg a2V5 b v k\r\n",
    b"GET / HTTP/1.1\r\n",
    b"POST /x HTTP/1.0\r\n",
]


@pytest.mark.parametrize("template", TEXT_CASES, ids=lambda t: t[:40].decode("latin-1"))
def test_text_replies_match_memcached(pair_1m: Pair, template: bytes) -> None:
    check_text(pair_1m, template)


# ---------------------------------------------------------------------------------------------
# Text protocol: meta commands
# ---------------------------------------------------------------------------------------------

MS = b"ms {k} 3 F5 T0\r\nabc\r\n"

META_CASES = [
    b"mn\r\n",
    b"mg {k}\r\n",
    b"mg {k} v\r\n",
    MS + b"mg {k} v f t s k O123\r\n",
    MS + b"mg {k} c\r\n",
    MS + b"mg {k} q\r\nmg {k}x v q\r\nmn\r\n",
    b"mg {k} v q k O1\r\n",
    b"mg {k} !\r\n",
    b"mg {k} v v\r\n",
    b"mg\r\n",
    b"mg {k250} v\r\n",
    b"mg {k251} v\r\n",
    MS + b"mg {k} Tabc\r\n",
    MS + b"mg {k} T30 t\r\n",
    b"mg {k} N30 v\r\nmg {k} v\r\n",
    b"mg {k} Nabc\r\n",
    b"mg {k} O" + b"x" * 40 + b"\r\n",
    b"mg {k} a b c d e f g h i j k l m n o p q r s t u v w x y z\r\n",
    b"ms {k} 2\r\nhi\r\n",
    b"ms {k} 2 T100 F5 c\r\nhi\r\nmg {k} v f t\r\n",
    b"ms {k} 2 q\r\nhi\r\n",
    b"ms {k} 2 I\r\nhi\r\n",
    b"ms {k} abc\r\nhi\r\n",
    b"ms {k} -1\r\n",
    b"ms {k}\r\n",
    b"ms\r\n",
    b"ms {k} 2 MZ\r\nhi\r\n",
    b"ms {k} 2 MEE\r\nhi\r\n",
    b"ms {k} 2 ME\r\nhi\r\nms {k} 2 ME\r\nhi\r\n",
    b"ms {k} 2 MA\r\nhi\r\n",
    MS + b"ms {k} 2 MA\r\nhi\r\nmg {k} v\r\n",
    MS + b"ms {k} 2 MP\r\nhi\r\nmg {k} v\r\n",
    b"ms {k} 2 MR\r\nhi\r\n",
    b"ms {k} 2 Fabc\r\nhi\r\n",
    b"ms {k} 2 F-1\r\nhi\r\n",
    b"ms {k} 2 Tabc\r\nhi\r\n",
    b"ms {k} 2 Cabc\r\nhi\r\n",
    b"ms {k} 2 C1\r\nhi\r\n",
    b"ms {k} 2 !\r\nhi\r\n",
    b"ms {k} 2 T1 T2\r\nhi\r\n",
    b"ms {k} 2\r\nhix\r\n",
    b"ms {k251} 2\r\nhi\r\n",
    b"ms {k} 2 O" + b"x" * 40 + b"\r\nhi\r\n",
    b"md {k}\r\n",
    MS + b"md {k}\r\nmg {k} v\r\n",
    MS + b"md {k} q\r\nmn\r\n",
    b"md {k} q\r\n",
    b"md {k} Cabc\r\n",
    b"md {k} !\r\n",
    MS + b"md {k} I T30\r\nmg {k} v\r\n",
    b"md\r\n",
    b"md {k251}\r\n",
    b"ma {k}\r\n",
    b"ma {k} N0 J10 v\r\n",
    b"ma {k} N0 J10 v\r\nma {k} v\r\nma {k} MD D4 v\r\n",
    b"ms {k} 1\r\n5\r\nma {k} MI D5 v\r\nma {k} M- D100 v\r\n",
    MS + b"ma {k}\r\n",
    b"ma {k} Dabc\r\n",
    b"ma {k} Jabc\r\n",
    b"ma {k} Mx\r\n",
    b"ma {k} q\r\n",
    b"ma {k} !\r\n",
    b"ma\r\n",
    b"me {k}\r\n",
    MS + b"me {k}\r\n",
    b"me\r\n",
    b"mx {k}\r\n",
]


@pytest.mark.parametrize("template", META_CASES, ids=lambda t: t[:40].decode("latin-1"))
def test_meta_replies_match_memcached(pair_1m: Pair, template: bytes) -> None:
    check_text(pair_1m, template)


# ---------------------------------------------------------------------------------------------
# Binary protocol
# ---------------------------------------------------------------------------------------------


def bset(key: bytes, value: bytes = b"abc", flags: int = 5, op: str = "set") -> bytes:
    return packet(op, key, value, struct.pack(">II", flags, 0))


def counter(op: str, key: bytes, delta: int, initial: int = 0, exptime: int = 0) -> bytes:
    return packet(op, key, extras=struct.pack(">QQI", delta, initial, exptime))


def raw(opcode: int, key: bytes = b"", value: bytes = b"", extras: bytes = b"",
        body: int | None = None, magic: int = 0x80) -> bytes:
    """A packet with a chosen body length, right or wrong."""
    n = len(extras) + len(key) + len(value) if body is None else body
    return HEADER.pack(magic, opcode, len(key), len(extras), 0, 0, n, 7, 0) + extras + key + value


BINARY_CASES: list[tuple[str, Callable[[bytes], bytes]]] = [
    ("get miss", lambda k: packet("get", k, opaque=9)),
    ("getk miss", lambda k: packet("getk", k)),
    ("getq miss", lambda k: packet("getq", k)),
    ("set get", lambda k: bset(k) + packet("get", k)),
    ("set getk", lambda k: bset(k) + packet("getk", k)),
    ("set getkq", lambda k: bset(k) + packet("getkq", k)),
    ("setq", lambda k: bset(k, op="setq") + packet("get", k)),
    ("add twice", lambda k: bset(k, op="add") + bset(k, op="add")),
    ("addq twice", lambda k: bset(k, op="addq") + bset(k, op="addq")),
    ("replace miss", lambda k: bset(k, op="replace")),
    ("replace hit", lambda k: bset(k) + bset(k, b"z", op="replace") + packet("get", k)),
    ("cas miss", lambda k: packet("set", k, b"v", struct.pack(">II", 0, 0), cas=99)),
    ("cas wrong", lambda k: bset(k) + packet("set", k, b"v", struct.pack(">II", 0, 0), cas=99)),
    ("append miss", lambda k: packet("append", k, b"x")),
    ("append hit", lambda k: bset(k) + packet("append", k, b"x") + packet("get", k)),
    ("prepend hit", lambda k: bset(k) + packet("prependq", k, b"x") + packet("get", k)),
    ("delete miss", lambda k: packet("delete", k)),
    ("delete hit", lambda k: bset(k) + packet("delete", k) + packet("get", k)),
    ("deleteq miss", lambda k: packet("deleteq", k)),
    ("delete cas", lambda k: bset(k) + packet("delete", k, cas=99)),
    ("incr miss", lambda k: counter("incr", k, 1, 0, 0xFFFFFFFF)),
    ("incr create", lambda k: counter("incr", k, 1, 10) + counter("incr", k, 5)),
    ("decr floor", lambda k: counter("decr", k, 1, 3) + counter("decr", k, 10)),
    ("incr non-numeric", lambda k: bset(k) + counter("incr", k, 1)),
    ("incr wrap", lambda k: counter("incr", k, 1, 2**64 - 1) + counter("incr", k, 2)),
    ("incrq", lambda k: counter("incrq", k, 1, 1) + packet("get", k)),
    ("touch miss", lambda k: packet("touch", k, extras=struct.pack(">I", 10))),
    ("touch hit", lambda k: bset(k) + packet("touch", k, extras=struct.pack(">I", 10))),
    ("gat hit", lambda k: bset(k) + packet("gat", k, extras=struct.pack(">I", 10))),
    ("gatk hit", lambda k: bset(k) + packet("gatk", k, extras=struct.pack(">I", 10))),
    ("gatq miss", lambda k: packet("gatq", k, extras=struct.pack(">I", 10))),
    ("noop", lambda k: packet("noop", opaque=3)),
    ("version", lambda k: packet("version")),
    ("flush", lambda k: packet("flush", extras=struct.pack(">I", 0))),
    ("flushq", lambda k: packet("flushq")),
    ("quit", lambda k: packet("quit") + packet("get", k)),
    ("quitq", lambda k: packet("quitq") + packet("get", k)),
    ("stat bogus", lambda k: packet("stat", b"bogus")),
    # Malformed packets.
    ("bad magic", lambda k: raw(0x00, k, magic=0x81)),
    ("key over 250", lambda k: packet("get", (k * 300)[:251])),
    ("key 250", lambda k: packet("get", (k * 300)[:250])),
    ("body under key", lambda k: raw(0x00, k, body=1)),
    ("get with extras", lambda k: packet("get", k, extras=b"\0\0\0\0")),
    ("get with value", lambda k: packet("get", k, b"v")),
    ("get without key", lambda k: packet("get")),
    ("set without extras", lambda k: packet("set", k, b"v")),
    ("set short extras", lambda k: packet("set", k, b"v", b"\0\0\0\0")),
    ("set without key", lambda k: packet("set", b"", b"v", struct.pack(">II", 0, 0))),
    ("append with extras", lambda k: packet("append", k, b"v", b"\0\0\0\0")),
    ("incr short extras", lambda k: packet("incr", k, extras=b"\0" * 8)),
    ("incr with value", lambda k: packet("incr", k, b"1", struct.pack(">QQI", 1, 0, 0))),
    ("delete with extras", lambda k: packet("delete", k, extras=b"\0\0\0\0")),
    ("touch no extras", lambda k: packet("touch", k)),
    ("noop with key", lambda k: packet("noop", k)),
    ("version with value", lambda k: packet("version", b"", b"x")),
    ("flush bad extras", lambda k: packet("flush", extras=b"\0\0")),
    ("get huge body", lambda k: raw(0x00, k, body=2_000_000)),
    ("unknown opcode", lambda k: raw(0x50) + packet("get", k)),
    ("unknown opcode 0xff", lambda k: raw(0xFF) + packet("noop")),
    ("set then too large", lambda k: bset(k) + bset(k, b"x" * (1 << 20)) + packet("get", k)),
    ("setq too large", lambda k: bset(k) + bset(k, b"x" * (1 << 20), op="setq")
        + packet("get", k)),
    ("add too large", lambda k: bset(k, b"x" * (1 << 20), op="add")),
    ("append too large", lambda k: bset(k) + packet("append", k, b"x" * (1 << 20))),
]


@pytest.mark.parametrize("build", [b for _, b in BINARY_CASES],
                         ids=[name for name, _ in BINARY_CASES])
def test_binary_replies_match_memcached(pair_1m: Pair, build) -> None:
    check_binary(pair_1m, build)


# ---------------------------------------------------------------------------------------------
# The item size boundary: -I 1024 and -I 1m
# ---------------------------------------------------------------------------------------------

# (key length, flags): the largest value memcached stores is -I - 59 - key - 4 if flags.
BOUNDARY = [(1, 0), (10, 0), (10, 1), (100, 7), (250, 0), (250, 4294967295)]


def largest_value(item_size_max: int, key_len: int, flags: int) -> int:
    return item_size_max - 59 - key_len - (4 if flags else 0)


@pytest.mark.parametrize("key_len,flags", BOUNDARY)
def test_text_size_boundary_small(pair_1k: Pair, key_len: int, flags: int) -> None:
    n = largest_value(1024, key_len, flags)
    for size in (n, n + 1):
        tpl = b"set {k%d} %d 0 %d\r\n%s\r\nget {k%d}\r\n" % (key_len, flags, size, b"v" * size,
                                                               key_len)
        reply = check_text(pair_1k, tpl)
        assert reply.startswith(b"STORED" if size == n else b"SERVER_ERROR object too large")


@pytest.mark.parametrize("key_len,flags", BOUNDARY)
def test_meta_size_boundary_small(pair_1k: Pair, key_len: int, flags: int) -> None:
    n = largest_value(1024, key_len, flags)
    for size in (n, n + 1):
        key = pair_1k.key(key_len)
        tpl = b"ms %s %d F%d\r\n%s\r\nmg %s v\r\n" % (key, size, flags, b"v" * size, key)
        reply = check_text(pair_1k, tpl)
        assert reply.startswith(b"HD" if size == n else b"SERVER_ERROR object too large")


@pytest.mark.parametrize("key_len,flags", BOUNDARY)
def test_binary_size_boundary_small(pair_1k: Pair, key_len: int, flags: int) -> None:
    n = largest_value(1024, key_len, flags)
    for size in (n, n + 1):
        key = pair_1k.key(key_len)
        reply = check_binary(pair_1k, lambda _: bset(key, b"v" * size, flags)
                             + packet("get", key))
        assert reply[6:8] == (b"\0\0" if size == n else b"\0\x03")


@pytest.mark.parametrize("key_len,flags", [(1, 0), (250, 1)])
def test_size_boundary_1m(pair_1m: Pair, key_len: int, flags: int) -> None:
    n = largest_value(1 << 20, key_len, flags)
    for size in (n, n + 1):
        key = pair_1m.key(key_len)
        check_text(pair_1m, b"set %s %d 0 %d\r\n%s\r\n" % (key, flags, size, b"v" * size))
        check_binary(pair_1m, lambda _: bset(key, b"v" * size, flags))


SMALL_CASES = [
    # A too-large set drops the old item; add, replace, append and cas keep it.
    SET + b"set {k} 0 0 2000\r\n" + b"v" * 2000 + b"\r\nget {k}\r\n",
    SET + b"set {k} 0 0 2000 noreply\r\n" + b"v" * 2000 + b"\r\nget {k}\r\n",
    SET + b"add {k} 0 0 2000\r\n" + b"v" * 2000 + b"\r\nget {k}\r\n",
    SET + b"replace {k} 0 0 2000\r\n" + b"v" * 2000 + b"\r\nget {k}\r\n",
    SET + b"append {k} 0 0 2000\r\n" + b"v" * 2000 + b"\r\nget {k}\r\n",
    SET + b"cas {k} 0 0 2000 1\r\n" + b"v" * 2000 + b"\r\nget {k}\r\n",
    MS + b"ms {k} 2000 MA\r\n" + b"v" * 2000 + b"\r\nmg {k} v\r\n",
    MS + b"ms {k} 2000 ME\r\n" + b"v" * 2000 + b"\r\nmg {k} v\r\n",
    # Appends are sized joined, under the old item's flags.
    b"set {k} 0 0 900\r\n" + b"v" * 900 + b"\r\nappend {k} 0 0 58\r\n" + b"w" * 58
    + b"\r\nappend {k} 0 0 1\r\nw\r\nget {k}\r\n",
    b"set {k} 1 0 900\r\n" + b"v" * 900 + b"\r\nprepend {k} 0 0 58\r\n" + b"w" * 58 + b"\r\n",
    # A bad data chunk after a too-large value is still swallowed whole.
    b"set {k} 0 0 2000\r\n" + b"v" * 2001 + b"\r\n",
]


@pytest.mark.parametrize("template", SMALL_CASES, ids=lambda t: t[:40].decode("latin-1"))
def test_small_limit_replies_match_memcached(pair_1k: Pair, template: bytes) -> None:
    check_text(pair_1k, template)


# memcached's binary `stat` keys (`process_bin_stat`): reset, settings and detail matched as
# prefixes, items/slabs/sizes whole, conns and the rest "Not found".
STAT_KEYS = [b"", b"detail on", b"detail dump", b"detail off", b"detail onion", b"detail",
             b"detailx", b"detail bogus", b"reset", b"resetx", b"settings", b"settingsx",
             b"items", b"slabs", b"sizes", b"conns", b"bogus", b"item"]


def stat_shape(reply: bytes) -> list:
    """The stat packets of a reply, without the groups' contents: the stats' names and
    values differ by design (larder's own figures) except `detailed`, compared whole.
    Keeps every other packet's status and body, and the terminating empty stat."""
    shape = []
    while len(reply) >= HEADER.size and reply[0] == 0x81:
        _, op, klen, elen, _, status, body, _, _ = HEADER.unpack(reply[: HEADER.size])
        pkt = reply[HEADER.size: HEADER.size + body]
        reply = reply[HEADER.size + body:]
        key, value = pkt[elen: elen + klen], pkt[elen + klen:]
        if status == 0 and key and key != b"detailed":
            continue
        shape.append((op, status, key, value))
    return shape + ([reply] if reply else [])


@pytest.mark.parametrize("key", STAT_KEYS, ids=lambda k: k.decode() or "general")
def test_binary_stat_keys_match_memcached(pair_1m: Pair, key: bytes) -> None:
    payload = packet("stat", key, opaque=4)
    mc, ld = pair_1m.both(lambda port: binary_exchange(port, payload))
    assert stat_shape(ld) == stat_shape(mc)
    assert mc.endswith(HEADER.pack(0x81, 0x10, 0, 0, 0, 0, 0, 4, 0)) or stat_shape(mc)[-1][1]
