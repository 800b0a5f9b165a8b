"""Server commands (issue 2, section 3): INFO, COMMAND (COUNT INFO DOCS LIST GETKEYS), TIME,
MEMORY USAGE, SLOWLOG, DBSIZE, SHUTDOWN. CONFIG is in test_config.py.
"""

import re
import time

import pytest

from conftest import Err, RawConn, make_non_string, parse_info, wait_until

# --- INFO --------------------------------------------------------------------------------------

# Fields that monitoring tools and client libraries read, by section.
INFO_FIELDS = {
    "server": ["redis_version", "redis_mode", "os", "arch_bits", "process_id", "run_id",
               "tcp_port", "server_time_usec", "uptime_in_seconds", "uptime_in_days", "hz",
               "configured_hz", "executable", "config_file"],
    "clients": ["connected_clients", "maxclients", "blocked_clients"],
    "memory": ["used_memory", "used_memory_human", "used_memory_rss", "used_memory_rss_human",
               "used_memory_peak", "used_memory_peak_human", "maxmemory", "maxmemory_human",
               "maxmemory_policy", "mem_fragmentation_ratio", "mem_allocator"],
    "persistence": ["loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress",
                    "rdb_last_save_time", "rdb_last_bgsave_status", "aof_enabled",
                    "aof_rewrite_in_progress"],
    "stats": ["total_connections_received", "total_commands_processed",
              "instantaneous_ops_per_sec", "total_net_input_bytes", "total_net_output_bytes",
              "rejected_connections", "expired_keys", "evicted_keys", "keyspace_hits",
              "keyspace_misses", "total_error_replies"],
    "replication": ["role", "connected_slaves", "master_replid", "master_repl_offset"],
    "cpu": ["used_cpu_sys", "used_cpu_user"],
}


def info(conn, *sections):
    return parse_info(conn.call("INFO", *sections))


def test_info_default_sections(raw):
    sections = info(raw)
    for name in ("server", "clients", "memory", "persistence", "stats", "replication", "cpu",
                 "errorstats", "keyspace"):
        assert name in sections, name
    # commandstats is only in INFO all / everything / commandstats.
    assert "commandstats" not in sections


@pytest.mark.parametrize("section", sorted(INFO_FIELDS))
def test_info_section_fields(raw, section):
    sections = info(raw, section)
    assert list(sections) == [section]
    fields = sections[section]
    for name in INFO_FIELDS[section]:
        assert name in fields, f"{section}: {name} missing"


def test_info_section_names_are_case_insensitive(raw):
    assert list(info(raw, "SERVER")) == ["server"]
    assert list(info(raw, "Clients")) == ["clients"]


def test_info_multiple_sections(raw):
    assert set(info(raw, "server", "keyspace", "cpu")) == {"server", "cpu", "keyspace"}


def test_info_all_and_everything(raw):
    raw.call("SET", "k", "v")
    for arg in ("all", "everything"):
        sections = info(raw, arg)
        for name in ("server", "clients", "memory", "stats", "commandstats", "errorstats",
                     "keyspace"):
            assert name in sections, (arg, name)


def test_info_unknown_section_is_empty(raw):
    assert raw.call("INFO", "nosuchsection") == b""


def test_info_server_values(server):
    c = server.raw()
    s = info(c, "server")["server"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", s["redis_version"])
    assert int(s["redis_version"].split(".")[0]) >= 7
    assert s["redis_mode"] == "standalone"
    assert s["tcp_port"] == str(server.port)
    assert s["process_id"] == str(server.proc.pid)
    assert re.fullmatch(r"[0-9a-f]{40}", s["run_id"])
    assert int(s["uptime_in_seconds"]) >= 0
    assert abs(int(s["server_time_usec"]) / 1e6 - time.time()) < 5
    assert s["arch_bits"] == "64"


@pytest.mark.larder_only
def test_info_larder_version(raw):
    s = info(raw, "server")["server"]
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", s["larder_version"])


def test_info_clients_counts_connections(server):
    admin = server.raw()

    def opening_three_adds_three():
        # Earlier tests' connections on the shared server may still be closing (the server
        # learns of a close asynchronously), so the count is retried until it holds still.
        before = int(info(admin, "clients")["clients"]["connected_clients"])
        extra = [server.raw() for _ in range(3)]
        for c in extra:
            c.call("PING")
        after = int(info(admin, "clients")["clients"]["connected_clients"])
        for c in extra:
            c.close()
        return after == before + 3

    assert wait_until(opening_three_adds_three, timeout=5)
    assert info(admin, "clients")["clients"]["maxclients"] == "10000"


def test_info_keyspace(server):
    c = server.raw()
    assert info(c, "keyspace")["keyspace"] == {}
    c.call("MSET", "a", "1", "b", "2")
    c.call("SET", "c", "3", "EX", "100")
    c.call("SELECT", "3")
    c.call("SET", "x", "1")
    ks = info(c, "keyspace")["keyspace"]
    assert set(ks) == {"db0", "db3"}
    assert re.fullmatch(r"keys=3,expires=1,avg_ttl=\d+", ks["db0"])
    assert re.fullmatch(r"keys=1,expires=0,avg_ttl=0", ks["db3"])


def test_info_stats_hits_misses(start_server):
    c = start_server().raw()
    c.call("SET", "k", "v")
    c.call("GET", "k")
    c.call("GET", "k")
    c.call("GET", "missing")
    c.call("MGET", "k", "missing")
    stats = info(c, "stats")["stats"]
    assert stats["keyspace_hits"] == "3"
    assert stats["keyspace_misses"] == "2"


def test_info_stats_counters(start_server):
    srv = start_server()
    c = srv.raw()
    stats = info(c, "stats")["stats"]
    base_conn = int(stats["total_connections_received"])
    base_cmds = int(stats["total_commands_processed"])
    for _ in range(10):
        c.call("PING")
    other = srv.raw()
    other.call("PING")
    stats = info(c, "stats")["stats"]
    assert int(stats["total_connections_received"]) == base_conn + 1
    # 10 PINGs here, 1 there, and the INFO that produced the first snapshot.
    assert int(stats["total_commands_processed"]) == base_cmds + 12
    assert int(stats["total_net_input_bytes"]) > 0
    assert int(stats["total_net_output_bytes"]) > 0


def test_info_commandstats(start_server):
    c = start_server().raw()
    c.call("SET", "k", "v")
    c.call("GET", "k")
    c.call("GET", "k")
    c.call("GET")  # rejected: wrong arity
    c.call("INCR", "k")  # failed: not an integer
    c.call("CLIENT", "ID")
    stats = info(c, "commandstats")["commandstats"]
    pattern = (r"calls=(\d+),usec=(\d+),usec_per_call=(\d+\.\d\d),rejected_calls=(\d+),"
               r"failed_calls=(\d+)")
    parsed = {k: re.fullmatch(pattern, v) for k, v in stats.items()}
    assert all(parsed.values()), stats
    assert parsed["cmdstat_get"].group(1) == "2"
    assert parsed["cmdstat_get"].group(4) == "1"
    assert parsed["cmdstat_set"].group(1) == "1"
    assert parsed["cmdstat_incr"].group(1) == "1"
    assert parsed["cmdstat_incr"].group(5) == "1"
    assert parsed["cmdstat_client|id"].group(1) == "1"


def test_info_errorstats(start_server):
    c = start_server().raw()
    # The fixture's readiness probe may have met -LOADING (an error reply too) at startup.
    before = int(info(c, "stats")["stats"]["total_error_replies"])
    c.call("GET")
    c.call("INCR", "x", "y")
    c.call("SET", "s", "x")
    c.call("INCR", "s")
    stats = info(c, "errorstats")["errorstats"]
    assert stats["errorstat_ERR"] == "count=3"
    total = info(c, "stats")["stats"]["total_error_replies"]
    assert int(total) - before == 3


def test_info_errorstats_wrongtype(start_server):
    c = start_server().raw()
    make_non_string(c, "l")
    c.call("GET", "l")
    assert info(c, "errorstats")["errorstats"]["errorstat_WRONGTYPE"] == "count=1"


def test_info_replication_master(raw):
    rep = info(raw, "replication")["replication"]
    assert rep["role"] == "master"
    assert rep["connected_slaves"] == "0"
    assert re.fullmatch(r"[0-9a-f]{40}", rep["master_replid"])


def test_info_memory_values(raw):
    mem = info(raw, "memory")["memory"]
    assert int(mem["used_memory"]) > 0
    assert int(mem["used_memory_rss"]) > 0
    assert mem["maxmemory"] == "0"
    assert mem["maxmemory_policy"] == "noeviction"
    assert re.fullmatch(r"\d+(\.\d+)?[BKMGTP]", mem["used_memory_human"])


def test_info_redis_py(r):
    parsed = r.info()
    assert "redis_version" in parsed
    assert r.info("keyspace") == {}
    r.set("k", "v")
    assert r.info("keyspace")["db0"]["keys"] == 1


def test_info_resp3_is_verbatim(rawp, protocol):
    f = rawp.call_frame("INFO", "server")
    assert f.kind == ("=" if protocol == 3 else "$")


# --- COMMAND -----------------------------------------------------------------------------------


def test_command_count(rawp):
    count = rawp.call("COMMAND", "COUNT")
    assert isinstance(count, int) and count > 50
    assert count == len(rawp.call("COMMAND"))


def test_command_list(rawp):
    names = rawp.call("COMMAND", "LIST")
    assert isinstance(names, list)
    for name in (b"get", b"set", b"scan", b"client", b"config", b"hello", b"lcs"):
        assert name in names
    assert len(names) == len(set(names))
    assert all(n == n.lower() for n in names)


def test_command_list_filterby(raw):
    assert set(raw.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "getd*")) == {b"getdel"}
    keyspace = set(raw.call("COMMAND", "LIST", "FILTERBY", "ACLCAT", "keyspace"))
    assert {b"del", b"expire", b"scan", b"rename"} <= keyspace
    assert b"get" not in keyspace
    assert raw.call("COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch") == []
    assert raw.call("COMMAND", "LIST", "FILTERBY", "MODULE", "nosuch") == []
    assert raw.call("COMMAND", "LIST", "FILTERBY", "FOO", "x") == Err("ERR syntax error")
    assert raw.call("COMMAND", "LIST", "x") == Err("ERR syntax error")


@pytest.mark.parametrize("name, arity, flags, first, last, step, categories", [
    (b"get", 2, {"readonly", "fast"}, 1, 1, 1, {"@read", "@string", "@fast"}),
    (b"set", -3, {"write", "denyoom"}, 1, 1, 1, {"@write", "@string", "@slow"}),
    (b"mset", -3, {"write", "denyoom"}, 1, -1, 2, {"@write", "@string", "@slow"}),
    (b"del", -2, {"write"}, 1, -1, 1, {"@keyspace", "@write", "@slow"}),
    (b"ping", -1, {"fast"}, 0, 0, 0, {"@fast", "@connection"}),
    (b"lcs", -3, {"readonly"}, 1, 2, 1, {"@read", "@string", "@slow"}),
])
def test_command_info(rawp, name, arity, flags, first, last, step, categories):
    [entry] = rawp.call("COMMAND", "INFO", name)
    assert entry[0] == name
    assert entry[1] == arity
    assert flags <= set(entry[2])
    assert (entry[3], entry[4], entry[5]) == (first, last, step)
    assert categories <= set(entry[6])
    assert len(entry) == 10  # name arity flags first last step acl tips key-specs subcommands


def test_command_info_missing_and_many(rawp):
    reply = rawp.call("COMMAND", "INFO", "get", "nosuchcommand", "SET")
    assert reply[0][0] == b"get"
    assert reply[1] is None
    assert reply[2][0] == b"set"


def test_command_info_subcommands(raw):
    [entry] = raw.call("COMMAND", "INFO", "client")
    subs = {s[0] for s in entry[9]}
    for sub in (b"client|id", b"client|kill", b"client|list", b"client|setname"):
        assert sub in subs


def test_command_docs(rawp, protocol):
    f = rawp.call_frame("COMMAND", "DOCS", "get")
    assert f.kind == ("%" if protocol == 3 else "*")
    reply = f.py()
    docs = reply if isinstance(reply, dict) else dict(zip(reply[0::2], reply[1::2]))
    get_doc = docs[b"get"]
    if not isinstance(get_doc, dict):
        get_doc = dict(zip(get_doc[0::2], get_doc[1::2]))
    assert get_doc[b"summary"]
    assert get_doc[b"since"] == b"1.0.0"
    assert get_doc[b"group"] == b"string"
    assert rawp.call("COMMAND", "DOCS", "nosuchcommand") in ([], {})


def test_command_getkeys(raw):
    assert raw.call("COMMAND", "GETKEYS", "SET", "a", "b") == [b"a"]
    assert raw.call("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2") == [b"a", b"b"]
    assert raw.call("COMMAND", "GETKEYS", "COPY", "a", "b", "DB", "1") == [b"a", b"b"]
    assert raw.call("COMMAND", "GETKEYS", "LCS", "a", "b") == [b"a", b"b"]
    assert raw.call("COMMAND", "GETKEYS", "DEL", "a", "b", "c") == [b"a", b"b", b"c"]
    assert raw.call("COMMAND", "GETKEYS", "MSET", "a") == Err(
        "ERR Invalid number of arguments specified for command")


@pytest.mark.parametrize("argv,keys", [
    (["SINTERCARD", "2", "a", "b"], [b"a", b"b"]),
    (["LMPOP", "2", "a", "b", "LEFT"], [b"a", b"b"]),
    (["BLMPOP", "0", "2", "a", "b", "LEFT", "COUNT", "3"], [b"a", b"b"]),
    (["SINTERCARD", "3", "a", "b"], None),
    (["GEORADIUS", "src", "0", "0", "1", "km", "STORE", "dst"], [b"src", b"dst"]),
    (["GEORADIUSBYMEMBER", "src", "m", "1", "km", "STOREDIST", "dst"], [b"src", b"dst"]),
])
def test_command_getkeys_after_numkeys(raw, argv, keys):
    want = keys if keys is not None else Err("ERR Invalid arguments specified for command")
    assert raw.call("COMMAND", "GETKEYS", *argv) == want


def test_command_redis_py(r):
    assert r.command_count() > 50
    assert b"get" in r.command_list()


def test_command_help_and_errors(raw):
    help_lines = raw.call("COMMAND", "HELP")
    assert help_lines[0] == "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert raw.call("COMMAND", "FOO") == Err("ERR unknown subcommand 'FOO'. Try COMMAND HELP.")
    assert raw.call("COMMAND", "COUNT", "x") == Err(
        "ERR wrong number of arguments for 'command|count' command")


# --- TIME --------------------------------------------------------------------------------------


def test_time(rawp):
    f = rawp.call_frame("TIME")
    assert f.kind == "*"
    assert [x.kind for x in f.value] == ["$", "$"]
    secs, usecs = (int(x.value) for x in f.value)
    assert abs(secs + usecs / 1e6 - time.time()) < 2
    assert 0 <= usecs < 1_000_000


def test_time_redis_py(r):
    secs, usecs = r.time()
    assert abs(secs - time.time()) < 2


def test_time_arity(raw):
    assert raw.call("TIME", "x") == Err("ERR wrong number of arguments for 'time' command")


# --- MEMORY USAGE ------------------------------------------------------------------------------


def test_memory_usage(r):
    r.set("small", "v")
    r.set("big", "x" * 100_000)
    small = r.execute_command("MEMORY", "USAGE", "small")
    big = r.memory_usage("big")
    assert 0 < small < 1000
    assert 100_000 <= big < 200_000
    assert r.execute_command("MEMORY", "USAGE", "missing") is None
    assert r.execute_command("MEMORY", "USAGE", "small", "SAMPLES", "0") == small


def test_memory_usage_errors(raw):
    raw.call("SET", "k", "v")
    assert raw.call("MEMORY", "USAGE", "k", "SAMPLES", "x") == Err(
        "ERR value is not an integer or out of range")
    assert raw.call("MEMORY", "USAGE", "k", "FOO") == Err("ERR syntax error")
    assert raw.call("MEMORY", "USAGE") == Err(
        "ERR wrong number of arguments for 'memory|usage' command")
    assert raw.call("MEMORY", "FOO") == Err("ERR unknown subcommand 'FOO'. Try MEMORY HELP.")


def test_memory_help(raw):
    lines = raw.call("MEMORY", "HELP")
    assert lines[0] == "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert any(line.startswith("USAGE <key>") for line in lines)


# --- SLOWLOG -----------------------------------------------------------------------------------


@pytest.fixture
def slow_server(start_server):
    return start_server("--slowlog-log-slower-than", "0", "--slowlog-max-len", "5")


def test_slowlog_records_commands(slow_server):
    c = slow_server.raw()
    c.call("SLOWLOG", "RESET")
    c.call("CLIENT", "SETNAME", "slow-client")
    c.call("SET", "k", "v")
    entries = c.call("SLOWLOG", "GET")
    assert entries[0][3] == [b"SET", b"k", b"v"]
    assert entries[1][3] == [b"CLIENT", b"SETNAME", b"slow-client"]
    eid, ts, duration_us, args, addr, name = entries[0]
    assert eid > entries[1][0]
    assert abs(ts - time.time()) < 5
    assert isinstance(duration_us, int) and duration_us >= 0
    host, port = c.sock.getsockname()
    assert addr == f"{host}:{port}".encode()
    assert name == b"slow-client"


def test_slowlog_len_max_len_and_reset(slow_server):
    c = slow_server.raw()
    c.call("SLOWLOG", "RESET")
    for i in range(10):
        c.call("SET", f"k{i}", "v")
    assert c.call("SLOWLOG", "LEN") == 5
    entries = c.call("SLOWLOG", "GET", "-1")
    assert len(entries) == 5
    # Newest first. Redis also logs SLOWLOG LEN itself, so the newest entry may be that.
    sets = [e[3][1] for e in entries if e[3][0] == b"SET"]
    assert len(sets) >= 4
    assert sets == [b"k9", b"k8", b"k7", b"k6", b"k5"][: len(sets)]
    assert len(c.call("SLOWLOG", "GET", "2")) == 2
    assert c.call("SLOWLOG", "RESET") == "OK"
    assert c.call("SLOWLOG", "LEN") in (0, 1)  # SLOWLOG RESET may log itself


def test_slowlog_argument_truncation(slow_server):
    c = slow_server.raw()
    c.call("MSET", *(["x"] * 40))
    c.call("SET", "a" * 200, "b")
    set_entry, mset_entry = c.call("SLOWLOG", "GET", "2")
    assert set_entry[3] == [b"SET", b"a" * 128 + b"... (72 more bytes)", b"b"]
    assert len(mset_entry[3]) == 32
    assert mset_entry[3][-1] == b"... (10 more arguments)"


def test_slowlog_threshold(start_server):
    c = start_server("--slowlog-log-slower-than", "1000000").raw()
    c.call("SLOWLOG", "RESET")
    c.call("SET", "k", "v")
    assert c.call("SLOWLOG", "LEN") == 0
    # A negative threshold disables the slow log.
    c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1")
    c.call("SET", "k", "v")
    assert c.call("SLOWLOG", "LEN") == 0


def test_slowlog_errors(raw):
    assert raw.call("SLOWLOG", "GET", "-2") == Err("ERR count should be greater than or equal to -1")
    assert raw.call("SLOWLOG", "GET", "x") == Err("ERR count should be greater than or equal to -1")
    assert raw.call("SLOWLOG", "FOO") == Err("ERR unknown subcommand 'FOO'. Try SLOWLOG HELP.")
    lines = raw.call("SLOWLOG", "HELP")
    assert lines[0] == "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"


# --- DBSIZE SHUTDOWN ---------------------------------------------------------------------------


def test_dbsize_per_db(raw):
    raw.call("MSET", "a", "1", "b", "2")
    assert raw.call("DBSIZE") == 2
    raw.call("SELECT", "9")
    assert raw.call("DBSIZE") == 0


@pytest.mark.parametrize("args", [[], ["NOSAVE"], ["SAVE"], ["NOW"], ["FORCE"],
                                  ["NOSAVE", "NOW", "FORCE"]])
def test_shutdown_exits_zero(start_server, args):
    srv = start_server()
    c = srv.raw()
    c.call("SET", "k", "v")
    c.send_command("SHUTDOWN", *args)
    assert c.is_closed(timeout=10)
    assert c.buf == b"", "SHUTDOWN replied instead of closing the connection"
    assert srv.wait_exit() == 0


def test_shutdown_errors(raw):
    assert raw.call("SHUTDOWN", "FOO") == Err("ERR syntax error")
    assert raw.call("SHUTDOWN", "NOSAVE", "SAVE") == Err("ERR syntax error")
    assert raw.call("PING") == "PONG"


def test_sigterm_exits_zero_with_clients_connected(start_server):
    srv = start_server()
    clients = [srv.raw() for _ in range(5)]
    for c in clients:
        c.call("PING")
    assert srv.stop() == 0


def test_server_survives_abrupt_disconnects(server):
    for _ in range(50):
        c = RawConn(server.port)
        c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc")
        c.sock.close()
    with server.raw() as c:
        assert c.call("PING") == "PONG"


# --- MEMORY DOCTOR / MALLOC-STATS / PURGE, COMMAND GETKEYSANDFLAGS ----------------------------


def test_memory_doctor_malloc_stats_purge(raw):
    doctor = raw.call("MEMORY", "DOCTOR")
    assert isinstance(doctor, bytes) and doctor
    stats = raw.call("MEMORY", "MALLOC-STATS")
    assert isinstance(stats, bytes)
    assert raw.call("MEMORY", "PURGE") == "OK"


def test_command_getkeysandflags(raw):
    reply = raw.call("COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v")
    assert len(reply) == 1
    key, flags = reply[0]
    assert key == b"k"
    assert b"update" in {f if isinstance(f, bytes) else f.encode() for f in flags}
    assert raw.call("COMMAND", "GETKEYSANDFLAGS", "PING", "hello") == Err(
        "ERR The command has no key arguments")
