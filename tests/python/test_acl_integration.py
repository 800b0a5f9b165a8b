"""ACL checks where commands run: AUTH and HELLO as users, MULTI/EXEC, scripts, SORT's
patterns, pub/sub, CLIENT LIST/KILL, RESET, deleted users, protected mode.

Every test here also runs with --target=redis: the expectations are Redis 7.0.15's.
"""

from __future__ import annotations

import socket
import time

import pytest

from conftest import ConnectionClosed, Err, RawConn

NOPERM_CMD = "NOPERM this user has no permissions to run the '{}' command"
NOPERM_KEY = "NOPERM this user has no permissions to access one of the keys used as arguments"
NOPERM_CHANNEL = (
    "NOPERM this user has no permissions to access one of the channels used as arguments"
)
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
EXECABORT = "EXECABORT Transaction discarded because of previous errors."


@pytest.fixture
def srv(start_server):
    return start_server()


def admin(srv) -> RawConn:
    return srv.raw()


def login(srv, user: str, password: str = "pw") -> RawConn:
    conn = srv.raw()
    assert conn.call("AUTH", user, password) == "OK"
    return conn


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def acl_log(conn: RawConn) -> list[dict]:
    """ACL LOG's entries as dicts of text (RESP2 lists or RESP3 maps)."""
    out = []
    for e in conn.call("ACL", "LOG"):
        pairs = e.items() if isinstance(e, dict) else zip(e[::2], e[1::2])
        out.append({text(k): text(v) for k, v in pairs})
    return out


def test_auth_as_user_and_whoami(srv):
    a = admin(srv)
    assert a.call("ACL", "SETUSER", "alice", "on", ">pw", "~*", "&*", "+@all") == "OK"
    c = srv.raw()
    assert c.call("AUTH", "alice", "nope") == Err(WRONGPASS)
    assert c.call("ACL", "WHOAMI") == b"default"
    assert c.call("AUTH", "alice", "pw") == "OK"
    assert c.call("ACL", "WHOAMI") == b"alice"
    # CLIENT LIST names the user; CLIENT KILL USER finds its connections.
    assert b"user=alice" in c.call("CLIENT", "LIST", "ID", str(c.call("CLIENT", "ID")))
    assert a.call("CLIENT", "KILL", "USER", "alice") == 1
    assert a.call("CLIENT", "KILL", "USER", "nosuch") == Err("ERR No such user 'nosuch'")


def test_hello_auth_and_failed_logins_logged(srv):
    a = admin(srv)
    a.call("ACL", "SETUSER", "bob", "on", ">pw", "+@all", "~*")
    c = srv.raw()
    assert c.call("HELLO", "2", "AUTH", "bob", "bad") == Err(WRONGPASS)
    reply = c.call("HELLO", "2", "AUTH", "bob", "pw")
    assert isinstance(reply, list) and b"proto" in reply
    assert c.call("ACL", "WHOAMI") == b"bob"
    entry = acl_log(a)[0]
    assert entry["reason"] == "auth"
    assert entry["object"] == "HELLO"
    assert entry["username"] == "bob"


def test_disabled_user_cannot_log_in(srv):
    a = admin(srv)
    a.call("ACL", "SETUSER", "off1", "off", ">pw", "+@all")
    assert srv.raw().call("AUTH", "off1", "pw") == Err(WRONGPASS)


def test_command_key_and_channel_refusals(srv):
    a = admin(srv)
    a.call("ACL", "SETUSER", "ro", "on", ">pw", "~app:*", "&news", "+get", "+publish",
           "+subscribe")
    c = login(srv, "ro")
    assert c.call("SET", "app:1", "x") == Err(NOPERM_CMD.format("set"))
    assert c.call("GET", "other") == Err(NOPERM_KEY)
    assert c.call("GET", "app:1") is None
    assert c.call("PUBLISH", "sports", "x") == Err(NOPERM_CHANNEL)
    assert c.call("PUBLISH", "news", "x") == 0
    assert c.call("CONFIG", "GET", "maxmemory") == Err(NOPERM_CMD.format("config|get"))
    reasons = [(e["reason"], e["object"], e["context"]) for e in acl_log(a)]
    assert ("command", "set", "toplevel") in reasons
    assert ("key", "other", "toplevel") in reasons
    assert ("channel", "sports", "toplevel") in reasons
    # Nothing a refused command would have written was written.
    assert a.call("EXISTS", "app:1") == 0


def test_subscribe_to_a_refused_channel(srv):
    admin(srv).call("ACL", "SETUSER", "sub", "on", ">pw", "&news", "+@all", "~*")
    c = login(srv, "sub")
    assert c.call("SUBSCRIBE", "sports") == Err(NOPERM_CHANNEL)
    assert c.call("PSUBSCRIBE", "new*") == Err(NOPERM_CHANNEL)
    reply = c.call("SUBSCRIBE", "news")
    assert reply[0] == b"subscribe"


def test_multi_refusal_aborts_the_transaction(srv):
    a = admin(srv)
    a.call("ACL", "SETUSER", "tx", "on", ">pw", "~*", "+@all", "-del")
    c = login(srv, "tx")
    assert c.call("MULTI") == "OK"
    assert c.call("SET", "k", "1") == "QUEUED"
    assert c.call("DEL", "k") == Err(NOPERM_CMD.format("del"))
    assert c.call("EXEC") == Err(EXECABORT)
    assert a.call("EXISTS", "k") == 0
    assert acl_log(a)[0]["context"] == "multi"


def test_exec_checks_again_when_rules_changed(srv):
    a = admin(srv)
    a.call("ACL", "SETUSER", "tx2", "on", ">pw", "~*", "+@all")
    c = login(srv, "tx2")
    assert c.call("MULTI") == "OK"
    assert c.call("SET", "k", "1") == "QUEUED"
    assert c.call("INCR", "n") == "QUEUED"
    a.call("ACL", "SETUSER", "tx2", "-set")
    reply = c.call("EXEC")
    assert reply[0] == Err(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and "
        "the EXEC call. This command is no longer allowed for the following reason: no "
        "permission to execute the command or subcommand")
    assert reply[1] == 1
    assert a.call("EXISTS", "k") == 0


def test_rules_apply_to_live_connections(srv):
    a = admin(srv)
    a.call("ACL", "SETUSER", "live", "on", ">pw", "~*", "+@all")
    c = login(srv, "live")
    assert c.call("SET", "k", "1") == "OK"
    a.call("ACL", "SETUSER", "live", "-set")
    assert c.call("SET", "k", "2") == Err(NOPERM_CMD.format("set"))
    assert c.call("GET", "k") == b"1"


def test_deleted_user_is_disconnected(srv):
    a = admin(srv)
    a.call("ACL", "SETUSER", "gone", "on", ">pw", "~*", "+@all")
    c = login(srv, "gone")
    assert a.call("ACL", "DELUSER", "gone") == 1
    with pytest.raises((ConnectionClosed, OSError)):
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            c.call("PING")
            time.sleep(0.05)


def test_scripts_run_as_their_caller(srv):
    a = admin(srv)
    a.call("ACL", "SETUSER", "lua", "on", ">pw", "~a", "+@all", "-set")
    c = login(srv, "lua")
    err = c.call("EVAL", "return redis.call('set','a','1')", "0")
    assert isinstance(err, Err)
    assert err.startswith("ERR The user executing the script can't run this command or "
                          "subcommand script: ")
    err = c.call("EVAL", "return redis.call('get','b')", "0")
    assert err.startswith("ERR The user executing the script can't access at least one of "
                          "the keys mentioned in the command arguments script: ")
    assert c.call("EVAL", "return redis.call('get','a')", "0") is None
    entry = acl_log(a)[0]
    assert (entry["reason"], entry["context"], entry["object"]) == ("key", "lua", "b")
    # A declared key the user may not touch is refused before the script runs.
    assert c.call("EVAL", "return 1", "1", "b") == Err(NOPERM_KEY)


def test_sort_patterns_need_every_key(srv):
    a = admin(srv)
    a.call("RPUSH", "a", "2", "1")
    a.call("ACL", "SETUSER", "sorter", "on", ">pw", "~a", "+@all")
    c = login(srv, "sorter")
    assert c.call("SORT", "a", "BY", "w_*") == Err(
        "ERR BY option of SORT denied due to insufficient ACL permissions.")
    assert c.call("SORT", "a", "GET", "#") == Err(
        "ERR GET option of SORT denied due to insufficient ACL permissions.")
    assert c.call("SORT", "a", "BY", "nosort") == [b"2", b"1"]
    assert c.call("SORT", "a") == [b"1", b"2"]
    # Read access to every key suffices, from a selector that allows SORT itself.
    a.call("ACL", "SETUSER", "reader", "on", ">pw", "%R~*", "+@all")
    assert login(srv, "reader").call("SORT", "a", "BY", "w_*") == [b"1", b"2"]
    a.call("ACL", "SETUSER", "split", "on", ">pw", "~a", "+@all", "(~* +get)")
    assert login(srv, "split").call("SORT", "a", "GET", "#") == Err(
        "ERR GET option of SORT denied due to insufficient ACL permissions.")


def test_reset_returns_to_the_default_user(srv):
    a = admin(srv)
    a.call("ACL", "SETUSER", "rs", "on", ">pw", "~*", "+@all")
    c = login(srv, "rs")
    assert c.call("RESET") == "RESET"
    assert c.call("ACL", "WHOAMI") == b"default"


def test_requirepass_is_the_default_users_password(start_server):
    srv = start_server("--requirepass", "s3cret")
    c = srv.raw()
    assert c.call("GET", "x") == Err("NOAUTH Authentication required.")
    assert c.call("AUTH", "default", "s3cret") == "OK"
    a = srv.admin()
    assert a.call("CONFIG", "SET", "requirepass", "") == "OK"
    # With no password left, a connection that never authenticated may run commands.
    assert srv.raw().call("PING") == "PONG"


def non_loopback_address() -> str:
    """This machine's address on a non-loopback interface (the one its default route uses)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent for a UDP connect
        addr = s.getsockname()[0]
    assert not addr.startswith("127."), "the test needs a non-loopback IPv4 address"
    return addr


def test_protected_mode_denies_remote_clients_without_a_password(start_server):
    addr = non_loopback_address()
    srv = start_server("--bind", f"127.0.0.1 {addr}", "--protected-mode", "yes")
    with socket.create_connection((addr, srv.port), timeout=5) as s:
        s.sendall(b"PING\r\n")
        data = b""
        while not data.endswith(b"\r\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"-DENIED Redis is running in protected mode because protected "
                           b"mode is enabled and no password is set for the default user.")
    # Loopback clients get in; a password for the default user lets remote clients in too.
    a = srv.raw()
    assert a.call("PING") == "PONG"
    assert a.call("CONFIG", "SET", "requirepass", "pw") == "OK"
    remote = RawConn(srv.port, host=addr)
    assert remote.call("AUTH", "pw") == "OK"
    assert remote.call("PING") == "PONG"
    remote.close()


def test_subscriber_losing_its_channel_is_disconnected(srv):
    a = admin(srv)
    a.call("ACL", "SETUSER", "listener", "on", ">pw", "&news", "&other", "+@all", "~*")
    kept = login(srv, "listener")
    assert kept.call("SUBSCRIBE", "other")[0] == b"subscribe"
    lost = login(srv, "listener")
    assert lost.call("SUBSCRIBE", "news")[0] == b"subscribe"
    a.call("ACL", "SETUSER", "listener", "resetchannels", "&other")
    with pytest.raises((ConnectionClosed, OSError)):
        lost.call("PING")
    # A subscriber whose channel is still allowed stays.
    assert a.call("PUBLISH", "other", "hi") == 1
    assert kept.read_reply() == [b"message", b"other", b"hi"]
