"""Latency tracking (Redis 7.0): the latency-* parameters, INFO latencystats, LATENCY HISTOGRAM
and the latency monitor (LATENCY LATEST / HISTORY / GRAPH / DOCTOR / RESET / HELP).
"""

import re
import time

import pytest

from conftest import Err, parse_info

PERCENTILES = "latency-tracking-info-percentiles"
# LATENCY HISTOGRAM's bucket bounds (µs): the highest value of Redis's HdrHistogram bucket
# holding 1024·2^k ns.
BUCKET_BOUNDS = [(1032 * 2**k - 1) // 1000 for k in range(20)]


def config_get(conn, name) -> str:
    reply = conn.call("CONFIG", "GET", name)
    if isinstance(reply, dict):
        return reply[name.encode()].decode()
    return reply[1].decode()


def failed(param, reason):
    return Err(f"ERR CONFIG SET failed (possibly related to argument '{param}') - {reason}")


def latencystats(conn) -> dict[str, str]:
    return parse_info(conn.call("INFO", "latencystats")).get("latencystats", {})


def as_dict(reply):
    """A map reply as a dict, from RESP3 (a map) or RESP2 (a flat array)."""
    if isinstance(reply, dict):
        return reply
    return dict(zip(reply[0::2], reply[1::2]))


@pytest.fixture
def defaults(server):
    """Put the latency parameters and events back as the shared server had them."""
    yield
    with server.admin() as c:
        c.call("CONFIG", "SET", "latency-tracking", "yes", PERCENTILES, "50 99 99.9",
               "latency-monitor-threshold", "0")
        c.call("LATENCY", "RESET")


# --- parameters --------------------------------------------------------------------------------


def test_parameter_defaults(raw):
    assert config_get(raw, "latency-tracking") == "yes"
    assert config_get(raw, PERCENTILES) == "50 99 99.9"
    assert config_get(raw, "latency-monitor-threshold") == "0"


def test_percentiles_parameter_validation(raw, defaults):
    invalid = "Invalid latency-tracking-info-percentiles parameters"
    out_of_range = "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
    for value, reason in [("50 abc", invalid), ("50  99", invalid), (" ", invalid),
                          ("nan", invalid), ("101", out_of_range), ("-1", out_of_range),
                          ("inf", out_of_range)]:
        assert raw.call("CONFIG", "SET", PERCENTILES, value) == failed(PERCENTILES, reason), value
    assert config_get(raw, PERCENTILES) == "50 99 99.9"
    assert raw.call("CONFIG", "SET", PERCENTILES, "0 100 99.99999 1e1 50.0 5.") == "OK"
    assert config_get(raw, PERCENTILES) == "0 100 99.99999 10 50 5"
    assert raw.call("CONFIG", "SET", PERCENTILES, "") == "OK"
    assert config_get(raw, PERCENTILES) == ""


def test_other_parameters_validation(raw, defaults):
    assert raw.call("CONFIG", "SET", "latency-tracking", "maybe") == failed(
        "latency-tracking", "argument must be 'yes' or 'no'")
    assert raw.call("CONFIG", "SET", "latency-monitor-threshold", "-1") == failed(
        "latency-monitor-threshold", "argument must be between 0 and 9223372036854775807 inclusive")
    assert raw.call("CONFIG", "SET", "latency-monitor-threshold", "x") == failed(
        "latency-monitor-threshold", "argument couldn't be parsed into an integer")
    assert raw.call("CONFIG", "SET", "latency-monitor-threshold", "100") == "OK"
    assert config_get(raw, "latency-monitor-threshold") == "100"


def test_parameters_from_flags_and_file(start_server):
    c = start_server("--latency-monitor-threshold", "7", "--latency-tracking", "no").raw()
    assert config_get(c, "latency-monitor-threshold") == "7"
    assert config_get(c, "latency-tracking") == "no"
    c = start_server(config_text="latency-tracking-info-percentiles 90 99.5\n").raw()
    assert config_get(c, PERCENTILES) == "90 99.5"


# --- INFO latencystats -------------------------------------------------------------------------

FIELD = re.compile(r"p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}")


def test_info_latencystats_lists_called_commands(raw):
    assert raw.call("CONFIG", "RESETSTAT") == "OK"
    for _ in range(3):
        raw.call("SET", "k", "v")
    raw.call("CONFIG", "GET", "maxmemory")
    stats = latencystats(raw)
    assert FIELD.fullmatch(stats["latency_percentiles_usec_set"]), stats
    assert FIELD.fullmatch(stats["latency_percentiles_usec_config|get"]), stats
    assert "latency_percentiles_usec_get" not in stats
    # Percentiles are ordered, and in µs.
    values = [float(v.split("=")[1]) for v in stats["latency_percentiles_usec_set"].split(",")]
    assert values == sorted(values) and 0 < values[0] < 1_000_000


def test_info_latencystats_not_in_default_info(raw):
    raw.call("SET", "k", "v")
    assert "latencystats" not in parse_info(raw.call("INFO"))
    assert "latencystats" in parse_info(raw.call("INFO", "everything"))


def test_resetstat_clears_the_histograms(raw):
    raw.call("SET", "k", "v")
    assert raw.call("CONFIG", "RESETSTAT") == "OK"
    # Only RESETSTAT itself, recorded after it ran.
    assert list(latencystats(raw)) == ["latency_percentiles_usec_config|resetstat"]


def test_info_uses_the_configured_percentiles(raw, defaults):
    raw.call("SET", "k", "v")
    assert raw.call("CONFIG", "SET", PERCENTILES, "0 100 50") == "OK"
    stats = latencystats(raw)
    assert re.fullmatch(r"p0=\d+\.\d{3},p100=\d+\.\d{3},p50=\d+\.\d{3}",
                        stats["latency_percentiles_usec_set"]), stats
    p0, p100, p50 = (float(v.split("=")[1]) for v in stats["latency_percentiles_usec_set"]
                     .split(","))
    assert p0 <= p50 <= p100
    assert raw.call("CONFIG", "SET", PERCENTILES, "") == "OK"
    assert latencystats(raw)["latency_percentiles_usec_set"] == ""


def test_tracking_off_records_nothing(raw, defaults):
    assert raw.call("CONFIG", "SET", "latency-tracking", "no") == "OK"
    raw.call("CONFIG", "RESETSTAT")
    raw.call("SET", "k", "v")
    assert latencystats(raw) == {}
    assert as_dict(raw.call("LATENCY", "HISTOGRAM", "set")) == {}
    # Turned back on, calls count again.
    raw.call("CONFIG", "SET", "latency-tracking", "yes")
    raw.call("SET", "k", "v")
    assert "latency_percentiles_usec_set" in latencystats(raw)


# --- LATENCY HISTOGRAM -------------------------------------------------------------------------


def check_histogram(entry, calls):
    entry = as_dict(entry)
    assert list(entry) == [b"calls", b"histogram_usec"]
    assert entry[b"calls"] == calls
    buckets = as_dict(entry[b"histogram_usec"])
    assert buckets, entry
    bounds, counts = list(buckets), list(buckets.values())
    assert all(b in BUCKET_BOUNDS for b in bounds), bounds
    assert bounds == sorted(bounds)
    # Cumulative: each bucket counts the calls at most that long.
    assert counts == sorted(counts) and len(set(counts)) == len(counts)
    assert counts[-1] == calls


def test_histogram_reply_shape(rawp, protocol):
    rawp.call("CONFIG", "RESETSTAT")
    for i in range(5):
        rawp.call("SET", f"k{i}", "v")
    rawp.call("GET", "k1")
    frame = rawp.call_frame("LATENCY", "HISTOGRAM", "set", "get", "nosuchcommand")
    assert frame.kind == ("%" if protocol == 3 else "*")
    reply = as_dict(frame.py())
    assert list(reply) == [b"set", b"get"]
    check_histogram(reply[b"set"], 5)
    check_histogram(reply[b"get"], 1)
    if protocol == 3:
        assert frame.value[0][1].kind == "%"
    # A container names its subcommands with calls; `container|sub` one of them.
    rawp.call("CONFIG", "GET", "maxmemory")
    for name, want in [("config", {b"config|get", b"config|resetstat"}),
                       ("CONFIG|GET", {b"config|get"})]:
        reply = as_dict(rawp.call("LATENCY", "HISTOGRAM", name))
        assert set(reply) == want, name
        check_histogram(reply[b"config|get"], 1)
    assert as_dict(rawp.call("LATENCY", "HISTOGRAM", "config|nosuch")) == {}
    # Without names: every command with calls.
    everything = as_dict(rawp.call("LATENCY", "HISTOGRAM"))
    assert {b"set", b"get", b"config|get", b"config|resetstat"} <= set(everything)
    check_histogram(everything[b"set"], 5)


def test_histogram_with_redis_py(r):
    r.execute_command("CONFIG", "RESETSTAT")
    r.set("a", "1")
    reply = r.execute_command("LATENCY", "HISTOGRAM", "set")
    if isinstance(reply, list):
        reply = as_dict(reply)
    assert list(reply) == [b"set"]
    check_histogram(reply[b"set"], 1)


# --- the latency monitor -----------------------------------------------------------------------


def test_monitor_disabled(raw, defaults):
    raw.call("LATENCY", "RESET")
    assert raw.call("LATENCY", "LATEST") == []
    assert raw.call("LATENCY", "HISTORY", "command") == []
    assert raw.call("LATENCY", "GRAPH", "command") == Err(
        "ERR No samples available for event 'command'")
    assert raw.call("LATENCY", "RESET") == 0
    assert raw.call("LATENCY", "RESET", "command", "fast-command") == 0
    assert raw.call("LATENCY", "DOCTOR").startswith(
        b"I'm sorry, Dave, I can't do that. Latency monitoring is disabled")
    raw.call("CONFIG", "SET", "latency-monitor-threshold", "1000")
    assert raw.call("LATENCY", "DOCTOR").startswith(
        b"Dave, no latency spike was observed during the lifetime of this Redis instance")


def test_monitor_records_slow_commands(start_server):
    c = start_server().raw(timeout=30)
    assert c.call("CONFIG", "SET", "latency-monitor-threshold", "1") == "OK"
    # One MSET of many keys, then KEYS over them: each takes milliseconds on any machine.
    args = []
    for i in range(50_000):
        args += [f"key:{i}", "v"]
    assert c.call("MSET", *args) == "OK"
    before = int(time.time())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        assert len(c.call("KEYS", "*")) == 50_000
        if any(e[0] == b"command" for e in c.call("LATENCY", "LATEST")):
            break
    latest = {e[0]: e[1:] for e in c.call("LATENCY", "LATEST")}
    assert b"command" in latest, latest
    at, latency_ms, max_ms = latest[b"command"]
    assert before - 60 <= at <= time.time() + 1
    assert 1 <= latency_ms <= max_ms
    history = c.call("LATENCY", "HISTORY", "command")
    assert history and history[-1] == [at, latency_ms]
    assert [h[0] for h in history] == sorted({h[0] for h in history})
    graph = c.call("LATENCY", "GRAPH", "command")
    assert graph.startswith(b"command - high ")
    assert graph.split(b"\n")[1] == b"-" * 80
    report = c.call("LATENCY", "DOCTOR")
    assert b"Dave, I have observed latency spikes in this Redis instance." in report
    assert re.search(rb"\d+\. command: \d+ latency spikes \(average \d+ms, mean deviation "
                     rb"\d+ms, period \d+\.\d\d sec\)\. Worst all time event \d+ms\.", report), report
    assert b"Check your Slow Log" in report
    # RESET names events in any case; each counts once.
    assert c.call("LATENCY", "RESET", "COMMAND", "command") == 1
    assert c.call("LATENCY", "HISTORY", "command") == []


def test_help_and_errors(raw):
    lines = raw.call("LATENCY", "HELP")
    assert lines[0] == "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert "HISTOGRAM [COMMAND ...]" in lines
    assert lines[-2:] == ["HELP", "    Prints this help."]
    assert raw.call("LATENCY", "foo") == Err("ERR unknown subcommand 'foo'. Try LATENCY HELP.")
    assert raw.call("LATENCY") == Err("ERR wrong number of arguments for 'latency' command")
    assert raw.call("LATENCY", "HISTORY") == Err(
        "ERR wrong number of arguments for 'latency|history' command")
    assert raw.call("LATENCY", "GRAPH", "a", "b") == Err(
        "ERR wrong number of arguments for 'latency|graph' command")
    assert raw.call("LATENCY", "LATEST", "x") == Err(
        "ERR wrong number of arguments for 'latency|latest' command")


def test_command_info(raw):
    (entry,) = raw.call("COMMAND", "INFO", "latency")
    assert entry[:6] == [b"latency", -2, [], 0, 0, 0]
    subs = {s[0].decode(): s for s in entry[9]}
    assert sorted(subs) == ["latency|doctor", "latency|graph", "latency|help",
                            "latency|histogram", "latency|history", "latency|latest",
                            "latency|reset"]
    arity = {name: s[1] for name, s in subs.items()}
    assert arity == {"latency|doctor": 2, "latency|graph": 3, "latency|help": 2,
                     "latency|histogram": -2, "latency|history": 3, "latency|latest": 2,
                     "latency|reset": -2}
    assert set(subs["latency|latest"][2]) == {"admin", "noscript", "loading", "stale"}
    assert set(subs["latency|help"][2]) == {"loading", "stale"}
    assert set(subs["latency|reset"][7]) == {b"request_policy:all_nodes",
                                             b"response_policy:all_succeeded"}
