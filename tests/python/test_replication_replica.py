"""larder as a replica (REPLICAOF): of a larder master and of a stock redis-server 7.0,
full and partial resyncs, the read-only and stale-data gates, promotion with REPLICAOF NO
ONE (a sibling continues with a partial resync), a replica behind past the backlog, a
master killed during a full resync, the link cut by the master in the middle of the file,
and expiry that follows the master's DELs.

Every test starts its own processes with small data and polls with a deadline.
larder's versions and memcached flags between larders: test_replication_meta.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import redis

from conftest import Err, Server, start_with_http
from test_replication_master import contents, fill, info, same_data, until, write_after_sync

pytestmark = pytest.mark.larder_only


def link_up(srv: Server) -> bool:
    return info(srv, "replication").get("master_link_status") == "up"


def follow(rep: Server, master: Server) -> None:
    assert rep.client(protocol=2).execute_command(
        "REPLICAOF", "127.0.0.1", master.port) == b"OK"
    until("master_link_status:up", lambda: link_up(rep))


def test_larder_replica_of_larder(start_server) -> None:
    master = start_server()
    m = master.client(protocol=2)
    fill(m, 0)
    fill(m, 3)
    rep = start_server("--replicaof", f"127.0.0.1 {master.port}")
    until("master_link_status:up", lambda: link_up(rep))
    until("the replica holds every key", lambda: same_data(master, rep))
    r = rep.client(protocol=2)
    assert contents(r, 3)[b"ttl-str"][2] > 0

    write_after_sync(m)
    until("the replica follows", lambda: same_data(master, rep))
    assert m.execute_command("WAIT", 1, 2000) == 1

    i = info(rep, "replication")
    assert (i["role"], i["master_host"], i["master_port"]) == (
        "slave", "127.0.0.1", str(master.port))
    assert i["master_sync_in_progress"] == "0"
    assert (i["slave_priority"], i["slave_read_only"], i["replica_announced"]) == ("100", "1", "1")
    assert i["master_replid"] == info(master, "replication")["master_replid"]
    until("offsets agree", lambda: info(rep, "replication")["slave_repl_offset"]
          == info(master, "replication")["master_repl_offset"])
    role = r.execute_command("ROLE")
    assert role[:4] == [b"slave", b"127.0.0.1", master.port, b"connected"]
    assert role[4] == int(info(rep, "replication")["master_repl_offset"])
    assert "flags=M" in r.execute_command("CLIENT", "LIST", "TYPE", "master").decode()
    # The master sees the replica with the port it listens on.
    assert m.execute_command("ROLE")[2][0][1] == str(rep.port).encode()


def test_larder_replica_of_redis(start_server, redis_factory) -> None:
    master = redis_factory()
    m = master.client(protocol=2)
    fill(m, 0)
    fill(m, 3)
    rep = start_server()
    follow(rep, master)
    until("the replica holds every key", lambda: same_data(master, rep))
    m.execute_command("SELECT", 3)
    m.set("live", "v", px=100_000)
    with m.pipeline(transaction=True) as p:
        p.incr("n")
        p.rpush("list", "x")
        p.execute()
    until("the replica follows", lambda: same_data(master, rep))
    assert m.execute_command("WAIT", 1, 2000) == 1


def test_read_only_gate_and_replicaof_replies(start_server) -> None:
    master = start_server()
    rep = start_server()
    r = rep.client(protocol=2)
    with pytest.raises(redis.ResponseError, match="^Invalid master port$"):
        r.execute_command("REPLICAOF", "127.0.0.1", "70000")
    follow(rep, master)
    assert r.execute_command("REPLICAOF", "127.0.0.1", master.port) == (
        b"OK Already connected to specified master")
    with pytest.raises(redis.ReadOnlyError,
                       match="You can't write against a read only replica."):
        r.set("k", "v")
    assert r.get("k") is None
    r.config_set("replica-read-only", "no")
    assert r.set("k", "v")
    r.config_set("replica-read-only", "yes")

    r.config_set("replica-serve-stale-data", "no")
    master.kill()
    until("the link is down", lambda: info(rep, "replication")["master_link_status"] == "down")
    with pytest.raises(redis.ResponseError) as e:
        r.get("k")
    assert "Link with MASTER is down and replica-serve-stale-data is set to 'no'." in str(e.value)
    i = info(rep, "replication")
    assert int(i["master_link_down_since_seconds"]) >= 0
    role = r.execute_command("ROLE")
    assert role[3] in (b"connect", b"connecting", b"handshake") and role[4] == -1
    assert r.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    assert r.execute_command("ROLE")[0] == b"master"
    assert r.set("k", "w") and r.get("k") == b"w"


def test_link_killed_resumes_with_a_partial_resync(start_server) -> None:
    master = start_server()
    m = master.client(protocol=2)
    fill(m, 0)
    rep = start_server("--replicaof", f"127.0.0.1 {master.port}")
    until("synced", lambda: link_up(rep) and same_data(master, rep, dbs=(0,)))
    assert rep.client(protocol=2).execute_command("CLIENT", "KILL", "TYPE", "master") == 1
    for i in range(50):
        m.set(f"later{i}", i)
    until("a partial resync", lambda: info(master, "stats")["sync_partial_ok"] == "1")
    until("the writes arrive", lambda: same_data(master, rep, dbs=(0,)))
    assert info(master, "stats")["sync_full"] == "1"


def test_promoted_replica_serves_its_sibling_a_partial_resync(start_server) -> None:
    master = start_server()
    m = master.client(protocol=2)
    fill(m, 0)
    a = start_server("--replicaof", f"127.0.0.1 {master.port}")
    b = start_server("--replicaof", f"127.0.0.1 {master.port}")
    until("both synced", lambda: same_data(master, a, dbs=(0,))
          and same_data(master, b, dbs=(0,)))
    m.set("last", "1")
    assert m.execute_command("WAIT", 2, 2000) == 2
    old = info(master, "replication")["master_replid"]
    master.kill()
    ac = a.client(protocol=2)
    assert ac.execute_command("SLAVEOF", "NO", "ONE") is True  # redis-py reads +OK so
    ia = info(a, "replication")
    assert ia["role"] == "master" and ia["master_replid2"] == old
    assert int(ia["second_repl_offset"]) == int(ia["master_repl_offset"]) + 1
    ac.set("after-promotion", "1")
    follow(b, a)
    until("b follows a", lambda: same_data(a, b, dbs=(0,)))
    stats = info(a, "stats")
    assert (stats["sync_full"], stats["sync_partial_ok"]) == ("0", "1")
    assert info(b, "replication")["master_replid"] == info(a, "replication")["master_replid"]


def test_a_replica_behind_past_the_backlog_gets_a_full_resync(start_server) -> None:
    master = start_server("--repl-backlog-size", "16kb")
    m = master.client(protocol=2)
    rep = start_server("--replicaof", f"127.0.0.1 {master.port}")
    until("synced", lambda: link_up(rep))
    rep.client(protocol=2).execute_command("CLIENT", "KILL", "TYPE", "master")
    for i in range(200):
        m.set(f"k{i}", "x" * 500)
    until("a second full resync", lambda: info(master, "stats")["sync_full"] == "2")
    until("the replica catches up", lambda: same_data(master, rep, dbs=(0,)))


def test_master_killed_during_a_full_resync(start_server, tmp_path: Path) -> None:
    data = tmp_path / "master-data"
    data.mkdir()
    master = start_server("--dir", str(data), "--appendonly", "yes")
    m = master.client(protocol=2)
    for start in range(0, 4000, 500):
        m.mset({f"key{i}": "v" * 200 for i in range(start, start + 500)})
    # The replica reads the file slowly (key-load-delay applies per read of the file).
    rep = start_server("--key-load-delay", "2000")
    rep.client(protocol=2).execute_command("REPLICAOF", "127.0.0.1", master.port)
    until("the transfer is under way",
          lambda: info(rep, "replication").get("master_sync_in_progress") == "1")
    master.kill()
    until("the link is down and not syncing",
          lambda: info(rep, "replication").get("master_sync_in_progress") == "0")
    master._spawn_and_wait()
    rep.client(protocol=2).config_set("key-load-delay", "0")
    until("the replica is consistent again",
          lambda: link_up(rep) and same_data(master, rep, dbs=(0,)))


def test_link_cut_mid_transfer_from_the_masters_side(start_server) -> None:
    master = start_server()
    m = master.client(protocol=2)
    # 16 MB of file that does not compress: more than the sockets between them hold, so
    # the cut lands while the master still has file to send.
    for start in range(0, 16000, 1000):
        m.mset({f"key{i}": os.urandom(1000) for i in range(start, start + 1000)})
    rep = start_server("--key-load-delay", "200")  # µs per read: the file loads slowly
    rep.client(protocol=2).execute_command("REPLICAOF", "127.0.0.1", master.port)
    until("the transfer is under way",
          lambda: info(rep, "replication").get("master_sync_in_progress") == "1")
    # The master cuts the replica's connection in the middle of its file.
    assert m.execute_command("CLIENT", "KILL", "TYPE", "replica") == 1
    until("the replica sees the link down",
          lambda: info(rep, "replication").get("master_sync_in_progress") == "0"
          or info(master, "stats")["sync_full"] == "2")
    rep.client(protocol=2).config_set("key-load-delay", "0")
    m.set("after-the-cut", "1")
    r = rep.client(protocol=2)

    def same_keys() -> bool:
        names = [f"key{i}" for i in range(16000)] + ["after-the-cut"]
        return r.dbsize() == m.dbsize() == len(names) and all(
            r.mget(names[k:k + 1000]) == m.mget(names[k:k + 1000])
            for k in range(0, len(names), 1000))

    until("a second full resync completes", lambda: link_up(rep) and same_keys())
    assert info(master, "stats")["sync_full"] == "2"
    assert info(master, "replication")["connected_slaves"] == "1"


def test_expiry_follows_the_masters_del(start_server) -> None:
    master = start_server("--enable-debug-command", "yes")
    m = master.client(protocol=2)
    m.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    rep = start_server("--replicaof", f"127.0.0.1 {master.port}")
    until("synced", lambda: link_up(rep))
    r = rep.client(protocol=2)
    m.set("short", "v", px=200)
    until("the key arrives", lambda: r.exists("short") == 1)
    until("its deadline passes", lambda: r.get("short") is None)
    # Hidden, not deleted: only the master's DEL removes it.
    assert r.dbsize() == 1
    assert m.get("short") is None  # the master expires it and sends DEL
    until("the DEL arrives", lambda: r.dbsize() == 0)


def test_doors_of_a_replica_serve_reads_and_name_the_master(start_server) -> None:
    master = start_server()
    m = master.client(protocol=2)
    m.set("k", "from-master")
    rep = start_with_http(start_server, "--replicaof", f"127.0.0.1 {master.port}")
    until("master_link_status:up", lambda: link_up(rep))
    until("k replicated", lambda: rep.client(protocol=2).get("k") == b"from-master")

    with socket.create_connection(("127.0.0.1", rep.mc_port), timeout=5) as s:
        f = s.makefile("rb")
        s.sendall(b"get k\r\n")
        assert f.readline() == b"VALUE k 0 11\r\n"
        assert f.readline() == b"from-master\r\n"
        assert f.readline() == b"END\r\n"
        s.sendall(b"set k 0 0 1\r\nx\r\n")
        assert f.readline() == (
            b"SERVER_ERROR READONLY You can't write against a read only replica "
            b"(master: 127.0.0.1:%d)\r\n" % master.port)
    with urllib.request.urlopen(f"{rep.http_url}/v1/kv/k", timeout=5) as resp:
        assert resp.read() == b"from-master"
    put = urllib.request.Request(f"{rep.http_url}/v1/kv/k", data=b"y", method="PUT")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(put, timeout=5)
    assert e.value.code == 409
    assert json.loads(e.value.read())["master"] == f"127.0.0.1:{master.port}"
    assert rep.client(protocol=2).get("k") == b"from-master"

    # A writable replica's doors write (replica-read-only no), as its RESP clients do.
    rep.client(protocol=2).config_set("replica-read-only", "no")
    with socket.create_connection(("127.0.0.1", rep.mc_port), timeout=5) as s:
        f = s.makefile("rb")
        s.sendall(b"set local 0 0 1\r\nz\r\n")
        assert f.readline() == b"STORED\r\n"


def test_config_rewrite_keeps_the_master(start_server) -> None:
    """CONFIG REWRITE writes `replicaof` from the current master (Sentinel's failover
    transaction relies on it) and drops it after REPLICAOF NO ONE, as Redis does."""
    master = start_server()
    master.client(protocol=2).set("k", "v")
    rep = start_server(config_text="# replica\nmaxclients 100\n")
    follow(rep, master)
    r = rep.client(protocol=2)
    assert r.config_get("replicaof") == {"replicaof": f"127.0.0.1 {master.port}"}
    assert r.execute_command("CONFIG", "REWRITE") == b"OK"
    lines = rep.config_path.read_text().splitlines()
    assert f"replicaof 127.0.0.1 {master.port}" in lines, lines
    assert lines[:2] == ["# replica", "maxclients 100"]

    rep.stop()
    rep.config_text = None  # start again from the rewritten file
    rep.start()
    until("master_link_status:up", lambda: link_up(rep))
    r = rep.client(protocol=2)
    assert r.get("k") == b"v"
    assert r.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    assert r.config_get("replicaof") == {"replicaof": ""}
    assert r.execute_command("CONFIG", "REWRITE") == b"OK"
    assert not any(line.startswith("replicaof") for line in
                   rep.config_path.read_text().splitlines())
    rep.stop()
    rep.start()
    assert info(rep, "replication")["role"] == "master"


def test_scripts_cannot_write_on_a_read_only_replica(start_server) -> None:
    """redis.call of a write gets -READONLY (pcall the error table), a script whose shebang
    allows writes is refused before it runs, and reads still work; as Redis 7.0."""
    master = start_server()
    master.client(protocol=2).set("k", "v")
    rep = start_server("--replicaof", f"127.0.0.1 {master.port}")
    until("master_link_status:up", lambda: link_up(rep))
    until("the replica holds k", lambda: rep.client(protocol=2).get("k") == b"v")
    c = rep.raw()
    readonly = "READONLY You can't write against a read only replica."
    body = "return redis.call('set','k','x')"
    sha = hashlib.sha1(body.encode()).hexdigest()
    assert c.call("EVAL", body, 0) == Err(
        f"{readonly} script: {sha}, on @user_script:1.")
    assert c.call("EVAL", "return redis.pcall('set','k','x')", 0) == Err(readonly)
    assert c.call("EVAL", "#!lua\nreturn redis.call('get','k')", 0) == Err(readonly)
    assert c.call("EVAL_RO", "#!lua\nreturn redis.call('get','k')", 0) == Err(readonly)
    assert c.call("EVAL", "#!lua flags=no-writes\nreturn redis.call('get','k')", 0) == b"v"
    assert c.call("EVAL", "return redis.call('get','k')", 0) == b"v"
    assert rep.client(protocol=2).get("k") == b"v"


def test_a_restarted_replica_loads_its_own_data_before_it_syncs(start_server) -> None:
    """A node restarted with `--replicaof` (a killed master that Sentinel turns into a
    replica) replays its own log first, then syncs: none of its own keys outlive the
    master's file, and its offset is the master's (a full resync loaded beside the replay
    left keys of both and a replica ahead of its master)."""
    master = start_server()
    m = master.client(protocol=2)
    m.mset({f"m{i}": "master" for i in range(100)})
    rep = start_server("--appendfsync", "always")
    r = rep.client(protocol=2)
    with r.pipeline(transaction=False) as p:
        for i in range(300):
            p.set(f"own{i}", "local")
        p.set("m0", "local")
        p.execute()
    rep.kill()
    # 5 ms per log group (a command each): the replay takes over a second.
    rep.user_args += ["--key-load-delay", "5000", "--replicaof", f"127.0.0.1 {master.port}"]
    rep._spawn_and_wait()
    until("synced", lambda: link_up(rep), timeout=30)
    m.set("after", "1")
    until("the write after the sync arrives", lambda: r.get("after") == b"1")
    assert r.dbsize() == m.dbsize() == 101
    assert r.get("m0") == b"master"
    until("offsets agree", lambda: info(rep, "replication")["master_repl_offset"]
          == info(master, "replication")["master_repl_offset"])


def test_replicaof_elsewhere_applies_nothing_more_from_the_old_master(start_server) -> None:
    """A replica switched back and forth between two sources of one history (its master
    and a sibling) while the master counts: the old link applies nothing once REPLICAOF has
    answered, so a partial resync from the new source never repeats a command the replica
    applied (it was counted twice, and the offset stayed ahead of the master's for good).
    After each round the counting pauses and the replica must hold the master's count at
    the master's offset."""
    master = start_server()
    sibling = start_server("--replicaof", f"127.0.0.1 {master.port}")
    rep = start_server("--replicaof", f"127.0.0.1 {master.port}")
    until("both follow the master", lambda: link_up(sibling) and link_up(rep))
    m, r = master.client(protocol=2), rep.client(protocol=2)
    running, stop = threading.Event(), threading.Event()

    def count() -> None:
        c = master.client(protocol=2)
        while not stop.is_set():
            if running.wait(0.05):
                c.incr("n")
                time.sleep(0.001)

    writer = threading.Thread(target=count, daemon=True)
    writer.start()
    try:
        for round in range(10):
            running.set()
            follow(rep, sibling)
            follow(rep, master)
            running.clear()
            time.sleep(0.01)
            until(f"round {round}: the replica holds the master's count at its offset",
                  lambda: r.get("n") == m.get("n")
                  and info(rep, "replication")["master_repl_offset"]
                  == info(master, "replication")["master_repl_offset"], timeout=5)
    finally:
        stop.set()
        writer.join()
    assert int(m.get("n")) > 10


def test_a_sub_replica_full_resync_never_splits_a_transaction(start_server) -> None:
    """A replica passes its master's stream on to its own replica (a chain, as Sentinel
    leaves a restarted node that was started with `--replicaof` its old master). The point
    of a full resync it serves falls between whole transactions, as Redis's replica advances
    its offset only after EXEC: a point between MULTI and EXEC sent the sub-replica the EXEC
    alone, and the transaction's writes never reached it."""
    master = start_server()
    middle = start_server("--replicaof", f"127.0.0.1 {master.port}")
    sub = start_server("--replicaof", f"127.0.0.1 {middle.port}")
    until("the chain is up", lambda: link_up(middle) and link_up(sub))
    stop = threading.Event()

    def transactions() -> None:
        c = master.client(protocol=2)
        while not stop.is_set():
            with c.pipeline(transaction=True) as p:
                for _ in range(20):
                    p.incr("a")
                    p.incr("b")
                p.execute()

    writer = threading.Thread(target=transactions, daemon=True)
    writer.start()
    s = sub.client(protocol=2)
    try:
        for _ in range(8):
            # Its own history after NO ONE: following `middle` again is a full resync.
            assert s.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
            follow(sub, middle)
    finally:
        stop.set()
        writer.join()
    m = master.client(protocol=2)
    assert int(info(middle, "stats")["sync_full"]) >= 9
    until("the sub-replica has every transaction",
          lambda: s.mget("a", "b") == m.mget("a", "b"), timeout=5)
    assert s.get("a") == s.get("b")
