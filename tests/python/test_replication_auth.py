"""Replication with ACL users and passwords: the minimal replica user docs/replication.md
gives (`+psync +replconf +ping`) on a larder master, for a larder replica (`masteruser`/
`masterauth`) and for a redis-server replica; a larder replica of a redis-server master with
`requirepass` (`masterauth` alone); a wrong password keeps the link down with Redis's
error in the log; and the Sentinel user of the docs can run every command Sentinel 7.0
sends to a monitored node.
"""

from __future__ import annotations

import pytest
import redis

from test_replication_master import contents, fill, info, until

pytestmark = pytest.mark.larder_only

REPLICA_USER = ["replica-user", "on", ">replica-password", "+psync", "+replconf", "+ping"]
SENTINEL_USER = ["sentinel-user", "on", ">sentinel-password", "allchannels", "+multi",
                 "+slaveof", "+ping", "+exec", "+subscribe", "+config|rewrite", "+role",
                 "+publish", "+info", "+client|setname", "+client|kill", "+script|kill"]


def link_up(srv) -> bool:
    return info(srv, "replication").get("master_link_status") == "up"


def same_keys(m: redis.Redis, rep) -> bool:
    return contents(m, 0) == contents(rep.client(protocol=2), 0)


def guarded_master(start_server):
    """A larder master where `default` needs a password and the replica user exists."""
    master = start_server()
    m = master.client(protocol=2)
    m.execute_command("ACL", "SETUSER", *REPLICA_USER)
    m.execute_command("ACL", "SETUSER", "default", "resetpass", ">admin-password")
    m = redis.Redis(port=master.port, password="admin-password", protocol=2)
    fill(m, 0)
    return master, m


def test_larder_replica_with_the_minimal_replica_user(start_server) -> None:
    master, m = guarded_master(start_server)
    rep = start_server("--masteruser", "replica-user", "--masterauth", "replica-password",
                       "--replicaof", f"127.0.0.1 {master.port}")
    until("master_link_status:up", lambda: link_up(rep))
    until("the replica holds every key", lambda: same_keys(m, rep))
    m.set("after", "1")
    assert m.execute_command("WAIT", 1, 2000) == 1
    until("the write arrives", lambda: rep.client(protocol=2).get("after") == b"1")


def test_redis_replica_with_the_minimal_replica_user(start_server, redis_factory) -> None:
    master, m = guarded_master(start_server)
    rep = redis_factory("--masteruser", "replica-user", "--masterauth", "replica-password",
                        "--replicaof", "127.0.0.1", str(master.port))
    until("master_link_status:up", lambda: link_up(rep))
    until("the replica holds every key", lambda: same_keys(m, rep))


def test_larder_replica_of_a_redis_master_with_requirepass(start_server, redis_factory) -> None:
    master = redis_factory("--requirepass", "secret")
    m = redis.Redis(port=master.port, password="secret", protocol=2)
    m.set("k", "v")
    rep = start_server("--masterauth", "secret", "--replicaof", f"127.0.0.1 {master.port}")
    until("master_link_status:up", lambda: link_up(rep))
    until("k arrives", lambda: rep.client(protocol=2).get("k") == b"v")


def test_a_wrong_password_keeps_the_link_down(start_server) -> None:
    master, m = guarded_master(start_server)
    rep = start_server("--masteruser", "replica-user", "--masterauth", "not-the-password",
                       "--replicaof", f"127.0.0.1 {master.port}")
    until("a refused AUTH in the log",
          lambda: "WRONGPASS" in rep.log_path.read_text(errors="replace"))
    assert not link_up(rep)
    # The right password at run time: the next attempt succeeds.
    rep.client(protocol=2).config_set("masterauth", "replica-password")
    until("master_link_status:up", lambda: link_up(rep))


def test_the_sentinel_user_runs_what_sentinel_sends(start_server) -> None:
    master = start_server()
    admin = master.client(protocol=2)
    admin.execute_command("ACL", "SETUSER", *SENTINEL_USER)
    s = redis.Redis(port=master.port, username="sentinel-user", password="sentinel-password",
                    protocol=2)
    assert s.ping()
    assert s.execute_command("CLIENT", "SETNAME", "sentinel-abc-cmd") == b"OK"
    assert s.info()["role"] == "master"
    assert s.execute_command("ROLE")[0] == b"master"
    assert s.publish("__sentinel__:hello", "127.0.0.1,26379,abc,0,mymaster,127.0.0.1,6379,0") == 0
    p = s.pubsub()
    p.subscribe("__sentinel__:hello")
    p.close()
    with pytest.raises(redis.ResponseError, match="NOTBUSY"):
        s.execute_command("SCRIPT", "KILL")
    # Sentinel's failover transaction, here turning the master into a master (NO ONE).
    assert s.execute_command("MULTI") == b"OK"
    for cmd in (("SLAVEOF", "NO", "ONE"), ("CONFIG", "REWRITE"),
                ("CLIENT", "KILL", "TYPE", "normal"), ("CLIENT", "KILL", "TYPE", "pubsub")):
        s.execute_command(*cmd)  # queued (redis-py reads SLAVEOF's +QUEUED as a bool)
    slaveof, rewrite, killed_normal, killed_pubsub = s.execute_command("EXEC")
    assert slaveof == b"OK"
    # Allowed, and refused only because this server was started without a config file.
    assert isinstance(rewrite, redis.ResponseError) and "config file" in str(rewrite)
    assert killed_normal == 1 and killed_pubsub == 0  # the admin client, not itself
    # What it may not do.
    with pytest.raises(redis.exceptions.NoPermissionError):
        s.set("k", "v")
