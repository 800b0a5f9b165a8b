"""The HTTP door's bearer tokens as ACL users: `Authorization: Bearer <user>:<password>` for
two users, a read-only user's `403` (with the NOPERM text) on PUT and DELETE, `401` without a
token once the default user has a password, failed logins in ACL LOG, and the rate limit per
user (one budget across addresses) beside the per-address one.

The door is larder's own: the module is `larder_only`.
"""

from __future__ import annotations

import http.client
import json
from typing import Iterator

import pytest
import requests

from conftest import Server, ServerFactory, start_with_http

pytestmark = pytest.mark.larder_only

HOST = "127.0.0.1"
PASSWORD = "http-pw"


@pytest.fixture(scope="module")
def door(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    factory = ServerFactory(target, tmp_path_factory.mktemp("http-auth"))
    srv = start_with_http(factory, "--requirepass", PASSWORD)
    r = srv.client(protocol=2, password=PASSWORD)
    r.execute_command("ACL", "SETUSER", "writer", "on", ">wpw", "~app:*", "+@all")
    r.execute_command("ACL", "SETUSER", "reader", "on", ">rpw", "~app:*", "+@read")
    r.close()
    yield srv
    factory.shutdown_all()


def url(srv: Server, path: str) -> str:
    return f"http://{HOST}:{srv.http_port}{path}"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_no_token_is_401_once_required(door: Server) -> None:
    r = requests.get(url(door, "/v1/kv/app:x"))
    assert r.status_code == 401
    assert r.json()["error"].startswith("NOAUTH")
    r = requests.get(url(door, "/v1/kv/app:x"), headers=bearer("writer:nope"))
    assert r.status_code == 401
    assert r.json()["error"] == (
        "WRONGPASS invalid username-password pair or user is disabled.")
    # The operations endpoints need none.
    assert requests.get(url(door, "/healthz")).status_code == 200


def test_two_users_and_a_read_only_one(door: Server) -> None:
    w = requests.Session()
    w.headers.update(bearer("writer:wpw"))
    assert w.put(url(door, "/v1/kv/app:x"), data=b"v1").status_code in (200, 201, 204)
    # A bare password is the default user, as before ACLs.
    d = requests.get(url(door, "/v1/kv/app:x"), headers=bearer(PASSWORD))
    assert (d.status_code, d.content) == (200, b"v1")

    ro = requests.Session()
    ro.headers.update(bearer("reader:rpw"))
    r = ro.get(url(door, "/v1/kv/app:x"))
    assert (r.status_code, r.content) == (200, b"v1")
    for method in ("put", "delete"):
        r = getattr(ro, method)(url(door, "/v1/kv/app:x"), data=b"v2")
        assert r.status_code == 403, method
        assert r.json()["error"].startswith("NOPERM this user has no permissions to run the '")
    # Keys outside the user's patterns.
    r = ro.get(url(door, "/v1/kv/other:x"))
    assert r.status_code == 403
    assert r.json()["error"] == (
        "NOPERM this user has no permissions to access one of the keys used as arguments")
    assert w.get(url(door, "/v1/kv/other:x")).status_code == 403
    # Collections and commands go through the executor's checks: 403 as well.
    assert ro.put(url(door, "/v1/hash/app:h/f"), data=b"1").status_code == 403
    # /metrics is INFO, which the reader may not run.
    assert ro.get(url(door, "/metrics")).status_code == 403
    # The value is unchanged.
    assert w.get(url(door, "/v1/kv/app:x")).content == b"v1"


def test_failed_token_goes_to_acl_log(door: Server) -> None:
    r = door.client(protocol=2, password=PASSWORD)
    r.execute_command("ACL", "LOG", "RESET")
    requests.get(url(door, "/v1/kv/app:x"), headers=bearer("reader:wrong"))
    entries = r.execute_command("ACL", "LOG")
    r.close()
    assert entries, "a failed login is logged"
    entry = dict(zip(entries[0][::2], entries[0][1::2]))
    assert entry[b"reason"] == b"auth"
    assert entry[b"username"] == b"reader"


def test_user_change_applies_to_keep_alive_connection(door: Server) -> None:
    r = door.client(protocol=2, password=PASSWORD)
    r.execute_command("ACL", "SETUSER", "temp", "on", ">tpw", "~app:*", "+@all")
    s = requests.Session()
    s.headers.update(bearer("temp:tpw"))
    assert s.get(url(door, "/v1/kv/app:none")).status_code == 404
    r.execute_command("ACL", "SETUSER", "temp", "-@all", "+get")
    assert s.put(url(door, "/v1/kv/app:none"), data=b"x").status_code == 403
    r.execute_command("ACL", "DELUSER", "temp")
    r.close()
    assert s.get(url(door, "/v1/kv/app:none")).status_code == 401


def get_from(door: Server, source: str, token: str) -> int:
    """One request from `source` (a loopback address) with `token`: its status."""
    conn = http.client.HTTPConnection(HOST, door.http_port, timeout=5,
                                      source_address=(source, 0))
    conn.request("GET", "/v1/kv/app:none", headers=bearer(token))
    status = conn.getresponse().status
    conn.close()
    return status


def test_rate_limit_per_user_across_addresses(door: Server) -> None:
    r = door.client(protocol=2, password=PASSWORD)
    r.config_set("http-rate-limit", "5")
    try:
        codes = [get_from(door, "127.0.0.1", "writer:wpw") for _ in range(5)]
        assert codes == [404] * 5
        # The same user from another address shares the budget...
        assert get_from(door, "127.0.0.2", "writer:wpw") == 429
        # ...while another user, and the default user from another address, have their own.
        assert get_from(door, "127.0.0.2", "reader:rpw") == 404
        assert get_from(door, "127.0.0.3", PASSWORD) == 404
    finally:
        r.config_set("http-rate-limit", "0")
        r.close()


def test_subscribe_checks_channels(door: Server) -> None:
    r = door.client(protocol=2, password=PASSWORD)
    r.execute_command("ACL", "SETUSER", "sub", "on", ">spw", "resetchannels", "&news:*",
                      "+@all", "~*")
    r.close()
    s = requests.get(url(door, "/v1/subscribe?channel=secret"), headers=bearer("sub:spw"),
                     stream=True, timeout=5)
    assert s.status_code == 403
    assert json.loads(s.content)["error"] == (
        "NOPERM this user has no permissions to access one of the channels used as arguments")
    ok = requests.get(url(door, "/v1/subscribe?channel=news:1"), headers=bearer("sub:spw"),
                      stream=True, timeout=5)
    assert ok.status_code == 200
    ok.close()


def test_watch_checks_keyspace_channels_and_values(door: Server) -> None:
    r = door.client(protocol=2, password=PASSWORD)
    r.execute_command("ACL", "SETUSER", "watcher", "on", ">xpw", "~app:*", "resetchannels",
                      "&__keyspace@0__:app:*", "+@all")
    r.close()
    h = bearer("watcher:xpw")

    def status(query: str) -> int:
        resp = requests.get(url(door, f"/v1/watch?{query}"), headers=h, stream=True, timeout=5)
        resp.close()
        return resp.status_code

    assert status("key=app:x") == 200
    assert status("key=app:x&values=1") == 200
    assert status("key=other") == 403
    # A prefix is PSUBSCRIBE __keyspace@0__:app:*, which must equal an allowed pattern.
    assert status("prefix=app:") == 200
    # Values of every key under a prefix need allkeys.
    assert status("prefix=app:&values=1") == 403
    # Everything is PSUBSCRIBE __keyspace@0__:*.
    assert status("events=set") == 403
