"""Set commands: SADD SREM SCARD SISMEMBER SMISMEMBER SMEMBERS SRANDMEMBER SPOP SMOVE SINTER
SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE SSCAN.

Tests taking `r` run twice, over RESP2 and RESP3; error texts and reply types are checked on
raw sockets. Reply order is not part of a set's contract, so members are compared sorted.
"""

import pytest

from conftest import Err

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = Err("ERR value is not an integer or out of range")
SYNTAX = Err("ERR syntax error")
NOT_POSITIVE = Err("ERR value is out of range, must be positive")


def s(items):
    """Members as sorted bytes, from any reply (list, set) or any str/bytes/int items."""
    return sorted(i if isinstance(i, bytes) else str(i).encode() for i in items)


def test_sadd_srem_scard(r):
    assert r.sadd("k", "a", "b", "a") == 2
    assert r.sadd("k", "b", "c") == 1
    assert r.sadd("k", "c") == 0
    assert r.scard("k") == 3
    assert r.scard("none") == 0
    assert r.type("k") in (b"set", "set")
    assert r.srem("k", "a", "zz", "a") == 1
    assert r.srem("k", "zz") == 0
    assert r.srem("none", "a") == 0
    assert s(r.smembers("k")) == [b"b", b"c"]
    assert r.srem("k", "b", "c", "d") == 2
    assert r.exists("k") == 0


def test_sismember_smismember(r):
    r.sadd("k", "a", "1")
    assert r.sismember("k", "a") == 1
    assert r.sismember("k", "1") == 1
    assert r.sismember("k", "01") == 0
    assert r.sismember("k", "b") == 0
    assert r.sismember("none", "a") == 0
    assert r.smismember("k", "a", "b", "1") == [1, 0, 1]
    assert r.smismember("none", "a", "b") == [0, 0]


def test_intset_and_hashtable_encodings(r):
    r.sadd("i", 3, -1, 70000, 2)
    assert r.object("encoding", "i") in (b"intset", "intset")
    # An intset replies in ascending order.
    assert r.execute_command("SMEMBERS", "i") in ([b"-1", b"2", b"3", b"70000"],
                                                  {b"-1", b"2", b"3", b"70000"})
    assert list(r.execute_command("SSCAN", "i", 0)[1]) == [b"-1", b"2", b"3", b"70000"]
    r.sadd("i", "x")
    assert r.object("encoding", "i") in (b"hashtable", "hashtable")
    r.srem("i", "x")
    assert r.object("encoding", "i") in (b"hashtable", "hashtable"), "never converts back"
    for member in ["01", "+1", "-0", " 1", "1.5", "9223372036854775808"]:
        r.delete("n")
        r.sadd("n", member)
        assert r.object("encoding", "n") in (b"hashtable", "hashtable"), member
    r.sadd("big", *range(512))
    assert r.object("encoding", "big") in (b"intset", "intset")
    r.sadd("big", 512)
    assert r.object("encoding", "big") in (b"hashtable", "hashtable")
    assert r.scard("big") == 513
    r.sadd("wide", -9223372036854775808, 9223372036854775807)
    assert r.object("encoding", "wide") in (b"intset", "intset")
    assert s(r.smembers("wide")) == [b"-9223372036854775808", b"9223372036854775807"]


@pytest.fixture
def restore_intset_entries(server):
    yield
    with server.admin() as c:
        c.call("CONFIG", "SET", "set-max-intset-entries", "512")


def test_set_max_intset_entries(r, restore_intset_entries):
    assert r.config_set("set-max-intset-entries", "2")
    r.sadd("k", 1, 2)
    assert r.object("encoding", "k") in (b"intset", "intset")
    r.sadd("k", 3)
    assert r.object("encoding", "k") in (b"hashtable", "hashtable")
    r.sadd("a", 1, 2, 3)
    assert r.object("encoding", "a") in (b"hashtable", "hashtable")
    r.sinterstore("d", "a", "k")
    assert r.object("encoding", "d") in (b"hashtable", "hashtable")
    r.sinterstore("d", "a", "k", "nothing")
    assert r.exists("d") == 0


def test_reply_types_on_the_wire(rawp, protocol):
    set_kind = "~" if protocol == 3 else "*"
    null_kind = "_" if protocol == 3 else "$"
    rawp.call("SADD", "k", "a")
    for args in [("SMEMBERS", "k"), ("SMEMBERS", "none"), ("SINTER", "k", "none"),
                 ("SINTER", "k"), ("SUNION", "k", "none"), ("SDIFF", "k", "none"),
                 ("SDIFF", "none", "k"), ("SPOP", "none", "1"), ("SPOP", "k", "0")]:
        assert rawp.call_frame(*args).kind == set_kind, args
    for args in [("SPOP", "none"), ("SRANDMEMBER", "none")]:
        f = rawp.call_frame(*args)
        assert (f.kind, f.value) == (null_kind, None), args
    for args in [("SRANDMEMBER", "k", "2"), ("SRANDMEMBER", "k", "-2"), ("SRANDMEMBER", "none", "3"),
                 ("SRANDMEMBER", "k", "0"), ("SMISMEMBER", "k", "a")]:
        assert rawp.call_frame(*args).kind == "*", args
    assert rawp.call_frame("SINTERCARD", "1", "k").kind == ":"
    f = rawp.call_frame("SSCAN", "none", "0")
    assert f.kind == "*" and f.py() == [b"0", []]
    f = rawp.call_frame("SPOP", "k", "3")
    assert f.kind == set_kind and f.py() in ([b"a"], {b"a"})


def test_srandmember(r):
    for members in [list(range(10)), [f"m{i}" for i in range(10)]]:
        r.delete("k")
        r.sadd("k", *members)
        want = s(members)
        assert s([r.srandmember("k")])[0] in want
        for count in [1, 2, 3, 4, 9, 10, 11, 1000]:
            got = s(r.srandmember("k", count))
            assert len(got) == min(count, 10), count
            assert len(set(got)) == len(got), count
            assert set(got) <= set(want)
        got = r.srandmember("k", -25)
        assert len(got) == 25 and set(s(got)) <= set(want)
        seen = set()
        for _ in range(40):
            seen.update(s(r.srandmember("k", -5)))
        assert seen == set(want)
        assert r.srandmember("k", 0) == []
    assert r.srandmember("none") is None
    assert r.srandmember("none", 5) == []
    assert r.srandmember("none", -5) == []


def test_spop(r):
    r.sadd("k", "a", "b", "c")
    popped = [r.spop("k") for _ in range(3)]
    assert s(popped) == [b"a", b"b", b"c"]
    assert r.exists("k") == 0
    assert r.spop("k") is None
    for members in [list(range(10)), [f"m{i}" for i in range(10)]]:
        for n in [0, 1, 2, 5, 7, 9, 10, 15]:
            r.delete("k")
            r.sadd("k", *members)
            got = s(r.spop("k", n))
            assert len(got) == min(n, 10)
            rest = s(r.smembers("k"))
            assert sorted(rest + got) == s(members)
            assert r.exists("k") == (1 if n < 10 else 0)
    assert list(r.spop("none", 3)) == []


def test_smove(r):
    r.sadd("a", "1", "2", "x")
    r.sadd("b", "y")
    assert r.smove("a", "b", "1") == 1
    assert s(r.smembers("a")) == [b"2", b"x"]
    assert s(r.smembers("b")) == [b"1", b"y"]
    assert r.smove("a", "b", "nope") == 0
    assert r.smove("none", "b", "1") == 0
    assert r.smove("a", "a", "2") == 1
    assert r.smove("a", "a", "3") == 0
    assert r.smove("a", "c", "2") == 1
    assert r.object("encoding", "c") in (b"intset", "intset")
    assert r.smove("a", "c", "x") == 1
    assert r.exists("a") == 0
    assert s(r.smembers("c")) == [b"2", b"x"]
    assert r.object("encoding", "c") in (b"hashtable", "hashtable")
    # Already in the destination: still moved out of the source.
    r.sadd("d", "z")
    r.sadd("e", "z", "w")
    assert r.smove("d", "e", "z") == 1
    assert r.exists("d") == 0
    assert s(r.smembers("e")) == [b"w", b"z"]


def test_smove_type_checks(raw):
    raw.call("SET", "str", "v")
    raw.call("SADD", "a", "1")
    assert raw.call("SMOVE", "none", "str", "1") == 0
    assert raw.call("SMOVE", "str", "a", "1") == WRONGTYPE
    assert raw.call("SMOVE", "a", "str", "1") == WRONGTYPE
    assert raw.call("SMOVE", "a", "str", "nope") == WRONGTYPE
    assert raw.call("SMOVE", "str", "str", "1") == WRONGTYPE
    assert raw.call("SMEMBERS", "a") == [b"1"]


def test_sinter_sunion_sdiff(r):
    r.sadd("a", 1, 2, 3, "x")
    r.sadd("b", 2, 3, 4)
    r.sadd("c", 3, 2, "y")
    assert s(r.sinter("a", "b", "c")) == [b"2", b"3"]
    assert s(r.sinter("a")) == s([1, 2, 3, "x"])
    assert s(r.sinter("a", "a")) == s([1, 2, 3, "x"])
    assert s(r.sinter("a", "none")) == []
    assert s(r.sunion("a", "b", "none")) == s([1, 2, 3, 4, "x"])
    assert s(r.sunion("none")) == []
    assert s(r.sdiff("a", "b", "c")) == s([1, "x"])
    assert s(r.sdiff("a", "none")) == s([1, 2, 3, "x"])
    assert s(r.sdiff("a", "b", "a")) == []
    assert s(r.sdiff("none", "a")) == []


def test_store_commands(r):
    r.sadd("a", 1, 2, 3, "x")
    r.sadd("b", 2, 3, 4)
    assert r.sinterstore("d", "a", "b") == 2
    assert s(r.smembers("d")) == [b"2", b"3"]
    assert r.object("encoding", "d") in (b"intset", "intset")
    assert r.expire("d", 100)
    assert r.sunionstore("d", "a", "b") == 5
    assert r.ttl("d") == -1
    assert r.object("encoding", "d") in (b"hashtable", "hashtable")
    assert r.sdiffstore("d", "a", "b") == 2
    assert s(r.smembers("d")) == s([1, "x"])
    # The destination may be a source.
    assert r.sunionstore("a", "a", "b") == 5
    assert s(r.smembers("a")) == s([1, 2, 3, 4, "x"])
    # Whatever the destination held is replaced, or deleted for an empty result.
    r.set("str", "v")
    assert r.sunionstore("str", "b") == 3
    assert r.type("str") in (b"set", "set")
    r.rpush("l", "v")
    assert r.sinterstore("l", "a", "none") == 0
    assert r.exists("l") == 0
    assert r.sdiffstore("e", "a", "a") == 0
    assert r.exists("e") == 0
    assert r.sinterstore("e", "none") == 0
    assert r.exists("e") == 0


def test_sintercard(r):
    r.sadd("a", 1, 2, 3, "x")
    r.sadd("b", 2, 3, 4, "x")
    assert r.sintercard(2, ["a", "b"]) == 3
    assert r.sintercard(2, ["a", "b"], limit=2) == 2
    assert r.sintercard(2, ["a", "b"], limit=0) == 3
    assert r.sintercard(2, ["a", "b"], limit=10) == 3
    assert r.sintercard(1, ["a"]) == 4
    assert r.sintercard(2, ["a", "none"]) == 0
    assert r.execute_command("SINTERCARD", 1, "a", "LIMIT", 1, "limit", 3) == 3


@pytest.mark.parametrize("args,expected", [
    (("SINTERCARD", "0", "a"), "ERR numkeys should be greater than 0"),
    (("SINTERCARD", "x", "a"), "ERR numkeys should be greater than 0"),
    (("SINTERCARD", "-1", "a"), "ERR numkeys should be greater than 0"),
    (("SINTERCARD", "3", "a", "b"), "ERR Number of keys can't be greater than number of args"),
    (("SINTERCARD", "1", "a", "LIMIT"), "ERR syntax error"),
    (("SINTERCARD", "1", "a", "LIMIT", "-1"), "ERR LIMIT can't be negative"),
    (("SINTERCARD", "1", "a", "LIMIT", "x"), "ERR LIMIT can't be negative"),
    (("SINTERCARD", "1", "a", "FOO", "1"), "ERR syntax error"),
    (("SINTERCARD", "1"), "ERR wrong number of arguments for 'sintercard' command"),
    (("SRANDMEMBER", "k", "x"), "ERR value is not an integer or out of range"),
    (("SRANDMEMBER", "k", "-9223372036854775808"),
     "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"),
    (("SRANDMEMBER", "k", "1", "2"), "ERR syntax error"),
    (("SPOP", "k", "x"), "ERR value is out of range, must be positive"),
    (("SPOP", "k", "-1"), "ERR value is out of range, must be positive"),
    (("SPOP", "k", "1", "2"), "ERR syntax error"),
    (("SSCAN", "k", "x"), "ERR invalid cursor"),
    (("SSCAN", "k", " 1"), "ERR invalid cursor"),
    (("SSCAN", "k", "0", "COUNT", "0"), "ERR syntax error"),
    (("SSCAN", "k", "0", "COUNT", "x"), "ERR value is not an integer or out of range"),
    (("SSCAN", "k", "0", "COUNT"), "ERR syntax error"),
    (("SSCAN", "k", "0", "TYPE", "set"), "ERR syntax error"),
    (("SADD", "k"), "ERR wrong number of arguments for 'sadd' command"),
    (("SREM", "k"), "ERR wrong number of arguments for 'srem' command"),
    (("SCARD", "k", "x"), "ERR wrong number of arguments for 'scard' command"),
    (("SISMEMBER", "k"), "ERR wrong number of arguments for 'sismember' command"),
    (("SMISMEMBER", "k"), "ERR wrong number of arguments for 'smismember' command"),
    (("SMEMBERS",), "ERR wrong number of arguments for 'smembers' command"),
    (("SMOVE", "a", "b"), "ERR wrong number of arguments for 'smove' command"),
    (("SINTERSTORE", "d"), "ERR wrong number of arguments for 'sinterstore' command"),
    (("SUNIONSTORE", "d"), "ERR wrong number of arguments for 'sunionstore' command"),
    (("SDIFFSTORE", "d"), "ERR wrong number of arguments for 'sdiffstore' command"),
    (("SINTER",), "ERR wrong number of arguments for 'sinter' command"),
    (("SUNION",), "ERR wrong number of arguments for 'sunion' command"),
    (("SDIFF",), "ERR wrong number of arguments for 'sdiff' command"),
    (("SSCAN", "k"), "ERR wrong number of arguments for 'sscan' command"),
])
def test_argument_errors(raw, args, expected):
    raw.call("SADD", "k", "1")
    assert raw.call(*args) == Err(expected)


def test_missing_key_ignores_scan_options(raw):
    # Redis parses SSCAN's options only once it has found the set.
    assert raw.call("SSCAN", "none", "0", "COUNT", "0") == [b"0", []]
    assert raw.call("SSCAN", "none", "0", "BOGUS") == [b"0", []]


@pytest.mark.parametrize("args", [
    ("SADD", "str", "x"), ("SREM", "str", "x"), ("SCARD", "str"), ("SISMEMBER", "str", "x"),
    ("SMISMEMBER", "str", "x"), ("SMEMBERS", "str"), ("SRANDMEMBER", "str"),
    ("SRANDMEMBER", "str", "-2"), ("SPOP", "str"), ("SPOP", "str", "2"),
    ("SINTER", "s", "str"), ("SINTER", "none", "str"), ("SINTERCARD", "2", "none", "str"),
    ("SINTERSTORE", "d", "none", "str"), ("SUNION", "s", "str"), ("SUNIONSTORE", "d", "str"),
    ("SDIFF", "none", "str"), ("SDIFF", "s", "str"), ("SDIFFSTORE", "d", "s", "str"),
    ("SSCAN", "str", "0"), ("SSCAN", "str", "0", "COUNT", "0"),
])
def test_wrong_type(raw, args):
    raw.call("SET", "str", "v")
    raw.call("SADD", "s", "a")
    assert raw.call(*args) == WRONGTYPE
    assert raw.call("EXISTS", "d") == 0
    assert raw.call("GET", "str") == b"v"


def test_string_and_list_commands_on_a_set(raw):
    raw.call("SADD", "s", "a")
    for args in [("GET", "s"), ("APPEND", "s", "x"), ("LPUSH", "s", "x"), ("LLEN", "s")]:
        assert raw.call(*args) == WRONGTYPE, args
    assert raw.call("SET", "s", "v") == "OK"
    assert raw.call("GET", "s") == b"v"


def test_sscan(r):
    r.sadd("i", 1, 2, 3)
    assert r.sscan("i", 0, count=1) == (0, [b"1", b"2", b"3"])
    assert r.sscan("i", 0, match="2") == (0, [b"2"])
    members = [f"m{i}" for i in range(1000)]
    r.sadd("big", *members)
    cursor, seen, calls = 0, [], 0
    while True:
        cursor, batch = r.sscan("big", cursor, count=20)
        seen.extend(batch)
        calls += 1
        if cursor == 0:
            break
    assert calls > 5, "a large set is scanned in steps"
    assert set(seen) == {m.encode() for m in members}
    got = set(r.sscan_iter("big", match="m1?"))
    assert got == {f"m1{d}".encode() for d in range(10)}


def test_sscan_survives_changes(r):
    members = [f"m{i}" for i in range(600)]
    r.sadd("big", *members)
    keep = {m.encode() for m in members[::3]}
    cursor, seen, step = 0, set(), 0
    while True:
        cursor, batch = r.sscan("big", cursor, count=25)
        seen.update(batch)
        # Remove members that are not kept, add new ones.
        r.srem("big", *[members[i] for i in range(step * 7 % 600, 600, 37) if i % 3])
        r.sadd("big", f"new{step}")
        step += 1
        if cursor == 0:
            break
    assert keep <= seen


def test_binary_members(r):
    members = [b"\x00\xff", b"", b"a b\r\n", "é".encode()]
    assert r.sadd("k", *members) == 4
    assert s(r.smembers("k")) == sorted(members)
    assert r.sismember("k", b"") == 1
    assert s(r.sunion("k")) == sorted(members)


def test_sets_survive_copy_rename_and_expire(r):
    r.sadd("k", 1, 2)
    assert r.copy("k", "c") == 1
    r.sadd("c", 3)
    assert s(r.smembers("k")) == [b"1", b"2"]
    assert r.rename("c", "d")
    assert s(r.smembers("d")) == [b"1", b"2", b"3"]
    assert r.expire("d", 100)
    r.sadd("d", 4)
    assert r.ttl("d") > 90


def test_multi_key_commands_in_a_transaction(r):
    r.sadd("a", 1, 2)
    r.sadd("b", 2, 3)
    p = r.pipeline(transaction=True)
    p.smove("a", "b", 1)
    p.sinterstore("c", "a", "b")
    p.sunionstore("d", "a", "b")
    p.sdiff("b", "a")
    res = p.execute()
    assert res[:3] == [1, 1, 3]
    assert s(res[3]) == [b"1", b"3"]


@pytest.fixture
def events(server):
    """A subscriber to every key-event notification; yields a function that returns the
    (event, key) pairs raised since the last call."""
    admin = server.admin()
    admin.call("CONFIG", "SET", "notify-keyspace-events", "Egsn")
    sub = server.raw()
    sub.send_command("PSUBSCRIBE", "__keyevent@0__:*")
    sub.read_reply()
    sub.send_command("SUBSCRIBE", "fence")
    sub.read_reply()
    pub = server.raw()

    def take():
        pub.call("PUBLISH", "fence", "x")
        got = []
        while True:
            msg = sub.read_reply()
            if msg[0] == b"message":
                return got
            got.append((msg[2].decode().split(":", 1)[1], msg[3].decode()))

    yield take
    admin.call("CONFIG", "SET", "notify-keyspace-events", "")
    admin.close()


def test_keyspace_events(raw, events):
    raw.call("SADD", "a", "1", "2", "3")
    assert events() == [("new", "a"), ("sadd", "a")]
    raw.call("SADD", "a", "1")
    raw.call("SREM", "a", "9")
    raw.call("SREM", "none", "9")
    assert events() == []
    raw.call("SADD", "b", "2")
    events()
    raw.call("SMOVE", "a", "b", "1")
    assert events() == [("srem", "a"), ("sadd", "b")]
    raw.call("SMOVE", "a", "b", "2")
    assert events() == [("srem", "a")]
    raw.call("SMOVE", "a", "c", "3")
    assert events() == [("srem", "a"), ("del", "a"), ("new", "c"), ("sadd", "c")]
    raw.call("SMOVE", "c", "c", "3")
    raw.call("SMOVE", "none", "c", "3")
    assert events() == []
    raw.call("SINTERSTORE", "d", "b", "b")
    assert events() == [("new", "d"), ("sinterstore", "d")]
    raw.call("SUNIONSTORE", "d", "b", "c")
    assert events() == [("sunionstore", "d")]
    raw.call("SDIFFSTORE", "d", "b", "c")
    assert events() == [("sdiffstore", "d")]
    raw.call("SDIFFSTORE", "d", "none", "b")
    assert events() == [("del", "d")]
    raw.call("SINTERSTORE", "d", "none", "b")
    assert events() == []
    raw.call("SREM", "c", "3")
    assert events() == [("srem", "c"), ("del", "c")]
    raw.call("SADD", "e", "1", "2", "3")
    events()
    raw.call("SPOP", "e", "0")
    assert events() == []
    raw.call("SPOP", "e")
    assert events() == [("spop", "e")]
    raw.call("SPOP", "e", "1")
    assert events() == [("spop", "e")]
    raw.call("SPOP", "e", "9")
    assert events() == [("spop", "e"), ("del", "e")]
    raw.call("SADD", "f", "1")
    events()
    raw.call("SPOP", "f")
    assert events() == [("spop", "f"), ("del", "f")]
