"""The memcached door's logins as ACL users: binary SASL PLAIN as `memcached -S` (through
python-binary-memcached, which speaks it, and raw packets), the text protocol's login as
`memcached -Y` (its answers compared with a real memcached 1.6.18 started with `-Y`), the
`auth_*` stats, and NOPERM refusals for users with fewer rights.

Debian's memcached has SASL but no password database here, so SASL answers are checked
against memcached's source (proto_bin.c) rather than a running one. The door is larder's own:
the module is `larder_only`.
"""

from __future__ import annotations

import os
import tempfile
from typing import Iterator

import bmemcached
import pytest

from conftest import Server, ServerFactory
from test_memcached_support import (
    McBin,
    McText,
    packet,
    start_memcached,
    start_with_door,
    stop_memcached,
)

pytestmark = pytest.mark.larder_only

AUTH_ERROR, AUTH_CONTINUE, NO_ACCESS = 0x20, 0x21, 0x24
PASSWORD = "door-pw"


@pytest.fixture(scope="module")
def authd(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    factory = ServerFactory(target, tmp_path_factory.mktemp("mc-auth"))
    srv = start_with_door(factory, "--requirepass", PASSWORD)
    yield srv
    factory.shutdown_all()


def admin(srv: Server):
    return srv.client(protocol=2, password=PASSWORD)


@pytest.fixture(scope="module")
def real_memcached() -> Iterator[int]:
    """memcached 1.6.18 with text-protocol auth (`-Y`) for user `default`."""
    # memcached reads the file after dropping to `-u nobody` when run as root: a file in a
    # directory anyone may read.
    fd, authfile = tempfile.mkstemp(prefix="larder-mc-auth-")
    os.write(fd, f"default:{PASSWORD}\n".encode())
    os.close(fd)
    os.chmod(authfile, 0o644)
    proc, port = start_memcached("-Y", authfile)
    yield port
    stop_memcached(proc)
    os.unlink(authfile)


# Each request with the line(s) it is answered with, in order, on one connection.
TEXT_FLOW = [
    ("get k\r\n", 1),
    ("mn\r\n", 1),
    ("bogus\r\n", 1),
    ("set k 0 0 5\r\nnoone\r\n", 1),
    ("set k 0 0 11\r\nnobody pass\r\n", 1),
    (f"set k 0 0 {len('default ' + PASSWORD) + 3}\r\ndefault {PASSWORD}xyz\r\n", 1),
    (f"set k 0 0 {len('default ' + PASSWORD)}\r\ndefault {PASSWORD}\r\n", 1),
    ("set k 0 0 1\r\nv\r\n", 1),
    ("get k\r\n", 3),
    ("delete k\r\n", 1),
]


def run_flow(port: int) -> list[bytes]:
    conn = McText(port)
    try:
        out = []
        for req, lines in TEXT_FLOW:
            conn.send(req)
            out.append(b"|".join(conn.line() for _ in range(lines)))
        return out
    finally:
        conn.close()


def test_text_login_answers_as_memcached_dash_y(authd, real_memcached):
    theirs = run_flow(real_memcached)
    ours = run_flow(authd.mc_port)
    assert ours == theirs
    assert ours[:5] == [
        b"CLIENT_ERROR unauthenticated",
        b"CLIENT_ERROR unauthenticated",
        b"CLIENT_ERROR unauthenticated",
        b"CLIENT_ERROR bad authentication token format",
        b"CLIENT_ERROR authentication failure",
    ]
    assert ours[6:9] == [b"STORED", b"STORED", b"VALUE k 0 1|v|END"]


def test_stats_count_logins(authd):
    conn = McText(authd.mc_port)
    before = None
    try:
        conn.send(f"set x 0 0 {len('default ' + PASSWORD)}\r\ndefault {PASSWORD}\r\n")
        assert conn.line() == b"STORED"
        before = conn.stats()
        assert conn.stats("settings")["auth_enabled_sasl"] == "yes"
    finally:
        conn.close()
    bad = McText(authd.mc_port)
    bad.send("set x 0 0 7\r\nx wrong\r\n")
    assert bad.line() == b"CLIENT_ERROR authentication failure"
    bad.close()
    conn = McText(authd.mc_port)
    conn.send(f"set x 0 0 {len('default ' + PASSWORD)}\r\ndefault {PASSWORD}\r\n")
    assert conn.line() == b"STORED"
    after = conn.stats()
    conn.close()
    assert int(after["auth_cmds"]) - int(before["auth_cmds"]) == 2
    assert int(after["auth_errors"]) - int(before["auth_errors"]) == 1


def test_bmemcached_logs_in_with_sasl_plain(authd):
    client = bmemcached.Client([f"127.0.0.1:{authd.mc_port}"], "default", PASSWORD)
    try:
        assert client.set("sasl:k", "hello")
        assert client.get("sasl:k") == "hello"
        assert client.delete("sasl:k")
    finally:
        client.disconnect_all()
    wrong = bmemcached.Client([f"127.0.0.1:{authd.mc_port}"], "default", "nope")
    # memcached answers 0x20, not the specification's 0x08 that the client names
    # InvalidCredentials: it reports the status as is.
    with pytest.raises(bmemcached.exceptions.MemcachedException, match="Auth failure"):
        wrong.get("sasl:k")
    wrong.disconnect_all()


def test_binary_sasl_exchange(authd):
    c = McBin(authd.mc_port)
    r = c.call(0x20, opaque=1)
    assert (r.status, r.value, r.opaque) == (0, b"PLAIN", 1)
    assert c.call("version").value == b"1.6.18"
    r = c.call(0x21, "PLAIN", f"\0default\0{PASSWORD}x")
    assert (r.status, r.value) == (AUTH_ERROR, b"Auth failure.")
    r = c.call(0x21, "CRAM-MD5", "x")
    assert r.status == AUTH_ERROR
    # AUTH without data continues; STEP carries the credentials.
    r = c.call(0x21, "PLAIN")
    assert (r.status, r.value) == (AUTH_CONTINUE, b"")
    r = c.call(0x22, "PLAIN", f"\0default\0{PASSWORD}")
    assert (r.status, r.value) == (0, b"Authenticated")
    assert c.call("get", "nothing-here").status == 0x01
    c.close()


def test_binary_without_login_is_refused_and_closed(authd):
    c = McBin(authd.mc_port)
    c.send(packet("get", "k", opaque=5))
    r = c.read()
    assert (r.status, r.value, r.opaque) == (AUTH_ERROR, b"Auth failure.", 5)
    assert c.is_closed()


def test_no_password_means_no_login(start_server):
    srv = start_with_door(start_server)
    conn = McText(srv.mc_port)
    conn.send("set k 0 0 1\r\nv\r\n")
    assert conn.line() == b"STORED"
    assert conn.stats("settings")["auth_enabled_ascii"] == "no"
    conn.close()


def test_read_only_user_gets_noperm(authd):
    r = admin(authd)
    r.execute_command("ACL", "SETUSER", "mcreader", "on", ">rpw", "~cache:*", "+@read")
    try:
        r.set("cache:a", "1")
        client = bmemcached.Client([f"127.0.0.1:{authd.mc_port}"], "mcreader", "rpw")
        assert client.get("cache:a") == "1"
        client.disconnect_all()

        c = McBin(authd.mc_port)
        assert c.call(0x21, "PLAIN", "\0mcreader\0rpw").status == 0
        r_set = c.call("set", "cache:a", "2", b"\0" * 8)
        assert r_set.status == NO_ACCESS
        assert r_set.value == b"NOPERM this user has no permissions to run the 'set' command"
        assert c.call("get", "other:a").value == (
            b"NOPERM this user has no permissions to access one of the keys used as arguments")
        c.close()

        t = McText(authd.mc_port)
        t.send("set x 0 0 12\r\nmcreader rpw\r\n")
        assert t.line() == b"STORED"
        t.send("set cache:a 0 0 1\r\nx\r\n")
        assert t.line() == (
            b"CLIENT_ERROR NOPERM this user has no permissions to run the 'set' command")
        t.send("get cache:a\r\n")
        assert t.line() == b"VALUE cache:a 0 1"
        t.close()
        assert r.get("cache:a") == b"1"
        entries = r.execute_command("ACL", "LOG")
        assert any(b"mcreader" in repr(e).encode() for e in entries)
    finally:
        r.execute_command("ACL", "DELUSER", "mcreader")
        r.close()


def test_deleted_user_is_disconnected(authd):
    r = admin(authd)
    r.execute_command("ACL", "SETUSER", "mcgone", "on", ">gpw", "~*", "+@all")
    c = McBin(authd.mc_port)
    assert c.call(0x21, "PLAIN", "\0mcgone\0gpw").status == 0
    assert c.call("noop").status == 0
    r.execute_command("ACL", "DELUSER", "mcgone")
    r.close()
    try:
        c.send(packet("noop"))
        c.read()
    except Exception:
        pass
    assert c.is_closed()
