"""What a larder master guarantees its writers and shows Sentinel: min-replicas-to-write /
min-replicas-max-lag (NOREPLICAS while too few replicas acknowledged recently), the
address a replica announces (REPLCONF ip-address) in INFO and ROLE, the replica-* and
min-replicas-* parameters, and Sentinel's failover transaction accepted inside MULTI.

The replicas are redis-server 7.0 processes; every wait polls with a deadline.
"""

from __future__ import annotations

import signal
import time
from typing import Callable

import pytest
import redis

from conftest import Server, ServerFactory

pytestmark = pytest.mark.larder_only

DEADLINE_S = 15.0
NOREPLICAS = "NOREPLICAS Not enough good replicas to write."


def until(what: str, check: Callable[[], bool], timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def info(srv: Server, section: str) -> dict:
    return srv.client(protocol=2, decode_responses=True).info(section)


def set_answer(c: redis.Redis) -> str:
    try:
        return str(c.set("k", "v"))
    except redis.ResponseError as e:
        return str(e)


def test_min_replicas_to_write_follows_the_replicas_acknowledgements(
        start_server: ServerFactory, redis_factory: ServerFactory) -> None:
    master = start_server("--min-replicas-to-write", "1", "--min-replicas-max-lag", "1")
    m = master.client(protocol=2, decode_responses=True)
    assert set_answer(m) == NOREPLICAS
    assert info(master, "replication")["min_slaves_good_slaves"] == 0
    # Reads and non-write commands still run.
    assert m.get("k") is None
    assert m.ping()

    rep = redis_factory("--replicaof", "127.0.0.1", str(master.port))
    until("a good replica lets writes through", lambda: set_answer(m) == "True")
    assert info(master, "replication")["min_slaves_good_slaves"] == 1

    # A replica that stops acknowledging stops counting after max-lag seconds.
    assert rep.proc is not None
    rep.proc.send_signal(signal.SIGSTOP)
    try:
        until("writes refused once the replica's ACKs are late",
              lambda: set_answer(m) == NOREPLICAS)
        assert info(master, "replication")["min_slaves_good_slaves"] == 0
        # Turning the check off lets writes through at once.
        m.config_set("min-slaves-to-write", "0")
        assert set_answer(m) == "True"
        assert "min_slaves_good_slaves" not in info(master, "replication")
        m.config_set("min-slaves-to-write", "1")
        assert set_answer(m) == NOREPLICAS
    finally:
        rep.proc.send_signal(signal.SIGCONT)
    until("writes accepted again", lambda: set_answer(m) == "True")


def test_a_replica_is_shown_at_the_address_it_announces(
        start_server: ServerFactory, redis_factory: ServerFactory) -> None:
    master = start_server()
    redis_factory("--replicaof", "127.0.0.1", str(master.port),
                  "--replica-announce-ip", "10.9.8.7", "--replica-announce-port", "7777")
    until("the replica online", lambda: info(master, "replication").get("slave0", {})
          .get("state") == "online")
    slave0 = info(master, "replication")["slave0"]
    assert (slave0["ip"], slave0["port"]) == ("10.9.8.7", 7777)
    role = master.client(protocol=2, decode_responses=True).execute_command("ROLE")
    assert role[2][0][:2] == ["10.9.8.7", "7777"]
    # Redis's bound on the announced address.
    raw = master.client(protocol=2, decode_responses=True)
    with pytest.raises(redis.ResponseError) as e:
        raw.execute_command("REPLCONF", "ip-address", "a" * 256)
    assert str(e.value) == ("REPLCONF ip-address provided by replica instance is too long: "
                            "256 bytes")


def test_the_parameters_sentinel_reads_and_sets(start_server: ServerFactory) -> None:
    srv = start_server()
    c = srv.client(protocol=2, decode_responses=True)
    assert c.config_get("replica-priority") == {"replica-priority": "100"}
    assert c.config_get("slave-priority") == {"slave-priority": "100"}
    assert c.config_get("replica-announce*") == {
        "replica-announce-ip": "", "replica-announce-port": "0", "replica-announced": "yes"}
    assert c.config_get("min-replicas*") == {
        "min-replicas-to-write": "0", "min-replicas-max-lag": "10"}
    c.config_set("slave-priority", "0")
    c.config_set("replica-announce-ip", "10.0.0.5")
    c.config_set("replica-announced", "no")
    assert c.config_get("replica-priority") == {"replica-priority": "0"}
    assert c.config_get("slave-announce-ip") == {"slave-announce-ip": "10.0.0.5"}
    with pytest.raises(redis.ResponseError) as e:
        c.config_set("replica-priority", "-1")
    assert str(e.value) == ("CONFIG SET failed (possibly related to argument "
                            "'replica-priority') - argument must be between 0 and "
                            "2147483647 inclusive")


def test_the_failover_transaction_is_accepted_inside_multi(
        start_server: ServerFactory) -> None:
    srv = start_server(config_text="port 6379\n")
    c = srv.client(protocol=2, decode_responses=True)
    victim = srv.client(protocol=2, decode_responses=True)
    victim.client_setname("victim")
    victim.ping()
    c.config_set("replica-priority", "42")
    pipe = c.pipeline(transaction=True)
    pipe.config_rewrite()
    pipe.execute_command("CLIENT", "KILL", "TYPE", "normal")
    pipe.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
    rewrite, killed_normal, killed_pubsub = pipe.execute()
    assert rewrite in (True, "OK")
    assert killed_normal >= 1 and killed_pubsub == 0
    assert "victim" not in [x["name"] for x in c.client_list()]
    assert srv.config_path is not None
    assert "replica-priority 42" in srv.config_path.read_text()
    # SCRIPT KILL with no script running answers as Redis does.
    with pytest.raises(redis.ResponseError) as e:
        c.execute_command("SCRIPT", "KILL")
    assert str(e.value) == "NOTBUSY No scripts in execution right now."


def test_wait_on_a_replica_is_refused_as_redis_refuses_it(start_server: ServerFactory,
                                                          redis_factory: ServerFactory) -> None:
    """WAIT on a replica is Redis's error (checked before its arguments), on a larder replica
    as on a redis-server one; after REPLICAOF NO ONE it answers again."""
    texts = []
    for factory in (start_server, redis_factory):
        master = start_server()
        rep = factory("--replicaof", f"127.0.0.1 {master.port}") if factory is start_server \
            else factory("--replicaof", "127.0.0.1", str(master.port))
        c = rep.client(protocol=2, decode_responses=True)
        for args in (("0", "100"), ("1", "0"), ("x", "y")):
            with pytest.raises(redis.ResponseError) as e:
                c.execute_command("WAIT", *args)
            texts.append(str(e.value))
        c.execute_command("REPLICAOF", "NO", "ONE")
        assert c.execute_command("WAIT", 0, 100) == 0
    assert len(set(texts)) == 1, texts
    assert texts[0].startswith("WAIT cannot be used with replica instances.")
