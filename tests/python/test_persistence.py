"""Durability: the append-only log and recovery, against the real binary.

Each test starts its own server in a fresh working directory (the fixtures' `workdir`), so
`./larder-data` is private to it; a restart is `srv.kill()` (SIGKILL) or `srv.stop()` then
`srv.start()` on the same directory.
"""

from __future__ import annotations

import os
import random
import re
import socket
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.larder_only


def data_dir(srv) -> Path:
    return srv.workdir / "larder-data"


def logs(srv) -> list[Path]:
    return sorted(data_dir(srv).glob("log-*.llog"))


def restart(srv, hard: bool = True):
    if hard:
        srv.kill()
    else:
        srv.stop()
    return srv.start()


def dataset(c) -> dict:
    """Every key of every database: type, DUMP payload, absolute deadline, memcached-free."""
    out = {}
    for db in range(16):
        c.execute_command("SELECT", db)
        for key in c.scan_iter(count=1000):
            out[(db, key)] = (
                c.type(key),
                c.dump(key),
                c.execute_command("PEXPIRETIME", key),
            )
    c.execute_command("SELECT", 0)
    return out


def fill_every_type(c) -> None:
    """Every type in its compact and its full encoding, in several databases, some with TTLs."""
    deadline = int(time.time() * 1000) + 3_600_000
    for db in (0, 3, 15):
        c.execute_command("SELECT", db)
        p = c.pipeline(transaction=False)
        p.set("str", "plain")
        p.set("int", 12345)
        p.set("big", "x" * 5000)
        p.rpush("list:small", *[f"e{i}" for i in range(5)])
        p.rpush("list:big", *[f"element-{i}" for i in range(1000)])
        p.hset("hash:small", mapping={f"f{i}": f"v{i}" for i in range(5)})
        p.hset("hash:big", mapping={f"field-{i}": f"value-{i}" for i in range(600)})
        p.sadd("set:int", *range(20))
        p.sadd("set:str", *[f"m{i}" for i in range(600)])
        p.zadd("zset:small", {f"m{i}": i * 1.5 for i in range(5)})
        p.zadd("zset:big", {f"member-{i}": i * 0.25 for i in range(300)})
        p.setbit("bits", 1000, 1)
        p.pfadd("hll", *[f"e{i}" for i in range(100)])
        p.geoadd("geo", (13.361389, 38.115556, "Palermo"))
        p.set("ttl:str", "v")
        p.execute_command("PEXPIREAT", "ttl:str", deadline)
        p.rpush("ttl:list", "a", "b")
        p.execute_command("PEXPIREAT", "ttl:list", deadline + 1)
        p.incrbyfloat("float", 1.5)
        p.spop("set:int")  # logged as SREM of the member it took
        p.lpop("list:big")
        p.execute()
    c.execute_command("SELECT", 0)


def test_every_type_survives_kill_9_under_always(start_server):
    srv = start_server("--appendfsync", "always")
    c = srv.client()
    fill_every_type(c)
    before = dataset(c)
    assert len(before) == 3 * 17
    srv = restart(srv)
    after = dataset(srv.client())
    assert after == before


def test_restart_after_sigterm_and_after_several_restarts(start_server):
    srv = start_server()
    c = srv.client()
    c.set("a", 1)
    srv = restart(srv, hard=False)
    c = srv.client()
    assert c.get("a") == b"1"
    c.incr("a")
    srv = restart(srv, hard=False)
    c = srv.client()
    c.incr("a")
    srv = restart(srv, hard=False)
    assert srv.client().get("a") == b"3"
    # With the default `save` rules a clean shutdown takes a snapshot, which replaces the
    # logs before it: one snapshot and the log begun after it remain.
    assert len(snapshots(srv)) == 1
    assert len(logs(srv)) == 1


def test_memcached_items_keep_flags_cas_and_deadlines(start_server):
    from conftest import free_port

    mport = free_port()
    srv = start_server("--memcached-port", str(mport), "--appendfsync", "always")

    def mc(lines: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", mport), timeout=5) as s:
            s.sendall(lines)
            data = b""
            while not data.endswith(b"END\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            return data

    out = mc(b"set item 42 1000 5\r\nhello\r\nset counter 7 0 2\r\n10\r\n"
             b"incr counter 5\r\nappend item 0 0 1\r\n!\r\ngets item counter\r\n")
    values = re.findall(rb"VALUE (\S+) (\d+) (\d+) (\d+)\r\n(\S*)\r\n", out)
    assert [(v[0], v[1], v[4]) for v in values] == [
        (b"item", b"42", b"hello!"), (b"counter", b"7", b"15")]
    deadline = srv.client().execute_command("PEXPIRETIME", "item")
    srv.kill()
    # The memcached door's port is fixed for this server; reuse it.
    srv.user_args[srv.user_args.index("--memcached-port") + 1] = str(mport)
    srv = srv.start()
    again = re.findall(rb"VALUE (\S+) (\d+) (\d+) (\d+)\r\n(\S*)\r\n", mc(b"gets item counter\r\n"))
    # Same values, same flags, same CAS tokens (versions survive), same absolute deadline.
    assert again == values
    assert srv.client().execute_command("PEXPIRETIME", "item") == deadline


def test_versions_are_never_reused_after_recovery(start_server):
    """A CAS token issued before a restart is never issued again to another value."""
    from conftest import free_port

    mport = free_port()
    srv = start_server("--memcached-port", str(mport), "--appendfsync", "always")

    def gets(key: bytes) -> int:
        with socket.create_connection(("127.0.0.1", mport), timeout=5) as s:
            s.sendall(b"gets " + key + b"\r\n")
            data = b""
            while not data.endswith(b"END\r\n"):
                data += s.recv(4096)
        return int(data.split()[4])

    c = srv.client()
    for i in range(50):
        c.set("k", i)
    seen = {gets(b"k")}
    srv.kill()
    srv.user_args[srv.user_args.index("--memcached-port") + 1] = str(mport)
    srv = srv.start()
    c = srv.client()
    for i in range(50):
        c.set("k", f"new{i}")
        c.set(f"other{i}", i)
        v = gets(b"k")
        assert v not in seen
        seen.add(v)


class Writers:
    """Writer threads that each own some keys and SET increasing counters on them, recording
    the last value the server acknowledged for each key."""

    def __init__(self, srv, threads: int = 8, keys_per_thread: int = 20) -> None:
        self.srv = srv
        self.acked: dict[str, int] = {}
        self.ack_times: dict[str, float] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(t, keys_per_thread), daemon=True)
                        for t in range(threads)]

    def run(self, t: int, n: int) -> None:
        import redis

        try:
            c = redis.Redis(port=self.srv.port, socket_timeout=5)
            i = 0
            while not self.stop.is_set():
                i += 1
                key = f"w{t}:{i % n}"
                c.set(key, i)
                with self.lock:
                    self.acked[key] = i
                    self.ack_times[key] = time.monotonic()
        except Exception:
            # The server was killed under us: what was acknowledged is recorded.
            pass

    def __enter__(self) -> "Writers":
        for th in self.threads:
            th.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for th in self.threads:
            th.join(timeout=10)


def kill_while_writing(srv, seconds: float) -> tuple[dict, dict, float]:
    with Writers(srv) as w:
        time.sleep(seconds)
        killed_at = time.monotonic()
        assert srv.proc is not None
        srv.proc.kill()
        srv.proc.wait(timeout=10)
    return dict(w.acked), dict(w.ack_times), killed_at


@pytest.mark.parametrize("drop_unsynced", [False, True], ids=["page-cache", "power-loss"])
def test_always_loses_no_acknowledged_write_across_crashes(start_server, drop_unsynced):
    """kill -9 at random moments under many writers; every acknowledged SET is there after
    restart. With `aof-test-drop-unsynced` the log keeps only fsynced bytes, as a power loss
    would: an acknowledgement sent before its fsync would show up here as a lost write."""
    args = ["--appendfsync", "always"]
    if drop_unsynced:
        args += ["--aof-test-drop-unsynced", "yes"]
    srv = start_server(*args)
    rng = random.Random(7)
    total = 0
    for _cycle in range(4):
        acked, _, _ = kill_while_writing(srv, rng.uniform(0.2, 0.8))
        total += len(acked)
        srv.stopped = False
        srv = srv.start()
        c = srv.client()
        for key, value in acked.items():
            got = c.get(key)
            assert got is not None and int(got) >= value, (key, value, got)
    assert total > 0
    info = srv.client().info("persistence")
    assert info["aof_enabled"] == 1


def test_everysec_loses_at_most_about_two_seconds(start_server):
    """Under everysec with the power-loss layer, what is missing after kill -9 was acknowledged
    within the last ~2 s (one fsync period plus its own duration)."""
    srv = start_server("--aof-test-drop-unsynced", "yes")
    acked, times, killed_at = kill_while_writing(srv, 2.5)
    srv.stopped = False
    srv = srv.start()
    c = srv.client()
    lost = []
    for key, value in acked.items():
        got = c.get(key)
        if got is None or int(got) < value:
            lost.append(killed_at - times[key])
    assert all(age <= 2.5 for age in lost), sorted(lost)[-5:]


def test_torn_tail_is_cut_with_a_log_line(start_server):
    srv = start_server("--appendfsync", "always", "--save", "")  # no snapshot at stop
    c = srv.client()
    for i in range(100):
        c.set(f"k{i}", i)
    srv.stop()
    log = logs(srv)[-1]
    size = log.stat().st_size
    # A crash in the middle of the last record: drop its last 5 bytes.
    with open(log, "r+b") as f:
        f.truncate(size - 5)
    srv = srv.start()
    c = srv.client()
    assert c.get("k98") == b"98"
    assert c.get("k99") is None
    assert "torn record" in srv.log_text()
    assert "dropped_bytes" in srv.log_text()


def test_zeros_at_the_tail_are_a_torn_tail(start_server):
    srv = start_server("--appendfsync", "always", "--save", "")  # no snapshot at stop
    c = srv.client()
    c.set("a", 1)
    srv.stop()
    with open(logs(srv)[-1], "ab") as f:
        f.write(b"\0" * 4096)
    srv = srv.start()
    assert srv.client().get("a") == b"1"


def test_damage_in_the_middle_stops_the_start_and_names_the_offset(start_server):
    srv = start_server("--appendfsync", "always", "--save", "")  # no snapshot at stop
    c = srv.client()
    for i in range(50):
        c.set(f"k{i}", "v" * 20)
    srv.stop()
    log = logs(srv)[-1]
    data = bytearray(log.read_bytes())
    at = len(data) // 2
    data[at] ^= 0xFF
    log.write_bytes(bytes(data))
    proc_args = srv.argv()
    import subprocess

    out = subprocess.run(proc_args, capture_output=True, timeout=20, cwd=srv.workdir,
                         stdin=subprocess.DEVNULL)
    text = (out.stdout + out.stderr).decode(errors="replace")
    assert out.returncode != 0
    assert log.name in text
    assert "offset" in text
    assert "larder check-data" in text


def test_a_second_server_on_the_same_directory_is_refused(start_server):
    srv = start_server()
    import subprocess

    argv = srv.argv()
    argv[argv.index("--port") + 1] = "0"
    out = subprocess.run(argv, capture_output=True, timeout=20, cwd=srv.workdir,
                         stdin=subprocess.DEVNULL)
    assert out.returncode != 0
    assert "in use by another larder server" in (out.stdout + out.stderr).decode()


def test_persistence_off_creates_nothing(start_server):
    srv = start_server("--appendonly", "no", "--save", "")
    srv.client().set("a", 1)
    assert not data_dir(srv).exists()
    info = srv.client().info("persistence")
    assert info["aof_enabled"] == 0


def test_info_persistence_counts_the_log(start_server):
    srv = start_server("--appendfsync", "always")
    c = srv.client()
    for i in range(20):
        c.set(f"k{i}", i)
    info = c.info("persistence")
    assert info["aof_enabled"] == 1
    assert info["loading"] == 0
    assert info["aof_last_write_status"] == "ok"
    assert info["aof_fsyncs"] >= 1
    assert info["aof_current_size"] > 20 * 20
    assert info["rdb_changes_since_last_save"] >= 20


def test_appendfsync_is_settable_at_run_time(start_server):
    srv = start_server()
    c = srv.client()
    assert c.config_get("appendfsync") == {"appendfsync": "everysec"}
    c.config_set("appendfsync", "always")
    assert c.config_get("appendfsync") == {"appendfsync": "always"}
    for _ in range(50):
        c.set("k", "v")
    assert c.info("persistence")["aof_fsyncs"] >= 1
    with pytest.raises(Exception, match="argument"):
        c.config_set("appendfsync", "sometimes")
    # Immutable ones, as Redis's are at run time (dir) or as larder chose (appendonly).
    with pytest.raises(Exception):
        c.config_set("dir", "/tmp")


def test_transactions_replay_whole(start_server):
    srv = start_server("--appendfsync", "always")
    c = srv.client()
    p = c.pipeline(transaction=True)
    p.set("a", 1)
    p.incr("a")
    p.rpush("l", "x", "y")
    p.execute()
    srv = restart(srv)
    c = srv.client()
    assert c.get("a") == b"2"
    assert c.lrange("l", 0, -1) == [b"x", b"y"]


def test_expired_and_deleted_keys_stay_gone(start_server):
    srv = start_server("--appendfsync", "always")
    c = srv.client()
    c.set("short", "v", px=50)
    c.set("gone", "v")
    c.delete("gone")
    c.set("kept", "v")
    time.sleep(0.3)
    assert c.get("short") is None  # expired (lazily or by the expiry thread): logged as DEL
    srv = restart(srv)
    c = srv.client()
    assert c.get("short") is None
    assert c.get("gone") is None
    assert c.get("kept") == b"v"
    assert os.path.isdir(data_dir(srv))


# -- snapshots --------------------------------------------------------------------------------


def snapshots(srv) -> list[Path]:
    return sorted(data_dir(srv).glob("snapshot-*.lsnap"))


def wait_for(pred, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_bgsave_compacts_the_log_and_recovery_uses_snapshot_then_log(start_server):
    srv = start_server("--appendfsync", "always")
    c = srv.client()
    fill_every_type(c)
    for i in range(500):
        c.set(f"k{i}", i)
    assert c.bgsave() == b"Background saving started"
    assert wait_for(lambda: c.info("persistence")["rdb_saves"] == 1)
    assert len(snapshots(srv)) == 1
    # The log restarted at the snapshot's point: only the new file is left.
    assert len(logs(srv)) == 1
    c.set("after", "snapshot")
    c.incr("k1")
    before = dataset(c)
    srv = restart(srv)
    assert dataset(srv.client()) == before
    assert "snapshot loaded" in srv.log_text()
    info = srv.client().info("persistence")
    assert info["rdb_last_load_keys_loaded"] == len(before)


def test_save_lastsave_and_info(start_server):
    srv = start_server()
    c = srv.client()
    c.set("a", 1)
    before = c.lastsave()
    time.sleep(1.1)
    assert c.save() is True
    assert c.lastsave() > before
    assert srv.raw().call("LASTSAVE") == int(c.lastsave().timestamp())
    # Redis 7.0 lets a script call LASTSAVE (it is not flagged noscript).
    assert c.eval("return redis.call('LASTSAVE')", 0) == int(c.lastsave().timestamp())
    info = c.info("persistence")
    assert info["rdb_changes_since_last_save"] == 0
    assert info["rdb_last_bgsave_status"] == "ok"
    c.set("b", 2)
    assert c.info("persistence")["rdb_changes_since_last_save"] == 1


def test_bgrewriteaof_and_scheduling_replies(start_server):
    srv = start_server("--key-load-delay", "0")
    c = srv.client()
    for i in range(1000):
        c.set(f"k{i}", "v" * 100)
    assert c.execute_command("BGREWRITEAOF") in (
        b"Background append only file rewriting started",
        "Background append only file rewriting started",
    )
    assert wait_for(lambda: c.info("persistence")["aof_rewrites"] == 1)
    assert c.execute_command("BGSAVE", "SCHEDULE") in (b"Background saving started",
                                                       b"Background saving scheduled")
    assert wait_for(lambda: c.info("persistence")["rdb_saves"] == 1)
    with pytest.raises(Exception, match="syntax error"):
        c.execute_command("BGSAVE", "NOW")


def test_auto_rewrite_when_the_log_doubles(start_server):
    srv = start_server("--auto-aof-rewrite-min-size", "64kb", "--auto-aof-rewrite-percentage",
                       "100")
    c = srv.client()

    def persistence():
        return c.info("persistence")

    def write(n: int, start: int = 0) -> None:
        p = c.pipeline(transaction=False)
        for i in range(start, start + n):
            p.set(f"key:{i % 100}", "x" * 50)
        p.execute()

    # One SET as the log holds it (RESP), to know how much was written.
    one_set = len(b"*3\r\n$3\r\nSET\r\n$6\r\nkey:10\r\n$50\r\n" + b"x" * 50 + b"\r\n")
    write(3000)
    assert wait_for(lambda: persistence()["aof_rewrites"] >= 1)
    assert wait_for(lambda: persistence()["aof_rewrite_in_progress"] == 0)
    # The rewrite folded the log into a snapshot: what is left is what was written while
    # and after it ran, less than everything. As in Redis, the base the next rewrite is
    # measured against is the log's size when this one ended, so how small the log ends
    # depends on how many writes came during the rewrite.
    info = persistence()
    assert info["aof_current_size"] < 3000 * one_set, info
    # Doubling the log from that base (and passing the minimum) starts the next rewrite.
    rewrites, base = info["aof_rewrites"], info["aof_base_size"]
    target = max(64 * 1024, 2 * base) - info["aof_current_size"]
    write(target // one_set + 100, start=3000)
    assert wait_for(lambda: persistence()["aof_rewrites"] > rewrites), persistence()
    srv = restart(srv)
    assert srv.client().dbsize() == 100


def test_snapshot_during_heavy_writes_matches_the_model(start_server):
    """Writers keep changing keys while snapshots run; after kill -9 (always) the data equals
    what the writers were acknowledged, whatever moment each snapshot captured."""
    srv = start_server("--appendfsync", "always")
    c = srv.client()
    p = c.pipeline(transaction=False)
    for i in range(20_000):
        p.set(f"w0:{i % 20}" if i < 20 else f"bulk:{i}", i)
    p.execute()
    with Writers(srv, threads=4) as w:
        for _ in range(3):
            c.bgsave()
            wait_for(lambda: c.info("persistence")["rdb_bgsave_in_progress"] == 0)
            time.sleep(0.05)
        acked = dict(w.acked)
    time.sleep(0.2)
    srv = restart(srv)
    c = srv.client()
    for key, value in acked.items():
        assert int(c.get(key)) >= value, key
    assert c.get("bulk:19999") == b"19999"


def test_shutdown_saves_by_the_rules_and_nosave_does_not(start_server):
    srv = start_server("--save", "3600 1")
    c = srv.client()
    c.set("a", 1)
    srv.stop()
    assert len(snapshots(srv)) == 1
    srv = srv.start()
    c = srv.client()
    c.set("b", 2)
    try:
        c.shutdown(nosave=True)
    except Exception:
        pass
    srv.wait_exit()
    assert len(snapshots(srv)) == 1
    srv = srv.start()
    assert srv.client().mget("a", "b") == [b"1", b"2"]  # the log has b


def test_snapshots_only_without_the_log(start_server):
    srv = start_server("--appendonly", "no", "--save", "3600 1")
    c = srv.client()
    c.set("a", 1)
    assert c.save() is True
    c.set("b", 2)  # not in any file: lost at kill -9, as in Redis with RDB only
    srv = restart(srv)
    c = srv.client()
    assert c.get("a") == b"1"
    assert c.get("b") is None
    assert logs(srv) == []
    assert c.info("persistence")["aof_enabled"] == 0


# -- loading, disk errors, repair -------------------------------------------------------------


def test_clients_get_loading_while_the_data_loads(start_server):
    srv = start_server("--appendfsync", "always")
    c = srv.client()
    for i in range(300):
        c.set(f"k{i}", i)
    srv.stop()
    # 10 ms per log group: about 3 s of loading.
    srv.user_args += ["--key-load-delay", "10000"]
    import subprocess

    proc = subprocess.Popen(srv.argv(), cwd=srv.workdir, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        seen = set()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", srv.port), timeout=2) as s:
                    s.sendall(b"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n*1\r\n$4\r\nINFO\r\n")
                    reply = s.recv(65536)
                    seen.add(reply[:8])
                    if reply.startswith(b"-LOADING") and b"loading:1" in reply:
                        seen.add(b"info-during-loading")
                    if reply.startswith(b"$1\r\n1"):
                        break
            except OSError:
                pass
            time.sleep(0.05)
        assert b"-LOADING" in seen, seen
        assert b"info-during-loading" in seen, seen
    finally:
        proc.kill()
        proc.wait()


def test_a_disk_error_refuses_writes_until_a_snapshot_and_new_log_succeed(start_server):
    srv = start_server("--appendfsync", "always")
    c = srv.client()
    c.set("before", 1)
    c.config_set("aof-test-fail-writes", "yes")
    with pytest.raises(Exception, match="MISCONF Errors writing to the AOF file"):
        c.set("lost", 1)  # its fsync fails: the client gets an error, not OK
    c = srv.client()
    with pytest.raises(Exception, match="MISCONF"):
        c.set("refused", 1)
    assert c.get("before") == b"1"  # reads go on
    info = c.info("persistence")
    assert info["aof_last_write_status"] == "err"
    c.config_set("aof-test-fail-writes", "no")
    # The saver retries every 5 s; a snapshot and a new log bring writes back.
    assert wait_for(lambda: _accepts_writes(c), timeout=15)
    srv = restart(srv)
    c = srv.client()
    assert c.get("before") == b"1"
    assert c.get("refused") is None
    assert c.get("after") == b"1"


def _accepts_writes(c) -> bool:
    try:
        c.set("after", 1)
        return True
    except Exception:
        return False


def test_check_data_reports_and_fixes(start_server):
    import subprocess
    from conftest import larder_bin

    srv = start_server("--appendfsync", "always", "--save", "")  # no snapshot at stop
    c = srv.client()
    for i in range(50):
        c.set(f"k{i}", "v" * 20)
    srv.stop()
    d = data_dir(srv)
    ok = subprocess.run([str(larder_bin()), "check-data", str(d)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "no damage found" in ok.stdout
    log = logs(srv)[-1]
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF
    log.write_bytes(bytes(data))
    bad = subprocess.run([str(larder_bin()), "check-data", str(d)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert "DAMAGED at offset" in bad.stdout
    fixed = subprocess.run([str(larder_bin()), "check-data", str(d), "--fix"],
                           capture_output=True, text=True)
    assert "cut" in fixed.stdout
    again = subprocess.run([str(larder_bin()), "check-data", str(d)], capture_output=True,
                           text=True)
    assert again.returncode == 0, again.stdout
    srv = srv.start()
    c = srv.client()
    assert c.get("k0") == b"v" * 20
    assert c.get("k49") is None  # after the damage: lost, as check-data said


def test_replay_ignores_maxmemory(start_server):
    """The log is replayed whole even when the data is over maxmemory now: replay neither
    evicts nor refuses what was accepted once (the clients' commands afterwards evict, as
    Redis's do after loading)."""
    srv = start_server("--appendfsync", "always", "--save", "")
    c = srv.client()
    for i in range(2000):
        c.set(f"k{i}", "v" * 500)
    srv.kill()
    srv.user_args += ["--maxmemory", "1mb", "--maxmemory-policy", "allkeys-lru"]
    srv = srv.start()
    assert "DB loaded from disk keys=2000" in srv.log_text()
