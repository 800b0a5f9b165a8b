"""A runaway script: BUSY past `busy-reply-threshold`, SCRIPT KILL / FUNCTION KILL, UNKILLABLE
after a write, SHUTDOWN NOSAVE. Each test runs with one worker thread (the killer shares the
script's thread: the server answers it from inside the script's hook) and with two.
"""

from __future__ import annotations

import time

import pytest

from conftest import Err

BUSY_EVAL = Err("BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
                "SHUTDOWN NOSAVE.")
BUSY_FUNCTION = Err("BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
                    "SHUTDOWN NOSAVE.")
NOTBUSY = Err("NOTBUSY No scripts in execution right now.")
UNKILLABLE = Err("UNKILLABLE Sorry the script already executed write commands against the "
                 "dataset. You can either wait the script termination or kill the server in a "
                 "hard way using the SHUTDOWN NOSAVE command.")
KILLED = "ERR Script killed by user with SCRIPT KILL..."
THRESHOLD_MS = 100

LOOP_LIB = """#!lua name=looplib
redis.register_function('spin', function(keys, args) while true do end end)
"""


@pytest.fixture(params=[1, 2], ids=["threads1", "threads2"])
def srv(request, start_server):
    s = start_server("--threads", str(request.param))
    with s.admin() as admin:
        assert admin.call("CONFIG", "SET", "busy-reply-threshold", str(THRESHOLD_MS)) == "OK"
    return s


def start_runaway(srv, *command):
    """Send `command` (a script that never ends) and return its connection once another
    client is refused with BUSY, with the time that took."""
    runner = srv.raw(timeout=10)
    sent = time.monotonic()
    runner.send_command(*command)
    probe = srv.raw()
    deadline = sent + 5
    while True:
        reply = probe.call("PING")
        if reply != "PONG":
            break
        assert time.monotonic() < deadline, "never busy"
        time.sleep(0.01)
    return runner, reply, time.monotonic() - sent


def test_busy_after_the_threshold_then_script_kill(srv):
    runner, reply, waited = start_runaway(srv, "EVAL", "while true do end", "0")
    assert reply == BUSY_EVAL
    # Loosely: not before the threshold (the probe's own round trips are not counted).
    assert waited >= THRESHOLD_MS / 1000 * 0.9
    other = srv.raw()
    assert other.call("GET", "k") == BUSY_EVAL
    assert other.call("SET", "k", "v") == BUSY_EVAL
    assert other.call("EVAL", "return 1", "0") == BUSY_EVAL
    assert other.call("FUNCTION", "KILL") == BUSY_EVAL
    assert other.call("FUNCTION", "STATS") == BUSY_EVAL
    assert other.call("SHUTDOWN") == BUSY_EVAL
    # Pipelined requests are each answered.
    other.send(other.encode("PING") * 3)
    assert [other.read_reply() for _ in range(3)] == [BUSY_EVAL] * 3
    # A client that connects while the script runs is served too.
    assert srv.raw().call("INFO") == BUSY_EVAL
    started = time.monotonic()
    assert other.call("SCRIPT", "KILL") == "OK"
    killed = runner.read_reply()
    assert isinstance(killed, Err) and killed.startswith(KILLED), killed
    assert time.monotonic() - started < 0.5
    assert other.call("GET", "k") is None
    assert other.call("SCRIPT", "KILL") == NOTBUSY
    assert runner.call("PING") == "PONG"


def test_the_scripts_client_keeps_what_it_sent_meanwhile(srv):
    runner, reply, _ = start_runaway(srv, "EVAL", "while true do end", "0")
    assert reply == BUSY_EVAL
    # Sent by the script's own client while its script runs: served after it, in order.
    runner.send(runner.encode("SET", "after", "1") + runner.encode("GET", "after"))
    time.sleep(0.05)
    assert srv.raw().call("SCRIPT", "KILL") == "OK"
    assert runner.read_reply().startswith(KILLED)
    assert runner.read_reply() == "OK"
    assert runner.read_reply() == b"1"


def test_a_transaction_started_while_busy_is_discarded(srv):
    runner, _, _ = start_runaway(srv, "EVAL", "while true do end", "0")
    tx = srv.raw()
    assert tx.call("MULTI") == "OK"
    assert tx.call("SET", "k", "v") == BUSY_EVAL
    # A refused EXEC discards the transaction and says why.
    assert tx.call("EXEC") == Err(f"EXECABORT Transaction discarded because of: {BUSY_EVAL}")
    assert tx.call("MULTI") == "OK"
    assert tx.call("SET", "k", "v") == BUSY_EVAL
    assert srv.raw().call("SCRIPT", "KILL") == "OK"
    assert runner.read_reply().startswith(KILLED)
    assert tx.call("EXEC") == Err("EXECABORT Transaction discarded because of previous errors.")
    assert tx.call("GET", "k") is None
    assert tx.call("EXEC") == Err("ERR EXEC without MULTI")


def test_a_client_that_leaves_while_busy_is_gone_after(srv):
    with srv.admin() as admin:
        before = admin.call("CLIENT", "LIST").count(b"\n")
    runner, _, _ = start_runaway(srv, "EVAL", "while true do end", "0")
    leaving = srv.raw()
    assert leaving.call("PING") == BUSY_EVAL
    leaving.close()
    time.sleep(0.05)
    assert srv.raw().call("SCRIPT", "KILL") == "OK"
    assert runner.read_reply().startswith(KILLED)
    srv.close_clients()
    with srv.admin() as admin:
        deadline = time.monotonic() + 2
        while admin.call("CLIENT", "LIST").count(b"\n") > before:
            assert time.monotonic() < deadline
            time.sleep(0.01)


def test_a_script_that_wrote_is_unkillable_and_shutdown_nosave_stops_the_server(srv):
    runner, reply, _ = start_runaway(
        srv, "EVAL", "redis.call('SET', 'x', '1') while true do end", "0")
    assert reply == BUSY_EVAL
    other = srv.raw()
    assert other.call("SCRIPT", "KILL") == UNKILLABLE
    assert other.call("FUNCTION", "KILL") == UNKILLABLE
    assert other.call("SHUTDOWN") == BUSY_EVAL
    assert other.call("SHUTDOWN", "SAVE") == BUSY_EVAL
    assert other.call("SHUTDOWN", "BOGUS") == Err("ERR syntax error")
    other.send_command("SHUTDOWN", "NOSAVE")
    assert other.is_closed(timeout=5)
    srv.wait_exit(timeout=10)


def test_a_busy_function_and_function_kill(srv):
    with srv.admin() as admin:
        assert admin.call("FUNCTION", "LOAD", LOOP_LIB) == b"looplib"
    runner, reply, _ = start_runaway(srv, "FCALL", "spin", "0")
    assert reply == BUSY_FUNCTION
    other = srv.raw()
    assert other.call("GET", "k") == BUSY_FUNCTION
    assert other.call("SCRIPT", "KILL") == BUSY_FUNCTION
    stats = other.call("FUNCTION", "STATS")
    running = dict(zip(stats[0::2], stats[1::2]))[b"running_script"]
    assert running is not None
    running = dict(zip(running[0::2], running[1::2]))
    assert set(running) == {b"name", b"command", b"duration_ms"}
    assert running[b"duration_ms"] >= THRESHOLD_MS * 0.9
    assert other.call("FUNCTION", "KILL") == "OK"
    killed = runner.read_reply()
    assert isinstance(killed, Err) and killed.startswith(KILLED), killed
    assert other.call("FUNCTION", "KILL") == NOTBUSY


@pytest.mark.larder_only
def test_sigterm_stops_a_busy_server(srv):
    runner, reply, _ = start_runaway(srv, "EVAL", "while true do end", "0")
    assert reply == BUSY_EVAL
    srv.stop(timeout=10)
