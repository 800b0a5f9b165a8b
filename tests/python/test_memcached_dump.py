"""Slab classes and the LRU crawler on the memcached door: `stats slabs/items/sizes/settings`,
`lru_crawler metadump/mgdump/crawl` and the crawler's settings, compared with a real
memcached 1.6.18 where it answers the same thing; `memcached-tool` (Debian's) display, stats,
settings and dump against larder, the dump re-loaded into a fresh memcached and compared
item by item; a dump that streams while its client reads slowly and others are served.
The door is larder's own: the module is `larder_only`.
"""
from __future__ import annotations

import re
import socket
import subprocess
import time
from typing import Iterator

import pytest

from conftest import Server, ServerFactory
from test_memcached_support import McText, start_memcached, start_with_door

pytestmark = pytest.mark.larder_only

TOOL = "/usr/share/memcached/scripts/memcached-tool"


@pytest.fixture
def real() -> Iterator[int]:
    """A fresh memcached 1.6.18 for one test."""
    proc, port = start_memcached()
    yield port
    proc.terminate()
    proc.wait(5)


@pytest.fixture(scope="module")
def door(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    factory = ServerFactory(target, tmp_path_factory.mktemp("mc-dump"))
    srv = start_with_door(factory, "--threads", "2", "--enable-debug-command", "yes")
    yield srv
    factory.shutdown_all()


@pytest.fixture
def ours(door: Server) -> Iterator[int]:
    with door.admin() as conn:
        assert conn.call("FLUSHALL") == "OK"
    yield door.mc_port
    door.close_clients()
    assert door.alive(), door.log_tail()


def load_sample(port: int) -> None:
    c = McText(port)
    assert c.call("set a 5 0 3", "abc") == b"STORED"
    assert c.call("set b 0 100 2000", "x" * 2000) == b"STORED"
    assert c.call("set c%20d 1 0 1", "z") == b"STORED"
    c.send("get a\r\n")
    assert c.line().startswith(b"VALUE") and c.data(3) and c.line() == b"END"
    c.close()


def read_dump(c: McText) -> list[bytes]:
    """A dump's lines (metadump's end in `\\n` alone), through its `END` or `EN`."""
    end = re.compile(rb"(?:^|\n)(END|EN)\r\n")
    start = 0
    while True:
        m = end.search(c.buf, max(0, start - 6))
        if m:
            body, last = bytes(c.buf[:m.start(1)]), m.group(1)
            del c.buf[:m.end()]
            return [l.rstrip(b"\r") for l in body.split(b"\n") if l] + [last]
        start = len(c.buf)
        c._fill()


def dump(port: int, cmd: str = "lru_crawler metadump all") -> list[bytes]:
    c = McText(port)
    c.send(cmd + "\r\n")
    lines = read_dump(c)
    c.close()
    return lines


def fields(line: bytes) -> dict[str, str]:
    return dict(f.split("=", 1) for f in line.decode().split(" "))


def test_crawler_commands_answer_as_memcached(ours, real):
    script = [
        "lru_crawler", "lru_crawler metadump", "lru_crawler metadump all x",
        "lru_crawler foo", "lru_crawler foo bar", "lru_crawler metadump 0",
        "lru_crawler metadump 64", "lru_crawler metadump x", "lru_crawler metadump -1",
        "lru_crawler metadump 1,x", "lru_crawler metadump 63", "lru_crawler metadump 1,,2",
        "lru_crawler crawl 0", "lru_crawler crawl hash", "lru_crawler sleep x",
        "lru_crawler sleep 2000000", "lru_crawler sleep 1000000", "lru_crawler tocrawl x",
        "lru_crawler tocrawl -1", "lru_crawler tocrawl +5", "lru_crawler tocrawl 4294967296",
        "lru_crawler enable", "lru_crawler disable", "lru_crawler disable",
        "lru_crawler metadump all", "lru_crawler crawl all", "lru_crawler enable",
        "lru_crawler mgdump", "stats sizes",
    ]
    for port in (ours, real):
        c = McText(port)
        answers = []
        for cmd in script:
            c.send(cmd + "\r\n")
            answers.append(c.idle(0.03))
        c.close()
        if port == ours:
            mine = answers
    # larder's crawl is one pass over every item without pauses: it refuses the settings
    # that would change that (memcached answers OK).
    refused = {
        "lru_crawler sleep 1000000": b"CLIENT_ERROR sleep not supported: larder's crawl makes "
                                     b"one pass without pauses (sleep 0)\r\n",
        "lru_crawler tocrawl +5": b"CLIENT_ERROR tocrawl not supported: larder's crawl checks "
                                  b"every item (tocrawl 0)\r\n",
    }
    theirs = dict(zip(script, answers))
    assert {k: theirs[k] for k in refused} == {k: b"OK\r\n" for k in refused}
    theirs.update(refused)
    assert dict(zip(script, mine)) == theirs


def test_metadump_lines_match_memcached(ours, real):
    for port in (ours, real):
        load_sample(port)
    mine = dump(ours)
    # memcached's crawler can miss an item its LRU maintainer moves meanwhile: ask again.
    for _ in range(20):
        theirs = dump(real)
        if len(theirs) == 4:
            break
        time.sleep(0.05)
    assert mine[-1] == theirs[-1] == b"END"
    m = {fields(l)["key"]: fields(l) for l in mine[:-1]}
    t = {fields(l)["key"]: fields(l) for l in theirs[:-1]}
    assert m.keys() == t.keys() == {"a", "b", "c%2520d"}
    for k in m:
        assert list(m[k]) == list(t[k]) == ["key", "exp", "la", "cas", "fetch", "cls", "size"]
        assert abs(int(m[k]["exp"]) - int(t[k]["exp"])) <= 1, k
        assert abs(int(m[k]["la"]) - int(t[k]["la"])) <= 1, k
        assert (m[k]["fetch"], m[k]["cls"]) == (t[k]["fetch"], t[k]["cls"]), k
    # Class filters keep only the classes named.
    assert [fields(l)["key"] for l in dump(ours, "lru_crawler metadump 15")[:-1]] == ["b"]
    mg = dump(ours, "lru_crawler mgdump all")
    assert sorted(mg[:-1]) == [b"mg a", b"mg b", b"mg c%20d"] and mg[-1] == b"EN"


def stat_lines(port: int, group: str) -> list[tuple[str, str]]:
    c = McText(port)
    c.send(f"stats {group}\r\n")
    out = []
    while (line := c.line()) != b"END":
        _, name, value = line.decode().split(" ", 2)
        out.append((name, value))
    c.close()
    return out


def test_slab_and_item_stats_have_memcached_s_fields(ours, real):
    for port in (ours, real):
        load_sample(port)
    for group in ("slabs", "items"):
        mine, theirs = stat_lines(ours, group), stat_lines(real, group)
        assert [n for n, _ in mine] == [n for n, _ in theirs], group
    slabs = dict(stat_lines(ours, "slabs"))
    assert (slabs["1:chunk_size"], slabs["1:used_chunks"], slabs["15:used_chunks"]) == (
        "96", "2", "1")
    assert slabs["active_slabs"] == "2"
    items = dict(stat_lines(ours, "items"))
    assert (items["items:1:number"], items["items:15:number"]) == ("2", "1")
    settings_mine = [n for n, _ in stat_lines(ours, "settings")]
    settings_theirs = [n for n, _ in stat_lines(real, "settings")]
    assert settings_mine == settings_theirs
    s = dict(stat_lines(ours, "settings"))
    assert int(s["maxbytes"]) > 0 and s["lru_crawler"] == "yes"
    assert s["item_size_max"] == "1048576" and s["slab_chunk_max"] == "524288"


def test_crawl_reclaims_expired_items(ours, door):
    c = McText(ours)
    with door.admin() as admin:
        assert admin.call("DEBUG", "SET-ACTIVE-EXPIRE", "0") == "OK"
    try:
        for i in range(50):
            assert c.call(f"set k{i} 0 {1 if i < 20 else 0} 1", "v") == b"STORED"
        before = c.stats()
        time.sleep(1.1)
        assert c.call("lru_crawler crawl all") == b"OK"
        after = c.stats()
    finally:
        with door.admin() as admin:
            admin.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    assert int(after["crawler_reclaimed"]) - int(before["crawler_reclaimed"]) == 20
    assert int(after["crawler_items_checked"]) - int(before["crawler_items_checked"]) == 50
    assert int(after["lru_crawler_starts"]) == int(before["lru_crawler_starts"]) + 1
    assert c.stats("items")["items:1:crawler_reclaimed"] == "20"
    c.close()


def run_tool(port: int, mode: str) -> str:
    return subprocess.run(["perl", TOOL, f"127.0.0.1:{port}", mode], capture_output=True,
                          timeout=30, check=True).stdout.decode("latin-1")


ODD_KEYS = ["plain", "with%percent", "colon:key/slash", "caf\u00e9", "tilde~dash-._",
            "x" * 250]


def test_memcached_tool_dump_reloads_into_memcached(ours, real):
    c = McText(ours)
    expected = {}
    for i, key in enumerate(ODD_KEYS + [f"n{i}" for i in range(200)]):
        value = bytes((i * 7 + j) % 256 for j in range(i % 300)) + b"\r\nend"
        ttl = 0 if i % 3 else 1000 + i
        flags = i * 13
        kb = key.encode()
        c.send(b"set %s %d %d %d\r\n%s\r\n" % (kb, flags, ttl, len(value), value))
        assert c.line() == b"STORED"
        expected[kb] = (flags, value, ttl)
    out = subprocess.run(["perl", TOOL, f"127.0.0.1:{ours}", "dump"], capture_output=True,
                         timeout=30, check=True).stdout
    assert out.count(b"add ") >= len(expected)
    r = McText(real)
    r.send(out)
    for _ in expected:
        assert r.line() == b"STORED"
    for key, (flags, value, ttl) in expected.items():
        theirs = r.meta(f"mg {key.decode()} f t v")
        mine = c.meta(f"mg {key.decode()} f t v")
        assert theirs[1] == mine[1] == value, key
        tf, mf = theirs[0].split(b" "), mine[0].split(b" ")
        assert tf[2] == mf[2] == b"f%d" % flags, key
        t_ttl, m_ttl = int(tf[3][1:]), int(mf[3][1:])
        if ttl == 0:
            assert t_ttl == m_ttl == -1, key
        else:
            assert abs(t_ttl - m_ttl) <= 2 and abs(m_ttl - ttl) <= 2, key
    c.close()
    r.close()


def test_memcached_tool_views(ours):
    load_sample(ours)
    display = run_tool(ours, "display").splitlines()
    assert display[0].split()[:3] == ["#", "Item_Size", "Max_age"]
    rows = {int(l.split()[0]): l.split() for l in display[1:]}
    assert rows.keys() == {1, 15}
    assert (rows[1][1], rows[1][4]) == ("96B", "2") and (rows[15][1], rows[15][4]) == ("2.3K", "1")
    stats = run_tool(ours, "stats")
    assert "curr_items" in stats and "crawler_items_checked" in stats
    settings = run_tool(ours, "settings")
    assert "lru_crawler" in settings and "item_size_max" in settings


def test_dump_comes_before_pipelined_answers(ours):
    load_sample(ours)
    c = McText(ours)
    c.send("lru_crawler metadump all\r\nget a\r\nmn\r\n")
    lines = read_dump(c)
    assert [l[:4] for l in lines[:3]] == [b"key="] * 3 and lines[3:] == [b"END"]
    assert [c.line() for _ in range(4)] == [b"VALUE a 5 3", b"abc", b"END", b"MN"]
    c.close()


def test_slow_dump_reader_neither_stalls_others_nor_is_buffered_whole(ours, door):
    # 60,000 items with long keys: a dump of about 17 MB, more than the socket buffers hold.
    n = 60_000
    key = "k" * 190 + ":%06d"
    c = McText(ours)
    batch = b"".join(b"set %s 0 0 1 noreply\r\nv\r\n" % (key % i).encode() for i in range(n))
    c.send(batch + b"mn\r\n")
    assert c.line() == b"MN"
    slow = McText.__new__(McText)
    slow.sock = socket.socket()
    slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.sock.settimeout(5.0)
    slow.sock.connect(("127.0.0.1", ours))
    slow.buf = bytearray()
    slow.send("lru_crawler metadump all\r\n")
    time.sleep(0.2)
    # Others are served while the dump waits for its reader, and a second dump is refused.
    worst = 0.0
    for i in range(200):
        t = time.perf_counter()
        assert c.call(f"mg {key % i}") == b"HD"
        worst = max(worst, time.perf_counter() - t)
    assert worst < 0.1, worst
    assert c.call("lru_crawler metadump all") == b"BUSY currently processing crawler request"
    # Not the whole dump in the server's output buffer: the high-water mark and a turn's batch.
    with door.admin() as admin:
        listing = admin.call("CLIENT", "LIST")
    if isinstance(listing, bytes):
        listing = listing.decode()
    omem = max(int(f.split("=")[1]) for line in listing.splitlines()
               for f in line.split() if f.startswith("omem="))
    assert omem < 8 << 20, omem
    assert len(read_dump(slow)) == n + 1
    slow.close()
    # A client that leaves mid-dump frees the crawler.
    gone = McText(ours)
    gone.send("lru_crawler metadump all\r\n")
    gone._fill()
    gone.close()
    deadline = time.time() + 5
    while time.time() < deadline:
        if c.call("lru_crawler crawl all") == b"OK":
            break
        time.sleep(0.02)
    else:
        pytest.fail("crawler still busy after its client left")
    c.close()
