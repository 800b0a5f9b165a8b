"""The memcached door, meta protocol (mg ms md ma mn me) over raw sockets: return flags,
quiet mode, CAS, vivify, recache, invalidation, base64 keys. Expected answers are memcached
1.6.18's (see crates/larder-memcache/SEMANTICS.md)."""

from __future__ import annotations

import base64

import pytest

from test_memcached_support import mc, mc_server, mcd  # noqa: F401  (fixtures)

pytestmark = pytest.mark.larder_only


def flags_of(head: bytes) -> dict[str, str]:
    """The return flags of a meta header line (`HD ...`, `VA <size> ...`), by letter."""
    toks = head.split(b" ")
    toks = toks[2:] if toks[0] == b"VA" else toks[1:]
    return {tok[:1].decode(): tok[1:].decode() for tok in toks if tok}


# --- mg -------------------------------------------------------------------------------------------


def test_mg_hit_flags(mc):
    mc.store("set", "k", "hello", flags=77, exptime=100)
    _, cas = mc.gets("k")
    head, value = mc.meta("mg k s v t c f k Oabc")
    assert value == b"hello"
    assert head.startswith(b"VA 5 ")
    f = flags_of(head)
    assert f["s"] == "5" and f["c"] == str(cas) and f["f"] == "77" and f["k"] == "k"
    assert f["O"] == "abc" and f["t"] in ("100", "99")
    # Flags come back in request order.
    head, _ = mc.meta("mg k f s k")
    assert head == b"HD f77 s5 kk"
    # Without v: HD and no value.
    assert mc.meta("mg k")[0] == b"HD"
    assert mc.meta("mg k t")[0].startswith(b"HD t")


def test_mg_miss_and_quiet(mc):
    assert mc.meta("mg nope v")[0] == b"EN"
    assert mc.meta("mg nope v Oxyz k")[0] == b"EN Oxyz knope"
    # q hides misses; hits are still answered; mn marks the end.
    mc.store("set", "k", "v")
    mc.send("mg nope v q\r\nmg k v q\r\nmg nope2 q k\r\nmn\r\n")
    assert mc.line() == b"VA 1"
    assert mc.data(1) == b"v"
    assert mc.line() == b"MN"


def test_mg_hit_before_and_last_access(mc):
    mc.store("set", "k", "v")
    assert mc.meta("mg k h")[0] == b"HD h0"
    assert mc.meta("mg k h")[0] == b"HD h1"
    assert mc.meta("mg k l")[0] == b"HD l0"
    # u: no bump, so the fetched bit of a fresh item stays unset.
    mc.store("set", "u", "v")
    assert mc.meta("mg u h u")[0] == b"HD h0"
    assert mc.meta("mg u h")[0] == b"HD h0"
    assert mc.meta("mg u h")[0] == b"HD h1"
    # A classic get marks the item fetched too.
    mc.store("set", "g", "v")
    mc.get("g")
    assert mc.meta("mg g h")[0] == b"HD h1"


def test_mg_touch_keeps_cas(mc):
    mc.store("set", "k", "v", exptime=10)
    _, cas = mc.gets("k")
    head, _ = mc.meta("mg k T300 t c")
    f = flags_of(head)
    assert f["t"] in ("300", "299") and f["c"] == str(cas)


def test_mg_vivify_and_win(mc):
    head, value = mc.meta("mg fresh N30 c v t")
    f = flags_of(head)
    assert value == b"" and f["t"] in ("30", "29") and "W" in f and "Z" not in f
    head, _ = mc.meta("mg fresh N30 c v t")
    f = flags_of(head)
    assert "Z" in f and "W" not in f
    # The winner fills it in; the win state is gone with the store.
    assert mc.meta("ms fresh 3 T60", "new")[0] == b"HD"
    head, value = mc.meta("mg fresh N30 v")
    assert value == b"new" and head == b"VA 3"


def test_mg_recache(mc):
    mc.store("set", "k", "v", exptime=50)
    assert b"W" not in mc.meta("mg k R30")[0]
    head = mc.meta("mg k R60")[0]
    assert head.endswith(b" W")
    head = mc.meta("mg k R60")[0]
    assert head.endswith(b" Z")
    # No deadline: never wins by R.
    mc.store("set", "forever", "v")
    assert mc.meta("mg forever R60")[0] == b"HD"


def test_mg_base64_key(mc):
    raw_key = b"\x00\xffbin key"
    b64 = base64.b64encode(raw_key).decode()
    assert mc.meta(f"ms {b64} 2 b", "hi")[0] == b"HD"
    head, value = mc.meta(f"mg {b64} b v k")
    assert value == b"hi"
    assert head == f"VA 2 k{b64} b".encode()
    assert mc.meta("mg !!!! b v")[0] == b"CLIENT_ERROR error decoding key"


def test_mg_flag_errors(mc):
    assert mc.call("mg k !") == b"CLIENT_ERROR invalid flag"
    assert mc.call("mg k v v") == b"CLIENT_ERROR duplicate flag"
    assert mc.call("mg k Tx") == b"CLIENT_ERROR bad token in command line format"
    assert mc.call("mg k O" + "x" * 40) == b"CLIENT_ERROR opaque token too long"
    assert mc.call("mn") == b"MN"


# --- ms -------------------------------------------------------------------------------------------


def test_ms_modes(mc):
    assert mc.meta("ms k 1", "a")[0] == b"HD"
    assert mc.meta("ms k 1 MS F5 T100", "b")[0] == b"HD"
    assert mc.get("k") == {b"k": (5, b"b", None)}
    assert mc.meta("ms k 1 ME", "c")[0] == b"NS"
    assert mc.meta("ms new 1 ME", "c")[0] == b"HD"
    assert mc.meta("ms nope 1 MR", "d")[0] == b"NS"
    assert mc.meta("ms k 1 MR", "d")[0] == b"HD"
    assert mc.meta("ms k 1 MA", ">")[0] == b"HD"
    assert mc.meta("ms k 1 MP", "<")[0] == b"HD"
    assert mc.get_one("k") == b"<d>"
    assert mc.meta("ms nope 1 MA", ">")[0] == b"NS"
    assert mc.call("ms k 1 MZ", "x") == b"CLIENT_ERROR invalid mode for ms M token"


def test_ms_cas_and_return_flags(mc):
    head, _ = mc.meta("ms k 1 c Oop k", "a")
    f = flags_of(head)
    cas = int(f["c"])
    assert head.startswith(b"HD ") and f["O"] == "op" and f["k"] == "k"
    assert mc.meta(f"ms k 1 C{cas + 1} c", "b")[0] == b"EX c0"
    assert mc.meta(f"ms k 1 C{cas}", "b")[0] == b"HD"
    assert mc.meta("ms nope 1 C5", "b")[0] == b"NF"
    # Append with a compare CAS.
    _, cas = mc.gets("k")
    assert mc.meta(f"ms k 1 MA C{cas + 1}", "x")[0] == b"EX"
    assert mc.meta(f"ms k 1 MA C{cas}", "x")[0] == b"HD"
    assert mc.get_one("k") == b"bx"


def test_ms_quiet_and_explicit_cas(mc):
    mc.send(mc.request("ms q1 1 q", "a") + mc.request("ms q2 1 q ME", "b") +
            mc.request("ms q1 1 q ME", "c") + b"mn\r\n")
    assert mc.line() == b"NS"
    assert mc.line() == b"MN"
    assert mc.meta("ms e 1 E987654321 c", "v")[0] == b"HD c987654321"
    assert mc.gets("e")[1] == 987654321


def test_ms_invalidate_with_old_cas_stores_stale(mc):
    mc.store("set", "k", "v1", exptime=100)
    _, old = mc.gets("k")
    mc.store("set", "k", "v2", exptime=100)
    assert mc.meta(f"ms k 2 C{old} I T5", "v3")[0] == b"HD"
    head, value = mc.meta("mg k v t")
    assert value == b"v3"
    f = flags_of(head)
    assert "X" in f and "W" in f and f["t"] in ("100", "99")


def test_ms_too_large_and_bad_chunk(mc):
    big = b"x" * (1024 * 1024 + 1)
    mc.send(mc.request(f"ms k {len(big)}", big) + b"mn\r\n")
    assert mc.line() == b"SERVER_ERROR object too large for cache"
    assert mc.line() == b"MN"
    mc.send(b"ms k 1\r\nabc\r\nmn\r\n")
    assert mc.line() == b"CLIENT_ERROR bad data chunk"


# --- md -------------------------------------------------------------------------------------------


def test_md(mc):
    assert mc.meta("md k")[0] == b"NF"
    assert mc.meta("md k Oop k")[0] == b"NF Oop kk"
    mc.store("set", "k", "v")
    _, cas = mc.gets("k")
    assert mc.meta(f"md k C{cas + 1}")[0] == b"EX"
    assert mc.meta(f"md k C{cas}")[0] == b"HD"
    assert mc.get("k") == {}
    mc.store("set", "q", "v")
    mc.send("md q q\r\nmd q q\r\nmn\r\n")
    assert mc.line() == b"NF"
    assert mc.line() == b"MN"
    assert mc.call("md k !") == b"CLIENT_ERROR invalid or duplicate flag"


def test_md_invalidate_then_one_winner(mc):
    mc.store("set", "k", "v")
    _, cas = mc.gets("k")
    assert mc.meta("md k I T30")[0] == b"HD"
    head, value = mc.meta("mg k s t c v")
    f = flags_of(head)
    assert value == b"v" and f["t"] in ("30", "29") and int(f["c"]) != cas
    assert head.endswith(b" X W")
    head, _ = mc.meta("mg k s t c v")
    assert head.endswith(b" Z X")
    # A fresh store ends it.
    mc.store("set", "k", "new")
    assert mc.meta("mg k v")[0] == b"VA 3"


def test_md_remove_value(mc):
    mc.store("set", "k", "value", flags=4)
    assert mc.meta("md k x")[0] == b"HD"
    assert mc.get("k") == {b"k": (4, b"", None)}


# --- ma -------------------------------------------------------------------------------------------


def test_ma(mc):
    assert mc.meta("ma n")[0] == b"NF"
    mc.store("set", "n", "10")
    assert mc.meta("ma n")[0] == b"HD"
    assert mc.meta("ma n v") == (b"VA 2", b"12")
    assert mc.meta("ma n v D10 MD") == (b"VA 1", b"2")
    assert mc.meta("ma n v MD D5") == (b"VA 1", b"0")
    assert mc.meta("ma n v M+ D18446744073709551615") == (b"VA 20", b"18446744073709551615")
    assert mc.meta("ma n v MI D2") == (b"VA 1", b"1")
    head, value = mc.meta("ma n v c t Oz k")
    f = flags_of(head)
    assert value == b"2" and f["t"] == "-1" and f["O"] == "z" and f["k"] == "n"
    assert int(f["c"]) == mc.gets("n")[1]
    assert mc.call("ma n MX") == b"CLIENT_ERROR invalid mode for ma M token"


def test_ma_vivify_cas_quiet_and_errors(mc):
    assert mc.meta("ma c N0 J42 v") == (b"VA 2", b"42")
    assert mc.meta("ma c N0 J42 v") == (b"VA 2", b"43")
    _, cas = mc.gets("c")
    assert mc.meta(f"ma c C{cas + 1}")[0] == b"EX"
    assert mc.meta(f"ma c C{cas} v") == (b"VA 2", b"44")
    head, _ = mc.meta("ma c N0 T100 t")
    assert flags_of(head)["t"] in ("100", "99")
    # q: successes are silent, VA included; failures are not.
    mc.send("ma c q v\r\nma nope q\r\nmn\r\n")
    assert mc.line() == b"NF"
    assert mc.line() == b"MN"
    mc.store("set", "s", "abc")
    assert mc.call("ma s") == b"CLIENT_ERROR cannot increment or decrement non-numeric value"


# --- me, mn ---------------------------------------------------------------------------------------


def test_me_and_mn(mc):
    assert mc.call("me nope") == b"EN"
    mc.store("set", "k", "hello", exptime=100)
    _, cas = mc.gets("k")
    line = mc.call("me k").decode()
    assert line.startswith("ME k exp=")
    fields = dict(p.split("=") for p in line.split(" ")[2:])
    assert int(fields["exp"]) in (-100, -99) and fields["cas"] == str(cas)
    assert fields["fetch"] == "yes"
    # The slab class and whole item size, as lru_crawler metadump reports them (memcached's
    # ITEM_clsid and ITEM_ntotal; larder's class of the item's footprint).
    mc.send("lru_crawler metadump all\r\n")
    dump = mc.line().decode()  # item lines end in a bare \n, END in \r\n
    assert dump.endswith("\nEND"), dump
    assert f"cls={fields['cls']} size={fields['size']}" in dump, (line, dump)
    assert int(fields["size"]) > len("k") + len("hello")
    assert mc.call("mn") == b"MN"


def test_meta_ttl_agrees_with_resp(mc_server, mc):
    r = mc_server.client(protocol=2)
    assert mc.meta("ms k 1 T120", "v")[0] == b"HD"
    assert 118 <= r.ttl("k") <= 120
    r.expire("k", 40)
    assert flags_of(mc.meta("mg k t")[0])["t"] in ("40", "39")
