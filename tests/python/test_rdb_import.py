"""Migration from Redis: a server started on a directory holding a Redis 7.0 `dump.rdb`
(`--dir DIR --dbfilename NAME`) serves its keys, and `larder import FILE --dir DIR` turns an
RDB file into a data directory larder then starts on.

The files are the golden ones in testdata/rdb/, made by redis-server 7.0.15 with
testdata/rdb/make.py, which also wrote `<name>.expected`: every key as the server reported it
(type, OBJECT ENCODING, PEXPIRETIME, contents). The tests not marked larder_only pass against
redis-server itself (`--target=redis`), which checks the expectations.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT, larder_bin

RDB_DIR = REPO_ROOT / "testdata" / "rdb"

# The limits dump.rdb was written under (make.py's LIMITS): loaded under them, every value
# keeps the encoding it had in the server that wrote the file.
DUMP_LIMITS = [
    "--hash-max-listpack-entries", "8",
    "--hash-max-listpack-value", "16",
    "--set-max-intset-entries", "8",
    "--zset-max-listpack-entries", "8",
    "--zset-max-listpack-value", "16",
    "--list-max-listpack-size", "4",
]


def unhex(s: str) -> bytes:
    assert s.startswith("x"), s
    return bytes.fromhex(s[1:])


def expected(name: str) -> list[tuple[int, bytes, str, str, int, list[bytes]]]:
    out = []
    for line in (RDB_DIR / f"{name}.expected").read_text().splitlines():
        if line.startswith("#"):
            continue
        db, key, kind, enc, at, items = line.split("\t")
        out.append((int(db), unhex(key), kind, enc, int(at),
                    [unhex(i) for i in items.split(" ") if i]))
    return out


def check_contents(srv, name: str, encodings: bool) -> None:
    """Every key of `<name>.expected` is on `srv` as redis-server reported it, and no other."""
    want = expected(name)
    for db in range(16):
        c = srv.client(protocol=2, db=db)
        keys = [k for (d, k, *_rest) in want if d == db]
        assert sorted(c.keys()) == sorted(keys), f"db {db}"
    for db, key, kind, enc, at, items in want:
        c = srv.client(protocol=2, db=db)
        assert c.type(key).decode() == kind, key
        assert c.execute_command("PEXPIRETIME", key) == at, key
        if encodings and kind != "string":
            assert c.object("encoding", key).decode() == enc, key
        if kind == "string":
            got = [c.get(key)]
        elif kind == "list":
            got = c.lrange(key, 0, -1)
        elif kind == "hash":
            got = [b for f, v in sorted(c.hgetall(key).items()) for b in (f, v)]
        elif kind == "set":
            got = sorted(c.smembers(key))
        else:
            got = [b for m, s in c.zrange(key, 0, -1, withscores=True)
                   for b in (m, repr(s).encode())]
        assert got == items, key


def data_dir(tmp_path: Path, rdb: str, as_name: str = "dump.rdb") -> Path:
    d = tmp_path / f"data-{rdb}"
    d.mkdir()
    shutil.copy(RDB_DIR / rdb, d / as_name)
    return d


def test_start_loads_a_redis_dump(start_server, tmp_path):
    d = data_dir(tmp_path, "dump.rdb", "from-redis.rdb")
    srv = start_server("--dir", str(d), "--dbfilename", "from-redis.rdb", *DUMP_LIMITS)
    check_contents(srv, "dump", encodings=True)
    # The values are live: they can be changed like any other.
    c = srv.client(protocol=3)
    assert c.incr("s_int16") == -999
    assert c.rpush("l_big", "more") == 101
    assert c.zscore("z_small", "d") == float("inf")


def test_start_loads_a_dump_without_checksum_or_compression(start_server, tmp_path):
    d = data_dir(tmp_path, "nochecksum.rdb")
    srv = start_server("--dir", str(d), "--dbfilename", "dump.rdb")
    check_contents(srv, "nochecksum", encodings=True)


def test_start_loads_a_dump_under_default_limits(start_server, tmp_path):
    # The same values, in the encodings the default limits give them.
    d = data_dir(tmp_path, "dump.rdb")
    srv = start_server("--dir", str(d), "--dbfilename", "dump.rdb")
    check_contents(srv, "dump", encodings=False)
    c = srv.client(protocol=2)
    assert c.object("encoding", "h_big") == b"listpack"
    assert c.object("encoding", "set_int_big") == b"intset"


def test_start_loads_an_empty_dump(start_server, tmp_path):
    d = data_dir(tmp_path, "empty.rdb")
    srv = start_server("--dir", str(d), "--dbfilename", "dump.rdb")
    assert srv.client(protocol=2).dbsize() == 0


def test_truncated_dump_stops_startup(start_server, tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    data = (RDB_DIR / "dump.rdb").read_bytes()
    (d / "dump.rdb").write_bytes(data[: len(data) // 2])
    code, _out = start_server.spawn("--dir", str(d), "--dbfilename", "dump.rdb")
    assert code != 0


@pytest.mark.larder_only
def test_corrupt_dumps_name_the_offset(start_server, tmp_path):
    data = (RDB_DIR / "dump.rdb").read_bytes()
    cases = {
        "truncated": (data[:5000], "offset 5000"),
        "crc": (data[:-1] + bytes([data[-1] ^ 1]), f"offset {len(data) - 8}"),
        # A bad intset under a good checksum (see make.py): the error names the key.
        "value": ((RDB_DIR / "dump-badvalue.rdb").read_bytes(), "set_int"),
    }
    for name, (content, where) in cases.items():
        d = tmp_path / name
        d.mkdir()
        (d / "dump.rdb").write_bytes(content)
        code, out = start_server.spawn("--dir", str(d), "--dbfilename", "dump.rdb")
        assert code != 0, name
        assert where in out, out


@pytest.mark.larder_only
def test_a_stream_loads(start_server, tmp_path):
    d = data_dir(tmp_path, "stream.rdb")
    srv = start_server("--dir", str(d), "--dbfilename", "dump.rdb")
    c = srv.client(protocol=2)
    assert c.get("a_string") == b"before the stream"
    assert c.type("events") == b"stream"
    assert c.xrange("events") == [(b"1-1", {b"f": b"v"})]


@pytest.mark.larder_only
def test_import_then_start(start_server, tmp_path):
    d = tmp_path / "imported"
    proc = subprocess.run([str(larder_bin()), "import", str(RDB_DIR / "dump.rdb"),
                           "--dir", str(d), *DUMP_LIMITS],
                          capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    srv = start_server("--dir", str(d), *DUMP_LIMITS)
    check_contents(srv, "dump", encodings=True)
    # The data is larder's own now: it survives a restart without the RDB file.
    srv.client(protocol=2).set("added", "after import")
    srv.stop()
    srv = start_server("--dir", str(d), *DUMP_LIMITS)
    assert srv.client(protocol=2).get("added") == b"after import"
    assert srv.client(protocol=2).get("s_raw") == b"hello world"


@pytest.mark.larder_only
def test_import_refuses_a_corrupt_file(tmp_path):
    bad = tmp_path / "bad.rdb"
    data = (RDB_DIR / "dump.rdb").read_bytes()
    bad.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    proc = subprocess.run([str(larder_bin()), "import", str(bad), "--dir", str(tmp_path / "d")],
                          capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode != 0
    assert f"offset {len(data) - 8}".encode() in proc.stdout + proc.stderr

