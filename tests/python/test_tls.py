"""TLS on every door: `tls-port` (RESP, as Redis), `memcached-tls-port` and `http-tls-port`
beside the plain ports, client certificates (`tls-auth-clients`), certificates reloaded by
CONFIG SET, and a TLS port that shrugs off plaintext, garbage and stalled handshakes.

The certificates (a CA, two server certificates and a client one) are made at test time with
the `openssl` command. Tests not marked larder_only run against redis-server too, whose
TLS parameters these are.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest
import redis
import requests
from pymemcache.client.base import Client as PyMemcache

from conftest import Server, ServerFactory, free_port

RELOAD_FAILED = ("CONFIG SET failed (possibly related to argument 'tls-cert-file') - "
                 "Unable to update TLS configuration. Check server logs.")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """PEM files by name: ca, server, server2 (another certificate for the same names),
    client; each `<name>.crt` with its `<name>.key`."""
    if not shutil.which("openssl"):
        pytest.fail("the openssl command is needed: apt-get install -y openssl", pytrace=False)
    d = tmp_path_factory.mktemp("certs")

    def key(name: str) -> None:
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-out", f"{name}.key", cwd=d)

    key("ca")
    _openssl("req", "-x509", "-new", "-key", "ca.key", "-days", "2", "-subj",
             "/CN=larder test CA", "-out", "ca.crt", cwd=d)
    for name in ("server", "server2", "client"):
        key(name)
        _openssl("req", "-new", "-key", f"{name}.key", "-subj", f"/CN=larder {name}",
                 "-out", f"{name}.csr", cwd=d)
        ext = ("extendedKeyUsage=clientAuth\n" if name == "client" else
               "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        (d / f"{name}.ext").write_text(ext)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext",
                 "-out", f"{name}.crt", cwd=d)
    out = {}
    for name in ("ca", "server", "server2", "client"):
        out[f"{name}.crt"] = str(d / f"{name}.crt")
        out[f"{name}.key"] = str(d / f"{name}.key")
    return out


def tls_args(certs: dict[str, str], *extra: str) -> list[str]:
    return ["--tls-cert-file", certs["server.crt"], "--tls-key-file", certs["server.key"],
            "--tls-ca-cert-file", certs["ca.crt"], *extra]


def start_tls(start_server: ServerFactory, certs: dict[str, str], *extra: str) -> Server:
    """A server with a TLS port (`.tls_port`) beside its plain one; tries other ports if one
    was taken meanwhile."""
    last = None
    for _ in range(3):
        port = free_port()
        try:
            srv = start_server("--tls-port", str(port), *tls_args(certs, *extra))
        except pytest.fail.Exception as e:
            last = e
            continue
        srv.tls_port = port
        return srv
    raise last  # type: ignore[misc]


def tls_client(srv: Server, certs: dict[str, str], protocol: int = 3, cert: bool = True,
               **kw) -> redis.Redis:
    if cert:
        kw.update(ssl_certfile=certs["client.crt"], ssl_keyfile=certs["client.key"])
    c = redis.Redis(host="127.0.0.1", port=srv.tls_port, protocol=protocol, ssl=True,
                    ssl_ca_certs=certs["ca.crt"], socket_timeout=10, **kw)
    srv._clients.append(c)
    return c


def context(certs: dict[str, str], cert: bool = True) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=certs["ca.crt"])
    if cert:
        ctx.load_cert_chain(certs["client.crt"], certs["client.key"])
    return ctx


def peer_cert(port: int, certs: dict[str, str]) -> bytes:
    """The DER certificate a new TLS connection to `port` is shown."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context(certs).wrap_socket(raw, server_hostname="localhost") as s:
            return s.getpeercert(binary_form=True)


def der(path: str) -> bytes:
    return ssl.PEM_cert_to_DER_cert(Path(path).read_text())


def closed_soon(s: socket.socket, timeout: float = 5.0) -> bool:
    """Whether the server closes `s` (EOF or reset) within `timeout`, whatever it sends."""
    s.settimeout(timeout)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not s.recv(4096):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    return False


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def protocol(request: pytest.FixtureRequest) -> int:
    return request.param


def test_redis_py_with_a_client_certificate(start_server: ServerFactory,
                                            certs: dict[str, str], protocol: int) -> None:
    srv = start_tls(start_server, certs)
    c = tls_client(srv, certs, protocol)
    assert c.ping()
    assert c.set("k", "v")
    assert c.get("k") == b"v"
    # Values past one TLS record, one read and the large-argument threshold, both ways.
    big = bytes(range(256)) * 4096
    assert c.set("big", big)
    assert c.get("big") == big
    # A pipeline whose replies pass the output high-water mark.
    pipe = c.pipeline(transaction=False)
    for _ in range(40):
        pipe.get("big")
    assert pipe.execute() == [big] * 40
    # The plain port serves beside it, the same data.
    assert srv.client(protocol).get("k") == b"v"


def test_redis_cli_over_tls(start_server: ServerFactory, certs: dict[str, str]) -> None:
    srv = start_tls(start_server, certs)
    cli = ["redis-cli", "-p", str(srv.tls_port), "--tls", "--cacert", certs["ca.crt"],
           "--cert", certs["client.crt"], "--key", certs["client.key"]]

    def run(*args: str) -> str:
        out = subprocess.run(cli + list(args), capture_output=True, timeout=10, check=True)
        return out.stdout.decode().strip()

    assert run("PING") == "PONG"
    assert run("SET", "greeting", "hello") == "OK"
    assert run("GET", "greeting") == "hello"
    assert run("DBSIZE") == "1"


def test_client_certificate_required_by_default(start_server: ServerFactory,
                                                certs: dict[str, str]) -> None:
    srv = start_tls(start_server, certs)
    with pytest.raises((redis.ConnectionError, OSError)):
        tls_client(srv, certs, cert=False).ping()
    # CONFIG SET tls-auth-clients applies to new handshakes.
    admin = tls_client(srv, certs)
    assert admin.config_set("tls-auth-clients", "optional")
    assert admin.config_get("tls-auth-clients") == {"tls-auth-clients": "optional"}
    assert tls_client(srv, certs, cert=False).ping()
    assert tls_client(srv, certs).ping()


@pytest.mark.parametrize("auth", ["optional", "no"])
def test_client_certificate_optional_or_not_asked(start_server: ServerFactory,
                                                  certs: dict[str, str], auth: str) -> None:
    srv = start_tls(start_server, certs, "--tls-auth-clients", auth)
    assert tls_client(srv, certs, cert=False).ping()
    assert tls_client(srv, certs).ping()


def test_plaintext_and_garbage_cost_only_their_connection(start_server: ServerFactory,
                                                          certs: dict[str, str]) -> None:
    srv = start_tls(start_server, certs)
    good = tls_client(srv, certs)
    assert good.set("k", "v")
    junk = [
        b"*1\r\n$4\r\nPING\r\n",
        b"PING\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        bytes(range(256)) * 8,
        # A ClientHello record header announcing more than ever comes, then the peer leaves.
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
    ]
    for data in junk:
        with socket.create_connection(("127.0.0.1", srv.tls_port), timeout=5) as s:
            s.sendall(data)
            if data.startswith(b"\x16"):
                s.shutdown(socket.SHUT_WR)
            assert closed_soon(s), data[:20]
    # The connection opened before is untouched, and new ones are served.
    assert good.get("k") == b"v"
    assert tls_client(srv, certs).get("k") == b"v"
    assert srv.client().ping()


@pytest.mark.larder_only
def test_stalled_handshake_is_closed(start_server: ServerFactory,
                                     certs: dict[str, str]) -> None:
    # Redis has no handshake timeout: a client that never finishes stays until `timeout`.
    srv = start_tls(start_server, certs)
    with socket.create_connection(("127.0.0.1", srv.tls_port), timeout=5) as s:
        s.sendall(b"\x16\x03\x01\x02\x00\x01\x00")
        started = time.monotonic()
        assert closed_soon(s, timeout=15)
        assert time.monotonic() - started >= 8
    assert tls_client(srv, certs).ping()


def test_config_set_reloads_the_certificate(start_server: ServerFactory,
                                            certs: dict[str, str]) -> None:
    srv = start_tls(start_server, certs)
    assert peer_cert(srv.tls_port, certs) == der(certs["server.crt"])
    live = tls_client(srv, certs)
    assert live.set("k", "v")
    # A certificate without its key does not load: they change in one CONFIG SET.
    with pytest.raises(redis.ResponseError, match="Unable to update TLS configuration"):
        live.config_set("tls-cert-file", certs["server2.crt"])
    assert live.execute_command("CONFIG", "SET", "tls-cert-file", certs["server2.crt"],
                                "tls-key-file", certs["server2.key"]) in (b"OK", "OK", True)
    # The live connection carries on; a new one is shown the new certificate.
    assert live.get("k") == b"v"
    assert peer_cert(srv.tls_port, certs) == der(certs["server2.crt"])
    assert tls_client(srv, certs).get("k") == b"v"


def test_config_set_of_a_bad_certificate_fails_and_keeps_the_old(start_server: ServerFactory,
                                                                 certs: dict[str, str],
                                                                 tmp_path: Path) -> None:
    srv = start_tls(start_server, certs)
    c = tls_client(srv, certs)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    for bad in (str(tmp_path / "missing.pem"), str(garbage)):
        with pytest.raises(redis.ResponseError) as e:
            c.config_set("tls-cert-file", bad)
        assert str(e.value) == RELOAD_FAILED
    assert c.config_get("tls-cert-file") == {"tls-cert-file": certs["server.crt"]}
    assert peer_cert(srv.tls_port, certs) == der(certs["server.crt"])
    assert c.ping()


@pytest.mark.larder_only
def test_start_refused_without_a_usable_certificate(start_server: ServerFactory,
                                                    certs: dict[str, str]) -> None:
    code, out = start_server.spawn("--tls-port", str(free_port()))
    assert code != 0
    assert "tls-cert-file is not set" in out
    code, out = start_server.spawn("--tls-port", str(free_port()),
                                   *tls_args(certs, "--tls-key-file", certs["client.key"]))
    assert code != 0
    assert "tls-cert-file and tls-key-file" in out


@pytest.mark.larder_only
def test_unsupported_cipher_names_are_refused(start_server: ServerFactory,
                                              certs: dict[str, str]) -> None:
    srv = start_tls(start_server, certs)
    c = tls_client(srv, certs)
    with pytest.raises(redis.ResponseError, match="unsupported TLS 1.3 cipher suite 'NOPE'"):
        c.config_set("tls-ciphersuites", "NOPE")
    assert c.config_set("tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256")
    assert c.config_set("tls-protocols", "TLSv1.3")
    with socket.create_connection(("127.0.0.1", srv.tls_port), timeout=5) as raw:
        with context(certs).wrap_socket(raw, server_hostname="localhost") as s:
            assert s.version() == "TLSv1.3"
            assert s.cipher()[0] == "TLS_CHACHA20_POLY1305_SHA256"


def test_client_list_and_kill_over_tls(start_server: ServerFactory,
                                       certs: dict[str, str]) -> None:
    srv = start_tls(start_server, certs)
    victim = tls_client(srv, certs, single_connection_client=True)
    victim.client_setname("victim")
    admin = srv.client()
    listed = [c for c in admin.client_list() if c["name"] == "victim"]
    assert len(listed) == 1
    assert listed[0]["laddr"].endswith(f":{srv.tls_port}")
    assert admin.client_kill_filter(_id=listed[0]["id"]) == 1
    with pytest.raises((redis.ConnectionError, OSError)):
        victim.connection.send_command("PING")
        victim.connection.read_response()


@pytest.mark.larder_only
def test_memcached_door_over_tls(start_server: ServerFactory, certs: dict[str, str]) -> None:
    port = free_port()
    srv = start_server("--memcached-tls-port", str(port), *tls_args(certs))
    mc = PyMemcache(("127.0.0.1", port), tls_context=context(certs), timeout=5)
    try:
        assert mc.set("k", b"v" * 100_000)
        assert mc.get("k") == b"v" * 100_000
        assert mc.incr("n", 1) is None
        assert mc.set("n", b"1")
        assert mc.incr("n", 41) == 42
        # stats settings reports the door's TLS as memcached does.
        settings = mc.stats("settings")
        assert settings[b"ssl_enabled"] == b"yes"
        assert settings[b"ssl_chain_cert"] == certs["server.crt"].encode()
    finally:
        mc.close()
    assert srv.client().get("n") == b"42"


@pytest.mark.larder_only
def test_http_door_over_https(start_server: ServerFactory, certs: dict[str, str]) -> None:
    port = free_port()
    srv = start_server("--http-tls-port", str(port), *tls_args(certs))
    url = f"https://127.0.0.1:{port}/v1/kv/greeting"
    cert = (certs["client.crt"], certs["client.key"])
    assert requests.put(url, data=b"hello", verify=certs["ca.crt"], cert=cert).ok
    got = requests.get(url, verify=certs["ca.crt"], cert=cert)
    assert got.status_code == 200
    assert got.content == b"hello"
    assert srv.client().get("greeting") == b"hello"
    # Without a client certificate the handshake is refused.
    with pytest.raises(requests.exceptions.RequestException):
        requests.get(url, verify=certs["ca.crt"], timeout=5)
