"""SORT and SORT_RO: lists, sets and sorted sets, numeric and ALPHA, BY (other keys, hash
fields, nosort), LIMIT, GET (#, keys, hash fields), STORE. Also run against Redis 7.0."""

import pytest

from conftest import Err

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")


def test_numeric_and_alpha(r):
    r.rpush("l", "3", "1", "10", "2")
    assert r.sort("l") == [b"1", b"2", b"3", b"10"]
    assert r.sort("l", desc=True) == [b"10", b"3", b"2", b"1"]
    assert r.sort("l", alpha=True) == [b"1", b"10", b"2", b"3"]
    assert r.sort("l", start=1, num=2) == [b"2", b"3"]
    assert r.execute_command("SORT", "l", "LIMIT", "-5", "2") == [b"1", b"2"]
    assert r.execute_command("SORT", "l", "LIMIT", "2", "-1") == [b"3", b"10"]
    assert r.execute_command("SORT", "l", "LIMIT", "10", "5") == []
    assert r.execute_command("SORT_RO", "l", "DESC", "ALPHA") == [b"3", b"2", b"10", b"1"]
    assert r.sort("missing") == []


def test_errors(r, raw):
    r.rpush("words", "b", "a")
    assert raw.call("SORT", "words") == Err(
        "ERR One or more scores can't be converted into double")
    assert raw.call("SORT", "words", "LIMIT", "x", "1") == Err(
        "ERR value is not an integer or out of range")
    assert raw.call("SORT", "words", "FOO") == Err("ERR syntax error")
    assert raw.call("SORT", "words", "LIMIT", "1") == Err("ERR syntax error")
    assert raw.call("SORT_RO", "words", "ALPHA", "STORE", "dst") == Err("ERR syntax error")
    raw.call("SET", "s", "v")
    assert raw.call("SORT", "s") == WRONGTYPE


def test_by_and_get(r):
    r.rpush("ids", "1", "2", "3")
    r.mset({"w_1": "30", "w_2": "10", "w_3": "20", "name_1": "one", "name_3": "three"})
    assert r.sort("ids", by="w_*") == [b"2", b"3", b"1"]
    assert r.sort("ids", by="w_*", get=["#", "name_*"]) == \
        [b"2", None, b"3", b"three", b"1", b"one"]
    r.hset("h_1", mapping={"age": "5", "n": "a"})
    r.hset("h_2", mapping={"age": "1", "n": "b"})
    r.hset("h_3", mapping={"age": "3"})
    assert r.sort("ids", by="h_*->age", get="h_*->n") == [b"b", None, b"a"]
    # A pattern without `*`: no sorting, the list's order.
    assert r.sort("ids", by="nosort") == [b"1", b"2", b"3"]
    assert r.sort("ids", by="nosort", desc=True, start=1, num=5) == [b"2", b"1"]
    # Missing BY keys sort as 0 (numeric) or first (ALPHA).
    r.rpush("ids", "4")
    assert r.sort("ids", by="w_*") == [b"4", b"2", b"3", b"1"]
    assert r.sort("ids", by="name_*", alpha=True) == [b"2", b"4", b"1", b"3"]
    # ALPHA BY: elements with equal BY values (missing ones too) keep the list's order, not
    # the elements' own order, and DESC does not reverse them.
    r.rpush("tie", "b", "a", "c")
    assert r.sort("tie", by="nokey_*", alpha=True) == [b"b", b"a", b"c"]
    assert r.sort("tie", by="nokey_*", alpha=True, desc=True) == [b"b", b"a", b"c"]
    r.mset({"tw_b": "1", "tw_a": "1", "tw_c": "0"})
    assert r.sort("tie", by="tw_*", alpha=True, desc=True) == [b"b", b"a", b"c"]
    assert r.sort("tie", by="tw_*", alpha=True) == [b"c", b"b", b"a"]


def test_store(r):
    r.rpush("l", "3", "1", "2")
    r.set("dst", "old", ex=100)
    assert r.sort("l", store="dst") == 3
    assert r.lrange("dst", 0, -1) == [b"1", b"2", b"3"]
    assert r.ttl("dst") == -1
    assert r.sort("l", get="nokey_*", store="dst") == 3
    assert r.lrange("dst", 0, -1) == [b"", b"", b""]
    assert r.sort("empty", store="dst") == 0
    assert r.exists("dst") == 0


def test_sets_and_sorted_sets(r):
    r.sadd("s", "5", "3", "9")
    assert r.sort("s") == [b"3", b"5", b"9"]
    # A set sorted BY nosort into a key is sorted lexicographically (deterministic).
    r.sadd("t", "b", "c", "a")
    assert r.sort("t", by="nosort", store="dst") == 3
    assert r.lrange("dst", 0, -1) == [b"a", b"b", b"c"]
    r.zadd("z", {"x": 3, "y": 1, "w": 2})
    assert r.sort("z", by="nosort") == [b"y", b"w", b"x"]
    assert r.sort("z", by="nosort", desc=True, start=0, num=2) == [b"x", b"w"]
    assert r.sort("z", alpha=True) == [b"w", b"x", b"y"]


def test_inside_multi_sees_other_keys(r):
    r.rpush("ids", "1", "2")
    with r.pipeline(transaction=True) as p:
        p.set("w_1", "9")
        p.set("w_2", "1")
        p.sort("ids", by="w_*", store="out")
        p.lrange("out", 0, -1)
        assert p.execute()[2:] == [2, [b"2", b"1"]]


def test_sortstore_events(server):
    c = server.client()
    c.config_set("notify-keyspace-events", "KEAn")
    try:
        p = c.pubsub()
        p.psubscribe("__keyspace@0__:dst")
        assert p.get_message(timeout=1)["type"] == "psubscribe"
        c.rpush("l", "2", "1")
        c.sort("l", store="dst")
        c.sort("none", store="dst")
        events = []
        while len(events) < 3:
            m = p.get_message(timeout=1)
            assert m is not None, events
            if m["type"] == "pmessage":
                events.append(m["data"])
        assert events == [b"new", b"sortstore", b"del"]
        p.close()
    finally:
        c.config_set("notify-keyspace-events", "")


@pytest.mark.parametrize("value", ["1.5", " 2", "-inf", "1e3"])
def test_scores_as_strtod_reads_them(r, value):
    r.rpush("l", value, "0")
    want = sorted([value, "0"], key=float)
    assert r.sort("l") == [w.encode() for w in want]


def test_a_score_ends_at_a_nul_byte(r):
    # redis-server reads a score as a C string: what follows a NUL is not looked at.
    r.rpush("l", "3", b"12\x00x", "1")
    assert r.sort("l") == [b"1", b"3", b"12\x00x"]
    r.rpush("ab", "a", "b")
    r.set("w_a", b"5\x00z")
    r.set("w_b", b"\x00\x01")
    assert r.sort("ab", by="w_*") == [b"b", b"a"]
