"""The door table: every memcached (text, meta, binary) and HTTP operation of
docs/security.md with its RESP equivalent, run by users that may and may not run that
equivalent. Each door must refuse exactly when `ACL DRYRUN <user> <equivalent>` refuses:
no operation lets a user do on another door what RESP would not let it do.

The doors are larder's own: the module is `larder_only`.
"""

from __future__ import annotations

from typing import Iterator

import pytest
import requests

from conftest import Server, ServerFactory, start_with_http
from test_memcached_support import McBin, McText, counter_extras, packet, store_extras

pytestmark = pytest.mark.larder_only

PASSWORD = "table-pw"
NO_ACCESS = 0x24

# name -> ACL rules. Every user has the password "pw".
USERS = {
    "all": ["~*", "&*", "+@all"],
    "reader": ["~t:*", "+@read"],
    "writer": ["~t:*", "+@write", "-flushdb"],
    "mixed": ["%R~t:*", "%W~w:*", "+@all", "-@dangerous"],
    "keyless": ["resetkeys", "+@all"],
    "nothing": ["~*", "-@all"],
    "admin": ["~*", "+@all", "-@write"],
}

# (door, operation, request, RESP equivalent). Keys `t:k` and `w:k`; `t:n` holds a number.
MC_TEXT = [
    ("get", "get t:k\r\n", ["GET", "t:k"]),
    ("gets", "gets w:k\r\n", ["GET", "w:k"]),
    ("gat", "gat 100 t:k\r\n", ["GETEX", "t:k"]),
    ("set", "set t:k 0 0 1\r\nv\r\n", ["SET", "t:k", "v"]),
    ("set w", "set w:k 0 0 1\r\nv\r\n", ["SET", "w:k", "v"]),
    ("add", "add t:new 0 0 1\r\nv\r\n", ["SET", "t:new", "v"]),
    ("append", "append t:k 0 0 1\r\nv\r\n", ["APPEND", "t:k", "v"]),
    ("prepend", "prepend w:k 0 0 1\r\nv\r\n", ["APPEND", "w:k", "v"]),
    ("incr", "incr t:n 1\r\n", ["INCRBY", "t:n", "1"]),
    ("decr", "decr t:n 1\r\n", ["DECRBY", "t:n", "1"]),
    ("delete", "delete t:gone\r\n", ["DEL", "t:gone"]),
    ("touch", "touch t:k 100\r\n", ["EXPIRE", "t:k", "100"]),
    ("stats", "stats\r\n", ["INFO"]),
    ("flush_all", "flush_all 1000\r\n", ["FLUSHDB"]),
    ("mg", "mg t:k v\r\n", ["GET", "t:k"]),
    ("mg T", "mg w:k v T100\r\n", ["GETEX", "w:k"]),
    ("ms", "ms t:k 1\r\nv\r\n", ["SET", "t:k", "v"]),
    ("md", "md t:gone\r\n", ["DEL", "t:gone"]),
    ("ma", "ma t:n\r\n", ["INCRBY", "t:n", "1"]),
]

MC_BINARY = [
    ("get", packet("get", "t:k"), ["GET", "t:k"]),
    ("get w", packet("get", "w:k"), ["GET", "w:k"]),
    ("set", packet("set", "t:k", "v", store_extras()), ["SET", "t:k", "v"]),
    ("append", packet("append", "w:k", "v"), ["APPEND", "w:k", "v"]),
    ("incr", packet("incr", "t:n", extras=counter_extras(1)), ["INCRBY", "t:n", "1"]),
    ("delete", packet("delete", "t:gone"), ["DEL", "t:gone"]),
    ("touch", packet("touch", "t:k", extras=b"\0\0\0\x64"), ["EXPIRE", "t:k", "100"]),
    ("gat", packet("gat", "t:k", extras=b"\0\0\0\x64"), ["GETEX", "t:k"]),
    ("stat", packet("stat"), ["INFO"]),
]

HTTP = [
    ("GET kv", "GET", "/v1/kv/t:k", ["GET", "t:k"]),
    ("HEAD kv", "HEAD", "/v1/kv/w:k", ["GET", "w:k"]),
    ("PUT kv", "PUT", "/v1/kv/t:k", ["SET", "t:k", "v"]),
    ("PUT kv w", "PUT", "/v1/kv/w:k", ["SET", "w:k", "v"]),
    ("DELETE kv", "DELETE", "/v1/kv/t:gone", ["DEL", "t:gone"]),
    ("metrics", "GET", "/metrics", ["INFO"]),
    ("keys", "GET", "/v1/keys", ["SCAN", "0"]),
]


@pytest.fixture(scope="module")
def door(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    factory = ServerFactory(target, tmp_path_factory.mktemp("door-acl"))
    srv = start_with_http(factory, "--requirepass", PASSWORD)
    r = srv.client(protocol=2, password=PASSWORD)
    for name, rules in USERS.items():
        r.execute_command("ACL", "SETUSER", name, "reset", "on", ">pw", *rules)
    r.close()
    yield srv
    factory.shutdown_all()


@pytest.fixture
def admin(door: Server):
    r = door.client(protocol=2, password=PASSWORD)
    r.flushall()
    r.mset({"t:k": "v", "w:k": "v", "t:n": "5"})
    yield r
    r.close()


def dry_refuses(r, user: str, argv: list[str]) -> bool:
    answer = r.execute_command("ACL", "DRYRUN", user, *argv)
    return answer not in (b"OK", "OK")


def text_login(door: Server, user: str) -> McText:
    c = McText(door.mc_port)
    c.send(f"set x 0 0 {len(user) + 3}\r\n{user} pw\r\n")
    assert c.line() == b"STORED"
    return c


def bin_login(door: Server, user: str) -> McBin:
    c = McBin(door.mc_port)
    assert c.call(0x21, "PLAIN", f"\0{user}\0pw").status == 0
    return c


@pytest.mark.parametrize("user", USERS)
def test_memcached_text_table(door: Server, admin, user: str) -> None:
    c = text_login(door, user)
    mismatches = []
    for name, request, argv in MC_TEXT:
        c.send(request)
        line = c.line()
        while line.startswith(b"VALUE") or line.startswith(b"STAT"):
            if line.startswith(b"VALUE"):
                c.line()
            line = c.line()
        if line.startswith(b"VA "):
            c.line()  # a meta get's value
        refused = line.startswith(b"CLIENT_ERROR NOPERM")
        if refused != dry_refuses(admin, user, argv):
            mismatches.append((name, line))
        admin.mset({"t:k": "v", "w:k": "v", "t:n": "5"})
    c.close()
    assert mismatches == []


@pytest.mark.parametrize("user", USERS)
def test_memcached_binary_table(door: Server, admin, user: str) -> None:
    c = bin_login(door, user)
    mismatches = []
    for name, request, argv in MC_BINARY:
        c.send(request)
        resp = c.read()
        while resp.key and resp.status == 0:  # STAT packets until the empty one
            resp = c.read()
        refused = resp.status == NO_ACCESS
        if refused != dry_refuses(admin, user, argv):
            mismatches.append((name, resp.status, resp.value))
        admin.mset({"t:k": "v", "w:k": "v", "t:n": "5"})
    c.close()
    assert mismatches == []


@pytest.mark.parametrize("user", USERS)
def test_http_table(door: Server, admin, user: str) -> None:
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {user}:pw"
    mismatches = []
    for name, method, path, argv in HTTP:
        r = s.request(method, f"http://127.0.0.1:{door.http_port}{path}", data=b"v")
        refused = r.status_code == 403
        if refused != dry_refuses(admin, user, argv):
            mismatches.append((name, r.status_code))
        admin.mset({"t:k": "v", "w:k": "v", "t:n": "5"})
    assert mismatches == []


def test_operator_dump_needs_admin_and_allkeys(door: Server, admin) -> None:
    for user, allowed in (("all", True), ("reader", False), ("keyless", False)):
        c = text_login(door, user)
        c.send("stats detail dump\r\n")
        line = c.line()
        assert line.startswith(b"CLIENT_ERROR NOPERM") != allowed, (user, line)
        c.close()


# The operators' commands: those that reveal every key (metadump, mgdump, watch) are MONITOR
# with all keys; the settings (crawler, cache_memlimit, slabs, lru) are CONFIG SET.
OPERATOR = [
    ("lru_crawler metadump all", True),
    ("lru_crawler mgdump all", True),
    ("watch mutations", True),
    ("lru_crawler sleep 0", False),
    ("cache_memlimit 1024", False),
    ("slabs automove 0", False),
    ("lru mode flat", False),
]


@pytest.mark.parametrize("line,all_keys", OPERATOR)
def test_operator_commands_are_checked_as_admin(door: Server, admin, line, all_keys) -> None:
    # "keyless" may run @admin commands but reads no key: only the key-revealing ones refuse it.
    for user, allowed in (("all", True), ("reader", False), ("keyless", not all_keys)):
        c = text_login(door, user)
        c.send(line + "\r\n")
        reply = c.line()
        assert reply.startswith(b"CLIENT_ERROR NOPERM") != allowed, (user, line, reply)
        if allowed:
            assert not reply.startswith(b"ERROR"), (user, line, reply)
        c.close()
