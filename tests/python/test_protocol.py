"""RESP2/RESP3 framing, inline commands, pipelining and protocol errors (issue 2, section 2).

Expected bytes and error texts are Redis 7.0's; `--target=redis` checks them.
"""

import random
import socket
import time

import pytest

from conftest import Err, RawConn, Simple


# --- inline commands ---------------------------------------------------------------------------


def test_inline_ping_and_echo(raw):
    raw.send(b"PING\r\n")
    assert raw.recv_exact(7) == b"+PONG\r\n"
    raw.send(b"ECHO hello\r\n")
    assert raw.recv_exact(11) == b"$5\r\nhello\r\n"
    raw.send(b"ping\r\n")
    assert raw.read_reply() == Simple("PONG")


def test_inline_bare_lf_and_surrounding_spaces(raw):
    raw.send(b"PING\nPING\n  PING   \r\n")
    assert raw.recv_exact(21) == b"+PONG\r\n" * 3


def test_inline_empty_lines_are_ignored(raw):
    raw.send(b"\r\n\r\n\nPING\r\n")
    assert raw.recv_exact(7) == b"+PONG\r\n"


def test_inline_double_quotes_and_escapes(raw):
    raw.send(b'SET "a key" "x\\x41\\n\\t\\"y"\r\n')
    assert raw.read_reply() == "OK"
    assert raw.call("GET", "a key") == b'xA\n\t"y'


def test_inline_single_quotes(raw):
    raw.send(b"ECHO 'it\\'s'\r\n")
    assert raw.read_reply() == b"it's"
    raw.send(b"ECHO 'no \\n escapes'\r\n")
    assert raw.read_reply() == b"no \\n escapes"


@pytest.mark.parametrize("line", [b'ECHO "unbalanced\r\n', b'ECHO "a"b\r\n', b"ECHO 'x\r\n"])
def test_inline_unbalanced_quotes_closes_connection(raw, line):
    raw.send(line)
    assert raw.read_reply() == Err("ERR Protocol error: unbalanced quotes in request")
    assert raw.is_closed()


def test_inline_unknown_command(raw):
    raw.send(b"foo a b\r\n")
    assert raw.read_reply() == Err(
        "ERR unknown command 'foo', with args beginning with: 'a' 'b' ")
    raw.send(b"PING\r\n")
    assert raw.read_reply() == "PONG"


def test_inline_and_multibulk_interleaved(raw):
    raw.send(b"SET k 1\r\n" + RawConn.encode("INCR", "k") + b"INCR k\r\n"
             + RawConn.encode("GET", "k"))
    assert [raw.read_reply() for _ in range(4)] == ["OK", 2, 3, b"3"]


def test_too_big_inline_request(raw):
    raw.send(b"A" * (64 * 1024 + 100))
    assert raw.read_reply() == Err("ERR Protocol error: too big inline request")
    assert raw.is_closed()


# --- multibulk framing -------------------------------------------------------------------------


def test_multibulk_split_across_many_writes(raw):
    data = RawConn.encode("SET", "split", "v" * 1000) + RawConn.encode("GET", "split")
    for i in range(0, len(data), 7):
        raw.send(data[i:i + 7])
    assert raw.read_reply() == "OK"
    assert raw.read_reply() == b"v" * 1000


def test_binary_safe_keys_and_values(raw):
    key = bytes(range(256))
    value = b"\r\n\x00" * 1000 + b"$3\r\n*1\r\n"
    assert raw.call("SET", key, value) == "OK"
    assert raw.call("GET", key) == value
    assert raw.call("STRLEN", key) == len(value)


def test_large_value_roundtrip(raw):
    # Over the 4 MiB a large argument's buffer gets up front: it grows as the bytes arrive.
    value = bytes(range(256)) * 4096 * 9 + b"tail"  # 9 MiB and 4 bytes
    raw.send_command("SET", "big", value)
    assert raw.read_reply() == "OK"
    assert raw.call("GET", "big") == value


# --- large arguments ---------------------------------------------------------------------------
# A last argument of 32 KiB or more (Redis's PROTO_MBULK_BIG_ARG) is read into a buffer of its
# own, which SET and friends store as the value instead of copying it; the request before it and
# the requests after it stay in the ordinary input buffer. These tests cut the input at every
# kind of boundary around such arguments.

BIG = 32 * 1024


def _values():
    # Deterministic, distinct, binary, with CR LF inside; around the threshold and well over.
    sizes = [BIG - 1, BIG, BIG + 1, 200 * 1024, 2 * 1024 * 1024 + 3]
    return [(bytes([i]) + b"\r\n" + bytes(range(256)) * (n // 256 + 1))[:n]
            for i, n in enumerate(sizes)]


def _big_pipeline():
    """Requests mixing large last arguments, large middle arguments and small commands, with
    the replies they must get."""
    cmds, want = [], []
    for i, v in enumerate(_values()):
        cmds += [RawConn.encode("SET", f"big{i}", v), RawConn.encode("PING"),
                 RawConn.encode("GET", f"big{i}"), RawConn.encode("STRLEN", f"big{i}"),
                 RawConn.encode("SET", f"mid{i}", v, "PX", "100000"),  # large, not last
                 RawConn.encode("GETRANGE", f"mid{i}", "-3", "-1"),
                 RawConn.encode("ECHO", v), RawConn.encode("APPEND", f"big{i}", v),
                 RawConn.encode("GETSET", f"big{i}", v)]
        want += ["OK", "PONG", v, len(v), "OK", v[-3:], v, 2 * len(v), v + v]
    return b"".join(cmds), want


def test_large_last_arguments_in_one_write(raw):
    data, want = _big_pipeline()
    raw.send(data)
    assert [raw.read_reply() for _ in want] == want


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_large_last_arguments_cut_anywhere(raw, seed):
    rng = random.Random(seed)
    data, want = _big_pipeline()
    # Pieces from 1 byte to 100 KiB, so cuts fall inside headers, inside the large data, right
    # before its CR LF and between it and the next request.
    pos = 0
    while pos < len(data):
        n = rng.choice([1, 2, 3, 17, 4096, BIG - 5, 100_000])
        raw.send(data[pos:pos + n])
        pos += n
    assert [raw.read_reply() for _ in want] == want


def test_large_argument_sent_a_byte_at_a_time_at_its_edges(raw):
    v = bytes(range(256)) * 200
    req = RawConn.encode("SET", "edge", v) + RawConn.encode("GET", "edge")
    start = req.index(b"\r\n", req.index(b"$%d" % len(v))) + 2
    end = start + len(v)
    # The header, then the data byte by byte at its start and end, then the CR, the LF and the
    # next request one byte at a time.
    raw.send(req[:start])
    for b in range(start, start + 3):
        raw.send(req[b:b + 1])
    raw.send(req[start + 3:end - 3])
    for b in range(end - 3, len(req)):
        raw.send(req[b:b + 1])
    assert raw.read_reply() == "OK"
    assert raw.read_reply() == v


def test_large_values_to_a_client_that_reads_late(raw):
    # GET sends a large stored value from where it is stored; 24 MiB of replies fill the
    # socket, so the server writes them in many pieces, some ending inside a value.
    values = [bytes([i]) * (BIG + 1) + bytes(range(256)) * (4096 * (1 + i % 3))
              for i in range(8)]
    for i, v in enumerate(values):
        assert raw.call("SET", f"v{i}", v) == "OK"
    want = []
    cmds = []
    for _ in range(3):
        for i, v in enumerate(values):
            cmds += [RawConn.encode("GET", f"v{i}"), RawConn.encode("ECHO", f"e{i}")]
            want += [v, f"e{i}".encode()]
    cmds.append(RawConn.encode("MGET", "v0", "nokey", "v1"))
    want.append([values[0], None, values[1]])
    raw.send(b"".join(cmds))
    time.sleep(0.3)
    assert [raw.read_reply() for _ in want] == want


def test_client_reply_skip_drops_a_large_value_sent_by_reference(raw):
    v = b"s" * (BIG * 2)
    assert raw.call("SET", "sk", v) == "OK"
    raw.send(RawConn.encode("CLIENT", "REPLY", "SKIP") + RawConn.encode("GET", "sk")
             + RawConn.encode("GETRANGE", "sk", "0", "2") + RawConn.encode("GET", "sk"))
    assert raw.read_reply() == b"sss"
    assert raw.read_reply() == v


def test_a_stored_large_value_is_an_ordinary_string(raw):
    v = b"x" * (BIG + 100)
    assert raw.call("SET", "s", v) == "OK"
    assert raw.call("SETEX", "e", "100", v) == "OK"
    assert raw.call("MSET", "m1", "1", "m2", v) == "OK"
    assert raw.call("COPY", "s", "t") == 1
    assert raw.call("APPEND", "s", "yz") == len(v) + 2
    assert raw.call("SETRANGE", "t", "0", "Q") == len(v)
    assert raw.call("GET", "s") == v + b"yz"
    assert raw.call("GET", "t") == b"Q" + v[1:]
    assert raw.call("GET", "e") == v and 0 < raw.call("TTL", "e") <= 100
    assert raw.call("GET", "m2") == v
    assert raw.call("TYPE", "s") == "string"
    assert raw.call("OBJECT", "ENCODING", "m2") == b"raw"
    assert raw.call("INCR", "m2") == Err("ERR value is not an integer or out of range")
    assert raw.call("MEMORY", "USAGE", "m2") >= len(v)
    assert raw.call("SET", "s", "small") == "OK"
    assert raw.call("GET", "s") == b"small"


def test_empty_multibulk_is_ignored(raw):
    raw.send(b"*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n")
    assert raw.recv_exact(7) == b"+PONG\r\n"


def test_empty_argument(raw):
    assert raw.call("SET", "", "") == "OK"
    assert raw.call("GET", "") == b""
    assert raw.call("EXISTS", "") == 1
    assert raw.call("") == Err("ERR unknown command '', with args beginning with: ")


@pytest.mark.parametrize(
    "data, error",
    [
        (b"*x\r\n", "ERR Protocol error: invalid multibulk length"),
        (b"*1 \r\n", "ERR Protocol error: invalid multibulk length"),
        (b"*2147483648\r\n", "ERR Protocol error: invalid multibulk length"),
        (b"*1\r\n$x\r\n", "ERR Protocol error: invalid bulk length"),
        (b"*1\r\n$-1\r\n", "ERR Protocol error: invalid bulk length"),
        (b"*1\r\n$536870913\r\n", "ERR Protocol error: invalid bulk length"),
        (b"*2\r\n+a\r\n", "ERR Protocol error: expected '$', got '+'"),
        (b"*2\r\n$3\r\nfoo\r\n*1\r\n", "ERR Protocol error: expected '$', got '*'"),
        (b"*" + b"1" * (64 * 1024 + 10), "ERR Protocol error: too big mbulk count string"),
        (b"*1\r\n$" + b"1" * (64 * 1024 + 10), "ERR Protocol error: too big bulk count string"),
    ],
    ids=["mbulk-not-a-number", "mbulk-trailing-space", "mbulk-over-int-max", "bulk-not-a-number",
         "bulk-negative", "bulk-over-proto-max-bulk-len", "expected-dollar-plus",
         "expected-dollar-star", "mbulk-count-too-long", "bulk-count-too-long"],
)
def test_protocol_error_replies_then_closes(raw, data, error):
    raw.send(data)
    assert raw.read_reply() == Err(error)
    assert raw.is_closed()


def test_replies_before_a_protocol_error_are_delivered(raw):
    raw.send(RawConn.encode("PING") + RawConn.encode("SET", "a", "1") + RawConn.encode("foo")
             + b"*a\r\n" + RawConn.encode("SET", "after", "1"))
    assert raw.read_reply() == "PONG"
    assert raw.read_reply() == "OK"
    assert raw.read_reply() == Err("ERR unknown command 'foo', with args beginning with: ")
    assert raw.read_reply() == Err("ERR Protocol error: invalid multibulk length")
    assert raw.is_closed()


def test_incomplete_command_waits_for_the_rest(server):
    with server.raw() as bad:
        bad.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n")  # incomplete: the server waits
        with server.raw() as good:
            assert good.call("PING") == "PONG"
        bad.send(b"$1\r\nv\r\n")
        assert bad.read_reply() == "OK"


def test_multibulk_count_over_a_million_is_accepted(raw):
    # Redis 7 accepts up to INT_MAX arguments in one command (older versions stopped at 1M).
    n = 550_000
    args = ["MSET"]
    for i in range(n):
        args += [f"k{i}", "v"]
    raw.send_command(*args)
    assert raw.read_reply() == "OK"
    assert raw.call("DBSIZE") == n


# --- pipelining --------------------------------------------------------------------------------


def test_pipeline_10k_commands_in_one_write(raw):
    n = 10_000
    out = bytearray()
    for i in range(n):
        if i % 3 == 0:
            out += RawConn.encode("SET", f"p{i}", f"v{i}")
        elif i % 3 == 1:
            out += RawConn.encode("ECHO", f"e{i}")
        else:
            out += RawConn.encode("INCR", "counter")
    raw.send(bytes(out))
    incr = 0
    for i in range(n):
        reply = raw.read_reply()
        if i % 3 == 0:
            assert reply == "OK", i
        elif i % 3 == 1:
            assert reply == f"e{i}".encode(), i
        else:
            incr += 1
            assert reply == incr, i
    gets = b"".join(RawConn.encode("GET", f"p{i}") for i in range(0, n, 3))
    raw.send(gets)
    for i in range(0, n, 3):
        assert raw.read_reply() == f"v{i}".encode()


def test_pipeline_of_writes_and_reads_across_databases(raw):
    # In one write: the server parses a batch of requests ahead and prefetches their keys in the
    # database selected when the batch began; SETs of keys absent at that point, and SELECTs in
    # the middle, must give the same answers as one request at a time.
    n = 40
    cmds = [RawConn.encode("SET", f"k{i}", f"db0-{i}") for i in range(n)]
    cmds.append(RawConn.encode("SELECT", "1"))
    cmds += [RawConn.encode("SET", f"k{i}", f"db1-{i}") for i in range(0, n, 2)]
    cmds += [RawConn.encode("GET", f"k{i}") for i in range(n)]
    cmds.append(RawConn.encode("SELECT", "0"))
    cmds += [RawConn.encode("GET", f"k{i}") for i in range(n)]
    cmds += [RawConn.encode("DEL", f"k{i}") for i in range(n)] + [RawConn.encode("GET", "k0")]
    raw.send(b"".join(cmds))
    assert [raw.read_reply() for _ in range(n)] == ["OK"] * n
    assert raw.read_reply() == "OK"
    assert [raw.read_reply() for _ in range(0, n, 2)] == ["OK"] * (n // 2)
    assert [raw.read_reply() for _ in range(n)] == [
        f"db1-{i}".encode() if i % 2 == 0 else None for i in range(n)]
    assert raw.read_reply() == "OK"
    assert [raw.read_reply() for _ in range(n)] == [f"db0-{i}".encode() for i in range(n)]
    assert [raw.read_reply() for _ in range(n)] == [1] * n
    assert raw.read_reply() is None


def test_pipeline_inline_10k(raw):
    raw.send(b"".join(b"ECHO %d\r\n" % i for i in range(10_000)))
    for i in range(10_000):
        assert raw.read_reply() == str(i).encode()


def test_pipeline_replies_coalesced(raw):
    """All replies for one write arrive in order, however they are split into segments."""
    raw.send(RawConn.encode("PING") * 1000)
    assert raw.recv_exact(7 * 1000) == b"+PONG\r\n" * 1000


def test_pipeline_with_errors_in_the_middle(raw):
    raw.send(RawConn.encode("SET", "s", "x") + RawConn.encode("INCR", "s")
             + RawConn.encode("GET") + RawConn.encode("GET", "s"))
    assert raw.read_reply() == "OK"
    assert raw.read_reply() == Err("ERR value is not an integer or out of range")
    assert raw.read_reply() == Err("ERR wrong number of arguments for 'get' command")
    assert raw.read_reply() == b"x"


def test_redis_py_pipeline_10k(r):
    pipe = r.pipeline(transaction=False)
    for i in range(10_000):
        pipe.set(f"rp{i}", i)
        pipe.get(f"rp{i}")
    replies = pipe.execute()
    assert replies[0::2] == [True] * 10_000
    assert replies[1::2] == [str(i).encode() for i in range(10_000)]


def test_many_clients_pipelining_concurrently(server):
    conns = [server.raw() for _ in range(20)]
    for idx, c in enumerate(conns):
        c.send(b"".join(RawConn.encode("INCR", f"ctr{idx}") for _ in range(500)))
    for c in conns:
        for i in range(500):
            assert c.read_reply() == i + 1


def test_half_closed_client_still_gets_replies(server):
    # A client that sends its commands and shuts down its write side (as `nc -q` does)
    # still gets every reply before the server closes the connection.
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    s.sendall(b"SET hc 1\r\nGET hc\r\n")
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    assert data == b"+OK\r\n$1\r\n1\r\n"


# --- error text shape ----------------------------------------------------------------------


def test_unknown_command_with_args(raw):
    assert raw.call("foo", "a", "b") == Err(
        "ERR unknown command 'foo', with args beginning with: 'a' 'b' ")


def test_unknown_command_args_truncated_at_128_chars(raw):
    assert raw.call("foo", "a" * 200, "b") == Err(
        "ERR unknown command 'foo', with args beginning with: '" + "a" * 128 + "' ")
    assert raw.call("foo", *["abcdefghij"] * 20) == Err(
        "ERR unknown command 'foo', with args beginning with: " + "'abcdefghij' " * 10)
    assert raw.call("f" * 200) == Err(
        "ERR unknown command '" + "f" * 128 + "', with args beginning with: ")


def test_error_text_newlines_become_spaces(raw):
    assert raw.call("fo\r\no", "x\ny") == Err(
        "ERR unknown command 'fo  o', with args beginning with: 'x y' ")


@pytest.mark.parametrize("argv, name", [
    (["GET"], "get"), (["get", "a", "b"], "get"), (["SET", "k"], "set"), (["MGET"], "mget"),
    (["MSET", "a"], "mset"), (["Incr"], "incr"), (["PING", "a", "b"], "ping"),
    (["ECHO"], "echo"), (["SCAN"], "scan"), (["EXPIRE", "k"], "expire"),
    (["CLIENT"], "client"), (["CONFIG"], "config"), (["OBJECT"], "object"),
    (["SELECT"], "select"), (["DBSIZE", "x"], "dbsize"), (["LCS", "a"], "lcs"),
])
def test_wrong_arity_errors(raw, argv, name):
    assert raw.call(*argv) == Err(f"ERR wrong number of arguments for '{name}' command")


@pytest.mark.parametrize("argv, name", [
    (["CLIENT", "SETNAME"], "client|setname"), (["CLIENT", "KILL"], "client|kill"),
    (["CONFIG", "GET"], "config|get"), (["CONFIG", "SET", "timeout"], "config|set"),
    (["OBJECT", "ENCODING"], "object|encoding"), (["MEMORY", "USAGE"], "memory|usage"),
    (["SLOWLOG", "RESET", "x"], "slowlog|reset"), (["CLIENT", "ID", "x"], "client|id"),
])
def test_wrong_arity_errors_for_subcommands(raw, argv, name):
    assert raw.call(*argv) == Err(f"ERR wrong number of arguments for '{name}' command")


@pytest.mark.parametrize("cmd", ["CLIENT", "CONFIG", "OBJECT", "COMMAND", "SLOWLOG", "MEMORY"])
def test_unknown_subcommand(raw, cmd):
    assert raw.call(cmd, "FOO") == Err(f"ERR unknown subcommand 'FOO'. Try {cmd} HELP.")


# --- RESP3 reply types -------------------------------------------------------------------------


def test_resp2_null_bulk_and_null_array(raw):
    raw.send_command("GET", "missing")
    assert raw.recv_exact(5) == b"$-1\r\n"
    raw.send_command("MGET", "missing", "missing")
    assert raw.recv_exact(14) == b"*2\r\n$-1\r\n$-1\r\n"


def test_resp3_null(raw):
    raw.hello3()
    raw.send_command("GET", "missing")
    assert raw.recv_exact(3) == b"_\r\n"
    raw.send_command("MGET", "missing", "missing")
    assert raw.recv_exact(10) == b"*2\r\n_\r\n_\r\n"
    for argv in (["RANDOMKEY"], ["GETDEL", "missing"], ["GETEX", "missing"],
                 ["SET", "k", "v", "GET"], ["CLIENT", "GETNAME"], ["GETSET", "missing2", "v"]):
        f = raw.call_frame(*argv)
        assert (f.kind, f.value) == ("_", None), argv


def test_resp3_map_replies(raw):
    hello = raw.call_frame("HELLO", "3")
    assert hello.kind == "%"
    keys = [k.value for k, _ in hello.value]
    assert keys[:3] == [b"server", b"version", b"proto"]
    cfg = raw.call_frame("CONFIG", "GET", "maxclients")
    assert cfg.kind == "%"
    assert [(k.value, v.value) for k, v in cfg.value] == [(b"maxclients", b"10000")]


def test_resp2_config_get_is_flat_array(raw):
    f = raw.call_frame("CONFIG", "GET", "maxclients")
    assert f.kind == "*"
    assert [x.value for x in f.value] == [b"maxclients", b"10000"]


def test_resp3_set_reply_in_command_info(raw):
    raw.hello3()
    info = raw.call_frame("COMMAND", "INFO", "get")
    assert info.kind == "*"
    entry = info.value[0]
    assert entry.kind == "*"
    flags = entry.value[2]
    assert flags.kind == "~"
    assert {f.value for f in flags.value} >= {"readonly", "fast"}
    categories = entry.value[6]
    assert categories.kind == "~"


def test_resp3_verbatim_strings(raw):
    raw.hello3()
    info = raw.call_frame("INFO", "server")
    assert info.kind == "="
    assert info.attributes == {"format": "txt"}
    assert b"redis_version:" in info.value
    client_info = raw.call_frame("CLIENT", "INFO")
    assert client_info.kind == "="
    assert client_info.value.startswith(b"id=")
    client_list = raw.call_frame("CLIENT", "LIST")
    assert client_list.kind == "="


def test_resp2_info_is_bulk(raw):
    f = raw.call_frame("INFO", "server")
    assert f.kind == "$"
    assert f.value.startswith(b"# Server\r\n")


def test_resp3_simple_types_unchanged(raw):
    raw.hello3()
    assert raw.call_frame("PING") == raw.call_frame("PING")
    assert raw.call_frame("PING").kind == "+"
    assert raw.call_frame("SET", "n", "1").kind == "+"
    assert raw.call_frame("INCR", "n").kind == ":"
    assert raw.call_frame("GET", "n").kind == "$"
    assert raw.call_frame("INCR", "nope", "x").kind == "-"
    f = raw.call_frame("INCRBYFLOAT", "f", "1.5")
    assert (f.kind, f.value) == ("$", b"1.5")


def test_resp3_errors_are_simple_errors(raw):
    raw.hello3()
    raw.send_command("GET")
    assert raw.recv_exact(len(b"-ERR wrong number of arguments for 'get' command\r\n")) == \
        b"-ERR wrong number of arguments for 'get' command\r\n"


def test_switching_protocol_back_and_forth(raw):
    raw.hello3()
    raw.send_command("GET", "x")
    assert raw.recv_exact(3) == b"_\r\n"
    assert isinstance(raw.call("HELLO", "2"), list)
    raw.send_command("GET", "x")
    assert raw.recv_exact(5) == b"$-1\r\n"
