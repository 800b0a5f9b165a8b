"""Configuration (issue 2, sections 1 and 3): CONFIG GET (glob patterns) / SET / RESETSTAT /
REWRITE, the config file, command-line flags, startup errors, the startup log line and signals.
"""

import fnmatch
import os
import re
import signal

import pytest

from conftest import ConnectionClosed, Err, RawConn, parse_info

# The parameters issue 2 names; each must be readable with CONFIG GET.
PARAMETERS = ["maxclients", "timeout", "proto-max-bulk-len", "client-query-buffer-limit",
              "requirepass", "databases", "hz", "slowlog-log-slower-than", "slowlog-max-len",
              "maxmemory", "maxmemory-policy", "lfu-log-factor",
              "lfu-decay-time", "port", "bind"]


def config_get(conn, *patterns) -> dict:
    reply = conn.call("CONFIG", "GET", *patterns)
    if isinstance(reply, dict):
        return {k.decode(): v.decode() for k, v in reply.items()}
    return {k.decode(): v.decode() for k, v in zip(reply[0::2], reply[1::2])}


def failed(param, reason):
    return Err(f"ERR CONFIG SET failed (possibly related to argument '{param}') - {reason}")


# --- CONFIG GET --------------------------------------------------------------------------------


def test_config_get_every_parameter(rawp):
    for name in PARAMETERS:
        assert name in config_get(rawp, name), name


def test_config_get_defaults(raw):
    got = config_get(raw, *PARAMETERS)
    assert got["maxclients"] == "10000"
    assert got["timeout"] == "0"
    assert got["proto-max-bulk-len"] == "536870912"
    assert got["client-query-buffer-limit"] == "1073741824"
    assert got["requirepass"] == ""
    assert got["databases"] == "16"
    assert got["slowlog-log-slower-than"] == "10000"
    assert got["slowlog-max-len"] == "128"
    assert got["maxmemory"] == "0"
    assert got["maxmemory-policy"] == "noeviction"
    assert got["lfu-log-factor"] == "10"
    assert got["lfu-decay-time"] == "1"


def test_config_get_port_and_bind(server):
    got = config_get(server.raw(), "port", "bind")
    assert got["port"] == str(server.port)
    assert got["bind"] == "127.0.0.1"


@pytest.mark.parametrize("pattern", ["maxmemory*", "*max*", "slowlog-*", "lfu-*", "*-len",
                                     "max?lients", "[mt]i*", "*"])
def test_config_get_glob(raw, pattern):
    got = config_get(raw, pattern)
    assert got, pattern
    assert all(fnmatch.fnmatchcase(name, pattern) for name in got), got
    expected = {p for p in PARAMETERS if fnmatch.fnmatchcase(p, pattern)}
    assert expected <= set(got)


def test_config_get_glob_is_case_insensitive(raw):
    assert {"maxmemory", "maxmemory-policy", "maxclients"} <= set(config_get(raw, "Max*"))


def test_config_get_multiple_patterns_without_duplicates(raw):
    reply = raw.call("CONFIG", "GET", "maxclients", "maxclients", "max*")
    names = reply[0::2]
    assert len(names) == len(set(names))
    assert b"maxclients" in names and b"maxmemory" in names


def test_config_get_unknown(rawp):
    assert rawp.call("CONFIG", "GET", "nosuchparameter") in ([], {})


def test_config_get_resp3_map(rawp, protocol):
    f = rawp.call_frame("CONFIG", "GET", "maxclients")
    assert f.kind == ("%" if protocol == 3 else "*")


def test_config_get_redis_py(r):
    # redis-py decodes CONFIG GET replies to str whatever decode_responses says.
    assert r.config_get("maxclients") == {"maxclients": "10000"}
    assert r.config_set("timeout", 0) is True


# --- CONFIG SET --------------------------------------------------------------------------------


@pytest.mark.parametrize("param, value, expected", [
    ("maxclients", "500", "500"),
    ("timeout", "30", "30"),
    ("proto-max-bulk-len", "1mb", "1048576"),
    ("client-query-buffer-limit", "2gb", "2147483648"),
    ("hz", "20", "20"),
    ("slowlog-log-slower-than", "-1", "-1"),
    ("slowlog-max-len", "1000", "1000"),
    ("maxmemory", "100mb", "104857600"),
    ("maxmemory", "1k", "1000"),
    ("maxmemory", "1kb", "1024"),
    ("maxmemory", "1GB", "1073741824"),
    ("maxmemory-policy", "ALLKEYS-LRU", "allkeys-lru"),
    ("maxmemory-policy", "volatile-ttl", "volatile-ttl"),
    ("lfu-log-factor", "5", "5"),
    ("lfu-decay-time", "0", "0"),
    ("requirepass", "", ""),
])
def test_config_set_and_get(start_server, param, value, expected):
    c = start_server().raw()
    assert c.call("CONFIG", "SET", param, value) == "OK"
    assert config_get(c, param) == {param: expected}


def test_config_set_name_is_case_insensitive(start_server):
    c = start_server().raw()
    assert c.call("CONFIG", "SET", "MaxClients", "123") == "OK"
    assert config_get(c, "maxclients") == {"maxclients": "123"}


def test_config_set_hz_is_clamped(start_server):
    c = start_server().raw()
    assert c.call("CONFIG", "SET", "hz", "0") == "OK"
    assert config_get(c, "hz") == {"hz": "1"}
    assert c.call("CONFIG", "SET", "hz", "1000") == "OK"
    assert config_get(c, "hz") == {"hz": "500"}


def test_config_set_several_at_once(start_server):
    c = start_server().raw()
    assert c.call("CONFIG", "SET", "timeout", "10", "maxclients", "200") == "OK"
    assert config_get(c, "timeout", "maxclients") == {"timeout": "10", "maxclients": "200"}


def test_config_set_is_all_or_nothing(start_server):
    c = start_server().raw()
    assert c.call("CONFIG", "SET", "timeout", "10", "maxclients", "abc") == failed(
        "maxclients", "argument couldn't be parsed into an integer")
    assert config_get(c, "timeout") == {"timeout": "0"}


@pytest.mark.parametrize("param, value, reason", [
    ("maxclients", "abc", "argument couldn't be parsed into an integer"),
    ("maxclients", "0", "argument must be between 1 and 4294967295 inclusive"),
    ("timeout", "-1", "argument must be between 0 and 2147483647 inclusive"),
    ("hz", "x", "argument couldn't be parsed into an integer"),
    ("hz", "-1", "argument must be between 0 and 2147483647 inclusive"),
    ("slowlog-log-slower-than", "x", "argument couldn't be parsed into an integer"),
    ("slowlog-max-len", "-1", "argument must be between 0 and 9223372036854775807 inclusive"),
    ("maxmemory", "abc", "argument must be a memory value"),
    ("maxmemory", "-1", "argument must be a memory value"),
    ("maxmemory-policy", "nosuch", "argument(s) must be one of the following: volatile-lru, "
     "volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, "
     "noeviction"),
    ("lfu-log-factor", "-1", "argument must be between 0 and 2147483647 inclusive"),
    ("lfu-decay-time", "-1", "argument must be between 0 and 2147483647 inclusive"),
    ("databases", "4", "can't set immutable config"),
])
def test_config_set_errors(raw, param, value, reason):
    before = config_get(raw, param)
    assert raw.call("CONFIG", "SET", param, value) == failed(param, reason)
    assert config_get(raw, param) == before


def test_config_set_unknown_and_malformed(raw):
    assert raw.call("CONFIG", "SET", "nosuch", "1") == Err(
        "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")
    assert raw.call("CONFIG", "SET", "timeout", "1", "timeout", "2") == failed(
        "timeout", "duplicate parameter")
    assert raw.call("CONFIG", "SET", "timeout", "0", "hz") == Err("ERR syntax error")
    assert raw.call("CONFIG", "SET", "timeout") == Err(
        "ERR wrong number of arguments for 'config|set' command")
    assert raw.call("CONFIG", "GET") == Err(
        "ERR wrong number of arguments for 'config|get' command")


def test_config_set_takes_effect(start_server):
    srv = start_server()
    c = srv.raw()
    c.call("CONFIG", "SET", "databases", "16")  # immutable: refused, nothing changes
    c.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu")
    c.call("SET", "k", "v")
    assert isinstance(c.call("OBJECT", "FREQ", "k"), int)


def test_config_help(raw):
    lines = raw.call("CONFIG", "HELP")
    assert lines[0] == "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    text = "\n".join(lines)
    for sub in ("GET <pattern>", "SET <directive> <value>", "RESETSTAT", "REWRITE"):
        assert sub in text


# --- CONFIG RESETSTAT --------------------------------------------------------------------------


def test_config_resetstat(start_server):
    c = start_server("--slowlog-log-slower-than", "0").raw()
    c.call("SET", "k", "v")
    c.call("GET", "k")
    c.call("GET", "missing")
    c.call("GET")
    assert c.call("CONFIG", "RESETSTAT") == "OK"
    sections = parse_info(c.call("INFO", "everything"))
    stats = sections["stats"]
    assert stats["keyspace_hits"] == "0"
    assert stats["keyspace_misses"] == "0"
    assert stats["total_error_replies"] == "0"
    assert int(stats["total_commands_processed"]) <= 1
    assert "cmdstat_get" not in sections.get("commandstats", {})
    assert sections.get("errorstats", {}) == {}
    # Data is untouched; the slow log is not a statistic and stays.
    assert c.call("GET", "k") == b"v"
    assert c.call("SLOWLOG", "LEN") > 0


def test_config_resetstat_arity(raw):
    assert raw.call("CONFIG", "RESETSTAT", "x") == Err(
        "ERR wrong number of arguments for 'config|resetstat' command")


# --- CONFIG REWRITE ----------------------------------------------------------------------------


def test_config_rewrite_without_file(raw):
    assert raw.call("CONFIG", "REWRITE") == Err("ERR The server is running without a config file")


def test_config_rewrite(start_server):
    original = "# larder test config\nmaxclients 100\n\n# the slow log\nslowlog-max-len 64\n"
    srv = start_server(config_text=original)
    c = srv.raw()
    assert config_get(c, "maxclients", "slowlog-max-len") == {"maxclients": "100",
                                                              "slowlog-max-len": "64"}
    assert c.call("CONFIG", "SET", "maxclients", "123", "timeout", "7") == "OK"
    assert c.call("CONFIG", "REWRITE") == "OK"
    text = srv.config_path.read_text()
    lines = text.splitlines()
    assert "maxclients 123" in lines
    assert "timeout 7" in lines
    assert "slowlog-max-len 64" in lines
    assert "maxclients 100" not in lines
    assert "# larder test config" in lines  # comments survive
    srv.stop()
    again = start_server(config_text=text)
    got = config_get(again.raw(), "maxclients", "timeout", "slowlog-max-len")
    assert got == {"maxclients": "123", "timeout": "7", "slowlog-max-len": "64"}


# --- config file and flags at startup ----------------------------------------------------------


def test_config_file(start_server):
    text = ("# comment line\n"
            "\n"
            "maxclients 77\n"
            "   timeout 5\n"
            "maxmemory 10mb\n"
            "maxmemory-policy allkeys-lru\n"
            "requirepass \"\"\n")
    c = start_server(config_text=text).raw()
    got = config_get(c, "maxclients", "timeout", "maxmemory", "maxmemory-policy", "requirepass")
    assert got == {"maxclients": "77", "timeout": "5", "maxmemory": "10485760",
                   "maxmemory-policy": "allkeys-lru", "requirepass": ""}


def test_flags_override_config_file(start_server):
    srv = start_server("--maxclients", "20", config_text="maxclients 10\ntimeout 3\n")
    assert config_get(srv.raw(), "maxclients", "timeout") == {"maxclients": "20", "timeout": "3"}


@pytest.mark.parametrize("flag, value, param, expected", [
    ("--maxclients", "42", "maxclients", "42"),
    ("--timeout", "9", "timeout", "9"),
    ("--hz", "25", "hz", "25"),
    ("--slowlog-max-len", "7", "slowlog-max-len", "7"),
    ("--slowlog-log-slower-than", "123", "slowlog-log-slower-than", "123"),
    ("--maxmemory", "64mb", "maxmemory", "67108864"),
    ("--maxmemory-policy", "volatile-lru", "maxmemory-policy", "volatile-lru"),
    ("--lfu-log-factor", "3", "lfu-log-factor", "3"),
    ("--lfu-decay-time", "4", "lfu-decay-time", "4"),
    ("--proto-max-bulk-len", "2mb", "proto-max-bulk-len", "2097152"),
    ("--client-query-buffer-limit", "8mb", "client-query-buffer-limit", "8388608"),
    ("--databases", "32", "databases", "32"),
])
def test_config_parameter_flags(start_server, flag, value, param, expected):
    c = start_server(flag, value).raw()
    assert config_get(c, param) == {param: expected}


def test_requirepass_flag(start_server):
    srv = start_server("--requirepass", "flagpw")
    c = RawConn(srv.port)
    assert c.call("GET", "x") == Err("NOAUTH Authentication required.")
    assert c.call("AUTH", "flagpw") == "OK"
    assert config_get(c, "requirepass") == {"requirepass": "flagpw"}
    c.close()


def test_unknown_config_file_line_is_startup_error(start_server):
    code, output = start_server.spawn(config_text="maxclients 10\nnosuchparam 5\n")
    assert code != 0
    assert "line 2" in output.lower(), output
    assert "nosuchparam 5" in output, output


def test_malformed_config_file_line_is_startup_error(start_server):
    code, output = start_server.spawn(config_text="# ok\nmaxclients 10\ntimeout abc\n")
    assert code != 0
    assert "line 3" in output.lower(), output
    assert "timeout abc" in output, output


def test_unknown_flag_is_startup_error(start_server):
    code, _ = start_server.spawn("--nosuchflag", "1")
    assert code != 0


@pytest.mark.larder_only
def test_proto_max_bulk_len_range(raw):
    # Redis accepts up to 9223372036854775807; larder keeps key lengths in 32 bits, so bulk
    # strings stay under 4 GiB (a documented difference).
    before = config_get(raw, "proto-max-bulk-len")["proto-max-bulk-len"]
    reason = "argument must be between 1048576 and 4294967295 inclusive"
    for value in ("10", "4gb", "9223372036854775807"):
        assert raw.call("CONFIG", "SET", "proto-max-bulk-len", value) == failed(
            "proto-max-bulk-len", reason)
    assert config_get(raw, "proto-max-bulk-len")["proto-max-bulk-len"] == before
    assert raw.call("CONFIG", "SET", "proto-max-bulk-len", "4294967295") == "OK"
    assert raw.call("CONFIG", "SET", "proto-max-bulk-len", before) == "OK"


def test_disable_thp_is_a_startup_parameter(raw):
    assert config_get(raw, "disable-thp") == {"disable-thp": "yes"}
    assert raw.call("CONFIG", "SET", "disable-thp", "no") == failed(
        "disable-thp", "can't set immutable config")


def _thp_enabled(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("THP_enabled:"):
                return int(line.split()[1])
    raise AssertionError(f"no THP_enabled line in /proc/{pid}/status")


@pytest.mark.larder_only
def test_disable_thp_turns_huge_pages_off_for_the_process(start_server):
    # Redis acts only when the system setting is `always`; larder whatever it is, because its
    # allocator asks for huge pages with madvise.
    srv = start_server()
    assert _thp_enabled(srv.proc.pid) == 0
    srv = start_server("--disable-thp", "no")
    assert _thp_enabled(srv.proc.pid) == _thp_enabled("self")


@pytest.mark.larder_only
def test_threads_flag(start_server):
    srv = start_server("--threads", "2")
    assert srv.raw().call("PING") == "PONG"


@pytest.mark.larder_only
def test_startup_log_line(start_server):
    srv = start_server("--threads", "2")
    log = srv.log_text()
    lines = [line for line in log.splitlines() if not line.startswith("### ")]
    pid = str(srv.proc.pid)
    matching = [line for line in lines
                if pid in line and str(srv.port) in line and "thread" in line.lower()]
    assert matching, f"no startup line with pid {pid}, port {srv.port} and threads:\n{log}"
    assert re.search(r"\d+\.\d+\.\d+", matching[0]), matching[0]


@pytest.mark.larder_only
def test_memcached_port_flag_disabled(start_server):
    # The fixture passes --memcached-port 0 (disabled); the server must still start.
    assert start_server().raw().call("PING") == "PONG"


# --- signals -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_exits_zero(start_server, sig):
    srv = start_server()
    c = srv.raw()
    c.call("SET", "k", "v")
    os.kill(srv.proc.pid, sig)
    assert srv.wait_exit() == 0
    assert c.is_closed()


def test_sigterm_finishes_replies_in_flight(start_server):
    """Replies the server started writing before SIGTERM arrive whole: the stream ends on a
    reply boundary, never inside one."""
    srv = start_server()
    c = srv.raw()
    c.send(b"".join(c.encode("SET", f"k{i}", "v" * 100) for i in range(5000)))
    assert c.read_reply() == "OK"
    os.kill(srv.proc.pid, signal.SIGTERM)
    replies = 1
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            assert c.read_reply() == "OK"
            replies += 1
    # Each reply here is one line, so "between lines" means between replies.
    assert str(closed.value) == "closed between lines", \
        f"the stream ended inside a reply after {replies} replies: {closed.value}"
    assert srv.wait_exit() == 0


def test_notify_keyspace_events_is_a_parameter(raw):
    assert raw.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == "OK"
    assert config_get(raw, "notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
    assert raw.call("CONFIG", "SET", "notify-keyspace-events", "") == "OK"
    assert config_get(raw, "notify-keyspace-events") == {"notify-keyspace-events": ""}
