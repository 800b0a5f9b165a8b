"""The memcached door's run-time limits: `cache_memlimit` (maxmemory, evicting at once),
`slabs automove|reassign` and `lru tune|mode|temp_ttl`, compared reply for reply with a real
memcached 1.6.18 except where larder documents a difference: it has no slab pages and no
segmented or temporary LRU, so it refuses the settings that would ask for them with a
`CLIENT_ERROR` that says why (memcached answers OK), and shows them off in `stats
settings`."""

from __future__ import annotations

import time

import pytest

from test_memcached_support import (  # noqa: F401  (fixtures)
    McText,
    mc,
    mc_server,
    mcd,
    real_memcached,
    start_with_door,
)

pytestmark = pytest.mark.larder_only

# Each request and whether an answer is expected (noreply ones are followed by a `version`
# on the same connection, whose answer shows that nothing else came first).
REQUESTS = [
    "cache_memlimit", "cache_memlimit abc", "cache_memlimit -5", "cache_memlimit 7",
    "cache_memlimit 2000000000", "cache_memlimit 64", "cache_memlimit 64 noreply",
    "cache_memlimit 5 noreply", "cache_memlimit 1 2 3",
    "slabs", "slabs automove", "slabs automove 0", "slabs automove 2", "slabs automove 3",
    "slabs automove x", "slabs automove -1", "slabs automove 1 noreply",
    "slabs automove ratio", "slabs automove ratio 0.5", "slabs automove ratio x",
    "slabs automove ratio x noreply", "slabs reassign x 2", "slabs reassign 1",
    "slabs bogus",
    "lru", "lru bogus", "lru tune 10 20 0.1 2", "lru tune 50 40 0.1 2", "lru tune 10 20 0 2",
    "lru tune 10 20 x 2", "lru tune 10 20 0.1", "lru mode flat", "lru mode segmented",
    "lru mode other", "lru mode", "lru temp_ttl 30", "lru temp_ttl -1", "lru temp_ttl x",
    "lru temp_ttl 30 noreply",
]

SETTINGS = ["slab_automove", "slab_automove_ratio", "lru_segmented", "hot_lru_pct",
            "warm_lru_pct", "hot_max_factor", "warm_max_factor", "temp_lru", "temporary_ttl"]


def answers(port: int) -> list[tuple[str, bytes]]:
    c = McText(port)
    out = []
    for req in REQUESTS:
        c.send(req + "\r\nversion\r\n")
        first = c.line()
        if not first.startswith(b"VERSION"):
            assert c.line().startswith(b"VERSION")
        else:
            first = b"(nothing)"
        out.append((req, first))
    c.close()
    return out


NO_SLABS = b"not supported: larder has no slab pages"
NO_LRU = b"not supported: larder has no segmented LRU (it evicts by maxmemory-policy)"
# What larder refuses where memcached answers OK (or nothing, with noreply: an error is
# sent whatever noreply says, as memcached sends its errors).
REFUSED = {
    "slabs automove 2": b"CLIENT_ERROR slab automove " + NO_SLABS,
    "slabs automove 1 noreply": b"CLIENT_ERROR slab automove " + NO_SLABS,
    "slabs automove ratio 0.5": b"CLIENT_ERROR slab automove " + NO_SLABS,
    "lru tune 10 20 0.1 2": b"CLIENT_ERROR lru tuning " + NO_LRU,
    "lru mode segmented": b"CLIENT_ERROR lru mode segmented " + NO_LRU,
    "lru temp_ttl 30": b"CLIENT_ERROR temporary LRU " + NO_LRU,
    "lru temp_ttl 30 noreply": b"CLIENT_ERROR temporary LRU " + NO_LRU,
}


def test_replies_match_memcached(real_memcached, mc_server):
    ref = McText(real_memcached)
    # memcached's settings as it starts: larder refuses every request below that would
    # change them.
    theirs = ref.stats("settings")
    want = dict(answers(real_memcached))
    got = dict(answers(mc_server.mc_port))
    assert {r: want[r] for r in REFUSED} == {
        r: b"(nothing)" if r.endswith("noreply") else b"OK" for r in REFUSED}
    want.update(REFUSED)
    assert got == want
    c = McText(mc_server.mc_port)
    assert c.call("slabs reassign 1 2") == b"CLIENT_ERROR slab reassignment " + NO_SLABS
    mine = c.stats("settings")
    # Automove and the segmented LRU are off in larder (memcached starts with them on).
    assert (mine["slab_automove"], mine["lru_segmented"]) == ("0", "no")
    same = [k for k in SETTINGS if k not in ("slab_automove", "lru_segmented")]
    assert {k: mine[k] for k in same} == {k: theirs[k] for k in same}
    c.close()
    ref.close()


def test_cache_memlimit_shrinks_and_evicts(start_server):
    srv = start_with_door(start_server, "--maxmemory-policy", "allkeys-lru")
    c = McText(srv.mc_port)
    value = "v" * 10000
    for i in range(2000):
        c.send(f"set big{i} 0 0 {len(value)} noreply\r\n{value}\r\n")
    assert c.call("version").startswith(b"VERSION")
    before = c.stats()
    assert int(before["curr_items"]) == 2000 and before["evictions"] == "0"
    assert c.call("cache_memlimit 8") == b"OK"
    after = c.stats()
    assert after["limit_maxbytes"] == str(8 << 20)
    assert c.stats("settings")["maxbytes"] == str(8 << 20)
    assert int(after["evictions"]) > 0
    assert int(after["curr_items"]) == 2000 - int(after["evictions"])
    with srv.admin() as conn:
        info = conn.call("INFO", "memory")
        info = info.decode() if isinstance(info, bytes) else info
        used = int(info.split("used_memory:")[1].split()[0])
        assert conn.call("CONFIG", "GET", "maxmemory")[1] in (b"8388608", "8388608")
    # The items left fit; the allocator's count, which also holds what was allocated after
    # the eviction pass (this connection, the log's pending records), is near the limit,
    # far below the 20 MB stored before.
    assert 0 < int(after["bytes"]) <= 8 << 20
    assert used <= (8 << 20) + (1 << 20)
    c.close()


def test_cache_memlimit_under_noeviction_refuses_stores(start_server):
    srv = start_with_door(start_server)
    c = McText(srv.mc_port)
    value = "v" * 10000
    for i in range(1000):
        c.send(f"set big{i} 0 0 {len(value)} noreply\r\n{value}\r\n")
    assert c.call("version").startswith(b"VERSION")
    assert c.call("cache_memlimit 8") == b"OK"
    assert c.stats()["curr_items"] == "1000"
    assert c.call("set more 0 0 1", "x") == b"SERVER_ERROR out of memory storing object"
    c.close()


def debug_marker_logged(srv, conn, marker: str, wait: float = 2.0) -> bool:
    conn.call("EVAL", f"redis.log(redis.LOG_DEBUG, '{marker}')", "0")
    deadline = time.time() + wait
    while time.time() < deadline:
        if marker in srv.log_text():
            return True
        time.sleep(0.05)
    return False


def test_verbosity_and_config_set_loglevel_change_what_is_logged(start_server):
    srv = start_with_door(start_server)
    c = McText(srv.mc_port)
    with srv.admin() as conn:
        assert not debug_marker_logged(srv, conn, "marker-before", 0.5)
        assert c.call("verbosity 2") == b"OK"
        assert c.stats("settings")["verbosity"] == "2"
        assert conn.call("CONFIG", "GET", "loglevel")[1] in (b"debug", "debug")
        assert debug_marker_logged(srv, conn, "marker-debug")
        assert c.call("verbosity 0") == b"OK"
        assert not debug_marker_logged(srv, conn, "marker-quiet", 0.5)
        assert conn.call("CONFIG", "SET", "loglevel", "debug") in (b"OK", "OK")
        assert debug_marker_logged(srv, conn, "marker-config")
    c.close()
