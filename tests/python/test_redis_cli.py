"""A second client stack: redis-cli and redis-benchmark (hiredis-based, from Debian's redis-tools)
against the same server. scripts/test installs redis-tools; without it these tests skip.
"""

import shutil
import subprocess

import pytest

from conftest import RawConn

pytestmark = pytest.mark.skipif(shutil.which("redis-cli") is None,
                                reason="redis-cli not installed (apt-get install redis-tools)")


def cli(server, *args, stdin=None):
    proc = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(server.port), *args],
                          input=stdin, capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.decode()


def test_redis_cli_basic(server):
    assert cli(server, "PING") == "PONG\n"
    assert cli(server, "SET", "k", "hello world") == "OK\n"
    assert cli(server, "GET", "k") == "hello world\n"
    assert cli(server, "INCR", "n") == "1\n"
    assert cli(server, "MGET", "k", "n", "missing") == "hello world\n1\n\n"


def test_redis_cli_resp3(server):
    # redis-cli prints a RESP3 map as "key value" lines, a RESP2 array one item a line.
    assert cli(server, "-3", "CONFIG", "GET", "maxclients") == "maxclients 10000\n"
    assert cli(server, "CONFIG", "GET", "maxclients") == "maxclients\n10000\n"
    assert cli(server, "-3", "GET", "missing") == "\n"


def test_redis_cli_pipe_mode(server):
    payload = b"".join(RawConn.encode("SET", f"pipe:{i}", i) for i in range(5000))
    out = cli(server, "--pipe", stdin=payload)
    assert "errors: 0, replies: 5000" in out, out
    assert cli(server, "DBSIZE") == "5000\n"


def test_redis_cli_scan(server):
    with server.raw() as c:
        c.call("MSET", *sum(([f"a:{i}", "v", f"b:{i}", "v"] for i in range(300)), []))
    keys = cli(server, "--scan", "--pattern", "a:*").split()
    assert sorted(keys) == sorted(f"a:{i}" for i in range(300))


@pytest.mark.skipif(shutil.which("redis-benchmark") is None, reason="redis-benchmark missing")
def test_redis_benchmark_smoke(server):
    proc = subprocess.run(
        ["redis-benchmark", "-h", "127.0.0.1", "-p", str(server.port), "-t", "set,get,incr",
         "-n", "5000", "-c", "10", "-P", "16", "-r", "1000", "-q"],
        capture_output=True, timeout=60)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr
    for name in ("SET", "GET", "INCR"):
        assert f"{name}:" in out and "requests per second" in out, out
