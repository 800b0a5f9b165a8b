"""Pub/sub: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH, PUBSUB introspection,
SSUBSCRIBE SUNSUBSCRIBE SPUBLISH, subscribed mode in RESP2 and push frames in RESP3, keyspace
notifications (`notify-keyspace-events`, expired events), and per-client output limits
(`client-output-buffer-limit`) that disconnect a subscriber that does not read.
"""

import socket
import time

import pytest

from conftest import Err, Push, RawConn, Simple, wait_until


def b(*items):
    """A frame's expected items: str -> bytes, ints unchanged."""
    return [i.encode() if isinstance(i, str) else i for i in items]


def read_push(conn: RawConn, protocol: int):
    """One pub/sub frame: a `>` push in RESP3, a `*` array in RESP2."""
    frame = conn.read_frame()
    assert frame.kind == (">" if protocol == 3 else "*"), frame
    return list(frame.py())


def get_messages(ps, n, timeout=5.0):
    """`n` messages (not confirmations) from a redis-py PubSub, within `timeout`."""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        m = ps.get_message(timeout=0.5)
        if m is not None and m["type"] in ("message", "pmessage", "smessage"):
            out.append(m)
    return out


def config_value(client, name):
    """CONFIG GET's one value as bytes (redis-py decodes CONFIG GET replies)."""
    reply = client.execute_command("CONFIG", "GET", name)
    if isinstance(reply, dict):
        (value,) = reply.values()
    else:
        value = reply[1]
    return value.encode() if isinstance(value, str) else value


def numsub(client, *channels):
    flat = client.execute_command("PUBSUB", "NUMSUB", *channels)
    return {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}


def client_names(client):
    if isinstance(client, RawConn):
        text = client.call("CLIENT", "LIST")
    else:
        text = client.execute_command("CLIENT", "LIST")
    if isinstance(text, bytes):
        text = text.decode()
    names = []
    for line in text.splitlines():
        for field in line.split(" "):
            if field.startswith("name="):
                names.append(field[5:])
    return names


# --- SUBSCRIBE / PUBLISH / UNSUBSCRIBE ----------------------------------------------------------


def test_subscribe_confirmations_publish_and_unsubscribe(server, rawp, protocol):
    pub = server.raw()
    rawp.send_command("SUBSCRIBE", "a", "b", "a")
    assert read_push(rawp, protocol) == b("subscribe", "a", 1)
    assert read_push(rawp, protocol) == b("subscribe", "b", 2)
    assert read_push(rawp, protocol) == b("subscribe", "a", 2)  # already subscribed: count stays

    assert pub.call("PUBLISH", "a", "hello") == 1
    assert read_push(rawp, protocol) == b("message", "a", "hello")
    assert pub.call("PUBLISH", "b", "") == 1
    assert read_push(rawp, protocol) == b("message", "b", "")
    assert pub.call("PUBLISH", "nobody", "x") == 0

    rawp.send_command("UNSUBSCRIBE", "a")
    assert read_push(rawp, protocol) == b("unsubscribe", "a", 1)
    assert pub.call("PUBLISH", "a", "gone") == 0
    rawp.send_command("UNSUBSCRIBE", "b", "never")
    assert read_push(rawp, protocol) == b("unsubscribe", "b", 0)
    assert read_push(rawp, protocol) == b("unsubscribe", "never", 0)
    # Out of subscribed mode: an ordinary command works again in either protocol.
    assert rawp.call("SET", "k", "v") == Simple("OK")
    assert rawp.call("GET", "k") == b"v"


def test_publish_counts_every_subscriber_and_pattern(server, r):
    subs = [server.raw() for _ in range(3)]
    for i, s in enumerate(subs):
        s.send_command("SUBSCRIBE", "ch")
        assert s.read_reply() == b("subscribe", "ch", 1)
    psub = server.raw()
    psub.send_command("PSUBSCRIBE", "c*", "*h")
    assert psub.read_reply() == b("psubscribe", "c*", 1)
    assert psub.read_reply() == b("psubscribe", "*h", 2)
    # Three channel subscribers plus two matching patterns of one client: five deliveries.
    assert r.publish("ch", "m") == 5
    for s in subs:
        assert s.read_reply() == b("message", "ch", "m")
    got = [psub.read_reply(), psub.read_reply()]
    assert sorted(got) == sorted([b("pmessage", "c*", "ch", "m"), b("pmessage", "*h", "ch", "m")])
    assert r.publish("cx", "m") == 1
    assert psub.read_reply() == b("pmessage", "c*", "cx", "m")


def test_unsubscribe_all_without_arguments(server, rawp, protocol):
    rawp.send_command("SUBSCRIBE", "x", "y", "z")
    for i in range(3):
        read_push(rawp, protocol)
    rawp.send_command("UNSUBSCRIBE")
    frames = [read_push(rawp, protocol) for _ in range(3)]
    assert all(f[0] == b"unsubscribe" for f in frames)
    assert sorted(f[1] for f in frames) == [b"x", b"y", b"z"]
    assert [f[2] for f in frames] == [2, 1, 0]

    rawp.send_command("PSUBSCRIBE", "p1", "p2")
    read_push(rawp, protocol)
    read_push(rawp, protocol)
    rawp.send_command("PUNSUBSCRIBE")
    frames = [read_push(rawp, protocol) for _ in range(2)]
    assert sorted(f[1] for f in frames) == [b"p1", b"p2"]
    assert [f[2] for f in frames] == [1, 0]
    # Nothing left to unsubscribe from: one frame with a null channel and count 0.
    rawp.send_command("UNSUBSCRIBE")
    assert read_push(rawp, protocol) == [b"unsubscribe", None, 0]
    rawp.send_command("PUNSUBSCRIBE")
    assert read_push(rawp, protocol) == [b"punsubscribe", None, 0]
    assert rawp.call("PING") == Simple("PONG")


def test_redis_py_pubsub(r):
    ps = r.pubsub()
    ps.subscribe("news")
    m = ps.get_message(timeout=2)
    assert m["type"] == "subscribe" and m["channel"] == b"news" and m["data"] == 1
    assert r.publish("news", "one") == 1
    assert r.publish("news", "two") == 1
    got = get_messages(ps, 2)
    assert [(m["channel"], m["data"]) for m in got] == [(b"news", b"one"), (b"news", b"two")]
    ps.unsubscribe("news")
    m = ps.get_message(timeout=2)
    assert m["type"] == "unsubscribe" and m["data"] == 0
    ps.close()


# --- PSUBSCRIBE glob patterns -------------------------------------------------------------------


def test_psubscribe_glob_patterns(server, r, protocol):
    sub = server.raw()
    if protocol == 3:
        sub.hello3()
    patterns = ["news.*", "h?llo", "h[a-c]llo", "lit\\*"]
    sub.send_command("PSUBSCRIBE", *patterns)
    for i, p in enumerate(patterns, 1):
        assert read_push(sub, protocol) == b("psubscribe", p, i)

    cases = [
        ("news.sport", ["news.*"]),
        ("news.", ["news.*"]),
        ("news", []),
        ("hello", ["h?llo"]),
        ("hallo", ["h?llo", "h[a-c]llo"]),
        ("hcllo", ["h?llo", "h[a-c]llo"]),
        ("hdllo", ["h?llo"]),
        ("hllo", []),
        ("heello", []),
        ("lit*", ["lit\\*"]),
        ("litx", []),
        ("lit", []),
    ]
    for channel, matching in cases:
        assert r.publish(channel, "d") == len(matching), channel
        got = sorted(read_push(sub, protocol) for _ in matching)
        assert got == sorted(b("pmessage", p, channel, "d") for p in matching), channel
    # Nothing else was delivered.
    assert sub.read_until_idle(idle=0.2, total=0.5) == b""

    sub.send_command("PUNSUBSCRIBE", "h?llo")
    assert read_push(sub, protocol) == b("punsubscribe", "h?llo", 3)
    assert r.publish("hello", "d") == 0
    assert r.execute_command("PUBSUB", "NUMPAT") == 3


def test_redis_py_pattern_messages(r):
    ps = r.pubsub()
    ps.psubscribe("ev.[0-9]")
    assert ps.get_message(timeout=2)["type"] == "psubscribe"
    assert r.publish("ev.7", "x") == 1
    assert r.publish("ev.a", "y") == 0
    (m,) = get_messages(ps, 1)
    assert m["type"] == "pmessage"
    assert (m["pattern"], m["channel"], m["data"]) == (b"ev.[0-9]", b"ev.7", b"x")
    ps.close()


# --- ordering across worker threads -------------------------------------------------------------


def test_messages_from_another_connection_arrive_in_order(start_server):
    srv = start_server("--threads", "2")
    sub = srv.client(protocol=2)
    pub = srv.client(protocol=2)
    ps = sub.pubsub()
    ps.subscribe("seq")
    assert ps.get_message(timeout=2)["type"] == "subscribe"
    n = 1000
    pipe = pub.pipeline(transaction=False)
    for i in range(n):
        pipe.publish("seq", str(i))
    assert pipe.execute() == [1] * n
    got = get_messages(ps, n, timeout=10)
    assert [m["data"] for m in got] == [str(i).encode() for i in range(n)]
    ps.close()


def test_order_with_several_publishers_per_publisher(start_server):
    """Each publisher's messages keep their order, whatever worker each connection is on."""
    srv = start_server("--threads", "2")
    sub = srv.raw()
    sub.send_command("SUBSCRIBE", "seq")
    assert sub.read_reply() == b("subscribe", "seq", 1)
    pubs = [srv.raw() for _ in range(3)]
    n = 300
    for p_i, p in enumerate(pubs):
        p.send(b"".join(RawConn.encode("PUBLISH", "seq", f"{p_i}:{i}") for i in range(n)))
    for p in pubs:
        assert [p.read_reply() for _ in range(n)] == [1] * n
    seen = {p_i: [] for p_i in range(len(pubs))}
    for _ in range(n * len(pubs)):
        kind, ch, data = sub.read_reply()
        p_i, i = data.decode().split(":")
        seen[int(p_i)].append(int(i))
    assert all(v == list(range(n)) for v in seen.values())


def test_a_message_comes_before_the_reply_to_a_later_request(start_server):
    """A message published before the subscriber sends its next request reaches it before
    that request's reply, as on a single-threaded Redis, also when another worker thread
    serves the publisher (connections are dealt round-robin: with two workers, these two
    are on different threads)."""
    srv = start_server("--threads", "2")
    sub = srv.raw()
    sub.send_command("SUBSCRIBE", "ch")
    assert sub.read_reply() == b("subscribe", "ch", 1)
    pub = srv.raw()
    for i in range(3000):
        assert pub.call("PUBLISH", "ch", str(i)) == 1
        sub.send_command("PING")
        assert sub.read_reply() == b("message", "ch", str(i)), i
        assert sub.read_reply() == b("pong", ""), i


# --- subscribed mode (RESP2) and push frames (RESP3) --------------------------------------------


def test_resp2_subscribed_mode_rejects_commands(server):
    c = server.raw()
    c.call("HELLO", "2")
    c.send_command("SUBSCRIBE", "ch")
    assert c.read_reply() == b("subscribe", "ch", 1)
    assert c.call("GET", "k") == Err(
        "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
        "are allowed in this context")
    assert c.call("SET", "k", "v") == Err(
        "ERR Can't execute 'set': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
        "are allowed in this context")
    frame = c.call_frame("PING")
    assert frame.kind == "*" and frame.py() == [b"pong", b""]
    assert c.call("PING", "hi") == [b"pong", b"hi"]
    # Still subscribed, and still gets messages.
    other = server.raw()
    assert other.call("PUBLISH", "ch", "m") == 1
    assert c.read_reply() == b("message", "ch", "m")
    # A pattern subscription alone also means subscribed mode.
    c.send_command("UNSUBSCRIBE")
    assert c.read_reply() == b("unsubscribe", "ch", 0)
    assert c.call("GET", "k") is None
    c.send_command("PSUBSCRIBE", "p*")
    assert c.read_reply() == b("psubscribe", "p*", 1)
    assert isinstance(c.call("GET", "k"), Err)


def test_resp3_push_frames_interleave_with_replies(server):
    c = server.raw()
    c.hello3()
    c.send_command("SUBSCRIBE", "ch")
    f = c.read_frame()
    assert f.kind == ">" and f.py() == b("subscribe", "ch", 1)
    # Normal commands keep working while subscribed.
    assert c.call("SET", "k", "v") == Simple("OK")
    assert c.call("GET", "k") == b"v"
    frame = c.call_frame("PING")
    assert frame.kind == "+" and frame.value == "PONG"

    pub = server.raw()
    for i in range(5):
        assert pub.call("PUBLISH", "ch", f"m{i}") == 1
        c.send_command("INCR", "n")
    # The pushes and the five replies arrive interleaved; pushes in order, replies in order.
    pushes, replies = [], []
    while len(pushes) < 5 or len(replies) < 5:
        f = c.read_frame()
        if f.kind == ">":
            pushes.append(f.py())
        else:
            assert f.kind == ":", f
            replies.append(f.value)
    assert pushes == [b("message", "ch", f"m{i}") for i in range(5)]
    assert all(isinstance(p, Push) for p in pushes)
    assert replies == [1, 2, 3, 4, 5]


def test_reset_leaves_subscribed_mode(server):
    c = server.raw()
    c.call("HELLO", "2")
    c.send_command("SUBSCRIBE", "ch")
    c.read_reply()
    c.send_command("PSUBSCRIBE", "p*")
    c.read_reply()
    c.send_command("SSUBSCRIBE", "s")
    c.read_reply()
    assert c.call("RESET") == Simple("RESET")
    assert c.call("GET", "k") is None
    admin = server.raw()
    assert admin.call("PUBSUB", "NUMSUB", "ch") == [b"ch", 0]
    assert admin.call("PUBSUB", "NUMPAT") == 0
    assert admin.call("PUBSUB", "SHARDNUMSUB", "s") == [b"s", 0]
    assert admin.call("PUBLISH", "ch", "x") == 0
    assert admin.call("SPUBLISH", "s", "x") == 0
    assert c.read_until_idle(idle=0.2, total=0.5) == b""


# --- PUBSUB introspection -----------------------------------------------------------------------


def test_pubsub_channels_numsub_numpat(server, r):
    a, bb = server.raw(), server.raw()
    a.send_command("SUBSCRIBE", "news.a", "news.b", "other")
    for _ in range(3):
        a.read_reply()
    bb.send_command("SUBSCRIBE", "news.a")
    bb.read_reply()
    bb.send_command("PSUBSCRIBE", "x*", "y*")
    bb.read_reply()
    bb.read_reply()
    a.send_command("PSUBSCRIBE", "x*")
    a.read_reply()

    chans = r.execute_command("PUBSUB", "CHANNELS")
    assert sorted(chans) == [b"news.a", b"news.b", b"other"]
    assert sorted(r.execute_command("PUBSUB", "CHANNELS", "news.*")) == [b"news.a", b"news.b"]
    assert r.execute_command("PUBSUB", "CHANNELS", "nomatch*") == []
    assert r.execute_command("PUBSUB", "NUMSUB", "news.a", "news.b", "missing") == [
        b"news.a", 2, b"news.b", 1, b"missing", 0]
    assert r.execute_command("PUBSUB", "NUMSUB") == []
    # NUMPAT counts distinct patterns, not subscriptions.
    assert r.execute_command("PUBSUB", "NUMPAT") == 2
    # Shard channels are a separate namespace.
    assert r.execute_command("PUBSUB", "SHARDCHANNELS") == []


def test_pubsub_errors_and_help(r):
    help_lines = r.execute_command("PUBSUB", "HELP")
    assert help_lines[0].startswith(b"PUBSUB <subcommand>")
    assert any(line.strip().startswith(b"NUMSUB") for line in help_lines)
    with pytest.raises(Exception) as e:
        r.execute_command("PUBSUB", "NOPE")
    assert "unknown subcommand" in str(e.value).lower()


def test_disconnected_subscriber_is_removed(server, r):
    sub = server.raw()
    sub.send_command("SUBSCRIBE", "ch")
    sub.read_reply()
    sub.send_command("PSUBSCRIBE", "pat*")
    sub.read_reply()
    sub.send_command("SSUBSCRIBE", "sch")
    sub.read_reply()
    assert numsub(r, "ch") == {b"ch": 1}
    sub.close()
    assert wait_until(lambda: numsub(r, "ch") == {b"ch": 0}, timeout=5)
    assert wait_until(lambda: r.execute_command("PUBSUB", "NUMPAT") == 0, timeout=5)
    assert wait_until(
        lambda: r.execute_command("PUBSUB", "SHARDNUMSUB", "sch") == [b"sch", 0], timeout=5)
    assert r.execute_command("PUBSUB", "CHANNELS") == []
    assert r.publish("ch", "x") == 0


# --- SSUBSCRIBE / SPUBLISH ----------------------------------------------------------------------


def test_ssubscribe_spublish(server, rawp, protocol, r):
    rawp.send_command("SSUBSCRIBE", "s1", "s2")
    assert read_push(rawp, protocol) == b("ssubscribe", "s1", 1)
    assert read_push(rawp, protocol) == b("ssubscribe", "s2", 2)
    assert r.execute_command("SPUBLISH", "s1", "hi") == 1
    assert read_push(rawp, protocol) == b("smessage", "s1", "hi")
    # Shard channels and ordinary channels do not see each other's messages.
    assert r.publish("s1", "plain") == 0
    assert sorted(r.execute_command("PUBSUB", "SHARDCHANNELS")) == [b"s1", b"s2"]
    assert r.execute_command("PUBSUB", "SHARDCHANNELS", "*2") == [b"s2"]
    assert r.execute_command("PUBSUB", "SHARDNUMSUB", "s1", "nope") == [b"s1", 1, b"nope", 0]
    assert r.execute_command("PUBSUB", "CHANNELS") == []
    assert r.execute_command("PUBSUB", "NUMSUB", "s1") == [b"s1", 0]

    rawp.send_command("SUNSUBSCRIBE", "s1")
    assert read_push(rawp, protocol) == b("sunsubscribe", "s1", 1)
    assert r.execute_command("SPUBLISH", "s1", "x") == 0
    rawp.send_command("SUNSUBSCRIBE")
    assert read_push(rawp, protocol) == b("sunsubscribe", "s2", 0)
    assert r.execute_command("PUBSUB", "SHARDCHANNELS") == []


def test_ssubscribe_count_is_shard_channels_only(server, rawp, protocol):
    rawp.send_command("SUBSCRIBE", "a")
    assert read_push(rawp, protocol) == b("subscribe", "a", 1)
    rawp.send_command("SSUBSCRIBE", "s")
    assert read_push(rawp, protocol) == b("ssubscribe", "s", 1)
    rawp.send_command("PSUBSCRIBE", "p")
    assert read_push(rawp, protocol) == b("psubscribe", "p", 2)


# --- keyspace notifications ---------------------------------------------------------------------


@pytest.fixture
def restore_notify(server):
    yield
    with server.admin() as c:
        c.call("CONFIG", "SET", "notify-keyspace-events", "")
        c.call("CONFIG", "SET", "client-output-buffer-limit",
               "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")


def test_expired_keyevent_without_access(server, r, restore_notify):
    assert r.config_set("notify-keyspace-events", "Ex")
    sub = server.raw()
    sub.send_command("SUBSCRIBE", "__keyevent@0__:expired", "__keyspace@0__:k")
    sub.read_reply()
    sub.read_reply()
    r.set("k", "v", px=100)
    start = time.monotonic()
    msg = sub.read_frame().py()  # nobody touches k: active expiry must produce it
    assert time.monotonic() - start < 1.0 + 0.15
    assert msg == b("message", "__keyevent@0__:expired", "k")
    # Ex enables key-event only: no keyspace message followed.
    assert sub.read_until_idle(idle=0.2, total=0.4) == b""
    assert r.exists("k") == 0


def test_expired_keyspace_and_pattern(server, r, restore_notify):
    r.config_set("notify-keyspace-events", "KEx")
    ps = r.pubsub()
    ps.psubscribe("__key*__:*")
    assert ps.get_message(timeout=2)["type"] == "psubscribe"
    r.set("gone", "v", px=50)
    got = get_messages(ps, 2, timeout=2)
    pairs = sorted((m["channel"], m["data"]) for m in got)
    assert pairs == [(b"__keyevent@0__:expired", b"gone"), (b"__keyspace@0__:gone", b"expired")]
    ps.close()


def test_no_notification_when_disabled(server, r, restore_notify):
    r.config_set("notify-keyspace-events", "")
    sub = server.raw()
    sub.send_command("PSUBSCRIBE", "__key*")
    sub.read_reply()
    r.set("k", "v", px=20)
    assert wait_until(lambda: r.dbsize() == 0, timeout=2)
    assert sub.read_until_idle(idle=0.3, total=0.6) == b""


def test_notify_keyspace_events_canonical_text(r, restore_notify):
    for given, shown in [("KEA", "AKE"), ("Elxn$m", "$lxnEm"), ("Ex", "xE"), ("", ""),
                         ("AKE", "AKE"), ("K", "K"), ("Ag", "A")]:
        assert r.config_set("notify-keyspace-events", given), given
        got = config_value(r, "notify-keyspace-events")
        assert got == shown.encode(), given


def test_notify_keyspace_events_invalid_character(r, restore_notify):
    r.config_set("notify-keyspace-events", "Ex")
    with pytest.raises(Exception) as e:
        r.config_set("notify-keyspace-events", "Kxyz")
    assert str(e.value) == (
        "CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
        "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    assert config_value(r, "notify-keyspace-events") == b"xE"


# --- client-output-buffer-limit -----------------------------------------------------------------


DEFAULT_COBL = b"normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"


def test_client_output_buffer_limit_config(r, restore_notify):
    assert config_value(r, "client-output-buffer-limit") == DEFAULT_COBL
    assert r.config_set("client-output-buffer-limit", "pubsub 1mb 512kb 10")
    assert config_value(r, "client-output-buffer-limit") == (
        b"normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 10")
    with pytest.raises(Exception) as e:
        r.config_set("client-output-buffer-limit", "bogus 1 2 3")
    assert "Invalid client class" in str(e.value) or "argument" in str(e.value)


def _slow_subscriber(port: int, name: str, channel: str) -> socket.socket:
    """A subscriber with a tiny receive buffer that never reads after subscribing."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(RawConn.encode("CLIENT", "SETNAME", name) + RawConn.encode("SUBSCRIBE", channel))
    buf = b""
    while buf.count(b"\r\n") < 5:  # +OK, then *3 $9 subscribe $n name :1 (well over 5 lines)
        buf += s.recv(4096)
    return s


def test_slow_subscriber_is_disconnected_at_hard_limit(server, restore_notify):
    admin = server.raw()
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit",
                      "pubsub 1mb 0 0") == Simple("OK")
    slow = _slow_subscriber(server.port, "slowsub", "flood")
    try:
        assert wait_until(lambda: "slowsub" in client_names(admin), timeout=2)
        normal = server.raw()
        pub = server.raw()
        payload = b"x" * 65536
        deadline = time.monotonic() + 5.0
        sent = 0
        gone = False
        while time.monotonic() < deadline:
            # ~4 MB in batches; SET/GET on another client keep answering meanwhile.
            if sent < 8 * 1024 * 1024:
                pub.send(RawConn.encode("PUBLISH", "flood", payload) * 8)
                for _ in range(8):
                    assert pub.read_reply() in (0, 1)
                sent += 8 * len(payload)
            assert normal.call("SET", "k", str(sent)) == Simple("OK")
            assert normal.call("GET", "k") == str(sent).encode()
            if "slowsub" not in client_names(admin):
                gone = True
                break
            time.sleep(0.01)
        assert gone, f"subscriber still connected after {sent} bytes published"
        assert sent <= 8 * 1024 * 1024
        # Once it is gone nobody gets the messages.
        assert wait_until(lambda: admin.call("PUBSUB", "NUMSUB", "flood") == [b"flood", 0])
        assert pub.call("PUBLISH", "flood", "x") == 0
        assert normal.call("GET", "k") == str(sent).encode()
    finally:
        slow.close()


def test_reading_subscriber_under_limit_stays(server, restore_notify):
    admin = server.raw()
    admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0")
    sub = server.raw()
    sub.send_command("SUBSCRIBE", "ch")
    sub.read_reply()
    pub = server.raw()
    payload = b"y" * 16384
    for i in range(256):  # 4 MB in total, read as it comes
        assert pub.call("PUBLISH", "ch", payload) == 1
        assert sub.read_reply() == [b"message", b"ch", payload]
    assert admin.call("PUBSUB", "NUMSUB", "ch") == [b"ch", 1]
