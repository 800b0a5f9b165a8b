"""Stock redis-sentinel 7.0 managing a larder master: three `redis-server --sentinel`
processes monitor a larder master with two redis-server replicas (and, in the last test, two
larder replicas). They discover the replicas
(INFO replication's `slaveN:` lines) and each other (the `__sentinel__:hello` channel on
larder), a redis-py Sentinel client finds the master, and after a SIGKILL of the master a
replica is promoted and the client follows it; every write that WAIT 1 acknowledged is on
the promoted master; with larder replicas, three failovers in a row keep every acknowledged
write.

The harness (sentinel_cluster.py) uses a 500 ms down-after and a 2-3 s failover-timeout, so
a failover takes seconds; every wait has a deadline. The master is always the one the three
sentinels agree on (`SENTINEL GET-MASTER-ADDR-BY-NAME`): with such low timeouts they may fail
over more than once.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import redis
from redis.sentinel import Sentinel

from sentinel_cluster import MASTER_NAME, Cluster, until

pytestmark = pytest.mark.larder_only


@pytest.fixture
def cluster(tmp_path: Path):
    c = Cluster(tmp_path, fast_sentinels=True)
    yield c
    c.close()


class Writer:
    """SET n + WAIT 1 1000 in a loop through a Sentinel client; remembers what WAIT
    acknowledged."""

    def __init__(self, sentinel: Sentinel) -> None:
        self.master = sentinel.master_for(MASTER_NAME, socket_timeout=0.5,
                                          socket_connect_timeout=0.5, decode_responses=True)
        self.acked: list[int] = []
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            try:
                self.master.set(f"w:{n}", n)
                if self.master.execute_command("WAIT", 1, 1000) >= 1:
                    self.acked.append(n)
            except (redis.RedisError, OSError):
                self.errors += 1
                time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def test_sentinels_discover_replicas_and_each_other(cluster: Cluster) -> None:
    until("sentinels discover the replicas and each other", cluster.discovered)
    m = cluster.master.client()
    # Each sentinel subscribes to the hello channel on the master and names its links.
    until("three hello subscribers on larder",
          lambda: m.execute_command("PUBSUB", "NUMSUB", "__sentinel__:hello")[1] == 3)
    names = [c["name"] for c in m.client_list()]
    assert sum(n.startswith("sentinel-") and n.endswith("-cmd") for n in names) == 3
    assert sum(n.startswith("sentinel-") and n.endswith("-pubsub") for n in names) == 3
    # The sentinels read larder's run id and role from INFO.
    s = cluster.sentinels[0].client()
    # redis-py parses these replies into dicts (flags into is_* booleans).
    fields = s.sentinel_master(MASTER_NAME)
    assert fields["runid"] == m.info("server")["run_id"]
    assert fields["role-reported"] == "master"
    assert fields["is_master"] and not fields["is_sdown"] and not fields["is_odown"]
    assert fields["num-slaves"] == 2
    assert fields["num-other-sentinels"] == 2
    ports = sorted(r["port"] for r in s.sentinel_slaves(MASTER_NAME))
    assert ports == sorted(r.port for r in cluster.replicas)
    client = Sentinel(cluster.sentinel_addrs(), socket_timeout=1)
    assert client.discover_master(MASTER_NAME) == ("127.0.0.1", cluster.master.port)


def test_sigkill_of_the_larder_master_promotes_a_replica_and_keeps_acknowledged_writes(
        cluster: Cluster) -> None:
    until("sentinels discover the replicas and each other", cluster.discovered)
    pair = list(cluster.replicas)
    writer = Writer(Sentinel(cluster.sentinel_addrs(), socket_timeout=0.5))
    try:
        until("writes acknowledged by a replica", lambda: len(writer.acked) >= 20)
        cluster.kill_master()
        # The client follows the new master: more writes acknowledged after the switch.
        before = len(writer.acked)
        until("writes acknowledged on the new master", lambda: len(writer.acked) > before + 20)
    finally:
        writer.stop()
    # Sentinels may fail over more than once with a 500 ms down-after: check the master
    # they settle on.
    until("the sentinels agree on the master", lambda: settled(cluster, pair))
    promoted = next(p for p in pair if p.port == agreed_master(cluster)).client()
    values = promoted.mget([f"w:{n}" for n in writer.acked])
    lost = [n for n, v in zip(writer.acked, values) if v != str(n)]
    assert lost == [], f"{len(lost)} acknowledged writes missing on the promoted master"


@pytest.fixture
def larder_cluster(tmp_path: Path):
    c = Cluster(tmp_path, replica_kind="larder", failover_timeout_ms=2000,
                fast_sentinels=True)
    yield c
    c.close()


def follows(srv, master_port: int) -> bool:
    i = srv.client().info("replication")
    return (i["role"] == "slave" and i["master_port"] == master_port
            and i["master_link_status"] == "up")


def agreed_master(cluster: Cluster) -> int | None:
    """The master's port when the three sentinels name the same one."""
    addr = cluster.agreed_master()
    return addr[1] if addr else None


def settled(cluster: Cluster, pair: list) -> bool:
    """The sentinels agree that one of `pair` (the replicas before the failover) is the
    master, it says so, and the other follows it with its link up."""
    port = agreed_master(cluster)
    if port not in [p.port for p in pair]:
        return False
    (master,) = [p for p in pair if p.port == port]
    (other,) = [p for p in pair if p.port != port]
    return master.client().info("replication")["role"] == "master" and follows(other, port)


def converged(cluster: Cluster) -> bool:
    """The master the sentinels agree on says it is one, and every replica follows it with
    its link up, at its replication offset, holding as many keys."""
    port = agreed_master(cluster)
    if port is None:
        return False
    master = cluster.server_at(port).client()
    info = master.info("replication")
    if info["role"] != "master":
        return False
    for r in cluster.replicas:
        if not follows(r, port):
            return False
        ri = r.client().info("replication")
        if ri["master_repl_offset"] != info["master_repl_offset"]:
            return False
        if r.client().dbsize() != master.dbsize():
            return False
    return True


def describe(cluster: Cluster) -> str:
    """Each server's replication fields, for a failure's message."""
    keys = ("role", "master_port", "master_link_status", "master_sync_in_progress",
            "master_repl_offset", "connected_slaves")
    out = [f"sentinels agree on {cluster.agreed_master()}"]
    for port, p in sorted(cluster.servers.items()):
        try:
            i = p.client().info("replication")
            out.append(f"{port}: " + " ".join(f"{k}={i.get(k)}" for k in keys))
        except (redis.RedisError, OSError) as e:
            out.append(f"{port}: {e!r}")
    return "; ".join(out)


def test_three_failovers_in_a_row_between_larder_nodes(larder_cluster: Cluster) -> None:
    """All larder: SIGKILL the master three times in a row while a Sentinel client writes
    with WAIT 1. Each time a replica is promoted, the other is re-pointed to it, and the
    killed node, restarted, is turned into a replica by Sentinel (four publish periods
    after an INFO shows it as a master: about 2-3 s with the harness's fast periods). No
    write that WAIT acknowledged is lost, and the replicas converge to the final master."""
    cluster = larder_cluster
    until("sentinels discover the larder replicas and each other", cluster.discovered)
    s = cluster.sentinels[0].client()
    ports = sorted(r["port"] for r in s.sentinel_slaves(MASTER_NAME))
    assert ports == sorted(r.port for r in cluster.replicas)

    writer = Writer(Sentinel(cluster.sentinel_addrs(), socket_timeout=0.5))
    try:
        until("writes acknowledged by a replica", lambda: len(writer.acked) >= 20)
        for _ in range(3):
            killed = cluster.master
            _, new = cluster.kill_master()
            before = len(writer.acked)
            until("writes acknowledged on the new master",
                  lambda: len(writer.acked) > before + 20)
            back = cluster.restart(killed)
            until("the killed master becomes a replica of the one the sentinels agree on",
                  lambda: follows(back, agreed_master(cluster)), timeout=30)
    finally:
        writer.stop()
    try:
        until("the replicas converge to the master the sentinels agree on",
              lambda: converged(cluster))
    except AssertionError as e:
        raise AssertionError(f"{e}: {describe(cluster)}") from None
    final = cluster.server_at(agreed_master(cluster)).client()
    values = final.mget([f"w:{n}" for n in writer.acked])
    lost = [n for n, v in zip(writer.acked, values) if v != str(n)]
    assert lost == [], (f"{len(lost)} of {len(writer.acked)} acknowledged writes missing "
                        f"on the final master: {lost[:20]}")
