"""Function libraries on disk: kept across restarts (the log's FUNCTION commands, snapshots,
DEBUG RELOAD, log rewrites), imported from a Redis RDB file, and FUNCTION DUMP payloads that
move between larder and a real redis-server 7.0.

Each test starts its own servers in fresh working directories (see test_persistence.py).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from conftest import ServerFactory, larder_bin

pytestmark = pytest.mark.larder_only

LIB_A = ("#!lua name=liba\n"
         "redis.register_function('fa', function(keys, args) return 'a:' .. args[1] end)")
LIB_B = ("#!lua name=libb\n"
         "-- h\u00e9llo \u2713 \u65e5\u672c\n"
         "redis.register_function{function_name='fb', "
         "callback=function(keys, args) return redis.call('GET', keys[1]) end, "
         "flags={'no-writes'}, description='reads \u2713'}")
LIB_C = ("#!lua name=libc\n"
         + "".join(f"-- padding line {i} to make the code long and compressible\n"
                   for i in range(300))
         + "redis.register_function('fc', function() return 3 end)")


def restart(srv, hard: bool = True):
    if hard:
        srv.kill()
    else:
        srv.stop()
    return srv.start()


def as_dict(reply) -> dict:
    """A map reply as a dict with str keys (RESP2 gives a flat list, RESP3 a dict)."""
    if not isinstance(reply, dict):
        reply = dict(zip(reply[::2], reply[1::2]))
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in reply.items()}


def libraries(c) -> dict[str, bytes]:
    """Library name -> code, from FUNCTION LIST WITHCODE."""
    out = {}
    for lib in c.execute_command("FUNCTION", "LIST", "WITHCODE"):
        lib = as_dict(lib)
        name = lib["library_name"]
        out[name.decode() if isinstance(name, bytes) else name] = lib["library_code"]
    return out


def load(c, *codes: str) -> None:
    for code in codes:
        c.execute_command("FUNCTION", "LOAD", code)


def check_data(srv) -> str:
    out = subprocess.run([str(larder_bin()), "check-data", str(srv.workdir / "larder-data")],
                         capture_output=True, text=True, check=True)
    return out.stdout


def test_libraries_survive_kill_9_through_the_log(start_server):
    srv = start_server("--appendfsync", "always", "--save", "")
    c = srv.client()
    load(c, LIB_A, LIB_B)
    c.set("k", "v")
    c.execute_command("FUNCTION", "DELETE", "liba")
    load(c, LIB_C)
    c.execute_command("FUNCTION", "LOAD", "REPLACE", LIB_A.replace("'a:'", "'A:'"))
    before = libraries(c)
    srv = restart(srv)
    c = srv.client()
    assert libraries(c) == before
    assert c.fcall("fa", 0, "x") == b"A:x"
    assert c.fcall_ro("fb", 1, "k") == b"v"
    assert c.fcall("fc", 0) == 3
    # FUNCTION FLUSH replays too.
    c.execute_command("FUNCTION", "FLUSH")
    srv = restart(srv)
    assert libraries(srv.client()) == {}


def test_libraries_survive_a_snapshot_and_the_log_after_it(start_server):
    srv = start_server("--appendfsync", "always")
    c = srv.client()
    load(c, LIB_A, LIB_B)
    c.save()
    assert "and 2 function libraries" in check_data(srv)
    # After the snapshot: a delete and a load, which only the log holds.
    c.execute_command("FUNCTION", "DELETE", "liba")
    load(c, LIB_C)
    srv = restart(srv)
    c = srv.client()
    assert set(libraries(c)) == {"libb", "libc"}
    assert libraries(c)["libc"] == LIB_C.encode()
    # A clean stop snapshots them; the start loads them from it.
    srv = restart(srv, hard=False)
    c = srv.client()
    assert set(libraries(c)) == {"libb", "libc"}
    assert "and 2 function libraries" in check_data(srv)


def test_debug_reload_and_a_log_rewrite_keep_libraries(start_server):
    srv = start_server("--appendfsync", "always", "--save", "", "--enable-debug-command", "yes")
    c = srv.client()
    load(c, LIB_A, LIB_B, LIB_C)
    c.set("k", "v")
    before = libraries(c)
    assert c.execute_command("DEBUG", "RELOAD") in (b"OK", "OK", True)
    assert libraries(c) == before
    assert c.fcall_ro("fb", 1, "k") == b"v"
    c.bgrewriteaof()
    deadline = time.monotonic() + 10
    while c.info("persistence")["aof_rewrite_in_progress"]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    c.execute_command("FUNCTION", "DELETE", "libc")
    srv = restart(srv)
    c = srv.client()
    assert set(libraries(c)) == {"liba", "libb"}
    assert c.fcall("fa", 0, "y") == b"a:y"


def test_function_dump_moves_between_larder_and_redis(start_server, tmp_path: Path):
    srv = start_server()
    redis_srv = ServerFactory("redis", tmp_path)()
    try:
        c, rc = srv.client(), redis_srv.client()
        # One library: the payloads are byte for byte the same.
        load(c, LIB_C)
        load(rc, LIB_C)
        assert c.function_dump() == rc.function_dump()
        # larder -> redis.
        load(c, LIB_A, LIB_B)
        assert rc.function_restore(c.function_dump(), "FLUSH")
        assert libraries(rc) == libraries(c)
        assert rc.fcall("fa", 0, "z") == b"a:z"
        # redis -> larder, every policy.
        rc.execute_command("FUNCTION", "DELETE", "liba")
        c.execute_command("FUNCTION", "FLUSH")
        assert c.function_restore(rc.function_dump())
        assert libraries(c) == libraries(rc)
        with pytest.raises(Exception, match="already exists"):
            c.function_restore(rc.function_dump(), "APPEND")
        assert c.function_restore(rc.function_dump(), "REPLACE")
        # A payload redis refuses, larder refuses with the same words.
        bad = bytearray(rc.function_dump())
        bad[-1] ^= 1
        for client in (c, rc):
            with pytest.raises(Exception, match="DUMP payload version or checksum are wrong"):
                client.function_restore(bytes(bad))
    finally:
        redis_srv.kill()


def test_import_of_a_redis_rdb_file_with_libraries(start_server, tmp_path: Path):
    redis_srv = ServerFactory("redis", tmp_path)()
    try:
        rc = redis_srv.client()
        load(rc, LIB_A, LIB_B)
        rc.set("k", "v")
        rc.save()
        expected = libraries(rc)
        rdb = redis_srv.workdir / "dump.rdb"
    finally:
        redis_srv.kill()
    dest = tmp_path / "imported"
    subprocess.run([str(larder_bin()), "import", str(rdb), "--dir", str(dest)], check=True,
                   capture_output=True)
    srv = start_server("--dir", str(dest))
    c = srv.client()
    assert libraries(c) == expected
    assert c.fcall_ro("fb", 1, "k") == b"v"
