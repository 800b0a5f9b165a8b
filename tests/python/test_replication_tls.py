"""Replication over TLS (`tls-replication yes`): larder → larder, redis-server → larder and
larder → redis-server, each through the master's `tls-port` with a client certificate
(`tls-auth-clients yes`); a replica that does not trust the master's certificate, or shows
none, keeps its link down with a clear log line and retries.

As Redis, the replica verifies the master's chain against `tls-ca-cert-file` without checking
the host name, and shows `tls-client-cert-file` (else `tls-cert-file`) as its certificate.
The certificates are made by test_tls.py's fixture.
"""

from __future__ import annotations

import subprocess

import pytest

from conftest import Server
from test_replication_master import fill, info, same_data, until, write_after_sync
from test_tls import certs, start_tls  # noqa: F401 (certs is a fixture)

pytestmark = pytest.mark.larder_only


def replica_tls_args(certs: dict[str, str], ca: str | None = None,
                     client_cert: bool = True) -> list[str]:
    out = ["--tls-replication", "yes", "--tls-ca-cert-file", ca or certs["ca.crt"]]
    if client_cert:
        out += ["--tls-client-cert-file", certs["client.crt"],
                "--tls-client-key-file", certs["client.key"]]
    return out


def link(srv: Server) -> str:
    return info(srv, "replication").get("master_link_status", "")


def synced_with_writes(master: Server, rep: Server) -> None:
    until("master_link_status:up", lambda: link(rep) == "up")
    until("the replica holds every key", lambda: same_data(master, rep))
    assert rep.client(protocol=2).pttl("ttl-str") > 0
    m = master.client(protocol=2)
    write_after_sync(m)
    until("the replica follows", lambda: same_data(master, rep))
    assert m.execute_command("WAIT", 1, 2000) == 1


def filled(master: Server) -> None:
    m = master.client(protocol=2)
    fill(m, 0)
    fill(m, 3)


def test_larder_replica_of_larder_over_tls(start_server, certs) -> None:
    master = start_tls(start_server, certs)
    filled(master)
    rep = start_server(*replica_tls_args(certs), config_text="# mine\n")
    r = rep.client(protocol=2, decode_responses=True)
    assert r.config_get("tls-replication") == {"tls-replication": "yes"}
    assert r.execute_command("REPLICAOF", "127.0.0.1", master.tls_port) == "OK"
    synced_with_writes(master, rep)
    # The master sees a TLS client that became a replica.
    clients = master.client(protocol=2, decode_responses=True).client_list(_type="replica")
    assert len(clients) == 1
    # CONFIG REWRITE writes the TLS parameters set.
    assert r.config_rewrite()
    text = rep.config_path.read_text()
    assert "tls-replication yes" in text
    assert f"tls-client-cert-file \"{certs['client.crt']}\"" in text or \
        f"tls-client-cert-file {certs['client.crt']}" in text
    assert r.config_set("tls-replication", "no")
    assert r.config_get("tls-replication") == {"tls-replication": "no"}


def test_larder_replica_of_redis_over_tls(start_server, redis_factory, certs) -> None:
    master = start_tls(redis_factory, certs)
    filled(master)
    rep = start_server(*replica_tls_args(certs),
                       "--replicaof", f"127.0.0.1 {master.tls_port}")
    synced_with_writes(master, rep)


def test_redis_replica_of_larder_over_tls(start_server, redis_factory, certs) -> None:
    master = start_tls(start_server, certs)
    filled(master)
    rep = redis_factory("--tls-cert-file", certs["server.crt"],
                        "--tls-key-file", certs["server.key"],
                        *replica_tls_args(certs),
                        "--replicaof", "127.0.0.1", str(master.tls_port))
    synced_with_writes(master, rep)


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A CA that signed none of the test certificates."""
    d = tmp_path_factory.mktemp("other-ca")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-days", "2",
                    "-subj", "/CN=another CA", "-out", "ca.crt"],
                   cwd=d, check=True, capture_output=True)
    return str(d / "ca.crt")


def test_an_untrusted_master_keeps_the_link_down_and_retries(start_server, certs,
                                                             other_ca) -> None:
    master = start_tls(start_server, certs)
    master.client(protocol=2).set("k", "v")
    rep = start_server(*replica_tls_args(certs, ca=other_ca),
                       "--replicaof", f"127.0.0.1 {master.tls_port}")
    failed = "TLS handshake with the master failed: invalid peer certificate"
    until("two failed handshakes in the log", lambda: rep.log_text().count(failed) >= 2)
    assert link(rep) == "down"
    assert rep.client(protocol=2).ping()
    # The right CA, set at run time, is used from the next connection on.
    r = rep.client(protocol=2)
    assert r.config_set("tls-ca-cert-file", certs["ca.crt"])
    until("master_link_status:up", lambda: link(rep) == "up")
    until("the key arrives", lambda: r.get("k") == b"v")


def test_a_replica_without_a_client_certificate_is_refused(start_server, certs) -> None:
    master = start_tls(start_server, certs)
    rep = start_server(*replica_tls_args(certs, client_cert=False),
                       "--replicaof", f"127.0.0.1 {master.tls_port}")
    until("a failed link in the log",
          lambda: "master link down; retrying" in rep.log_text())
    assert link(rep) == "down"
    assert rep.client(protocol=2).ping()
    # With tls-auth-clients no on the master, the same replica gets in.
    assert master.client(protocol=2).config_set("tls-auth-clients", "no")
    until("master_link_status:up", lambda: link(rep) == "up")
