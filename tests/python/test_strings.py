"""String commands (issue 2, section 3): GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX MGET MSET
MSETNX APPEND STRLEN INCR DECR INCRBY DECRBY INCRBYFLOAT GETRANGE SETRANGE SUBSTR LCS.

Tests taking `r` run twice, over RESP2 and RESP3; error texts are checked on raw sockets.
"""

import time

import pytest

from conftest import Err, make_non_string

WRONGTYPE = Err("WRONGTYPE Operation against a key holding the wrong kind of value")
NOT_INT = Err("ERR value is not an integer or out of range")
SYNTAX = Err("ERR syntax error")


# --- GET / SET ---------------------------------------------------------------------------------


def test_get_set_basic(r):
    assert r.get("k") is None
    assert r.execute_command("SET", "k", "v") is True
    assert r.execute_command("GET", "k") == b"v"
    assert r.set("k", "v2") is True
    assert r.get("k") == b"v2"


def test_set_overwrites_any_type_and_clears_ttl(raw):
    make_non_string(raw, "l")
    assert raw.call("SET", "l", "s") == "OK"
    assert raw.call("TYPE", "l") == "string"
    raw.call("SET", "t", "v", "EX", "100")
    raw.call("SET", "t", "v2")
    assert raw.call("TTL", "t") == -1


def test_set_nx_xx(r):
    assert r.set("k", "1", nx=True) is True
    assert r.set("k", "2", nx=True) is None
    assert r.get("k") == b"1"
    assert r.set("k", "3", xx=True) is True
    assert r.get("k") == b"3"
    assert r.set("missing", "x", xx=True) is None
    assert r.exists("missing") == 0


def test_set_ex_px_exat_pxat(r):
    r.execute_command("SET", "ex", "v", "EX", "100")
    assert 99 <= r.ttl("ex") <= 100
    r.execute_command("SET", "px", "v", "PX", "100000")
    assert 99_000 < r.pttl("px") <= 100_000
    at = int(time.time()) + 200
    r.execute_command("SET", "exat", "v", "EXAT", str(at))
    assert r.expiretime("exat") == at
    at_ms = int(time.time() * 1000) + 300_000
    r.execute_command("SET", "pxat", "v", "PXAT", str(at_ms))
    assert r.pexpiretime("pxat") == at_ms


def test_set_options_are_case_insensitive(rawp):
    assert rawp.call("set", "k", "v", "ex", "100", "nx") == "OK"
    assert rawp.call("SET", "k", "v2", "Px", "5000", "xX", "gEt") == b"v"
    assert rawp.call("SET", "k", "v3", "keepttl") == "OK"
    assert 0 < rawp.call("PTTL", "k") <= 5000


def test_set_keepttl(r):
    r.set("k", "v", ex=100)
    assert r.set("k", "v2", keepttl=True) is True
    assert 99 <= r.ttl("k") <= 100
    assert r.get("k") == b"v2"
    r.set("k", "v3")
    assert r.ttl("k") == -1


def test_set_get_option(r):
    assert r.set("k", "v1", get=True) is None
    assert r.exists("k") == 1
    assert r.set("k", "v2", get=True) == b"v1"
    assert r.get("k") == b"v2"


def test_set_nx_get_combination(rawp):
    # Since Redis 7.0, NX and GET may be combined: the reply is the old value either way.
    assert rawp.call("SET", "k", "v", "NX", "GET") is None
    assert rawp.call("SET", "k", "v2", "NX", "GET") == b"v"
    assert rawp.call("GET", "k") == b"v"


def test_set_xx_get_on_missing_key(rawp):
    assert rawp.call("SET", "k", "v", "XX", "GET") is None
    assert rawp.call("EXISTS", "k") == 0


def test_set_get_with_expiry_and_keepttl(r):
    r.set("k", "v", ex=100)
    assert r.set("k", "v2", get=True, keepttl=True) == b"v"
    assert 99 <= r.ttl("k") <= 100
    assert r.set("k", "v3", get=True, px=50000, xx=True) == b"v2"
    assert 49_000 < r.pttl("k") <= 50_000


def test_set_get_wrongtype_does_not_overwrite(raw):
    type_name = make_non_string(raw, "l")
    assert raw.call("SET", "l", "v", "GET") == WRONGTYPE
    assert raw.call("TYPE", "l") == type_name.decode()


@pytest.mark.parametrize("opts", [
    ["NX", "XX"], ["EX", "10", "PX", "100"], ["EX", "10", "EXAT", "99999999999"],
    ["PX", "10", "PXAT", "99999999999999"], ["KEEPTTL", "EX", "10"], ["PX", "10", "KEEPTTL"],
    ["EX"], ["PX"], ["EXAT"], ["PXAT"], ["FOO"], ["GET", "KEEPTTL", "PX", "1"], ["NX", "NX", "XX"],
])
def test_set_syntax_errors(raw, opts):
    assert raw.call("SET", "k", "v", *opts) == SYNTAX
    assert raw.call("EXISTS", "k") == 0


def test_set_repeated_option_is_accepted(raw):
    assert raw.call("SET", "k", "v", "NX", "NX") == "OK"
    assert raw.call("SET", "k", "v", "GET", "GET") == b"v"


@pytest.mark.parametrize("opt", ["EX", "PX", "EXAT", "PXAT"])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_set_invalid_expire_time(raw, opt, value):
    assert raw.call("SET", "k", "v", opt, value) == Err("ERR invalid expire time in 'set' command")
    assert raw.call("EXISTS", "k") == 0


@pytest.mark.parametrize("opt", ["EX", "PX", "EXAT"])
def test_set_expire_time_overflow(raw, opt):
    # EX/EXAT overflow when scaled to milliseconds, PX when added to the current time.
    assert raw.call("SET", "k", "v", opt, "9223372036854775807") == Err(
        "ERR invalid expire time in 'set' command")


def test_set_pxat_far_future_is_valid(raw):
    assert raw.call("SET", "k", "v", "PXAT", "9223372036854775807") == "OK"
    assert raw.call("PEXPIRETIME", "k") == 9223372036854775807


@pytest.mark.parametrize("value", ["abc", "1.5", "", " 1", "10s"])
def test_set_expire_not_an_integer(raw, value):
    assert raw.call("SET", "k", "v", "EX", value) == NOT_INT


def test_set_exat_in_the_past_sets_then_expires(raw):
    assert raw.call("SET", "k", "v", "EXAT", "1") == "OK"
    assert raw.call("GET", "k") is None
    assert raw.call("EXISTS", "k") == 0
    assert raw.call("SET", "k2", "v", "PXAT", "1") == "OK"
    assert raw.call("GET", "k2") is None


# --- SETNX SETEX PSETEX GETSET GETDEL --------------------------------------------------------


def test_setnx(r):
    assert r.execute_command("SETNX", "k", "1") == 1
    assert r.execute_command("SETNX", "k", "2") == 0
    assert r.get("k") == b"1"


def test_setex_psetex(r):
    assert r.execute_command("SETEX", "k", "100", "v") is True
    assert 99 <= r.ttl("k") <= 100
    assert r.get("k") == b"v"
    assert r.execute_command("PSETEX", "p", "100000", "v") is True
    assert 99_000 < r.pttl("p") <= 100_000


@pytest.mark.parametrize("cmd", ["SETEX", "PSETEX"])
@pytest.mark.parametrize("value", ["0", "-5", "9223372036854775807"])
def test_setex_invalid_expire_time(raw, cmd, value):
    assert raw.call(cmd, "k", value, "v") == Err(
        f"ERR invalid expire time in '{cmd.lower()}' command")


def test_setex_not_an_integer(raw):
    assert raw.call("SETEX", "k", "abc", "v") == NOT_INT
    assert raw.call("PSETEX", "k", "1.5", "v") == NOT_INT


def test_getset(r):
    assert r.execute_command("GETSET", "k", "1") is None
    assert r.execute_command("GETSET", "k", "2") == b"1"
    assert r.get("k") == b"2"


def test_getset_clears_ttl(r):
    r.set("k", "v", px=100_000)
    assert r.getset("k", "v2") == b"v"
    assert r.ttl("k") == -1


def test_getdel(r):
    r.set("k", "v")
    assert r.execute_command("GETDEL", "k") == b"v"
    assert r.execute_command("GETDEL", "k") is None
    assert r.exists("k") == 0


@pytest.mark.parametrize("argv", [
    ["GET", "l"], ["GETSET", "l", "x"], ["GETDEL", "l"], ["GETEX", "l"], ["APPEND", "l", "x"],
    ["STRLEN", "l"], ["INCR", "l"], ["DECR", "l"], ["INCRBY", "l", "1"], ["DECRBY", "l", "1"],
    ["INCRBYFLOAT", "l", "1"], ["GETRANGE", "l", "0", "1"], ["SUBSTR", "l", "0", "1"],
    ["SETRANGE", "l", "0", "x"],
])
def test_string_commands_on_wrong_type(raw, argv):
    make_non_string(raw, "l")
    assert raw.call(*argv) == WRONGTYPE


# --- GETEX -------------------------------------------------------------------------------------


def test_getex_without_options_keeps_ttl(r):
    r.set("k", "v", ex=100)
    assert r.execute_command("GETEX", "k") == b"v"
    assert 99 <= r.ttl("k") <= 100


def test_getex_options(r):
    r.set("k", "v")
    assert r.execute_command("GETEX", "k", "EX", "100") == b"v"
    assert 99 <= r.ttl("k") <= 100
    assert r.execute_command("GETEX", "k", "PX", "50000") == b"v"
    assert 49_000 < r.pttl("k") <= 50_000
    at = int(time.time()) + 500
    assert r.execute_command("GETEX", "k", "EXAT", str(at)) == b"v"
    assert r.expiretime("k") == at
    at_ms = int(time.time() * 1000) + 600_000
    assert r.execute_command("GETEX", "k", "PXAT", str(at_ms)) == b"v"
    assert r.pexpiretime("k") == at_ms
    assert r.execute_command("GETEX", "k", "PERSIST") == b"v"
    assert r.ttl("k") == -1


def test_getex_missing_key(r):
    assert r.execute_command("GETEX", "missing") is None
    assert r.execute_command("GETEX", "missing", "EX", "10") is None
    assert r.exists("missing") == 0


def test_getex_past_time_deletes(r):
    r.set("k", "v")
    assert r.execute_command("GETEX", "k", "EXAT", "1") == b"v"
    assert r.exists("k") == 0


@pytest.mark.parametrize("opts", [
    ["EX", "10", "PX", "10"], ["PERSIST", "EX", "1"], ["EX", "1", "PERSIST"], ["FOO"], ["EX"],
])
def test_getex_syntax_errors(raw, opts):
    raw.call("SET", "k", "v")
    assert raw.call("GETEX", "k", *opts) == SYNTAX


@pytest.mark.parametrize("opts", [["EX", "0"], ["PX", "-1"], ["EXAT", "0"], ["PXAT", "-1"],
                                  ["EX", "9223372036854775807"]])
def test_getex_invalid_expire_time(raw, opts):
    raw.call("SET", "k", "v")
    assert raw.call("GETEX", "k", *opts) == Err("ERR invalid expire time in 'getex' command")
    assert raw.call("GETEX", "k", opts[0], "x") == NOT_INT


# --- MGET MSET MSETNX --------------------------------------------------------------------------


def test_mset_mget(r):
    assert r.execute_command("MSET", "a", "1", "b", "2") is True
    assert r.execute_command("MGET", "a", "b", "c") == [b"1", b"2", None]
    assert r.mget(["a"]) == [b"1"]


def test_mset_last_value_wins_and_clears_ttl(r):
    r.set("a", "0", ex=100)
    r.mset({"a": "1"})
    r.execute_command("MSET", "b", "1", "b", "2")
    assert r.get("b") == b"2"
    assert r.ttl("a") == -1


def test_mget_wrong_type_is_nil(raw):
    make_non_string(raw, "l")
    raw.call("SET", "s", "v")
    assert raw.call("MGET", "l", "s", "missing") == [None, b"v", None]


def test_msetnx(r):
    assert r.execute_command("MSETNX", "a", "1", "b", "2") == 1
    assert r.execute_command("MSETNX", "a", "x", "c", "3") == 0
    assert r.mget("a", "b", "c") == [b"1", b"2", None]


@pytest.mark.parametrize("argv", [["MSET", "a"], ["MSET", "a", "1", "b"], ["MSETNX", "a"],
                                  ["MSETNX", "a", "1", "b"]])
def test_mset_odd_arguments(raw, argv):
    assert raw.call(*argv) == Err(
        f"ERR wrong number of arguments for '{argv[0].lower()}' command")


# --- APPEND STRLEN -----------------------------------------------------------------------------


def test_append_strlen(r):
    assert r.execute_command("APPEND", "k", "Hello") == 5
    assert r.execute_command("APPEND", "k", " World") == 11
    assert r.get("k") == b"Hello World"
    assert r.execute_command("STRLEN", "k") == 11
    assert r.execute_command("STRLEN", "missing") == 0
    assert r.append("empty", "") == 0
    assert r.exists("empty") == 1


def test_append_to_integer_encoded_value(r):
    r.set("n", 10)
    assert r.append("n", "1") == 3
    assert r.get("n") == b"101"
    assert r.incr("n") == 102


def test_strlen_of_integer(r):
    r.set("n", -12345)
    assert r.strlen("n") == 6


# --- INCR family -------------------------------------------------------------------------------


def test_incr_decr(r):
    assert r.execute_command("INCR", "n") == 1
    assert r.execute_command("INCRBY", "n", "10") == 11
    assert r.execute_command("DECR", "n") == 10
    assert r.execute_command("DECRBY", "n", "15") == -5
    assert r.execute_command("INCRBY", "n", "-20") == -25
    assert r.get("n") == b"-25"


def test_incr_keeps_ttl(r):
    r.set("n", 1, ex=100)
    r.incr("n")
    assert 99 <= r.ttl("n") <= 100


@pytest.mark.parametrize("value", ["abc", " 1", "1 ", "01", "+1", "-0", "1.0", "",
                                   "9223372036854775808", "1e3"])
def test_incr_non_integer_value(raw, value):
    raw.call("SET", "n", value)
    assert raw.call("INCR", "n") == NOT_INT
    assert raw.call("GET", "n") == value.encode()


@pytest.mark.parametrize("arg", ["abc", "1.0", "", "9223372036854775808"])
def test_incrby_non_integer_argument(raw, arg):
    assert raw.call("INCRBY", "n", arg) == NOT_INT
    assert raw.call("DECRBY", "n", arg) == NOT_INT


def test_incr_overflow(raw):
    raw.call("SET", "n", "9223372036854775807")
    assert raw.call("INCR", "n") == Err("ERR increment or decrement would overflow")
    assert raw.call("INCRBY", "n", "1") == Err("ERR increment or decrement would overflow")
    raw.call("SET", "n", "-9223372036854775808")
    assert raw.call("DECR", "n") == Err("ERR increment or decrement would overflow")
    assert raw.call("DECRBY", "n", "1") == Err("ERR increment or decrement would overflow")
    assert raw.call("GET", "n") == b"-9223372036854775808"


def test_decrby_llong_min(raw):
    assert raw.call("DECRBY", "n", "-9223372036854775808") == Err("ERR decrement would overflow")
    assert raw.call("EXISTS", "n") == 0


def test_incr_extremes(raw):
    assert raw.call("INCRBY", "n", "9223372036854775807") == 9223372036854775807
    assert raw.call("DECRBY", "m", "9223372036854775807") == -9223372036854775807
    assert raw.call("DECR", "m") == -9223372036854775808


# --- INCRBYFLOAT -------------------------------------------------------------------------------


@pytest.mark.parametrize("start, incr, result", [
    ("10.50", "0.1", b"10.6"),
    ("10.6", "-5", b"5.6"),
    ("5.0e3", "2.0e2", b"5200"),
    ("3", "1.0", b"4"),
    ("3.0", "1", b"4"),
    (None, "1.5", b"1.5"),
    (None, "-0.25", b"-0.25"),
    ("1", "-1", b"0"),
    ("0", "1e10", b"10000000000"),
    ("0", "1e-5", b"0.00001"),
    ("100", "1.23", b"101.23"),
    ("-1.5", "0", b"-1.5"),
])
def test_incrbyfloat_formatting(rawp, start, incr, result):
    if start is not None:
        rawp.call("SET", "f", start)
    f = rawp.call_frame("INCRBYFLOAT", "f", incr)
    assert (f.kind, f.value) == ("$", result)  # a bulk string in RESP3 too, not a double
    assert rawp.call("GET", "f") == result


def test_incrbyfloat_repeated_tenths_print_like_long_double(r):
    # Redis computes in long double and prints with %.17Lg, so 0.1 three times is "0.3";
    # plain f64 arithmetic would print 0.30000000000000004.
    assert [r.incrbyfloat("f", 0.1) for _ in range(3)] == [0.1, 0.2, 0.3]
    assert r.get("f") == b"0.3"


def test_incrbyfloat_integer_value_stays_integer_text(r):
    r.set("f", 5)
    assert r.incrbyfloat("f", 5) == 10.0
    assert r.get("f") == b"10"
    assert r.incr("f") == 11


def test_incrbyfloat_keeps_ttl(r):
    r.set("f", "1", ex=100)
    r.incrbyfloat("f", 1)
    assert 99 <= r.ttl("f") <= 100


@pytest.mark.parametrize("incr", ["abc", "", " 1", "1 ", "nan", "1.5x"])
def test_incrbyfloat_invalid_increment(raw, incr):
    assert raw.call("INCRBYFLOAT", "f", incr) == Err("ERR value is not a valid float")


@pytest.mark.parametrize("value", ["abc", "1.5 ", " 1", ""])
def test_incrbyfloat_invalid_value(raw, value):
    raw.call("SET", "f", value)
    assert raw.call("INCRBYFLOAT", "f", "1") == Err("ERR value is not a valid float")


@pytest.mark.parametrize("incr", ["inf", "-inf", "+inf"])
def test_incrbyfloat_infinity(raw, incr):
    assert raw.call("INCRBYFLOAT", "f", incr) == Err(
        "ERR increment would produce NaN or Infinity")
    assert raw.call("EXISTS", "f") == 0


# --- GETRANGE SUBSTR SETRANGE ------------------------------------------------------------------


@pytest.mark.parametrize("start, end, result", [
    (0, 4, b"Hello"), (-5, -1, b"World"), (0, -1, b"Hello World"), (5, 2, b""),
    (-100, 100, b"Hello World"), (100, 200, b""), (-1, -5, b""), (6, 6, b"W"),
    (10, 100, b"d"), (-3, 5, b""),
    # Redis 7.0 clamps a negative end that falls before the start of the string to 0.
    (0, -100, b"H"),
])
def test_getrange(r, start, end, result):
    r.set("g", "Hello World")
    assert r.execute_command("GETRANGE", "g", start, end) == result
    assert r.execute_command("SUBSTR", "g", start, end) == result


def test_getrange_missing_and_empty(r):
    assert r.getrange("missing", 0, 10) == b""
    r.set("e", "")
    assert r.getrange("e", 0, -1) == b""
    assert r.getrange("e", 0, 0) == b""


def test_getrange_of_integer_encoded_value(r):
    r.set("n", 1234567)
    assert r.getrange("n", 2, 4) == b"345"


def test_getrange_not_an_integer(raw):
    raw.call("SET", "g", "x")
    assert raw.call("GETRANGE", "g", "a", "1") == NOT_INT
    assert raw.call("SUBSTR", "g", "0", "1.5") == NOT_INT


def test_setrange(r):
    r.set("k", "Hello World")
    assert r.execute_command("SETRANGE", "k", "6", "Redis") == 11
    assert r.get("k") == b"Hello Redis"
    assert r.setrange("k", 11, "!!") == 13
    assert r.get("k") == b"Hello Redis!!"


def test_setrange_pads_with_zero_bytes(r):
    assert r.setrange("k", 3, "ab") == 5
    assert r.get("k") == b"\x00\x00\x00ab"
    r.set("n", 12)
    assert r.setrange("n", 4, "x") == 5
    assert r.get("n") == b"12\x00\x00x"


def test_setrange_empty_value(r):
    assert r.setrange("k", 5, "") == 0
    assert r.exists("k") == 0
    r.set("k", "abc")
    assert r.setrange("k", 10, "") == 3
    assert r.get("k") == b"abc"


def test_setrange_errors(raw):
    assert raw.call("SETRANGE", "k", "-1", "x") == Err("ERR offset is out of range")
    assert raw.call("SETRANGE", "k", "536870911", "xx") == Err(
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    assert raw.call("SETRANGE", "k", "abc", "x") == NOT_INT
    assert raw.call("EXISTS", "k") == 0


def test_setrange_keeps_ttl(r):
    r.set("k", "abc", ex=100)
    r.setrange("k", 1, "X")
    assert 99 <= r.ttl("k") <= 100


# --- LCS ---------------------------------------------------------------------------------------


@pytest.fixture
def lcs_keys(r):
    r.mset({"key1": "ohmytext", "key2": "mynewtext"})
    return r


def test_lcs_string(lcs_keys):
    assert lcs_keys.execute_command("LCS", "key1", "key2") == b"mytext"


def test_lcs_len(lcs_keys):
    assert lcs_keys.execute_command("LCS", "key1", "key2", "LEN") == 6
    # WITHMATCHLEN is accepted and ignored without IDX.
    assert lcs_keys.execute_command("LCS", "key1", "key2", "LEN", "WITHMATCHLEN") == 6
    assert lcs_keys.execute_command("LCS", "key1", "key2", "WITHMATCHLEN") == b"mytext"


def _lcs_idx_as_dict(reply):
    if isinstance(reply, dict):  # RESP3: a map
        return reply
    return dict(zip(reply[0::2], reply[1::2]))


def test_lcs_idx(lcs_keys, protocol):
    reply = lcs_keys.execute_command("LCS", "key1", "key2", "IDX")
    assert isinstance(reply, dict) == (protocol == 3)
    assert _lcs_idx_as_dict(reply) == {
        b"matches": [[[4, 7], [5, 8]], [[2, 3], [0, 1]]],
        b"len": 6,
    }


def test_lcs_idx_minmatchlen_withmatchlen(lcs_keys):
    reply = lcs_keys.execute_command("LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4")
    assert _lcs_idx_as_dict(reply) == {b"matches": [[[4, 7], [5, 8]]], b"len": 6}
    reply = lcs_keys.execute_command("LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4",
                                     "WITHMATCHLEN")
    assert _lcs_idx_as_dict(reply) == {b"matches": [[[4, 7], [5, 8], 4]], b"len": 6}
    reply = lcs_keys.execute_command("LCS", "key1", "key2", "IDX", "WITHMATCHLEN")
    assert _lcs_idx_as_dict(reply)[b"matches"] == [[[4, 7], [5, 8], 4], [[2, 3], [0, 1], 2]]
    # A negative MINMATCHLEN counts as 0.
    reply = lcs_keys.execute_command("LCS", "key1", "key2", "MINMATCHLEN", "-5", "IDX")
    assert len(_lcs_idx_as_dict(reply)[b"matches"]) == 2


def test_lcs_missing_keys_are_empty(r):
    r.set("a", "abc")
    assert r.execute_command("LCS", "a", "missing") == b""
    assert r.execute_command("LCS", "missing", "missing2", "LEN") == 0
    reply = r.execute_command("LCS", "missing", "missing2", "IDX")
    assert _lcs_idx_as_dict(reply) == {b"matches": [], b"len": 0}


def test_lcs_identical_and_disjoint(r):
    r.mset({"a": "abcdef", "b": "abcdef", "c": "xyz"})
    assert r.execute_command("LCS", "a", "b") == b"abcdef"
    assert r.execute_command("LCS", "a", "c") == b""
    reply = _lcs_idx_as_dict(r.execute_command("LCS", "a", "b", "IDX", "WITHMATCHLEN"))
    assert reply == {b"matches": [[[0, 5], [0, 5], 6]], b"len": 6}


def test_lcs_errors(raw):
    raw.call("MSET", "key1", "ohmytext", "key2", "mynewtext")
    assert raw.call("LCS", "key1", "key2", "LEN", "IDX") == Err(
        "ERR If you want both the length and indexes, please just use IDX.")
    assert raw.call("LCS", "key1", "key2", "FOO") == SYNTAX
    assert raw.call("LCS", "key1", "key2", "MINMATCHLEN") == SYNTAX
    assert raw.call("LCS", "key1", "key2", "MINMATCHLEN", "x") == NOT_INT


def test_lcs_wrong_type(raw):
    raw.call("SET", "key1", "abc")
    make_non_string(raw, "l")
    assert raw.call("LCS", "key1", "l") == Err(
        "ERR The specified keys must contain string values")


# --- SET: every combination of condition, expiry and GET ---------------------------------------


def test_set_every_option_combination(rawp):
    """NX/XX/none x EX/PX/EXAT/PXAT/KEEPTTL/none x GET/no GET, on a missing key, a key without
    a TTL and a key with one, against a model of Redis 7's rules."""
    now = int(time.time())
    expiries = {
        None: [], "EX": ["EX", "100"], "PX": ["PX", "100000"], "EXAT": ["EXAT", str(now + 100)],
        "PXAT": ["PXAT", str((now + 100) * 1000)], "KEEPTTL": ["KEEPTTL"],
    }
    states = {"missing": None, "plain": -1, "volatile": 500}
    checked = 0
    for cond in (None, "NX", "XX"):
        for exp_name, exp_args in expiries.items():
            for get in (False, True):
                for state, old_ttl in states.items():
                    key = f"combo:{cond}:{exp_name}:{get}:{state}"
                    if old_ttl is not None:
                        rawp.call("SET", key, "old", *(["EX", str(old_ttl)] if old_ttl > 0 else []))
                    args = ["SET", key, "new"] + ([cond] if cond else []) + exp_args
                    args += ["GET"] if get else []
                    reply = rawp.call(*args)

                    exists = old_ttl is not None
                    applies = cond is None or (cond == "NX") != exists
                    if get:
                        expected_reply = b"old" if exists else None
                    else:
                        expected_reply = "OK" if applies else None
                    assert reply == expected_reply, args

                    value = rawp.call("GET", key)
                    ttl = rawp.call("TTL", key)
                    if not applies:
                        assert value == (b"old" if exists else None), args
                        assert ttl == (old_ttl if exists else -2) or \
                            (exists and old_ttl > 0 and old_ttl - 1 <= ttl <= old_ttl), args
                        continue
                    assert value == b"new", args
                    if exp_name is None:
                        assert ttl == -1, args
                    elif exp_name == "KEEPTTL":
                        if old_ttl is None or old_ttl < 0:
                            assert ttl == -1, args
                        else:
                            assert old_ttl - 1 <= ttl <= old_ttl, args
                    else:
                        assert 98 <= ttl <= 100, args
                    checked += 1
    assert checked > 50
