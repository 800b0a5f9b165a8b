"""Sorted-set commands: ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZRANK ZREVRANK ZCOUNT ZLEXCOUNT
ZRANGE ZRANGESTORE ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZREVRANGE
ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX ZPOPMIN ZPOPMAX ZMPOP ZRANDMEMBER ZSCAN ZUNION
ZINTER ZDIFF ZUNIONSTORE ZINTERSTORE ZDIFFSTORE ZINTERCARD.

Tests taking `r` run twice, over RESP2 and RESP3; reply shapes, score texts and error texts
are checked on raw sockets (`rawp`, once per protocol). Every test here passes against Redis
7.0.15 (`--target=redis`).
"""

import time

import pytest

from conftest import Err

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = Err("ERR value is not an integer or out of range")
NOT_FLOAT = Err("ERR value is not a valid float")
SYNTAX = Err("ERR syntax error")
NOT_POSITIVE = Err("ERR value is out of range, must be positive")
MINMAX_FLOAT = Err("ERR min or max is not a float")
MINMAX_LEX = Err("ERR min or max not valid string range item")


def arity(name):
    return Err(f"ERR wrong number of arguments for '{name}' command")


def norm(items):
    """Pairs as tuples: redis-py gives RESP3's [member, score] pairs as lists."""
    return [tuple(p) if isinstance(p, list) else p for p in items]


def flat(items):
    """Members and scores as one flat list, scores as floats, whatever nesting and score type
    redis-py returns for the protocol."""
    out = []

    def walk(v):
        for x in v:
            if isinstance(x, (list, tuple)):
                walk(x)
            else:
                out.append(x)
    walk(items)
    return [x if i % 2 == 0 else float(x) for i, x in enumerate(out)]


def pairs(flat):
    """[m1, s1, m2, s2] -> [(m1, s1), (m2, s2)]"""
    return list(zip(flat[0::2], flat[1::2]))


# --- ZADD / ZINCRBY ----------------------------------------------------------------------------


def test_zadd_basic_and_flags(r):
    assert r.zadd("z", {"a": 1, "b": 2}) == 2
    assert r.zadd("z", {"a": 1, "c": 3}) == 1
    assert r.zadd("z", {"a": 5, "c": 3}, ch=True) == 1
    assert r.zadd("z", {"a": 9, "d": 4}, nx=True) == 1
    assert r.zadd("z", {"a": 6, "e": 7}, xx=True, ch=True) == 1
    assert r.zadd("z", {"a": 1, "b": 7}, gt=True, ch=True) == 1
    assert r.zadd("z", {"a": 1}, lt=True, ch=True) == 1
    assert norm(r.zrange("z", 0, -1, withscores=True)) == [
        (b"a", 1.0), (b"c", 3.0), (b"d", 4.0), (b"b", 7.0)]
    assert r.zadd("nokey", {"a": 1}, xx=True) == 0
    assert r.exists("nokey") == 0
    assert r.type("z") in (b"zset", "zset")


def test_zadd_incr_and_zincrby(r):
    assert r.zadd("z", {"a": 1.5}, incr=True) == 1.5
    assert r.zincrby("z", 2, "a") == 3.5
    assert r.zadd("z", {"a": 1}, incr=True, nx=True) is None
    assert r.zadd("z", {"a": -1}, incr=True, gt=True) is None
    assert r.zadd("z", {"new": 1}, incr=True, xx=True) is None
    assert r.zincrby("other", 1, "m") == 1.0
    assert r.zscore("z", "a") == 3.5


def test_zadd_errors(raw):
    raw.call("SET", "s", "v")
    cases = [
        (("ZADD", "z", "1", "a", "2"), SYNTAX),
        (("ZADD", "z", "NX", "1"), SYNTAX),
        (("ZADD", "z", "NX", "XX", "1", "a"),
         Err("ERR XX and NX options at the same time are not compatible")),
        (("ZADD", "z", "GT", "LT", "1", "a"),
         Err("ERR GT, LT, and/or NX options at the same time are not compatible")),
        (("ZADD", "z", "NX", "LT", "1", "a"),
         Err("ERR GT, LT, and/or NX options at the same time are not compatible")),
        (("ZADD", "z", "INCR", "1", "a", "2", "b"),
         Err("ERR INCR option supports a single increment-element pair")),
        (("ZADD", "z", "x", "a"), NOT_FLOAT),
        (("ZADD", "z", "nan", "a"), NOT_FLOAT),
        (("ZADD", "z", "1e400", "a"), NOT_FLOAT),
        (("ZADD", "z", " 1", "a"), NOT_FLOAT),
        (("ZADD", "z", "1", "a", "x", "b"), NOT_FLOAT),
        (("ZADD", "z", "1"), arity("zadd")),
        (("ZINCRBY", "z", "x", "a"), NOT_FLOAT),
        (("ZINCRBY", "z", "1"), arity("zincrby")),
        (("ZADD", "s", "1", "a"), WRONGTYPE),
        (("ZINCRBY", "s", "1", "a"), WRONGTYPE),
    ]
    for args, want in cases:
        assert raw.call(*args) == want, args
    # A failed ZADD changed nothing.
    assert raw.call("EXISTS", "z") == 0
    raw.call("ZADD", "i", "inf", "a")
    assert raw.call("ZINCRBY", "i", "-inf", "a") == Err("ERR resulting score is not a number (NaN)")
    assert raw.call("ZADD", "i", "INCR", "-inf", "a") == Err(
        "ERR resulting score is not a number (NaN)")
    assert raw.call("ZSCORE", "i", "a") == b"inf"


def test_strtod_forms(raw):
    raw.call("ZADD", "f", "0x10", "a", "-0x1.8p1", "b", "infinity", "c", "1e-320", "d", ".5", "e",
             "5.", "g", "+1", "h")
    assert raw.call("ZRANGE", "f", "0", "-1", "WITHSCORES") == [
        b"b", b"-3", b"d", b"9.9998886718268301e-321", b"e", b"0.5", b"h", b"1", b"g", b"5",
        b"a", b"16", b"c", b"inf"]
    assert raw.call("ZCOUNT", "f", "(0x10", "+inf") == 1
    assert raw.call("ZCOUNT", "f", " 1", "1e400") == 4
    assert raw.call("ZCOUNT", "f", "1 ", "2") == MINMAX_FLOAT
    assert raw.call("ZADD", "f", "1e-400", "x") == NOT_FLOAT
    assert raw.call("ZADD", "f", "1.5 ", "x") == NOT_FLOAT


def test_zadd_options_are_case_insensitive(raw):
    assert raw.call("ZADD", "z", "nx", "ch", "1", "a") == 1
    assert raw.call("ZADD", "z", "Xx", "Gt", "cH", "2", "a") == 1
    assert raw.call("ZADD", "z", "incr", "1", "a") == b"3"


# --- Score texts and reply shapes --------------------------------------------------------------


@pytest.mark.parametrize("score,text", [
    ("1.1", b"1.1000000000000001"), ("1e300", b"1.0000000000000001e+300"),
    ("0.1", b"0.10000000000000001"), ("2.5", b"2.5"), ("-3", b"-3"), ("-0", b"0"),
    ("123456789012345678", b"1.2345678901234568e+17"), ("4503599627370496", b"4503599627370496"),
    ("1e-5", b"1.0000000000000001e-05"), ("inf", b"inf"), ("-inf", b"-inf"),
    ("+inf", b"inf"), ("1e16", b"10000000000000000"), ("1e17", b"1e+17"),
])
def test_score_texts(rawp, protocol, score, text):
    rawp.call("ZADD", "z", score, "m")
    f = rawp.call_frame("ZSCORE", "z", "m")
    if protocol == 3:
        assert f.kind == ","
    else:
        assert f.kind == "$" and f.value == text


def test_score_texts_on_the_wire(rawp, protocol):
    rawp.call("ZADD", "z", "1.1", "m")
    rawp.send_command("ZSCORE", "z", "m")
    want = b",1.1000000000000001\r\n" if protocol == 3 else b"$18\r\n1.1000000000000001\r\n"
    assert rawp.recv_exact(len(want)) == want
    rawp.send_command("ZINCRBY", "z", "1", "m")
    want = b",2.1000000000000001\r\n" if protocol == 3 else b"$18\r\n2.1000000000000001\r\n"
    assert rawp.recv_exact(len(want)) == want


def test_negative_zero_increment_replies_what_it_computed(raw):
    assert raw.call("ZINCRBY", "z", "-0", "a") == b"-0"
    assert raw.call("ZSCORE", "z", "a") == b"0"
    assert raw.call("ZINCRBY", "z", "-0", "a") == b"0"


def test_negative_zero_in_a_skiplist(raw):
    raw.call("CONFIG", "SET", "zset-max-listpack-entries", "0")
    try:
        raw.call("ZADD", "z", "-0", "a")
        assert raw.call("OBJECT", "ENCODING", "z") == b"skiplist"
        assert raw.call("ZSCORE", "z", "a") == b"-0"
    finally:
        raw.call("CONFIG", "SET", "zset-max-listpack-entries", "128")


def test_withscores_shapes(rawp, protocol):
    rawp.call("ZADD", "z", "1", "a", "2", "b")
    f = rawp.call_frame("ZRANGE", "z", "0", "-1", "WITHSCORES")
    assert f.kind == "*"
    if protocol == 3:
        assert [[x.kind for x in p.value] for p in f.value] == [["$", ","], ["$", ","]]
    else:
        assert [x.value for x in f.value] == [b"a", b"1", b"b", b"2"]
    for args in [("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES"),
                 ("ZREVRANGE", "z", "0", "-1", "WITHSCORES"),
                 ("ZUNION", "1", "z", "WITHSCORES"),
                 ("ZRANDMEMBER", "z", "2", "WITHSCORES")]:
        f = rawp.call_frame(*args)
        assert len(f.value) == (2 if protocol == 3 else 4), args


def test_pop_shapes(rawp, protocol):
    rawp.call("ZADD", "z", "1", "a", "2", "b", "3", "c")
    f = rawp.call_frame("ZPOPMIN", "z")
    assert [x.kind for x in f.value] == ["$", "," if protocol == 3 else "$"]
    f = rawp.call_frame("ZPOPMAX", "z", "1")
    if protocol == 3:
        assert len(f.value) == 1 and [x.kind for x in f.value[0].value] == ["$", ","]
    else:
        assert [x.value for x in f.value] == [b"c", b"3"]
    f = rawp.call_frame("ZMPOP", "1", "z", "MIN")
    assert f.value[0].value == b"z"
    assert [x.value for x in f.value[1].value[0].value][0] == b"b"
    f = rawp.call_frame("ZMPOP", "1", "z", "MIN")
    assert f.kind == ("_" if protocol == 3 else "*") and f.value is None
    f = rawp.call_frame("ZPOPMIN", "z")
    assert f.kind == "*" and f.value == []


# --- Reads -------------------------------------------------------------------------------------


def test_reads(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 2, "d": 3})
    assert r.zcard("z") == 4
    assert r.zcard("none") == 0
    assert r.zscore("z", "c") == 2.0
    assert r.zscore("z", "x") is None
    assert r.zscore("none", "x") is None
    assert r.zmscore("z", ["a", "x", "d"]) == [1.0, None, 3.0]
    assert r.zmscore("none", ["a"]) == [None]
    assert r.zrank("z", "c") == 2
    assert r.zrevrank("z", "c") == 1
    assert r.zrank("z", "x") is None
    assert r.zrevrank("none", "x") is None
    assert r.zcount("z", 2, 3) == 3
    assert r.zcount("z", "(2", "+inf") == 1
    assert r.zcount("z", "-inf", "(1") == 0
    assert r.zcount("none", 0, 1) == 0


def test_lexcount(r):
    r.zadd("l", {m: 0 for m in "abcde"})
    assert r.zlexcount("l", "-", "+") == 5
    assert r.zlexcount("l", "[b", "(d") == 2
    assert r.zlexcount("l", "(b", "[d") == 2
    assert r.zlexcount("l", "+", "-") == 0
    assert r.zlexcount("none", "-", "+") == 0


def test_read_errors(raw):
    raw.call("SET", "s", "v")
    raw.call("ZADD", "z", "1", "a")
    cases = [
        (("ZCOUNT", "z", "x", "1"), MINMAX_FLOAT),
        (("ZCOUNT", "z", "(", "nan"), MINMAX_FLOAT),
        (("ZLEXCOUNT", "z", "a", "+"), MINMAX_LEX),
        (("ZLEXCOUNT", "z", "-", ""), MINMAX_LEX),
        (("ZLEXCOUNT", "z", "+x", "+"), MINMAX_LEX),
        (("ZMSCORE", "z"), arity("zmscore")),
        (("ZCARD", "s"), WRONGTYPE),
        (("ZSCORE", "s", "a"), WRONGTYPE),
        (("ZMSCORE", "s", "a"), WRONGTYPE),
        (("ZRANK", "s", "a"), WRONGTYPE),
        (("ZREVRANK", "s", "a"), WRONGTYPE),
        (("ZCOUNT", "s", "0", "1"), WRONGTYPE),
        (("ZLEXCOUNT", "s", "-", "+"), WRONGTYPE),
        (("ZRANK", "z"), arity("zrank")),
    ]
    for args, want in cases:
        assert raw.call(*args) == want, args
    # An empty bound is 0 and "(" alone is exclusive 0, as strtod reads them.
    raw.call("ZADD", "zero", "0", "a", "1", "b")
    assert raw.call("ZCOUNT", "zero", "", "0") == 1
    assert raw.call("ZCOUNT", "zero", "(", "1") == 1


# --- Ranges ------------------------------------------------------------------------------------


@pytest.mark.parametrize("start,stop,expected", [
    (0, -1, "abcde"), (1, 2, "bc"), (-2, -1, "de"), (-100, 1, "ab"), (3, 100, "de"),
    (3, 1, ""), (5, 10, ""), (0, -6, ""),
])
def test_zrange_by_rank(r, start, stop, expected):
    r.zadd("z", {m: i for i, m in enumerate("abcde")})
    assert r.zrange("z", start, stop) == [c.encode() for c in expected]
    assert r.zrevrange("z", start, stop) == [c.encode() for c in "edcba"][
        slice(*_py_slice(start, stop))]


def _py_slice(start, stop):
    n = 5
    s = start + n if start < 0 else start
    e = stop + n if stop < 0 else stop
    s = max(s, 0)
    if s > e or s >= n:
        return (0, 0)
    return (s, min(e, n - 1) + 1)


def test_zrange_byscore_bylex_rev_limit(r):
    r.zadd("z", {m: i + 1 for i, m in enumerate("abcde")})
    assert r.zrange("z", "(1", 3, byscore=True) == [b"b", b"c"]
    assert r.zrange("z", 3, "(1", byscore=True, desc=True) == [b"c", b"b"]
    assert r.zrange("z", "-inf", "+inf", byscore=True, offset=1, num=2) == [b"b", b"c"]
    assert r.zrange("z", "+inf", "-inf", byscore=True, desc=True, offset=1, num=2) == [
        b"d", b"c"]
    assert r.zrangebyscore("z", 2, 4, start=-1, num=2) == []
    assert r.zrangebyscore("z", 2, 4, start=1, num=-1) == [b"c", b"d"]
    assert r.zrangebyscore("z", 2, 4, start=5, num=1) == []
    assert norm(r.zrangebyscore("z", 2, 4, withscores=True)) == [(b"b", 2), (b"c", 3), (b"d", 4)]
    assert r.zrevrangebyscore("z", 4, 2) == [b"d", b"c", b"b"]
    assert norm(r.zrevrangebyscore("z", "(4", "(2", withscores=True)) == [(b"c", 3)]
    assert r.zrange("z", "[b", "(d", bylex=True) == [b"b", b"c"]
    assert r.zrange("z", "(d", "[b", bylex=True, desc=True) == [b"c", b"b"]
    assert r.zrangebylex("z", "-", "+", start=0, num=1) == [b"a"]
    assert r.zrevrangebylex("z", "+", "[d") == [b"e", b"d"]
    assert r.zrevrangebylex("z", "+", "-", start=1, num=2) == [b"d", b"c"]
    assert r.zrange("none", 0, -1) == []
    assert r.zrangebyscore("none", 0, 1) == []


def test_lex_ranges_over_mixed_scores_in_a_listpack(raw):
    """Unspecified by Redis's docs; a listpack answers by walking, and so does larder."""
    raw.call("ZADD", "m", "0", "a", "0", "e", "1.5", "d", "3", "c", "5", "b", "inf", "f")
    assert raw.call("ZRANGE", "m", "[a", "(e", "BYLEX") == [b"a"]
    assert raw.call("ZRANGE", "m", "(e", "[a", "BYLEX", "REV") == [b"b", b"c", b"d", b"e", b"a"]
    assert raw.call("ZRANGEBYLEX", "m", "[b", "+") == [b"e", b"d", b"c", b"b", b"f"]
    assert raw.call("ZREVRANGEBYLEX", "m", "[d", "-") == [b"b", b"c", b"d", b"e", b"a"]
    assert raw.call("ZLEXCOUNT", "m", "[b", "[d") == 0
    assert raw.call("ZLEXCOUNT", "m", "[a", "(e") == 1
    assert raw.call("ZLEXCOUNT", "m", "[c", "[a") == 0
    assert raw.call("ZREMRANGEBYLEX", "m", "[a", "[e") == 5
    assert raw.call("ZRANGE", "m", "0", "-1") == [b"f"]


def test_zrange_errors(raw):
    raw.call("ZADD", "z", "1", "a")
    raw.call("SET", "s", "v")
    cases = [
        (("ZRANGE", "z", "0", "1", "LIMIT", "0", "1"), Err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")),
        (("ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"), Err(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX")),
        (("ZRANGEBYLEX", "z", "-", "+", "WITHSCORES"), Err(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX")),
        (("ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"), SYNTAX),
        (("ZRANGEBYSCORE", "z", "0", "1", "REV"), SYNTAX),
        (("ZREVRANGE", "z", "0", "1", "REV"), SYNTAX),
        (("ZRANGE", "z", "0", "1", "LIMIT", "0"), SYNTAX),
        (("ZRANGE", "z", "a", "1"), NOT_INT),
        (("ZRANGE", "z", "a", "1", "BYSCORE"), MINMAX_FLOAT),
        (("ZRANGE", "z", "a", "1", "BYLEX"), MINMAX_LEX),
        (("ZRANGE", "z", "0", "1", "BYSCORE", "LIMIT", "x", "1"), NOT_INT),
        (("ZRANGE", "z", "0"), arity("zrange")),
        (("ZRANGE", "s", "0", "1"), WRONGTYPE),
        (("ZRANGEBYSCORE", "s", "0", "1"), WRONGTYPE),
        (("ZREVRANGEBYLEX", "s", "+", "-"), WRONGTYPE),
        (("ZREVRANGEBYSCORE", "s", "1", "0"), WRONGTYPE),
        (("ZREVRANGEBYSCORE", "z", "1", "x"), MINMAX_FLOAT),
        # The range is parsed before the key is looked up.
        (("ZRANGE", "s", "x", "1"), NOT_INT),
    ]
    for args, want in cases:
        assert raw.call(*args) == want, args


def test_zrangestore(r):
    r.zadd("z", {m: i + 1 for i, m in enumerate("abcde")})
    assert r.zrangestore("d", "z", 1, 3) == 3
    assert norm(r.zrange("d", 0, -1, withscores=True)) == [(b"b", 2), (b"c", 3), (b"d", 4)]
    assert r.zrangestore("d", "z", 5, "(2", byscore=True, desc=True, offset=0, num=2) == 2
    assert r.zrange("d", 0, -1) == [b"d", b"e"]
    assert r.zrangestore("d", "z", "[a", "[b", bylex=True) == 2
    assert r.zrangestore("d", "z", 9, 10) == 0
    assert r.exists("d") == 0
    r.set("str", "v")
    r.expire("str", 100)
    assert r.zrangestore("str", "z", 0, 0) == 1
    assert r.ttl("str") == -1
    assert r.zrangestore("d", "none", 0, -1) == 0


def test_zrangestore_errors(raw):
    raw.call("ZADD", "z", "1", "a")
    raw.call("SET", "s", "v")
    assert raw.call("ZRANGESTORE", "d", "z", "0", "1", "WITHSCORES") == SYNTAX
    assert raw.call("ZRANGESTORE", "d", "s", "0", "1") == WRONGTYPE
    assert raw.call("ZRANGESTORE", "d", "z", "0") == arity("zrangestore")


def test_zremrange(r):
    r.zadd("z", {m: i + 1 for i, m in enumerate("abcde")})
    assert r.zremrangebyrank("z", 0, 1) == 2
    assert r.zremrangebyscore("z", "(3", 4) == 1
    assert r.zremrangebylex("z", "[a", "[c") == 1
    assert r.zremrangebyrank("z", 5, 10) == 0
    assert norm(r.zrange("z", 0, -1, withscores=True)) == [(b"e", 5)]
    assert r.zremrangebyscore("z", "-inf", "+inf") == 1
    assert r.exists("z") == 0
    assert r.zremrangebyrank("none", 0, -1) == 0


def test_zremrange_errors(raw):
    raw.call("SET", "s", "v")
    assert raw.call("ZREMRANGEBYRANK", "z", "x", "1") == NOT_INT
    assert raw.call("ZREMRANGEBYSCORE", "z", "x", "1") == MINMAX_FLOAT
    assert raw.call("ZREMRANGEBYLEX", "z", "x", "1") == MINMAX_LEX
    assert raw.call("ZREMRANGEBYRANK", "s", "0", "1") == WRONGTYPE
    assert raw.call("ZREMRANGEBYSCORE", "s", "0", "1") == WRONGTYPE
    assert raw.call("ZREMRANGEBYLEX", "s", "-", "+") == WRONGTYPE
    assert raw.call("ZREMRANGEBYRANK", "s", "0") == arity("zremrangebyrank")


# --- ZREM, pops --------------------------------------------------------------------------------


def test_zrem(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert r.zrem("z", "a", "x", "a") == 1
    assert r.zrem("z", "b", "c") == 2
    assert r.exists("z") == 0
    assert r.zrem("none", "a") == 0


def test_pops(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert flat(r.zpopmin("z")) == [b"a", 1.0]
    assert flat(r.zpopmax("z", 5)) == [b"c", 3.0, b"b", 2.0]
    assert r.exists("z") == 0
    assert r.zpopmin("z") == []
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert r.zpopmin("z", 0) == []
    got = r.zmpop(2, ["none", "z"], max=True, count=2)
    assert got[0] == b"z" and flat(got[1]) == [b"c", 3.0, b"b", 2.0]
    assert r.zmpop(1, ["none"], min=True) is None


def test_pop_errors(raw):
    raw.call("SET", "s", "v")
    raw.call("ZADD", "z", "1", "a")
    cases = [
        (("ZPOPMIN", "z", "-1"), NOT_POSITIVE),
        (("ZPOPMIN", "z", "x"), NOT_POSITIVE),
        (("ZPOPMAX", "z", "1", "2"), SYNTAX),
        (("ZPOPMIN", "s"), WRONGTYPE),
        (("ZMPOP", "0", "z", "MIN"), Err("ERR numkeys should be greater than 0")),
        (("ZMPOP", "x", "z", "MIN"), Err("ERR numkeys should be greater than 0")),
        (("ZMPOP", "2", "z", "MIN"), SYNTAX),
        (("ZMPOP", "1", "z", "MID"), SYNTAX),
        (("ZMPOP", "1", "z", "MIN", "COUNT", "0"), Err("ERR count should be greater than 0")),
        (("ZMPOP", "1", "z", "MIN", "COUNT"), SYNTAX),
        (("ZMPOP", "1", "z", "MIN", "COUNT", "1", "COUNT", "1"), SYNTAX),
        (("ZMPOP", "1", "s", "MIN"), WRONGTYPE),
        (("ZMPOP", "1", "z"), arity("zmpop")),
    ]
    for args, want in cases:
        assert raw.call(*args) == want, args
    assert raw.call("ZCARD", "z") == 1


# --- Set operations ----------------------------------------------------------------------------


def test_union_inter_diff(r):
    r.zadd("a", {"x": 1, "y": 2, "z": 3})
    r.zadd("b", {"y": 10, "z": 20, "w": 30})
    assert norm(r.zunion(["a", "b"], withscores=True)) == [
        (b"x", 1), (b"y", 12), (b"z", 23), (b"w", 30)]
    assert norm(r.zunion({"a": 2, "b": 1}, aggregate="MIN", withscores=True)) == [
        (b"x", 2), (b"y", 4), (b"z", 6), (b"w", 30)]
    assert norm(r.zinter({"a": 2, "b": 1}, aggregate="MAX", withscores=True)) == [
        (b"y", 10), (b"z", 20)]
    assert r.zinter(["a", "b"]) == [b"y", b"z"]
    assert flat(r.zdiff(["a", "b"], withscores=True)) == [b"x", 1.0]
    assert r.zdiff(["a", "none"]) == [b"x", b"y", b"z"]
    assert r.zinter(["a", "none"]) == []
    assert r.zintercard(2, ["a", "b"]) == 2
    assert r.zintercard(2, ["a", "b"], limit=1) == 1
    assert r.zintercard(2, ["a", "none"]) == 0


def test_store_forms(r):
    r.zadd("a", {"x": 1, "y": 2, "z": 3})
    r.zadd("b", {"y": 10, "z": 20, "w": 30})
    assert r.zunionstore("d", ["a", "b"], aggregate="MIN") == 4
    assert norm(r.zrange("d", 0, -1, withscores=True)) == [
        (b"x", 1), (b"y", 2), (b"z", 3), (b"w", 30)]
    assert r.zinterstore("d", {"a": 1, "b": 0.5}) == 2
    assert norm(r.zrange("d", 0, -1, withscores=True)) == [(b"y", 7), (b"z", 13)]
    assert r.zinterstore("d", ["a", "none"]) == 0
    assert r.exists("d") == 0
    assert r.zdiffstore("a", ["a", "b"]) == 1
    assert norm(r.zrange("a", 0, -1, withscores=True)) == [(b"x", 1)]


def test_sets_are_inputs_with_score_1(r):
    r.sadd("s", "x", "y")
    r.zadd("z", {"x": 5})
    assert norm(r.zunion(["s", "z"], withscores=True)) == [(b"y", 1), (b"x", 6)]
    assert norm(r.zinter(["s", "z"], withscores=True)) == [(b"x", 6)]
    assert r.zdiff(["s", "z"]) == [b"y"]
    assert r.zintercard(2, ["s", "z"]) == 1


def test_nan_from_weights_counts_as_zero(r):
    r.zadd("i", {"m": float("inf")})
    assert norm(r.zunion({"i": 0}, withscores=True)) == [(b"m", 0)]
    r.zadd("j", {"m": float("-inf")})
    assert norm(r.zunion(["i", "j"], withscores=True)) == [(b"m", 0)]


def test_set_operation_errors(raw):
    raw.call("ZADD", "a", "1", "x")
    raw.call("SET", "s", "v")
    cases = [
        (("ZUNION", "0", "a"), Err("ERR at least 1 input key is needed for 'zunion' command")),
        (("ZINTERSTORE", "d", "0", "a"),
         Err("ERR at least 1 input key is needed for 'zinterstore' command")),
        (("ZINTERCARD", "0", "a"),
         Err("ERR at least 1 input key is needed for 'zintercard' command")),
        (("ZUNION", "3", "a", "b"), SYNTAX),
        (("ZUNION", "x", "a"), NOT_INT),
        (("ZUNION", "2", "a", "s"), WRONGTYPE),
        (("ZINTER", "2", "s", "a"), WRONGTYPE),
        (("ZINTER", "1", "a", "WITHSCORES", "x"), SYNTAX),
        (("ZUNIONSTORE", "d", "1", "s"), WRONGTYPE),
        (("ZUNION", "2", "a", "b", "WEIGHTS", "1"), SYNTAX),
        (("ZUNION", "2", "a", "b", "WEIGHTS", "1", "x"), Err("ERR weight value is not a float")),
        (("ZUNION", "2", "a", "b", "AGGREGATE", "AVG"), SYNTAX),
        (("ZUNION", "2", "a", "b", "AGGREGATE"), SYNTAX),
        (("ZDIFF", "2", "a", "b", "WEIGHTS", "1", "1"), SYNTAX),
        (("ZDIFF", "2", "a", "b", "AGGREGATE", "SUM"), SYNTAX),
        (("ZUNIONSTORE", "d", "2", "a", "b", "WITHSCORES"), SYNTAX),
        (("ZINTERCARD", "1", "a", "LIMIT", "-1"), Err("ERR LIMIT can't be negative")),
        (("ZINTERCARD", "1", "a", "LIMIT", "x"), Err("ERR LIMIT can't be negative")),
        (("ZINTERCARD", "1", "a", "WITHSCORES"), SYNTAX),
        (("ZUNIONSTORE", "d", "1"), arity("zunionstore")),
    ]
    for args, want in cases:
        assert raw.call(*args) == want, args


# --- ZRANDMEMBER, ZSCAN ------------------------------------------------------------------------


def test_zrandmember(r):
    members = {b"a": 1.0, b"b": 2.0, b"c": 3.0}
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert r.zrandmember("z") in members
    got = r.zrandmember("z", 5)
    assert sorted(got) == sorted(members)
    got = r.zrandmember("z", 2)
    assert len(got) == 2 and len(set(got)) == 2
    got = r.zrandmember("z", -5)
    assert len(got) == 5 and set(got) <= set(members)
    got = r.zrandmember("z", -4, withscores=True)
    if isinstance(got[0], list):
        got = [x for p in got for x in p]
    assert len(got) == 8
    for m, s in pairs(got):
        assert members[m] == float(s)
    assert r.zrandmember("z", 0) == []
    assert r.zrandmember("none") is None
    assert r.zrandmember("none", 3) == []


def test_zrandmember_errors(raw):
    raw.call("ZADD", "z", "1", "a")
    raw.call("SET", "s", "v")
    assert raw.call("ZRANDMEMBER", "z", "1", "x") == SYNTAX
    assert raw.call("ZRANDMEMBER", "z", "1", "WITHSCORES", "x") == SYNTAX
    assert raw.call("ZRANDMEMBER", "z", "x") == NOT_INT
    assert raw.call("ZRANDMEMBER", "z", "-9223372036854775808") == Err(
        "ERR value is out of range, value must between -9223372036854775807 and "
        "9223372036854775807")
    assert raw.call("ZRANDMEMBER", "z", "-9223372036854775807", "WITHSCORES") == Err(
        "ERR value is out of range")
    assert raw.call("ZRANDMEMBER", "s") == WRONGTYPE


def test_zscan(r):
    r.zadd("z", {"a": 1, "b": 2.5, "c": 3})
    cursor, items = r.zscan("z", 0)
    assert cursor == 0 and sorted(items) == [(b"a", 1.0), (b"b", 2.5), (b"c", 3.0)]
    assert r.zscan("z", 0, match="b*") == (0, [(b"b", 2.5)])
    assert r.zscan("none", 0) == (0, [])


def test_zscan_large_set_visits_everything(r):
    r.zadd("big", {f"m{i}": i for i in range(500)})
    assert r.object("encoding", "big") in (b"skiplist", "skiplist")
    seen = dict(r.zscan_iter("big", count=20))
    assert len(seen) == 500 and seen[b"m7"] == 7.0


def test_zscan_scores_are_bulk_strings(rawp):
    rawp.call("ZADD", "z", "1.5", "a")
    f = rawp.call_frame("ZSCAN", "z", "0")
    assert [x.kind for x in f.value[1].value] == ["$", "$"]
    assert f.value[1].value[1].value == b"1.5"


def test_zscan_errors(raw):
    raw.call("ZADD", "z", "1", "a")
    raw.call("SET", "s", "v")
    assert raw.call("ZSCAN", "z", "x") == Err("ERR invalid cursor")
    assert raw.call("ZSCAN", "z", "0", "COUNT", "0") == SYNTAX
    assert raw.call("ZSCAN", "z", "0", "COUNT", "x") == NOT_INT
    assert raw.call("ZSCAN", "z", "0", "TYPE", "zset") == SYNTAX
    assert raw.call("ZSCAN", "z", "0", "MATCH") == SYNTAX
    assert raw.call("ZSCAN", "s", "0") == WRONGTYPE


# --- Encodings ---------------------------------------------------------------------------------


def test_encodings(raw):
    try:
        raw.call("ZADD", "z", "1", "a")
        assert raw.call("OBJECT", "ENCODING", "z") == b"listpack"
        raw.call("CONFIG", "SET", "zset-max-listpack-entries", "3")
        raw.call("ZADD", "z", "2", "b", "3", "c")
        assert raw.call("OBJECT", "ENCODING", "z") == b"listpack"
        raw.call("ZADD", "z", "4", "d")
        assert raw.call("OBJECT", "ENCODING", "z") == b"skiplist"
        raw.call("ZREM", "z", "a", "b", "c")
        assert raw.call("OBJECT", "ENCODING", "z") == b"skiplist"
        raw.call("CONFIG", "SET", "zset-max-listpack-value", "4")
        raw.call("ZADD", "long", "1", "abcde")
        assert raw.call("OBJECT", "ENCODING", "long") == b"skiplist"
        raw.call("ZADD", "short", "1", "abcd")
        raw.call("ZADD", "short", "1", "abcdef")
        assert raw.call("OBJECT", "ENCODING", "short") == b"skiplist"
        # A stored result that fits is compact.
        assert raw.call("ZUNIONSTORE", "u", "1", "z") == 1
        assert raw.call("OBJECT", "ENCODING", "u") == b"listpack"
        assert raw.call("ZRANGESTORE", "u", "z", "0", "-1") == 1
        assert raw.call("OBJECT", "ENCODING", "u") == b"listpack"
    finally:
        raw.call("CONFIG", "SET", "zset-max-listpack-entries", "128")
        raw.call("CONFIG", "SET", "zset-max-listpack-value", "64")


def test_large_set_operations_agree_across_encodings(r):
    import random
    rnd = random.Random(5)
    model = {}
    for i in range(600):
        m = f"m{rnd.randrange(400)}"
        s = rnd.randrange(-50, 50) / 4
        r.zadd("big", {m: s})
        model[m.encode()] = s
    order = sorted(model.items(), key=lambda kv: (kv[1], kv[0]))
    assert r.zcard("big") == len(model)
    assert norm(r.zrange("big", 0, -1, withscores=True)) == order
    for m, s in list(model.items())[:50]:
        assert r.zrank("big", m) == order.index((m, s))
        assert r.zscore("big", m) == s
    assert r.zcount("big", -2, 3) == sum(1 for _, s in order if -2 <= s <= 3)
    assert r.zrangebyscore("big", "(0", 1) == [m for m, s in order if 0 < s <= 1]
    assert r.zrevrange("big", 5, 9) == [m for m, _ in reversed(order)][5:10]
    r.zremrangebyrank("big", 10, 99)
    del order[10:100]
    assert norm(r.zrange("big", 0, -1, withscores=True)) == order


# --- Types, binary members, keyspace events ----------------------------------------------------


def test_binary_and_empty_members(r):
    r.zadd("z", {b"\x00\xff\r\n": 1, b"": 2})
    assert r.zrange("z", 0, -1) == [b"\x00\xff\r\n", b""]
    assert r.zscore("z", b"") == 2.0
    assert r.zrangebylex("z", "-", "+") == [b"\x00\xff\r\n", b""]


def test_commands_on_other_types(raw):
    raw.call("ZADD", "z", "1", "a")
    assert raw.call("GET", "z") == WRONGTYPE
    assert raw.call("LPUSH", "z", "x") == WRONGTYPE
    assert raw.call("TYPE", "z") == "zset"


def events(server, actions, count):
    sub = server.client(protocol=2)
    admin = server.client(protocol=2)
    admin.config_set("notify-keyspace-events", "KEA")
    try:
        ps = sub.pubsub()
        ps.psubscribe("__keyevent@0__:*")
        deadline = time.time() + 5
        while time.time() < deadline:
            m = ps.get_message(timeout=1)
            if m and m["type"] == "psubscribe":
                break
        actions(admin)
        got = []
        deadline = time.time() + 5
        while len(got) < count and time.time() < deadline:
            m = ps.get_message(timeout=0.5)
            if m and m["type"] == "pmessage":
                got.append((m["channel"].decode().split(":", 1)[1], m["data"].decode()))
        extra = ps.get_message(timeout=0.3)
        assert extra is None, extra
        ps.close()
        return got
    finally:
        admin.config_set("notify-keyspace-events", "")


def test_keyspace_events(server):
    def actions(c):
        c.zadd("z", {"a": 1, "b": 2})
        c.zadd("z", {"a": 1})
        c.zadd("z", {"a": 3}, xx=True, ch=True)
        c.zincrby("z", 1, "a")
        c.zadd("z", {"a": 1}, incr=True, nx=True)
        c.zrem("z", "a", "b")
        c.zadd("z", {"a": 1, "b": 2, "c": 3})
        c.zpopmin("z")
        c.zpopmax("z", 5)
        c.zadd("z", {"a": 1, "b": 2, "c": 3})
        c.zremrangebyrank("z", 0, 0)
        c.zremrangebyscore("z", 2, 2)
        c.zremrangebylex("z", "-", "+")
        c.zadd("s", {"a": 1})
        c.zunionstore("d", ["s"])
        c.zinterstore("d", ["nokey"])
        c.zdiffstore("d", ["s"])
        c.zrangestore("d2", "s", 0, -1)
        c.zrangestore("d2", "s", 5, 6)
        c.zmpop(2, ["nokey", "s"], min=True)
    want = [
        ("zadd", "z"), ("zadd", "z"), ("zincr", "z"), ("zrem", "z"), ("del", "z"),
        ("zadd", "z"), ("zpopmin", "z"), ("zpopmax", "z"), ("del", "z"),
        ("zadd", "z"), ("zremrangebyrank", "z"), ("zremrangebyscore", "z"),
        ("zremrangebylex", "z"), ("del", "z"),
        ("zadd", "s"), ("zunionstore", "d"), ("del", "d"), ("zdiffstore", "d"),
        ("zrangestore", "d2"), ("del", "d2"), ("zpopmin", "s"), ("del", "s"),
    ]
    assert events(server, actions, len(want)) == want


def test_new_key_events(server):
    def actions(c):
        c.config_set("notify-keyspace-events", "KEn")
        c.zadd("z", {"a": 1})
        c.zadd("z", {"b": 1})
        c.zunionstore("u", ["z"])
        c.zunionstore("u", ["z"])
    assert events(server, actions, 2) == [("new", "z"), ("new", "u")]


# Name, arity, flags, first key, last key, step: Redis 7.0's COMMAND INFO.
TABLE = [
    ("zadd", -4, {"write", "denyoom", "fast"}, 1, 1, 1),
    ("zincrby", 4, {"write", "denyoom", "fast"}, 1, 1, 1),
    ("zrem", -3, {"write", "fast"}, 1, 1, 1),
    ("zcard", 2, {"readonly", "fast"}, 1, 1, 1),
    ("zscore", 3, {"readonly", "fast"}, 1, 1, 1),
    ("zmscore", -3, {"readonly", "fast"}, 1, 1, 1),
    ("zrank", 3, {"readonly", "fast"}, 1, 1, 1),
    ("zrevrank", 3, {"readonly", "fast"}, 1, 1, 1),
    ("zcount", 4, {"readonly", "fast"}, 1, 1, 1),
    ("zlexcount", 4, {"readonly", "fast"}, 1, 1, 1),
    ("zrange", -4, {"readonly"}, 1, 1, 1),
    ("zrangestore", -5, {"write", "denyoom"}, 1, 2, 1),
    ("zrangebyscore", -4, {"readonly"}, 1, 1, 1),
    ("zrevrangebyscore", -4, {"readonly"}, 1, 1, 1),
    ("zrangebylex", -4, {"readonly"}, 1, 1, 1),
    ("zrevrangebylex", -4, {"readonly"}, 1, 1, 1),
    ("zrevrange", -4, {"readonly"}, 1, 1, 1),
    ("zremrangebyrank", 4, {"write"}, 1, 1, 1),
    ("zremrangebyscore", 4, {"write"}, 1, 1, 1),
    ("zremrangebylex", 4, {"write"}, 1, 1, 1),
    ("zpopmin", -2, {"write", "fast"}, 1, 1, 1),
    ("zpopmax", -2, {"write", "fast"}, 1, 1, 1),
    ("zmpop", -4, {"write", "movablekeys"}, 0, 0, 0),
    ("zrandmember", -2, {"readonly"}, 1, 1, 1),
    ("zscan", -3, {"readonly"}, 1, 1, 1),
    ("zunion", -3, {"readonly", "movablekeys"}, 0, 0, 0),
    ("zinter", -3, {"readonly", "movablekeys"}, 0, 0, 0),
    ("zdiff", -3, {"readonly", "movablekeys"}, 0, 0, 0),
    ("zunionstore", -4, {"write", "denyoom", "movablekeys"}, 1, 1, 1),
    ("zinterstore", -4, {"write", "denyoom", "movablekeys"}, 1, 1, 1),
    ("zdiffstore", -4, {"write", "denyoom", "movablekeys"}, 1, 1, 1),
    ("zintercard", -3, {"readonly", "movablekeys"}, 0, 0, 0),
]


def test_command_info(raw):
    infos = raw.call("COMMAND", "INFO", *[t[0] for t in TABLE])
    for (name, arity, flags, first, last, step), info in zip(TABLE, infos):
        assert info[0] == name.encode()
        assert info[1] == arity, name
        assert {f.decode() if isinstance(f, bytes) else f for f in info[2]} == flags, name
        assert tuple(info[3:6]) == (first, last, step), name


def test_command_getkeys(raw):
    assert raw.call("COMMAND", "GETKEYS", "ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1",
                    "2") == [b"d", b"a", b"b"]
    assert raw.call("COMMAND", "GETKEYS", "ZINTER", "2", "a", "b") == [b"a", b"b"]
    assert raw.call("COMMAND", "GETKEYS", "ZMPOP", "2", "a", "b", "MIN") == [b"a", b"b"]
    assert raw.call("COMMAND", "GETKEYS", "ZRANGESTORE", "d", "s", "0", "1") == [b"d", b"s"]
    assert raw.call("COMMAND", "GETKEYS", "ZADD", "z", "1", "a") == [b"z"]


def test_random_operations_against_a_model(raw):
    """Random writes and reads against a Python model, with a tiny listpack limit so that sets
    convert on the way."""
    import random
    rnd = random.Random(11)
    raw.call("CONFIG", "SET", "zset-max-listpack-entries", "8")
    try:
        model = {}

        def order():
            return sorted(model.items(), key=lambda kv: (kv[1], kv[0]))

        def text(s):
            return b"%d" % s if s == int(s) else repr(s).encode()

        for step in range(1500):
            m = f"m{rnd.randrange(40)}".encode()
            op = rnd.randrange(8)
            if op <= 2:
                s = rnd.randrange(-20, 20) / 4
                assert raw.call("ZADD", "z", text(s), m) == (0 if m in model else 1)
                model[m] = s
            elif op == 3:
                got = raw.call("ZREM", "z", m)
                assert got == (1 if model.pop(m, None) is not None else 0)
            elif op == 4:
                s = model.get(m, 0) + 0.5
                assert raw.call("ZINCRBY", "z", "0.5", m) == text(s)
                model[m] = s
            elif op == 5:
                lo, hi = sorted(rnd.randrange(-20, 20) / 4 for _ in range(2))
                want = [k for k, v in order() if lo < v <= hi]
                assert raw.call("ZRANGEBYSCORE", "z", b"(" + text(lo), text(hi)) == want
                assert raw.call("ZCOUNT", "z", b"(" + text(lo), text(hi)) == len(want)
            elif op == 6:
                if m in model:
                    assert raw.call("ZRANK", "z", m) == [k for k, _ in order()].index(m)
                    assert raw.call("ZREVRANK", "z", m) == len(model) - 1 - [
                        k for k, _ in order()].index(m)
                else:
                    assert raw.call("ZRANK", "z", m) is None
            else:
                a, b = rnd.randrange(-10, 10), rnd.randrange(-10, 10)
                flat = raw.call("ZREVRANGE", "z", a, b, "WITHSCORES")
                o = list(reversed(order()))
                n = len(o)
                s0 = max(a + n if a < 0 else a, 0)
                e0 = b + n if b < 0 else b
                want = o[s0:min(e0, n - 1) + 1] if s0 <= e0 and s0 < n else []
                assert pairs(flat) == [(k, text(v)) for k, v in want]
            assert raw.call("ZCARD", "z") == len(model)
        assert raw.call("OBJECT", "ENCODING", "z") == b"skiplist"
    finally:
        raw.call("CONFIG", "SET", "zset-max-listpack-entries", "128")


@pytest.mark.larder_only
def test_value_events_carry_the_members(server):
    """larder's value events (docs/events.md): one `set` per write with the members after it,
    and a sorted set emptied by a command goes as one `del` carrying what it held."""
    sub = server.client(protocol=2)
    ps = sub.pubsub()
    ps.psubscribe("__values@0__:vz*")
    deadline = time.time() + 5
    while time.time() < deadline:
        m = ps.get_message(timeout=1)
        if m and m["type"] == "psubscribe":
            break
    w = server.client(protocol=2)
    w.zadd("vz", {"b": 1.5, "a": 2})
    w.zadd("vz", {"c": 3})
    w.zpopmin("vz", 5)
    w.zadd("vz2", {"x": 1})
    w.zrem("vz2", "x", "x")
    w.zadd("vz3", {"x": 1, "y": 2})
    w.zremrangebyscore("vz3", "-inf", "+inf")
    got = []
    while len(got) < 7 and time.time() < deadline:
        m = ps.get_message(timeout=0.5)
        if m and m["type"] == "pmessage":
            head, _, value = m["data"].partition(b"\n")
            got.append((m["channel"], head.split()[1], value))
    assert ps.get_message(timeout=0.3) is None
    ps.close()
    pair = lambda m, s: b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(m), m, len(s), s)
    assert got == [
        (b"__values@0__:vz", b"set", b"*4\r\n" + pair(b"b", b"1.5") + pair(b"a", b"2")),
        (b"__values@0__:vz", b"set",
         b"*6\r\n" + pair(b"b", b"1.5") + pair(b"a", b"2") + pair(b"c", b"3")),
        (b"__values@0__:vz", b"del",
         b"*6\r\n" + pair(b"b", b"1.5") + pair(b"a", b"2") + pair(b"c", b"3")),
        (b"__values@0__:vz2", b"set", b"*2\r\n" + pair(b"x", b"1")),
        (b"__values@0__:vz2", b"del", b"*2\r\n" + pair(b"x", b"1")),
        (b"__values@0__:vz3", b"set", b"*4\r\n" + pair(b"x", b"1") + pair(b"y", b"2")),
        (b"__values@0__:vz3", b"del", b"*4\r\n" + pair(b"x", b"1") + pair(b"y", b"2")),
    ]
