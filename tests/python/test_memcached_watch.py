"""The memcached door's `watch`: log lines compared with a real memcached 1.6.18's, the
streams and their defaults, writes from the RESP door and evictions from the change feed, and
a watcher that stops reading while many clients write (it loses lines, counted, and slows
nobody)."""

from __future__ import annotations

import re
import socket
import threading
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


# The requests of one client while another watches; each is answered before the next.
SESSION = [
    ("set w%20a 5 100 3", "abc"),
    ("get w%20a w-nokey", None),
    ("add w%20a 0 0 1", "x"),
    ("delete w%20a", None),
    ("set wn 0 0 1", "1"),
    ("incr wn 5", None),
    ("touch wn 10", None),
    ("mg wn v", None),
    ("ms wm 2 T50", "hi"),
    ("me wn", None),
    ("gat 100 wn", None),
    ("append wn 0 0 1", "2"),
    ("cas wn 0 0 1 999", "x"),
    ("replace w-none 0 0 1", "x"),
    ("set \u00e9k 0 0 1", "x"),
]


def normalized(lines: list[str]) -> list[str]:
    """Lines without what differs between two servers by nature: the time, the client's port
    and file descriptor, gids relative to the first, and the slab class (larder's follows each
    item's footprint, not memcached's allocator)."""
    out = []
    first = None
    for line in lines:
        line = re.sub(r"^ts=\d+\.\d+ ", "", line)
        gid = int(re.match(r"gid=(\d+) ", line).group(1))
        first = gid if first is None else first
        line = re.sub(r"^gid=\d+ ", f"gid=+{gid - first} ", line)
        line = re.sub(r"rport=\d+", "rport=P", line)
        line = re.sub(r"cfd=\d+", "cfd=F", line)
        line = re.sub(r"clsid=\d+", "clsid=C", line)
        out.append(line)
    return out


def cls_of(client, key: str) -> str:
    """The slab class `me` reports for `key` (what the watch lines must name)."""
    m = re.search(rb" cls=(\d+) ", client.call(f"me {key}"))
    assert m, key
    return m.group(1).decode()


def watch_session(port: int) -> list[str]:
    watcher = McText(port)
    assert watcher.call("watch fetchers mutations connevents") == b"OK"
    client = McText(port)
    for line, data in SESSION:
        client.call(line, data)
        if line.startswith(("get", "gat", "mg")):
            client.idle(0.05)
    client.close()
    got = watcher.idle(0.5).decode()
    watcher.close()
    assert got.endswith("\n") and "\r" not in got, got
    return got.splitlines()


def test_lines_match_memcached(real_memcached, mc_server):
    want = normalized(watch_session(real_memcached))
    got = normalized(watch_session(mc_server.mc_port))
    assert got == want
    # The fields larder fills itself: a real timestamp and the client's descriptor.
    line = watch_session(mc_server.mc_port)[1]
    ts = float(re.match(r"ts=(\S+) ", line).group(1))
    assert abs(ts - time.time()) < 60


@pytest.mark.parametrize("port_of", ["memcached", "larder"])
def test_arguments_and_pipelining_as_memcached(port_of, real_memcached, mc_server):
    port = real_memcached if port_of == "memcached" else mc_server.mc_port
    c = McText(port)
    assert c.call("watch bogus") == b"ERROR"
    assert c.call("watch fetchers bogus") == b"ERROR"
    c.send("watch bogus noreply\r\nversion\r\n")
    assert c.line().startswith(b"VERSION ")
    c.send("version\r\nwatch\r\n")
    assert c.line().startswith(b"VERSION ")
    assert c.line() == b"ERROR cannot pipeline other commands before watch"
    # With no argument: fetchers only. What the watcher sends afterwards is not answered.
    assert c.call("watch") == b"OK"
    other = McText(port)
    other.call("set wk 0 0 1", "v")
    other.call("get wk")
    other.idle(0.05)
    c.send("version\r\nget wk\r\n")
    lines = c.idle(0.4).decode().splitlines()
    assert [re.sub(r"^ts=\S+ gid=\d+ ", "", l).split(" clsid")[0] for l in lines] == [
        "type=item_get key=wk status=not_found",
        "type=item_get key=wk status=found",
    ]
    other.close()
    c.close()


def test_resp_writes_and_evictions_come_from_the_feed(start_server):
    srv = start_with_door(start_server, "--maxmemory", "3mb",
                          "--maxmemory-policy", "allkeys-lru")
    w = McText(srv.mc_port)
    assert w.call("watch mutations evictions") == b"OK"
    r = srv.client()
    r.set("rk", "hello", ex=30)
    r.incr("counter")
    text = b""
    deadline = time.time() + 5
    while text.count(b"\n") < 2 and time.time() < deadline:
        text += w.idle(0.1)
    lines = [re.sub(r"^ts=\S+ gid=\d+ ", "", l) for l in text.decode().splitlines()]
    client = McText(srv.mc_port)
    rk, counter = cls_of(client, "rk"), cls_of(client, "counter")
    assert int(rk) >= 1 and int(counter) >= 1
    assert lines[:2] == [
        f"type=item_store key=rk status=stored cmd=set ttl=30 clsid={rk} cfd=-1 size=5",
        f"type=item_store key=counter status=stored cmd=set ttl=0 clsid={counter} cfd=-1 size=1",
    ]
    # Fill past maxmemory through the memcached door: evictions are logged.
    value = "x" * 4000
    for i in range(2000):
        client.send(f"set fill{i} 0 0 {len(value)} noreply\r\n{value}\r\n")
    assert client.call("version").startswith(b"VERSION")
    text = w.idle(0.5).decode()
    # LRU sampling may pick rk or counter (the oldest keys) first: look at the fill keys'.
    evictions = [l for l in text.splitlines() if "type=eviction key=fill" in l]
    assert evictions, text[-2000:]
    # Every fill item has the same size, so the same class as the last one stored.
    fill = cls_of(client, "fill1999")
    assert re.search(rf"type=eviction key=fill\d+ fetch=no ttl=-1 la=\d+ clsid={fill} "
                     rf"size=\d+$", evictions[0]), evictions[0]
    stats = client.stats()
    assert int(stats["log_watcher_sent"]) > 0 and stats["log_watchers"] == "1"
    w.close()
    client.close()


def test_slow_watcher_loses_lines_and_slows_nobody(mc_server):
    port = mc_server.mc_port
    w = McText(port)
    w.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    assert w.call("watch fetchers mutations") == b"OK"
    # The watcher reads nothing from now on, while 50 clients write at full speed.
    per_client = 1000
    pad = "p" * 100
    done = []
    errors = []

    def writer(n: int) -> None:
        try:
            c = McText(port)
            batch = "".join(f"set slow{n}-{i}-{pad} 0 0 10 noreply\r\n0123456789\r\n"
                            for i in range(per_client))
            c.send(batch)
            assert c.call("version").startswith(b"VERSION")
            c.close()
            done.append(n)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    start = time.time()
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    elapsed = time.time() - start
    assert not errors and len(done) == 50, errors
    assert elapsed < 20
    probe = McText(port)
    stats = probe.stats()
    skipped = int(stats["log_watcher_skipped"])
    assert skipped > 0, stats
    assert int(stats["log_watcher_sent"]) > 0
    # The watcher's pending output stays within memcached's watcher buffer (plus one
    # line): the server holds no backlog for it.
    with mc_server.admin() as conn:
        clients = conn.call("CLIENT", "LIST")
        if isinstance(clients, bytes):
            clients = clients.decode()
    watchers = [l for l in clients.splitlines() if "lib-name=memcached-text" in l]
    assert watchers, clients
    for l in watchers:
        omem = int(re.search(r" omem=(\d+)", l).group(1))
        assert omem <= 256 * 1024 + 64 * 1024, l
    # Reading again: after the gap (wherever the watcher's buffers let it fall), the next
    # line that fit was preceded by the count of lines skipped.
    text = w.idle(0.3).decode()
    assert probe.get_one(f"slow0-0-{pad}") == b"0123456789"
    text += w.idle(0.3).decode()
    counts = [int(n) for n in re.findall(r"^skipped=(\d+)$", text, re.M)]
    assert counts and 0 < sum(counts) <= int(probe.stats()["log_watcher_skipped"])
    cls = cls_of(probe, f"slow0-0-{pad}")
    assert re.search(rf"type=item_get key=slow0-0-p{{100}} status=found clsid={cls} cfd=\d+ "
                     r"size=10$", text.rstrip()), text[-300:]
    probe.close()
    w.close()
