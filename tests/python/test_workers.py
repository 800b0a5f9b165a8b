"""Worker threads: more workers than the CPUs the process may use take turns on them.

Started under `taskset` so the process sees one CPU (`available_parallelism` follows the
affinity mask). The latency effect is measured by bench/memcached_compare.py --server-cpus;
these tests pin the decision and that such a server serves many clients correctly.
"""

import socket
import subprocess
import threading
import time

import pytest

from conftest import free_port, larder_bin

pytestmark = pytest.mark.larder_only


def start_pinned(tmp_path, threads, *extra):
    port = free_port()
    log = tmp_path / f"larder-{threads}.log"
    argv = ["taskset", "-c", "0", str(larder_bin()), "--port", str(port), "--bind", "127.0.0.1",
            "--threads", str(threads), "--memcached-port", "0", "--http-port", "0",
            "--appendonly", "no", "--save", "", *extra]
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, cwd=tmp_path)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16) == b"+PONG\r\n":
                    return proc, port, log
        except OSError:
            time.sleep(0.02)
    proc.kill()
    pytest.fail("pinned larder did not start: " + log.read_text(errors="replace"))


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("threads,setting,shares", [
    (2, "auto", True), (1, "auto", False), (1, "yes", True), (2, "no", False)])
def test_workers_share_a_cpu_when_they_outnumber_it_or_are_told(tmp_path, threads, setting,
                                                                 shares):
    proc, port, log = start_pinned(tmp_path, threads, "--worker-yield", setting)
    try:
        text = log.read_text(errors="replace")
        assert ("workers yield their CPU" in text) == shares, text
        assert f"threads={threads}" in text
    finally:
        stop(proc)


def test_workers_sharing_a_cpu_serve_every_client(tmp_path):
    proc, port, _ = start_pinned(tmp_path, 2)
    errors = []

    def client(n):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                f = s.makefile("rb")
                for i in range(200):
                    v = b"%d-%d" % (n, i)
                    s.sendall(b"SET k%d %s\r\nGET k%d\r\n" % (n, v, n))
                    assert f.readline() == b"+OK\r\n"
                    assert f.readline() == b"$%d\r\n" % len(v)
                    assert f.readline() == v + b"\r\n"
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    try:
        threads = [threading.Thread(target=client, args=(n,)) for n in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert errors == []
    finally:
        stop(proc)
