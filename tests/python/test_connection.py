"""Connection commands (issue 2, section 3): PING ECHO HELLO AUTH QUIT RESET and CLIENT ID SETNAME
GETNAME LIST INFO KILL SETINFO REPLY NO-EVICT NO-TOUCH PAUSE UNPAUSE.
"""

import re
import socket
import threading
import time

import pytest
import redis

from conftest import Err, RawConn, Simple, wait_until

NOAUTH = Err("NOAUTH Authentication required.")
WRONGPASS = Err("WRONGPASS invalid username-password pair or user is disabled.")


# --- PING ECHO ---------------------------------------------------------------------------------


def test_ping(r, rawp):
    assert r.ping() is True
    assert rawp.call("PING", "hello") == b"hello"


def test_ping_reply_types(rawp):
    rawp.send_command("PING")
    assert rawp.recv_exact(7) == b"+PONG\r\n"
    rawp.send_command("PING", "x y")
    assert rawp.recv_exact(9) == b"$3\r\nx y\r\n"


def test_ping_arity(raw):
    assert raw.call("PING", "a", "b") == Err("ERR wrong number of arguments for 'ping' command")


def test_echo(r):
    assert r.echo("hello") == b"hello"
    assert r.echo(b"\x00\xff\r\n") == b"\x00\xff\r\n"
    assert r.echo("") == b""


def test_echo_arity(raw):
    assert raw.call("ECHO") == Err("ERR wrong number of arguments for 'echo' command")
    assert raw.call("ECHO", "a", "b") == Err("ERR wrong number of arguments for 'echo' command")


# --- HELLO -------------------------------------------------------------------------------------


HELLO_KEYS = [b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"]


def test_hello_3(raw):
    f = raw.call_frame("HELLO", "3")
    assert f.kind == "%"
    reply = f.py()
    assert list(reply) == HELLO_KEYS
    assert reply[b"server"] == b"redis"
    assert re.fullmatch(rb"\d+\.\d+\.\d+", reply[b"version"])
    assert reply[b"proto"] == 3
    assert reply[b"id"] == raw.call("CLIENT", "ID")
    assert reply[b"mode"] == b"standalone"
    assert reply[b"role"] == b"master"
    assert reply[b"modules"] == []


def test_hello_2_is_flat_array(raw):
    f = raw.call_frame("HELLO", "2")
    assert f.kind == "*"
    flat = f.py()
    assert flat[0::2] == HELLO_KEYS
    assert flat[flat.index(b"proto") + 1] == 2


def test_hello_without_version_keeps_protocol(raw):
    assert isinstance(raw.call("HELLO"), list)
    raw.hello3()
    assert raw.call_frame("HELLO").kind == "%"


def test_hello_version_major_at_least_7(raw):
    version = raw.call("HELLO", "3")[b"version"]
    assert int(version.split(b".")[0]) >= 7


@pytest.mark.parametrize("version", ["1", "4", "0", "-1", "300"])
def test_hello_unsupported_version(raw, version):
    assert raw.call("HELLO", version) == Err("NOPROTO unsupported protocol version")
    raw.send_command("GET", "x")
    assert raw.recv_exact(5) == b"$-1\r\n"  # still RESP2


@pytest.mark.parametrize("version", ["x", "3.0", "", "99999999999999999999"])
def test_hello_version_not_an_integer(raw, version):
    assert raw.call("HELLO", version) == Err(
        "ERR Protocol version is not an integer or out of range")


def test_hello_setname(raw):
    raw.call("HELLO", "3", "SETNAME", "conn-a")
    assert raw.call("CLIENT", "GETNAME") == b"conn-a"


def test_hello_setname_invalid(raw):
    assert raw.call("HELLO", "3", "SETNAME", "a b") == Err(
        "ERR Client names cannot contain spaces, newlines or special characters.")
    raw.send_command("GET", "x")
    assert raw.recv_exact(5) == b"$-1\r\n"  # the failed HELLO did not switch protocol


@pytest.mark.parametrize("args, bad", [
    (["FOO"], "FOO"), (["AUTH", "x"], "AUTH"), (["SETNAME"], "SETNAME"),
    (["AUTH", "default"], "AUTH"),
])
def test_hello_syntax_errors(raw, args, bad):
    assert raw.call("HELLO", "3", *args) == Err(f"ERR Syntax error in HELLO option '{bad}'")


def test_hello_auth_without_password_configured(raw):
    # The default user has no password: any password authenticates.
    assert raw.call("HELLO", "3", "AUTH", "default", "anything")[b"proto"] == 3


def test_redis_py_resp3_handshake(server):
    c = server.client(protocol=3)
    assert c.ping() is True
    conn = c.connection_pool.get_connection()
    try:
        assert conn.handshake_metadata[b"proto"] == 3
    finally:
        c.connection_pool.release(conn)


# --- AUTH --------------------------------------------------------------------------------------


@pytest.fixture
def auth_server(start_server):
    return start_server("--requirepass", "s3cret")


def test_auth_without_password_configured(raw):
    assert raw.call("AUTH", "x") == Err(
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?")
    assert raw.call("AUTH", "default", "x") == "OK"


def test_auth_syntax(raw):
    assert raw.call("AUTH", "a", "b", "c") == Err("ERR syntax error")
    assert raw.call("AUTH") == Err("ERR wrong number of arguments for 'auth' command")


def test_noauth(auth_server):
    c = RawConn(auth_server.port)
    for argv in (["PING"], ["GET", "x"], ["SET", "x", "y"], ["CLIENT", "ID"], ["SELECT", "1"],
                 ["INFO"], ["ECHO", "x"], ["CONFIG", "GET", "*"]):
        assert c.call(*argv) == NOAUTH, argv
    c.close()


def test_unknown_command_and_arity_are_checked_before_auth(auth_server):
    c = RawConn(auth_server.port)
    assert c.call("foo") == Err("ERR unknown command 'foo', with args beginning with: ")
    assert c.call("GET") == Err("ERR wrong number of arguments for 'get' command")
    assert c.call("GET", "x") == NOAUTH
    c.close()


def test_auth_wrong_and_right(auth_server):
    c = RawConn(auth_server.port)
    assert c.call("AUTH", "wrong") == WRONGPASS
    assert c.call("AUTH", "default", "wrong") == WRONGPASS
    assert c.call("GET", "x") == NOAUTH
    assert c.call("AUTH", "s3cret") == "OK"
    assert c.call("PING") == "PONG"
    c.close()
    c = RawConn(auth_server.port)
    assert c.call("AUTH", "default", "s3cret") == "OK"
    assert c.call("PING") == "PONG"
    c.close()


def test_hello_before_auth(auth_server):
    c = RawConn(auth_server.port)
    assert c.call("HELLO", "3") == Err(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
        "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
        "the RESP protocol version at the same time")
    assert c.call("HELLO", "3", "AUTH", "default", "wrong") == WRONGPASS
    reply = c.call("HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "authed")
    assert reply[b"proto"] == 3
    assert c.call("CLIENT", "GETNAME") == b"authed"
    c.send_command("GET", "x")
    assert c.recv_exact(3) == b"_\r\n"
    c.close()


def test_redis_py_with_password(auth_server, protocol):
    c = auth_server.client(protocol=protocol)  # the fixture passes password=
    assert c.set("k", "v") is True
    assert c.get("k") == b"v"
    bad = redis.Redis(host="127.0.0.1", port=auth_server.port, protocol=protocol,
                      password="nope", retry=None)
    with pytest.raises(redis.AuthenticationError):
        bad.ping()
    bad.close()


def test_config_set_requirepass_at_runtime(start_server):
    srv = start_server()
    admin = srv.raw()
    assert admin.call("CONFIG", "SET", "requirepass", "pw") == "OK"
    # Connections already authenticated (as the default user) stay so.
    assert admin.call("PING") == "PONG"
    c = srv.raw()
    assert c.call("PING") == NOAUTH
    assert c.call("AUTH", "pw") == "OK"
    assert admin.call("CONFIG", "SET", "requirepass", "") == "OK"
    d = srv.raw()
    assert d.call("PING") == "PONG"


# --- QUIT RESET --------------------------------------------------------------------------------


def test_quit(raw):
    assert raw.call("QUIT") == "OK"
    assert raw.is_closed()


def test_quit_after_pipelined_commands(raw):
    raw.send(RawConn.encode("SET", "q", "1") + RawConn.encode("QUIT")
             + RawConn.encode("SET", "q", "2"))
    assert raw.read_reply() == "OK"
    assert raw.read_reply() == "OK"
    assert raw.is_closed()


def test_quit_inline(server):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    s.sendall(b"QUIT\r\n")
    assert s.recv(100) == b"+OK\r\n"
    assert s.recv(100) == b""
    s.close()


def test_reset(raw):
    raw.call("HELLO", "3", "SETNAME", "before")
    raw.call("SELECT", "3")
    f = raw.call_frame("RESET")
    assert (f.kind, f.value) == ("+", "RESET")
    assert raw.call("CLIENT", "GETNAME") is None
    raw.send_command("GET", "x")
    assert raw.recv_exact(5) == b"$-1\r\n"  # back to RESP2
    info = raw.call("CLIENT", "INFO").decode()
    assert " db=0 " in info
    assert _field(info, "flags") == "N"


def test_reset_turns_replies_back_on(raw):
    raw.send(RawConn.encode("CLIENT", "REPLY", "OFF") + RawConn.encode("RESET")
             + RawConn.encode("PING"))
    assert raw.read_reply() == "RESET"
    assert raw.read_reply() == "PONG"


def test_reset_deauthenticates(auth_server):
    c = RawConn(auth_server.port)
    c.call("AUTH", "s3cret")
    assert c.call("RESET") == "RESET"
    assert c.call("PING") == NOAUTH
    c.close()


# --- CLIENT ID SETNAME GETNAME -----------------------------------------------------------------


def test_client_id_unique_and_increasing(server):
    ids = [server.raw().call("CLIENT", "ID") for _ in range(5)]
    assert all(isinstance(i, int) and i > 0 for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == 5


def test_client_setname_getname(r):
    assert r.client_getname() is None
    assert r.client_setname("my-conn") is True
    assert r.execute_command("CLIENT", "GETNAME") == b"my-conn"
    assert r.client_setname("") is True
    assert r.client_getname() is None


@pytest.mark.parametrize("name", ["a b", "a\nb", "tab\there", "é", "\x7f"])
def test_client_setname_invalid(raw, name):
    assert raw.call("CLIENT", "SETNAME", name) == Err(
        "ERR Client names cannot contain spaces, newlines or special characters.")


# --- CLIENT LIST INFO --------------------------------------------------------------------------

CLIENT_FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub",
                 "psub", "ssub", "multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs",
                 "rbp", "obl", "oll", "omem", "tot-mem", "events", "cmd", "user", "redir",
                 "resp"]


def _parse_client_line(line: str) -> dict[str, str]:
    out = {}
    for part in line.split(" "):
        k, _, v = part.partition("=")
        out[k] = v
    return out


def _field(line: str, name: str) -> str:
    return _parse_client_line(line.strip())[name]


def test_client_info_fields(server):
    c = server.raw()
    c.call("CLIENT", "SETNAME", "inspect-me")
    c.call("SELECT", "2")
    text = c.call("CLIENT", "INFO").decode()
    assert text.endswith("\n")
    fields = _parse_client_line(text.rstrip("\n"))
    # Redis 7.0's fields in Redis's order (7.2 appends lib-name and lib-ver).
    assert list(fields)[: len(CLIENT_FIELDS)] == CLIENT_FIELDS
    local_host, local_port = c.sock.getsockname()
    assert fields["id"] == str(c.call("CLIENT", "ID"))
    assert fields["addr"] == f"{local_host}:{local_port}"
    assert fields["laddr"] == f"127.0.0.1:{server.port}"
    assert fields["name"] == "inspect-me"
    assert fields["db"] == "2"
    assert fields["flags"] == "N"
    assert fields["cmd"] == "client|info"
    assert fields["user"] == "default"
    assert fields["resp"] == "2"
    assert fields["multi"] == "-1"
    for numeric in ("fd", "age", "idle", "qbuf", "tot-mem", "omem"):
        assert fields[numeric].isdigit(), numeric


def test_client_info_resp3(server):
    c = server.raw()
    c.hello3()
    assert _field(c.call("CLIENT", "INFO").decode(), "resp") == "3"


def test_client_list(server):
    a, b = server.raw(), server.raw()
    a.call("CLIENT", "SETNAME", "conn-a")
    b.call("CLIENT", "SETNAME", "conn-b")
    text = a.call("CLIENT", "LIST").decode()
    assert text.endswith("\n")
    lines = text.rstrip("\n").split("\n")
    by_name = {_field(line, "name"): _parse_client_line(line) for line in lines}
    assert {"conn-a", "conn-b"} <= set(by_name)
    assert by_name["conn-a"]["cmd"] == "client|list"
    assert by_name["conn-b"]["cmd"] == "client|setname"
    assert int(by_name["conn-a"]["id"]) == a.call("CLIENT", "ID")
    for line in lines:
        assert list(_parse_client_line(line))[: len(CLIENT_FIELDS)] == CLIENT_FIELDS


def test_client_list_filters(server):
    a, b = server.raw(), server.raw()
    id_a, id_b = a.call("CLIENT", "ID"), b.call("CLIENT", "ID")
    text = a.call("CLIENT", "LIST", "ID", id_b).decode()
    assert [_field(line, "id") for line in text.strip().split("\n")] == [str(id_b)]
    text = a.call("CLIENT", "LIST", "ID", id_a, id_b, "999999").decode()
    assert sorted(int(_field(line, "id")) for line in text.strip().split("\n")) == [id_a, id_b]
    assert a.call("CLIENT", "LIST", "ID", "999999") == b""
    text = a.call("CLIENT", "LIST", "TYPE", "normal").decode()
    assert str(id_a) in {_field(line, "id") for line in text.strip().split("\n")}
    assert a.call("CLIENT", "LIST", "TYPE", "pubsub") == b""


def test_client_list_errors(raw):
    assert raw.call("CLIENT", "LIST", "TYPE", "foo") == Err("ERR Unknown client type 'foo'")
    assert raw.call("CLIENT", "LIST", "ID", "x") == Err("ERR Invalid client ID")
    assert raw.call("CLIENT", "LIST", "ID") == Err("ERR syntax error")
    assert raw.call("CLIENT", "LIST", "x") == Err("ERR syntax error")


def test_client_list_drops_closed_connections(server):
    admin = server.raw()
    c = server.raw()
    c.call("CLIENT", "SETNAME", "short-lived")
    assert b"name=short-lived" in admin.call("CLIENT", "LIST")
    c.close()
    assert wait_until(lambda: b"name=short-lived" not in admin.call("CLIENT", "LIST"),
                      timeout=3)


# --- CLIENT KILL -------------------------------------------------------------------------------


def test_client_kill_by_id(server):
    admin, victim = server.raw(), server.raw()
    victim_id = victim.call("CLIENT", "ID")
    assert admin.call("CLIENT", "KILL", "ID", victim_id) == 1
    assert victim.is_closed()
    assert admin.call("CLIENT", "KILL", "ID", victim_id) == 0
    assert admin.call("PING") == "PONG"


def test_client_kill_by_addr(server):
    admin, victim = server.raw(), server.raw()
    # A round trip first: connect() returns once the kernel has accepted, which can be before
    # the server has registered the connection, so a KILL could otherwise find nobody.
    assert victim.call("PING") == "PONG"
    host, port = victim.sock.getsockname()
    assert admin.call("CLIENT", "KILL", "ADDR", f"{host}:{port}") == 1
    assert victim.is_closed()
    assert admin.call("CLIENT", "KILL", "ADDR", f"{host}:{port}") == 0


def test_client_kill_old_form(server):
    admin, victim = server.raw(), server.raw()
    # A round trip first: connect() returns once the kernel has accepted, which can be before
    # the server has registered the connection, so a KILL could otherwise find nobody.
    assert victim.call("PING") == "PONG"
    host, port = victim.sock.getsockname()
    assert admin.call("CLIENT", "KILL", f"{host}:{port}") == "OK"
    assert victim.is_closed()
    assert admin.call("CLIENT", "KILL", f"{host}:{port}") == Err("ERR No such client")


def test_client_kill_by_laddr_kills_all_but_me(server):
    admin = server.raw()
    victims = [server.raw() for _ in range(3)]
    for v in victims:
        v.call("PING")
    killed = admin.call("CLIENT", "KILL", "LADDR", f"127.0.0.1:{server.port}")
    assert killed >= 3
    for v in victims:
        assert v.is_closed()
    assert admin.call("PING") == "PONG"  # SKIPME defaults to yes


def test_client_kill_skipme(server):
    admin = server.raw()
    my_id = admin.call("CLIENT", "ID")
    assert admin.call("CLIENT", "KILL", "ID", my_id) == 0
    assert admin.call("CLIENT", "KILL", "ID", my_id, "SKIPME", "yes") == 0
    admin.send_command("CLIENT", "KILL", "ID", my_id, "SKIPME", "no")
    # The killer gets its reply (or nothing) and then the connection is closed.
    assert admin.is_closed()


def test_client_kill_errors(raw):
    assert raw.call("CLIENT", "KILL", "ID", "x") == Err("ERR client-id should be greater than 0")
    assert raw.call("CLIENT", "KILL", "FOO", "x") == Err("ERR syntax error")
    assert raw.call("CLIENT", "KILL", "ID", "1", "SKIPME", "maybe") == Err("ERR syntax error")
    assert raw.call("CLIENT", "KILL", "TYPE", "foo") == Err("ERR Unknown client type 'foo'")
    assert raw.call("CLIENT", "KILL", "1.2.3.4:5") == Err("ERR No such client")
    assert raw.call("CLIENT", "KILL", "ADDR", "1.2.3.4:5") == 0


def test_client_kill_redis_py(server):
    admin = server.client()
    victim = server.client()
    victim.ping()
    victim_id = victim.client_id()
    assert admin.client_kill_filter(_id=victim_id) == 1


# --- CLIENT REPLY ------------------------------------------------------------------------------


def test_client_reply_off_on(raw):
    raw.send(RawConn.encode("CLIENT", "REPLY", "OFF") + RawConn.encode("SET", "a", "1")
             + RawConn.encode("GET", "a") + RawConn.encode("foo")
             + RawConn.encode("CLIENT", "REPLY", "ON") + RawConn.encode("GET", "a"))
    assert raw.read_reply() == "OK"  # the reply to CLIENT REPLY ON
    assert raw.read_reply() == b"1"
    assert raw.read_until_idle(idle=0.2) == b""


def test_client_reply_skip(raw):
    raw.send(RawConn.encode("CLIENT", "REPLY", "SKIP") + RawConn.encode("SET", "a", "1")
             + RawConn.encode("GET", "a"))
    assert raw.read_reply() == b"1"
    assert raw.read_until_idle(idle=0.2) == b""


def test_client_reply_off_then_skip_stays_off(raw):
    raw.send(RawConn.encode("CLIENT", "REPLY", "OFF") + RawConn.encode("CLIENT", "REPLY", "SKIP")
             + RawConn.encode("PING") + RawConn.encode("PING"))
    assert raw.read_until_idle(idle=0.3) == b""


def test_client_reply_errors(raw):
    assert raw.call("CLIENT", "REPLY", "FOO") == Err("ERR syntax error")
    assert raw.call("CLIENT", "REPLY", "ON") == "OK"


# --- CLIENT NO-EVICT NO-TOUCH SETINFO ----------------------------------------------------------


def test_client_no_evict(raw):
    assert raw.call("CLIENT", "NO-EVICT", "on") == "OK"
    assert "e" in _field(raw.call("CLIENT", "INFO").decode(), "flags")
    assert raw.call("CLIENT", "NO-EVICT", "OFF") == "OK"
    assert "e" not in _field(raw.call("CLIENT", "INFO").decode(), "flags")
    assert raw.call("CLIENT", "NO-EVICT", "maybe") == Err("ERR syntax error")


@pytest.mark.larder_only  # CLIENT NO-TOUCH is Redis 7.2; the reference server is 7.0
def test_client_no_touch(server):
    c = server.raw()
    other = server.raw()
    assert c.call("CLIENT", "NO-TOUCH", "on") == "OK"
    assert "T" in _field(c.call("CLIENT", "INFO").decode(), "flags")
    other.call("SET", "k", "v")
    time.sleep(1.1)
    c.call("GET", "k")
    # A NO-TOUCH client's reads do not reset the key's idle time...
    assert c.call("OBJECT", "IDLETIME", "k") >= 1
    # ...but TOUCH still does.
    c.call("TOUCH", "k")
    assert c.call("OBJECT", "IDLETIME", "k") == 0
    assert c.call("CLIENT", "NO-TOUCH", "OFF") == "OK"
    assert "T" not in _field(c.call("CLIENT", "INFO").decode(), "flags")
    assert c.call("CLIENT", "NO-TOUCH", "maybe") == Err("ERR syntax error")


@pytest.mark.larder_only  # CLIENT SETINFO is Redis 7.2; the reference server is 7.0
def test_client_setinfo(raw):
    assert raw.call("CLIENT", "SETINFO", "LIB-NAME", "mylib") == "OK"
    assert raw.call("CLIENT", "SETINFO", "lib-ver", "1.2.3") == "OK"
    fields = _parse_client_line(raw.call("CLIENT", "INFO").decode().strip())
    assert fields["lib-name"] == "mylib"
    assert fields["lib-ver"] == "1.2.3"
    assert list(fields)[-2:] == ["lib-name", "lib-ver"]
    assert raw.call("CLIENT", "SETINFO", "FOO", "x") == Err("ERR Unrecognized option 'FOO'")
    assert raw.call("CLIENT", "SETINFO", "LIB-NAME", "a b") == Err(
        "ERR LIB-NAME cannot contain spaces, newlines or special characters.")
    assert raw.call("CLIENT", "SETINFO", "LIB-NAME") == Err(
        "ERR wrong number of arguments for 'client|setinfo' command")


@pytest.mark.larder_only
def test_redis_py_sets_lib_name(server):
    c = server.client()
    c.ping()
    info = c.client_info()
    assert info["lib-name"] == "redis-py"
    assert info["lib-ver"] == redis.__version__


# --- CLIENT PAUSE UNPAUSE ----------------------------------------------------------------------


def _reply_within(conn: RawConn, seconds: float) -> bool:
    conn.sock.settimeout(seconds)
    try:
        chunk = conn.sock.recv(65536)
    except socket.timeout:
        return False
    conn.buf += chunk
    return bool(chunk)


def test_client_pause_all(server):
    # ALL (the default mode) holds every client's commands, the pausing client's own
    # included, so CLIENT UNPAUSE cannot end it from a normal client: only the timeout can.
    admin, other = server.raw(), server.raw()
    start = time.monotonic()
    assert admin.call("CLIENT", "PAUSE", "600") == "OK"
    other.send_command("PING")
    admin.send_command("CLIENT", "UNPAUSE")
    assert not _reply_within(other, 0.3), "a paused client got a reply"
    assert other.read_reply() == "PONG"
    assert admin.read_reply() == "OK"
    assert time.monotonic() - start >= 0.55


def test_client_unpause_ends_a_write_pause(server):
    admin, other = server.raw(), server.raw()
    assert admin.call("CLIENT", "PAUSE", "3000", "WRITE") == "OK"
    other.send_command("INCR", "n")
    assert not _reply_within(other, 0.3), "a write ran during CLIENT PAUSE WRITE"
    assert admin.call("CLIENT", "UNPAUSE") == "OK"
    assert other.read_reply() == 1


def test_client_pause_write_lets_reads_through(server):
    admin, other = server.raw(), server.raw()
    admin.call("SET", "k", "v")
    assert admin.call("CLIENT", "PAUSE", "3000", "WRITE") == "OK"
    assert other.call("GET", "k") == b"v"
    other.send_command("SET", "k", "v2")
    assert not _reply_within(other, 0.3), "a write ran during CLIENT PAUSE WRITE"
    admin.call("CLIENT", "UNPAUSE")
    assert other.read_reply() == "OK"
    assert admin.call("GET", "k") == b"v2"


def test_client_pause_holds_a_large_set_until_unpaused(server):
    # A value of 32 KiB or more is read into a buffer of its own; the paused request must keep
    # it, and the request after it must wait its turn.
    admin, other = server.raw(), server.raw()
    v = bytes(range(256)) * 1024
    assert admin.call("CLIENT", "PAUSE", "3000", "WRITE") == "OK"
    req = RawConn.encode("SET", "big", v) + RawConn.encode("STRLEN", "big")
    other.send(req[:1000])
    other.send(req[1000:])
    assert not _reply_within(other, 0.3), "a write ran during CLIENT PAUSE WRITE"
    assert admin.call("CLIENT", "UNPAUSE") == "OK"
    assert other.read_reply() == "OK"
    assert other.read_reply() == len(v)
    assert admin.call("GET", "big") == v


def test_client_pause_expires(server):
    admin, other = server.raw(), server.raw()
    start = time.monotonic()
    assert admin.call("CLIENT", "PAUSE", "300", "ALL") == "OK"
    assert other.call("PING") == "PONG"
    elapsed = time.monotonic() - start
    assert 0.25 <= elapsed < 2.0, elapsed


def test_client_pause_errors(raw):
    assert raw.call("CLIENT", "PAUSE", "x") == Err(
        "ERR timeout is not an integer or out of range")
    assert raw.call("CLIENT", "PAUSE", "-1") == Err("ERR timeout is negative")
    assert raw.call("CLIENT", "PAUSE", "10", "FOO") == Err(
        "ERR CLIENT PAUSE mode must be WRITE or ALL")
    assert raw.call("CLIENT", "UNPAUSE") == "OK"


def test_client_pause_does_not_block_accepting_connections(server):
    admin = server.raw()
    admin.call("CLIENT", "PAUSE", "500")
    results = []

    def connect():
        c = RawConn(server.port)
        c.send_command("PING")
        results.append(c)

    t = threading.Thread(target=connect)
    t.start()
    t.join(timeout=2)
    assert results, "connecting during a pause hung"
    assert results[0].read_reply() == "PONG"  # once the pause is over
    results[0].close()


# --- CLIENT HELP and errors --------------------------------------------------------------------


def test_client_help(rawp):
    lines = rawp.call("CLIENT", "HELP")
    assert lines[0] == "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    text = "\n".join(lines)
    for sub in ("GETNAME", "ID", "INFO", "KILL", "LIST", "PAUSE", "REPLY", "SETNAME",
                "UNPAUSE", "NO-EVICT"):
        assert sub in text, sub
    assert all(isinstance(line, Simple) for line in lines)


def test_client_errors(raw):
    assert raw.call("CLIENT", "FOO") == Err("ERR unknown subcommand 'FOO'. Try CLIENT HELP.")
    assert raw.call("CLIENT") == Err("ERR wrong number of arguments for 'client' command")
    assert raw.call("CLIENT", "SETNAME") == Err(
        "ERR wrong number of arguments for 'client|setname' command")
