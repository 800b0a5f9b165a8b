"""Geo commands: GEOADD GEOPOS GEODIST GEOHASH GEOSEARCH GEOSEARCHSTORE GEORADIUS
GEORADIUSBYMEMBER GEORADIUS_RO GEORADIUSBYMEMBER_RO.

Tests taking `r` run twice, over RESP2 and RESP3; coordinate and distance texts, reply shapes
and error texts are checked on raw sockets (`raw`, `rawp`). Every test here passes against
Redis 7.0.15 (`--target=redis`).
"""

import random
import time

import pytest

from conftest import Err

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
SYNTAX = Err("ERR syntax error")
NOT_FLOAT = Err("ERR value is not a valid float")
NOT_INT = Err("ERR value is not an integer or out of range")
BAD_UNIT = Err("ERR unsupported unit provided. please use M, KM, FT, MI")
NOT_MEMBER = Err("ERR could not decode requested zset member")


def arity(name):
    return Err(f"ERR wrong number of arguments for '{name}' command")


def call(c, *args):
    """A command on a redis-py client or a raw connection."""
    return c.call(*args) if hasattr(c, "call") else c.execute_command(*args)


def sicily(c):
    return call(c, "GEOADD", "Sicily", "13.361389", "38.115556", "Palermo",
                             "15.087269", "37.502669", "Catania")


def sicily4(c):
    sicily(c)
    call(c, "GEOADD", "Sicily", "12.758489", "38.788135", "edge1",
                      "17.241510", "38.788135", "edge2")


def b(x):
    return x if isinstance(x, bytes) else str(x).encode()


# --- GEOADD ------------------------------------------------------------------------------------


def test_geoadd_and_flags(r):
    assert sicily(r) == 2
    assert r.type("Sicily") in (b"zset", "zset")
    assert r.zscore("Sicily", "Palermo") == 3479099956230698
    assert r.geoadd("Sicily", (1, 1, "Palermo", 2, 2, "x"), nx=True) == 1
    assert r.geoadd("Sicily", (1, 1, "Palermo", 2, 2, "y"), xx=True, ch=True) == 1
    assert r.geoadd("Sicily", (1, 1, "Palermo")) == 0
    assert r.geoadd("Sicily", (1, 1, "Palermo"), ch=True) == 0
    assert r.geoadd("Sicily", (3, 3, "Palermo"), ch=True) == 1
    assert r.geoadd("none", (1, 1, "a"), xx=True) == 0
    assert r.exists("none") == 0
    assert r.zcard("Sicily") == 3


def test_geoadd_limits(raw):
    assert raw.call("GEOADD", "g", "180", "85.05112878", "ne", "-180", "-85.05112878",
                    "sw") == 2
    assert raw.call("ZSCORE", "g", "sw") == b"0"
    assert raw.call("ZSCORE", "g", "ne") == b"13510798882111488"
    assert raw.call("GEOPOS", "g", "ne", "sw") == [
        [b"180", b"85.0511287799999991"],
        [b"-179.99999731779098511", b"-85.05112751263942528"]]


def test_geoadd_errors(raw):
    assert raw.call("GEOADD", "g", "1", "2", "a", "3") == SYNTAX
    assert raw.call("GEOADD", "g", "NX", "XX", "1", "2", "a") == SYNTAX
    assert raw.call("GEOADD", "g", "CH", "CH", "CH") == SYNTAX
    assert raw.call("GEOADD", "g", "GT", "1", "2", "a") == SYNTAX
    assert raw.call("GEOADD", "g", "x", "2", "a") == NOT_FLOAT
    assert raw.call("GEOADD", "g", "1", " 2", "a") == NOT_FLOAT
    assert raw.call("GEOADD", "g", "200", "100", "a") == Err(
        "ERR invalid longitude,latitude pair 200.000000,100.000000")
    assert raw.call("GEOADD", "g", "1", "1", "a", "1", "85.1", "b") == Err(
        "ERR invalid longitude,latitude pair 1.000000,85.100000")
    assert raw.call("GEOADD", "g", "inf", "0", "a") == Err(
        "ERR invalid longitude,latitude pair inf,0.000000")
    assert raw.call("GEOADD", "g", "-180.0000001", "0", "a") == Err(
        "ERR invalid longitude,latitude pair -180.000000,0.000000")
    assert raw.call("EXISTS", "g") == 0
    assert raw.call("GEOADD", "g", "1", "2") == arity("geoadd")
    raw.call("SET", "s", "v")
    assert raw.call("GEOADD", "s", "1", "1", "a") == WRONGTYPE


# --- GEOPOS GEODIST GEOHASH ---------------------------------------------------------------------


def test_geopos(r):
    sicily(r)
    pos = r.geopos("Sicily", "Palermo", "nope", "Catania")
    assert pos[1] is None
    assert pos[0] == pytest.approx((13.361389, 38.115556), abs=1e-5)
    assert pos[2] == pytest.approx((15.087269, 37.502669), abs=1e-5)
    assert r.geopos("none", "a", "b") == [None, None]


def test_geopos_texts(rawp, protocol):
    sicily(rawp)
    f = rawp.call_frame("GEOPOS", "Sicily", "Palermo", "x")
    assert f.kind == "*" and len(f.value) == 2
    coords = f.value[0].value
    kind = "," if protocol == 3 else "$"
    assert [c.kind for c in coords] == [kind, kind]
    assert f.value[1].kind == ("_" if protocol == 3 else "*") and f.value[1].value is None
    rawp.send_command("GEOPOS", "Sicily", "Catania")
    if protocol == 3:
        want = b"*1\r\n*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n"
    else:
        want = b"*1\r\n*2\r\n$20\r\n15.08726745843887329\r\n$20\r\n37.50266842333162032\r\n"
    assert rawp.recv_exact(len(want)) == want
    rawp.send_command("GEOPOS", "Sicily")
    assert rawp.recv_exact(4) == b"*0\r\n"


def test_geodist(raw):
    sicily(raw)
    assert raw.call("GEODIST", "Sicily", "Palermo", "Catania") == b"166274.1516"
    assert raw.call("GEODIST", "Sicily", "Palermo", "Catania", "KM") == b"166.2742"
    assert raw.call("GEODIST", "Sicily", "Palermo", "Catania", "mi") == b"103.3182"
    assert raw.call("GEODIST", "Sicily", "Palermo", "Catania", "ft") == b"545518.8700"
    assert raw.call("GEODIST", "Sicily", "Palermo", "Palermo") == b"0.0000"
    assert raw.call("GEODIST", "Sicily", "Palermo", "x") is None
    assert raw.call("GEODIST", "none", "a", "b") is None
    assert raw.call("GEODIST", "Sicily", "a", "b", "yd") == BAD_UNIT
    assert raw.call("GEODIST", "none", "a", "b", "yd") == BAD_UNIT
    assert raw.call("GEODIST", "Sicily", "a", "b", "m", "x") == SYNTAX
    assert raw.call("GEODIST", "Sicily", "a") == arity("geodist")


def test_geodist_shapes(rawp, protocol):
    sicily(rawp)
    f = rawp.call_frame("GEODIST", "Sicily", "Palermo", "Catania", "km")
    assert f.kind == "$" and f.value == b"166.2742"
    f = rawp.call_frame("GEODIST", "Sicily", "Palermo", "nope")
    assert f.kind == ("_" if protocol == 3 else "$") and f.value is None


def test_geohash(r):
    sicily(r)
    got = r.geohash("Sicily", "Palermo", "Catania", "x")
    assert [b(x) if x is not None else None for x in got] == [b"sqc8b49rny0", b"sqdtr74hyu0",
                                                              None]
    assert r.geohash("none", "a") == [None]


def test_read_commands_wrongtype_and_arity(raw):
    raw.call("SET", "s", "v")
    for cmd in (["GEOPOS", "s", "a"], ["GEODIST", "s", "a", "b"], ["GEOHASH", "s", "a"],
                ["GEOSEARCH", "s", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"],
                ["GEOSEARCHSTORE", "d", "s", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"],
                ["GEORADIUS", "s", "0", "0", "1", "km"],
                ["GEORADIUS_RO", "s", "0", "0", "1", "km"],
                ["GEORADIUSBYMEMBER", "s", "a", "1", "km"],
                ["GEORADIUSBYMEMBER_RO", "s", "a", "1", "km"]):
        assert raw.call(*cmd) == WRONGTYPE, cmd
    # The type is checked before the arguments.
    assert raw.call("GEORADIUS", "s", "x", "0", "1", "km") == WRONGTYPE
    assert raw.call("GEOPOS") == arity("geopos")
    assert raw.call("GEOHASH") == arity("geohash")
    assert raw.call("GEOSEARCH", "s", "FROMLONLAT", "0", "0") == arity("geosearch")
    assert raw.call("GEOSEARCHSTORE", "d", "s", "FROMLONLAT", "0", "0", "x") == arity(
        "geosearchstore")
    assert raw.call("GEORADIUS", "s", "0", "0", "1") == arity("georadius")
    assert raw.call("GEORADIUS_RO", "s", "0", "0", "1") == arity("georadius_ro")
    assert raw.call("GEORADIUSBYMEMBER", "s", "a", "1") == arity("georadiusbymember")
    assert raw.call("GEORADIUSBYMEMBER_RO", "s", "a", "1") == arity("georadiusbymember_ro")


# --- GEOSEARCH ---------------------------------------------------------------------------------


def test_geosearch_radius_and_box(r):
    sicily4(r)
    assert r.geosearch("Sicily", longitude=15, latitude=37, radius=200, unit="km") == [
        b"Palermo", b"Catania"] or r.geosearch(
        "Sicily", longitude=15, latitude=37, radius=200, unit="km") == ["Palermo", "Catania"]
    got = r.geosearch("Sicily", longitude=15, latitude=37, width=400, height=400, unit="km",
                      sort="ASC")
    assert [b(x) for x in got] == [b"Catania", b"Palermo", b"edge2", b"edge1"]
    got = r.geosearch("Sicily", member="Palermo", radius=300, unit="km", sort="DESC")
    assert [b(x) for x in got] == [b"Catania", b"edge1", b"Palermo"]
    got = r.geosearch("Sicily", member="Palermo", radius=300, unit="km", count=2)
    assert [b(x) for x in got] == [b"Palermo", b"edge1"]
    got = r.geosearch("Sicily", longitude=15, latitude=37, radius=1, unit="m")
    assert got == []
    assert r.geosearch("none", member="x", radius=1, unit="km") == []
    assert r.geosearch("none", longitude=1, latitude=1, radius=1, unit="km") == []


def test_geosearch_with_options(raw):
    sicily4(raw)
    got = raw.call("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400",
                   "km", "ASC", "WITHCOORD", "WITHDIST", "WITHHASH")
    assert got == [
        [b"Catania", b"56.4413", 3479447370796909,
         [b"15.08726745843887329", b"37.50266842333162032"]],
        [b"Palermo", b"190.4424", 3479099956230698,
         [b"13.36138933897018433", b"38.11555639549629859"]],
        [b"edge2", b"279.7403", 3481342659049484,
         [b"17.24151045083999634", b"38.78813451624225195"]],
        [b"edge1", b"279.7405", 3479273021651468,
         [b"12.7584877610206604", b"38.78813451624225195"]],
    ]
    assert raw.call("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200",
                    "km", "withdist", "desc") == [[b"Palermo", b"190.4424"],
                                                  [b"Catania", b"56.4413"]]
    assert raw.call("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "300", "km",
                    "WITHHASH", "COUNT", "1") == [[b"Palermo", 3479099956230698]]
    assert raw.call("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "300", "km",
                    "COUNT", "5", "ANY") == [b"Palermo", b"edge1", b"Catania"]
    assert raw.call("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "300", "km",
                    "COUNT", "1", "ANY") == [b"Palermo"]
    assert raw.call("GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "300", "km",
                    "COUNT", "2", "ANY", "DESC") == [b"edge1", b"Palermo"]
    # Repeated FROMMEMBER / BYRADIUS: the last wins.
    assert raw.call("GEOSEARCH", "Sicily", "FROMMEMBER", "nope2", "FROMMEMBER", "Catania",
                    "BYRADIUS", "1", "m", "BYRADIUS", "10", "km") == NOT_MEMBER
    assert raw.call("GEOSEARCH", "Sicily", "FROMMEMBER", "Catania", "FROMMEMBER", "Palermo",
                    "BYRADIUS", "1", "m", "BYRADIUS", "10", "km") == [b"Palermo"]
    # Units.
    for unit, size in (("m", "200000"), ("km", "200"), ("ft", "656168"), ("mi", "124.3")):
        assert raw.call("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", size,
                        unit.upper(), "ASC") == [b"Catania", b"Palermo"], unit


def test_geosearch_reply_shapes(rawp, protocol):
    sicily(rawp)
    f = rawp.call_frame("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "100",
                        "km", "WITHCOORD", "WITHDIST", "WITHHASH")
    item = f.value[0]
    assert item.kind == "*"
    kinds = [x.kind for x in item.value]
    assert kinds == ["$", "$", ":", "*"]
    coord = "," if protocol == 3 else "$"
    assert [x.kind for x in item.value[3].value] == [coord, coord]
    rawp.send_command("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "100",
                      "km", "WITHCOORD")
    if protocol == 3:
        want = b"*1\r\n*2\r\n$7\r\nCatania\r\n*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n"
    else:
        want = (b"*1\r\n*2\r\n$7\r\nCatania\r\n*2\r\n$20\r\n15.08726745843887329\r\n"
                b"$20\r\n37.50266842333162032\r\n")
    assert rawp.recv_exact(len(want)) == want
    f = rawp.call_frame("GEOSEARCH", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km")
    assert f.kind == "*" and f.value == []


def test_geosearch_errors(raw):
    sicily(raw)
    base = ["GEOSEARCH", "Sicily"]
    ll = ["FROMLONLAT", "15", "37"]
    rad = ["BYRADIUS", "100", "km"]
    assert raw.call(*base, "FROMMEMBER", "nope", *rad) == NOT_MEMBER
    assert raw.call(*base, *ll, *rad, "STORE", "x") == SYNTAX
    assert raw.call(*base, *ll, *rad, "STOREDIST") == SYNTAX
    assert raw.call(*base, *ll, *rad, "ANY") == Err(
        "ERR the ANY argument requires COUNT argument")
    assert raw.call(*base, *ll, *rad, "COUNT", "0") == Err("ERR COUNT must be > 0")
    assert raw.call(*base, *ll, *rad, "COUNT", "-3") == Err("ERR COUNT must be > 0")
    assert raw.call(*base, *ll, *rad, "COUNT", "x") == NOT_INT
    assert raw.call(*base, *ll, *rad, "COUNT") == SYNTAX
    assert raw.call(*base, *ll, *rad, "bogus") == SYNTAX
    assert raw.call("geoSearch", "Sicily", "BYRADIUS", "1", "km", "ASC", "ASC") == Err(
        "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geoSearch")
    assert raw.call(*base, *ll, "ASC", "ASC") == Err(
        "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH")
    assert raw.call(*base, *ll, "FROMMEMBER", "Palermo", *rad) == SYNTAX
    assert raw.call(*base, "FROMMEMBER", "Palermo", *ll, *rad) == SYNTAX
    assert raw.call(*base, *ll, *rad, "BYBOX", "1", "1", "km") == SYNTAX
    assert raw.call(*base, *ll, "BYBOX", "1", "-1", "km") == Err(
        "ERR height or width cannot be negative")
    assert raw.call(*base, *ll, "BYBOX", "x", "1", "km") == Err("ERR need numeric width")
    assert raw.call(*base, *ll, "BYBOX", "1", "x", "km") == Err("ERR need numeric height")
    assert raw.call(*base, *ll, "BYBOX", "1", "1", "yd") == BAD_UNIT
    assert raw.call(*base, *ll, "BYRADIUS", "x", "km") == Err("ERR need numeric radius")
    assert raw.call(*base, *ll, "BYRADIUS", "-1", "km") == Err(
        "ERR radius cannot be negative")
    assert raw.call(*base, "FROMLONLAT", "x", "1", *rad) == NOT_FLOAT
    assert raw.call(*base, "FROMLONLAT", "1", "91", *rad) == Err(
        "ERR invalid longitude,latitude pair 1.000000,91.000000")
    assert raw.call(*base, *ll, *rad, "WITHDIST", "WITHDIST") != SYNTAX
    # Errors come in argument order: a bad member before a later syntax error.
    assert raw.call(*base, "FROMMEMBER", "nope", "bogus", "x", "y") == NOT_MEMBER
    # On a missing key FROMMEMBER is not looked up, the other checks still apply.
    assert raw.call("GEOSEARCH", "none", "FROMMEMBER", "x", *rad) == []
    assert raw.call("GEOSEARCH", "none", "FROMMEMBER", "x", "BYRADIUS", "-1", "km") == Err(
        "ERR radius cannot be negative")
    assert raw.call("GEOSEARCH", "none", "FROMMEMBER", "x", "ASC", "ASC", "ASC") == Err(
        "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH")


# --- GEOSEARCHSTORE ------------------------------------------------------------------------------


def test_geosearchstore(raw):
    sicily4(raw)
    assert raw.call("GEOSEARCHSTORE", "dst", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS",
                    "300", "km", "STOREDIST") == 3
    assert raw.call("ZRANGE", "dst", "0", "-1", "WITHSCORES") == [
        b"Palermo", b"0", b"edge1", b"91.400658605814272", b"Catania", b"166.27415156960032"]
    assert raw.call("GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37", "BYBOX",
                    "400", "400", "km", "COUNT", "2", "DESC") == 2
    assert raw.call("ZRANGE", "dst", "0", "-1", "WITHSCORES") == [
        b"edge1", b"3479273021651468", b"edge2", b"3481342659049484"]
    assert raw.call("GEOPOS", "dst", "edge2") == [
        [b"17.24151045083999634", b"38.78813451624225195"]]
    # Into the source itself.
    assert raw.call("GEOSEARCHSTORE", "Sicily", "Sicily", "FROMLONLAT", "15", "37",
                    "BYRADIUS", "100", "km") == 1
    assert raw.call("ZRANGE", "Sicily", "0", "-1") == [b"Catania"]
    # Nothing found, or no source: the destination is deleted.
    raw.call("SET", "dst", "string")
    assert raw.call("GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS",
                    "1", "km") == 0
    assert raw.call("EXISTS", "dst") == 0
    raw.call("SET", "dst", "string")
    assert raw.call("GEOSEARCHSTORE", "dst", "none", "FROMMEMBER", "x", "BYRADIUS", "1",
                    "km") == 0
    assert raw.call("EXISTS", "dst") == 0
    # A destination of another type is replaced, its TTL dropped.
    raw.call("SET", "dst", "string", "EX", "100")
    assert raw.call("GEOSEARCHSTORE", "dst", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS",
                    "100", "km") == 1
    assert raw.call("TYPE", "dst") == "zset"
    assert raw.call("TTL", "dst") == -1
    assert raw.call("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1",
                    "km", "WITHDIST") == Err(
        "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
    assert raw.call("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1",
                    "km", "STORE", "x") == SYNTAX


def test_geosearchstore_encoding(raw):
    raw.call("CONFIG", "SET", "zset-max-listpack-entries", "2")
    try:
        sicily4(raw)
        assert raw.call("OBJECT", "ENCODING", "Sicily") == b"skiplist"
        assert raw.call("GEOSEARCHSTORE", "small", "Sicily", "FROMLONLAT", "15", "37",
                        "BYRADIUS", "200", "km") == 2
        assert raw.call("OBJECT", "ENCODING", "small") == b"listpack"
        assert raw.call("GEOSEARCHSTORE", "big", "Sicily", "FROMLONLAT", "15", "37",
                        "BYRADIUS", "300", "km") == 4
        assert raw.call("OBJECT", "ENCODING", "big") == b"skiplist"
        assert raw.call("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "300",
                        "km", "ASC") == [b"Catania", b"Palermo", b"edge2", b"edge1"]
    finally:
        raw.call("CONFIG", "SET", "zset-max-listpack-entries", "128")


# --- GEORADIUS family ----------------------------------------------------------------------------


def test_georadius(raw):
    sicily4(raw)
    assert raw.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "DESC") == [
        [b"Palermo", b"190.4424"], [b"Catania", b"56.4413"]]
    assert raw.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHCOORD", "ASC") == [
        [b"Catania", [b"15.08726745843887329", b"37.50266842333162032"]],
        [b"Palermo", [b"13.36138933897018433", b"38.11555639549629859"]]]
    assert raw.call("GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "COUNT", "1") == [
        b"Catania"]
    assert raw.call("GEORADIUS", "Sicily", "15", "37", "300", "km", "STORE", "d") == 4
    assert raw.call("ZRANGE", "d", "0", "-1") == [b"Palermo", b"edge1", b"Catania", b"edge2"]
    assert raw.call("GEORADIUS", "Sicily", "15", "37", "300", "km", "COUNT", "2",
                    "STOREDIST", "d") == 2
    assert raw.call("ZRANGE", "d", "0", "-1", "WITHSCORES") == [
        b"Catania", b"56.441257870158204", b"Palermo", b"190.44242984775784"]
    # The last of STORE / STOREDIST wins.
    assert raw.call("GEORADIUS", "Sicily", "15", "37", "300", "km", "STOREDIST", "x",
                    "STORE", "d") == 4
    assert raw.call("EXISTS", "x") == 0
    assert raw.call("ZSCORE", "d", "Palermo") == b"3479099956230698"
    assert raw.call("GEORADIUS", "Sicily", "0", "0", "1", "km", "STORE", "d") == 0
    assert raw.call("EXISTS", "d") == 0
    assert raw.call("GEORADIUS", "none", "15", "37", "300", "km") == []
    assert raw.call("GEORADIUS", "none", "15", "37", "300", "km", "STORE", "d") == 0


def test_georadius_errors(raw):
    sicily(raw)
    assert raw.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d",
                    "WITHDIST") == Err("ERR STORE option in GEORADIUS is not compatible with "
                                       "WITHDIST, WITHHASH and WITHCOORD options")
    assert raw.call("GEORADIUS", "Sicily", "1", "2", "x", "km") == Err(
        "ERR need numeric radius")
    assert raw.call("GEORADIUS", "Sicily", "1", "2", "-1", "km") == Err(
        "ERR radius cannot be negative")
    assert raw.call("GEORADIUS", "Sicily", "1", "2", "1", "yd") == BAD_UNIT
    assert raw.call("GEORADIUS", "Sicily", "x", "2", "1", "km") == NOT_FLOAT
    assert raw.call("GEORADIUS", "none", "200", "2", "1", "km") == Err(
        "ERR invalid longitude,latitude pair 200.000000,2.000000")
    assert raw.call("GEORADIUS", "Sicily", "1", "2", "1", "km", "COUNT", "0") == Err(
        "ERR COUNT must be > 0")
    assert raw.call("GEORADIUS", "Sicily", "1", "2", "1", "km", "ANY") == Err(
        "ERR the ANY argument requires COUNT argument")
    assert raw.call("GEORADIUS", "Sicily", "1", "2", "1", "km", "STORE") == SYNTAX
    assert raw.call("GEORADIUS", "Sicily", "1", "2", "1", "km", "FROMLONLAT", "1", "2") == SYNTAX
    assert raw.call("GEORADIUS_RO", "Sicily", "1", "2", "1", "km", "STORE", "x") == SYNTAX
    assert raw.call("GEORADIUSBYMEMBER_RO", "Sicily", "Palermo", "1", "km", "STOREDIST",
                    "x") == SYNTAX


def test_georadiusbymember(raw):
    sicily4(raw)
    assert raw.call("GEORADIUSBYMEMBER", "Sicily", "Palermo", "200", "km", "WITHDIST",
                    "ASC") == [[b"Palermo", b"0.0000"], [b"edge1", b"91.4007"],
                               [b"Catania", b"166.2742"]]
    assert raw.call("GEORADIUSBYMEMBER_RO", "Sicily", "Palermo", "200", "km", "COUNT", "1",
                    "ANY") == [b"Palermo"]
    assert raw.call("GEORADIUSBYMEMBER", "Sicily", "Palermo", "200", "km",
                    "STOREDIST", "d") == 3
    assert raw.call("ZSCORE", "d", "Catania") == b"166.27415156960032"
    assert raw.call("GEORADIUSBYMEMBER", "Sicily", "nope", "200", "km") == NOT_MEMBER
    assert raw.call("GEORADIUSBYMEMBER", "Sicily", "Palermo", "x", "km") == Err(
        "ERR need numeric radius")
    # Without the key, the member, radius and unit are not read.
    assert raw.call("GEORADIUSBYMEMBER", "none", "x", "bad", "unit") == []
    assert raw.call("GEORADIUSBYMEMBER_RO", "none", "x", "bad", "unit", "WITHDIST") == []
    assert raw.call("GEORADIUSBYMEMBER", "none", "x", "1", "km", "STORE", "d") == 0
    assert raw.call("EXISTS", "d") == 0
    assert raw.call("GEORADIUSBYMEMBER", "none", "x", "1", "km", "bogus") == SYNTAX


def test_georadius_resp(r):
    sicily(r)
    got = r.georadius("Sicily", 15, 37, 200, unit="km", withdist=True, sort="ASC")
    assert [x[0] for x in got] in ([b"Catania", b"Palermo"], ["Catania", "Palermo"])
    assert [float(x[1]) for x in got] == [56.4413, 190.4424]
    got = r.georadiusbymember("Sicily", "Palermo", 200, unit="km", withcoord=True)
    assert len(got) == 2
    assert r.georadius("Sicily", 15, 37, 200, unit="km", store="d") == 2
    assert r.zcard("d") == 2


# --- Randomized --------------------------------------------------------------------------------


def test_random_searches_agree_with_geodist(raw):
    """Every member GEODIST puts inside the radius (away from its edge) is found by
    GEOSEARCH, and nothing else; BYBOX results lie inside the radius of the box's corner."""
    rng = random.Random(7)
    for round_ in range(6):
        raw.call("DEL", "g")
        clon, clat = rng.uniform(-170, 170), rng.uniform(-70, 70)
        spread = [0.05, 0.5, 2, 5, 0.01, 1][round_]
        args = ["GEOADD", "g", "%.6f" % clon, "%.6f" % clat, "center"]
        for i in range(150):
            args += ["%.6f" % (clon + rng.uniform(-spread, spread)),
                     "%.6f" % (clat + rng.uniform(-spread, spread)), "m%d" % i]
        raw.call(*args)
        members = [m for m in raw.call("ZRANGE", "g", "0", "-1")]
        dist = {m: float(raw.call("GEODIST", "g", "center", m, "km")) for m in members}
        for _ in range(5):
            radius = spread * 111 * rng.uniform(0.1, 1.2)
            got = raw.call("GEOSEARCH", "g", "FROMMEMBER", "center", "BYRADIUS",
                           "%.3f" % radius, "km", "WITHDIST", "ASC")
            names = [m for m, _ in got]
            r3 = float("%.3f" % radius)
            for m, d in dist.items():
                if abs(d - r3) > 0.001:
                    assert (m in names) == (d < r3), (m, d, r3)
            ds = [float(d) for _, d in got]
            assert ds == sorted(ds)
            count = raw.call("GEOSEARCH", "g", "FROMMEMBER", "center", "BYRADIUS",
                             "%.3f" % radius, "km", "COUNT", "3")
            assert count == names[:3] or len(set(ds[:4])) < 4
            box = raw.call("GEOSEARCH", "g", "FROMMEMBER", "center", "BYBOX", "%.3f" % radius,
                           "%.3f" % radius, "km", "WITHDIST")
            for m, d in box:
                assert float(d) <= radius * 0.7072 + 0.001


# --- Events, command table ---------------------------------------------------------------------


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
        sicily(c)
        sicily(c)
        c.geoadd("Sicily", (1, 1, "Palermo"), xx=True)
        c.geoadd("Sicily", (1, 1, "x"), xx=True)
        c.execute_command("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37",
                          "BYRADIUS", "200", "km")
        c.execute_command("GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "0", "0",
                          "BYRADIUS", "1", "km")
        c.execute_command("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d2")
        c.execute_command("GEORADIUSBYMEMBER", "Sicily", "Catania", "1", "km", "STOREDIST",
                          "d2")
        c.execute_command("GEORADIUS", "none", "15", "37", "200", "km", "STORE", "d2")
        c.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200",
                          "km")
    want = [
        ("zadd", "Sicily"), ("zadd", "Sicily"),
        ("geosearchstore", "d"), ("del", "d"),
        ("georadiusstore", "d2"), ("georadiusstore", "d2"), ("del", "d2"),
    ]
    assert events(server, actions, len(want)) == want


TABLE = [
    ("geoadd", -5, {"write", "denyoom"}, 1, 1, 1),
    ("geopos", -2, {"readonly"}, 1, 1, 1),
    ("geodist", -4, {"readonly"}, 1, 1, 1),
    ("geohash", -2, {"readonly"}, 1, 1, 1),
    ("geosearch", -7, {"readonly"}, 1, 1, 1),
    ("geosearchstore", -8, {"write", "denyoom"}, 1, 2, 1),
    ("georadius", -6, {"write", "denyoom", "movablekeys"}, 1, 1, 1),
    ("georadiusbymember", -5, {"write", "denyoom", "movablekeys"}, 1, 1, 1),
    ("georadius_ro", -6, {"readonly"}, 1, 1, 1),
    ("georadiusbymember_ro", -5, {"readonly"}, 1, 1, 1),
]


def test_command_info(raw):
    infos = raw.call("COMMAND", "INFO", *[t[0] for t in TABLE])
    for (name, arity_, flags, first, last, step), info in zip(TABLE, infos):
        assert info[0] == name.encode()
        assert info[1] == arity_, name
        assert {f.decode() if isinstance(f, bytes) else f for f in info[2]} == flags, name
        assert tuple(info[3:6]) == (first, last, step), name


def test_command_getkeys(raw):
    assert raw.call("COMMAND", "GETKEYS", "GEOSEARCHSTORE", "d", "s", "FROMLONLAT", "0", "0",
                    "BYRADIUS", "1", "km") == [b"d", b"s"]
    assert raw.call("COMMAND", "GETKEYS", "GEOADD", "g", "1", "2", "m") == [b"g"]


def test_in_transaction(raw):
    sicily(raw)
    assert raw.call("MULTI") == "OK"
    raw.call("GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d")
    raw.call("GEOSEARCHSTORE", "e", "d", "FROMLONLAT", "15", "37", "BYRADIUS", "100", "km")
    raw.call("GEODIST", "e", "Catania", "Catania")
    assert raw.call("EXEC") == [2, 1, b"0.0000"]


def test_count_orders_ties_like_redis(raw):
    """COUNT below the number found sorts partially (Redis's pqsort): equal distances come
    out in its order; all found are sorted stably."""
    args = []
    for i in range(60):
        args += ["%d.0" % (i % 3), "%d.0" % (i % 2), "m%d" % i]
    assert raw.call("GEOADD", "t", *args) == 60

    def search(*opts):
        got = raw.call("GEOSEARCH", "t", "FROMLONLAT", "0.5", "0.5", "BYRADIUS", "500", "km",
                       *opts)
        return " ".join(m.decode() for m in got)
    assert search("COUNT", "7", "ASC") == "m15 m27 m3 m33 m39 m45 m51"
    assert search("COUNT", "7", "DESC") == "m14 m56 m50 m44 m38 m32 m26"
    assert search("COUNT", "3", "DESC") == "m14 m56 m50"
    assert search("COUNT", "45") == (
        "m15 m27 m3 m33 m39 m45 m51 m57 m9 m21 m1 m7 m55 m49 m43 m37 m31 m25 m19 m13 m0 m12 "
        "m18 m24 m30 m36 m42 m48 m54 m6 m10 m52 m46 m40 m4 m34 m28 m22 m16 m58 m59 m11 m17 "
        "m23 m29")
    assert search("COUNT", "59", "DESC") == (
        "m14 m56 m50 m44 m38 m32 m26 m20 m2 m8 m11 m59 m53 m5 m47 m41 m35 m29 m23 m17 m58 "
        "m16 m22 m28 m34 m4 m40 m46 m52 m10 m48 m12 m18 m24 m30 m36 m42 m0 m54 m6 m7 m49 "
        "m43 m37 m31 m25 m19 m13 m1 m55 m15 m9 m57 m51 m45 m39 m33 m3 m27")
    full = search("ASC").split()
    assert full[:7] == sorted(full[:7], key=lambda m: full.index(m))
    assert search("COUNT", "60", "ASC").split() == full
