//! Busy scripts without a Lua VM: a fake script is a [`Running`] whose "count hook" the test
//! calls, on the test's thread or on a thread of its own.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use larder_resp::Frame;

use super::*;
use crate::testing::*;

/// A harness whose scripts are busy from their first tick.
fn busy_at_once() -> Harness {
    let mut h = Harness::new();
    assert_eq!(h.run(&["CONFIG", "SET", "busy-reply-threshold", "0"]), ok());
    h
}

#[test]
fn threshold_is_a_parameter_with_redis_alias() {
    let mut h = Harness::new();
    let get = |h: &mut Harness, name: &str| h.run(&["CONFIG", "GET", name]);
    assert_eq!(
        get(&mut h, "busy-reply-threshold"),
        Frame::Array(vec![bulk("busy-reply-threshold"), bulk("5000")])
    );
    assert_eq!(h.run(&["CONFIG", "SET", "lua-time-limit", "100"]), ok());
    assert_eq!(
        get(&mut h, "busy-reply-threshold"),
        Frame::Array(vec![bulk("busy-reply-threshold"), bulk("100")])
    );
    assert_eq!(
        get(&mut h, "lua-time-limit"),
        Frame::Array(vec![bulk("lua-time-limit"), bulk("100")])
    );
    assert!(matches!(
        h.run(&["CONFIG", "SET", "busy-reply-threshold", "-1"]),
        Frame::Error(_)
    ));
}

#[test]
fn commands_get_busy_only_past_the_threshold() {
    let mut h = Harness::new();
    h.run(&["CONFIG", "SET", "busy-reply-threshold", "60"]);
    let server = Arc::clone(&h.server);
    let mut script = server.busy.start(ScriptKind::Eval, 999);
    assert_eq!(script.tick(&server), Ok(()));
    assert_eq!(h.run(&["SET", "k", "v"]), ok(), "under the threshold");
    std::thread::sleep(Duration::from_millis(70));
    assert_eq!(script.tick(&server), Ok(()));
    assert!(server.busy.is_busy());
    assert_eq!(h.run(&["GET", "k"]), err(BUSY_EVAL));
    assert_eq!(h.run(&["PING"]), err(BUSY_EVAL));
    // A command served while busy cannot start another script.
    assert_eq!(h.run(&["EVAL", "return 1", "0"]), err(BUSY_EVAL));
    assert_eq!(h.run(&["FCALL", "f", "0"]), err(BUSY_EVAL));
    drop(script);
    assert!(!server.busy.is_busy());
    assert_eq!(h.run(&["GET", "k"]), bulk("v"));
}

#[test]
fn the_threshold_counts_from_the_request_start_not_the_first_tick() {
    let mut h = Harness::new();
    h.run(&["CONFIG", "SET", "busy-reply-threshold", "60"]);
    let server = Arc::clone(&h.server);
    // A request that started 80 ms ago (a long redis.call before the first tick) is past
    // the threshold at its first tick.
    let started_us = larder_engine::now_us() - 80_000;
    let mut script = server.busy.start_at(ScriptKind::Eval, 999, started_us);
    assert_eq!(script.tick(&server), Ok(()));
    assert!(server.busy.is_busy());
    assert_eq!(h.run(&["GET", "k"]), err(BUSY_EVAL));
    drop(script);
    assert!(!server.busy.is_busy());
    // A clock that stepped back since the start counts as no time run, and the monotonic
    // clock takes over from the first tick.
    let ahead_us = larder_engine::now_us() + 3_600_000_000;
    let mut script = server.busy.start_at(ScriptKind::Eval, 999, ahead_us);
    assert_eq!(script.tick(&server), Ok(()));
    assert!(!server.busy.is_busy(), "a step back is not time run");
    std::thread::sleep(Duration::from_millis(70));
    assert_eq!(script.tick(&server), Ok(()));
    assert!(
        server.busy.is_busy(),
        "past the threshold on the monotonic clock"
    );
}

#[test]
fn allow_busy_commands_run_and_the_rest_are_refused_as_redis_does() {
    let mut h = busy_at_once();
    let server = Arc::clone(&h.server);
    let mut script = server.busy.start(ScriptKind::Function, 999);
    assert_eq!(script.tick(&server), Ok(()));
    assert_eq!(h.run(&["GET", "k"]), err(BUSY_FUNCTION));
    let busy = |f: &Frame| matches!(f, Frame::Error(e) if e.starts_with("BUSY"));
    assert!(!busy(&h.run(&["HELLO", "2"])));
    assert!(!busy(&h.run(&["AUTH", "x"])));
    // A transaction: MULTI is allowed, a refused command fails it, as Redis's rejectCommand.
    assert_eq!(h.run(&["MULTI"]), ok());
    assert_eq!(h.run(&["SET", "k", "v"]), err(BUSY_FUNCTION));
    assert_eq!(h.run(&["DISCARD"]), ok());
    // A refused EXEC discards the transaction and says why.
    assert_eq!(h.run(&["MULTI"]), ok());
    assert_eq!(
        h.run(&["EXEC"]),
        err(&format!(
            "EXECABORT Transaction discarded because of: {BUSY_FUNCTION}"
        ))
    );
    assert!(h.conn.multi.is_none());
    assert_eq!(h.run(&["UNWATCH"]), ok());
    // WATCH would wait for the script's shards; plain SHUTDOWN is refused as Redis does.
    assert_eq!(h.run(&["WATCH", "k"]), err(BUSY_FUNCTION));
    assert_eq!(h.run(&["SHUTDOWN"]), err(BUSY_FUNCTION));
    assert_eq!(h.run(&["shutdown", "now"]), err(BUSY_FUNCTION));
    // Syntax comes first in Redis's SHUTDOWN; ABORT is answered too.
    assert_eq!(h.run(&["SHUTDOWN", "bogus"]), err("ERR syntax error"));
    assert_eq!(
        h.run(&["SHUTDOWN", "NOSAVE", "SAVE"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["SHUTDOWN", "ABORT"]),
        err("ERR No shutdown in progress.")
    );
    assert!(!server.shutdown_requested.load(Ordering::Acquire));
    assert_eq!(h.run(&["INFO", "errorstats"]), err(BUSY_FUNCTION));
    drop(script);
    let Frame::Bulk(stats) = h.run(&["INFO", "errorstats"]) else {
        panic!("INFO is a bulk string")
    };
    let stats = String::from_utf8_lossy(&stats);
    assert!(stats.contains("errorstat_BUSY:count="), "{stats}");
}

#[test]
fn the_scripts_own_client_and_the_loader_are_never_refused() {
    let mut h = busy_at_once();
    let server = Arc::clone(&h.server);
    let mut script = server.busy.start(ScriptKind::Eval, h.conn.id);
    assert_eq!(script.tick(&server), Ok(()));
    assert_eq!(h.run(&["SET", "k", "v"]), ok());
    let mut other = Harness::connect(Arc::clone(&server));
    assert_eq!(other.run(&["GET", "k"]), err(BUSY_EVAL));
    other.conn.loader = true;
    assert_eq!(other.run(&["GET", "k"]), bulk("v"));
    drop(script);
}

#[test]
fn loading_wins_over_busy_as_in_redis() {
    let mut h = busy_at_once();
    let server = Arc::clone(&h.server);
    let mut script = server.busy.start(ScriptKind::Eval, 999);
    assert_eq!(script.tick(&server), Ok(()));
    server.gates.loading.store(true, Ordering::Relaxed);
    assert_eq!(h.run(&["GET", "k"]), err(crate::persistence::LOADING_ERR));
    server.gates.loading.store(false, Ordering::Relaxed);
    assert_eq!(h.run(&["GET", "k"]), err(BUSY_EVAL));
    drop(script);
}

#[test]
fn kill_answers_as_redis_scriptkill() {
    let h = Harness::new();
    let server = &h.server;
    assert_eq!(kill(server, ScriptKind::Eval), Err(Error::Static(NOTBUSY)));
    // Under the threshold a script is not busy: nothing to kill yet.
    let mut script = server.busy.start(ScriptKind::Eval, 1);
    assert_eq!(script.tick(server), Ok(()));
    assert_eq!(kill(server, ScriptKind::Eval), Err(Error::Static(NOTBUSY)));
    server
        .config
        .set_many(&[("busy-reply-threshold", "0")])
        .expect("a valid threshold");
    assert_eq!(script.tick(server), Ok(()));
    // The wrong kind names the command that would kill it.
    assert_eq!(
        kill(server, ScriptKind::Function),
        Err(Error::Static(BUSY_EVAL))
    );
    assert_eq!(script.tick(server), Ok(()));
    assert_eq!(kill(server, ScriptKind::Eval), Ok(()));
    // Killed but not ended yet: killing again is still OK, as in Redis.
    assert_eq!(kill(server, ScriptKind::Eval), Ok(()));
    assert_eq!(script.tick(server), Err(Stop::Killed));
    drop(script);
    assert_eq!(kill(server, ScriptKind::Eval), Err(Error::Static(NOTBUSY)));

    let mut function = server.busy.start(ScriptKind::Function, 2);
    assert_eq!(function.tick(server), Ok(()));
    assert_eq!(
        kill(server, ScriptKind::Eval),
        Err(Error::Static(BUSY_FUNCTION))
    );
    assert_eq!(kill(server, ScriptKind::Function), Ok(()));
    assert_eq!(function.tick(server), Err(Stop::Killed));
}

#[test]
fn a_script_that_wrote_is_unkillable() {
    let h = busy_at_once();
    let server = &h.server;
    let mut script = server.busy.start(ScriptKind::Eval, 1);
    script.wrote();
    assert_eq!(script.tick(server), Ok(()));
    assert_eq!(
        kill(server, ScriptKind::Eval),
        Err(Error::Static(UNKILLABLE))
    );
    // Redis checks the write before the kind.
    assert_eq!(
        kill(server, ScriptKind::Function),
        Err(Error::Static(UNKILLABLE))
    );
    assert_eq!(script.tick(server), Ok(()), "it runs on");
}

#[test]
fn kill_ends_every_killable_script_and_reports_an_unkillable_one() {
    let h = busy_at_once();
    let server = Arc::clone(&h.server);
    let (tx, rx) = mpsc::channel();
    let spawn = |wrote: bool| {
        let (server, tx) = (Arc::clone(&server), tx.clone());
        std::thread::spawn(move || {
            let mut script = server.busy.start(ScriptKind::Eval, 1);
            if wrote {
                script.wrote();
            }
            tx.send(()).expect("the test waits");
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Err(stop) = script.tick(&server) {
                    return Some(stop);
                }
                if wrote && Instant::now() > deadline {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let killable = spawn(false);
    let writer = spawn(true);
    rx.recv().expect("the script started");
    rx.recv().expect("the script started");
    while server.busy.past.load(Ordering::Acquire) < 2 {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        kill(&server, ScriptKind::Eval),
        Err(Error::Static(UNKILLABLE))
    );
    assert_eq!(killable.join().expect("no panic"), Some(Stop::Killed));
    // SHUTDOWN NOSAVE's way out ends the one that wrote.
    server.busy.shutdown();
    assert_eq!(writer.join().expect("no panic"), Some(Stop::Shutdown));
    assert!(!server.busy.is_busy());
}

#[test]
fn shutdown_stops_only_scripts_past_the_threshold() {
    let mut h = Harness::new();
    h.run(&["CONFIG", "SET", "busy-reply-threshold", "50"]);
    let server = &h.server;
    let mut script = server.busy.start(ScriptKind::Eval, 1);
    server.busy.shutdown();
    assert_eq!(
        script.tick(server),
        Ok(()),
        "under the threshold it runs its course"
    );
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(script.tick(server), Err(Stop::Shutdown));
}

/// The whole exchange across threads: a runaway script on its own thread, another client
/// refused with BUSY once it passes the threshold, SCRIPT KILL's path ending it promptly.
#[test]
fn a_runaway_script_on_another_thread_is_refused_around_then_killed() {
    let mut h = Harness::new();
    h.run(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    let server = Arc::clone(&h.server);
    let started = Instant::now();
    let runner = {
        let server = Arc::clone(&server);
        std::thread::spawn(move || {
            let mut script = server.busy.start(ScriptKind::Eval, 7);
            loop {
                if let Err(stop) = script.tick(&server) {
                    return (stop, Instant::now());
                }
                std::hint::spin_loop();
            }
        })
    };
    // Under the threshold other clients run (parallel scripts are larder's, not Redis's).
    assert_eq!(h.run(&["SET", "k", "v"]), ok());
    while !server.busy.is_busy() {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert_eq!(h.run(&["GET", "k"]), err(BUSY_EVAL));
    let killed_at = Instant::now();
    assert_eq!(kill(&server, ScriptKind::Eval), Ok(()));
    let (stop, ended) = runner.join().expect("no panic");
    assert_eq!(stop, Stop::Killed);
    assert!(ended.duration_since(killed_at) < Duration::from_millis(100));
    assert_eq!(h.run(&["GET", "k"]), bulk("v"));
}

#[test]
fn the_pump_runs_past_the_threshold_and_never_reenters() {
    let h = busy_at_once();
    let server = &h.server;
    let calls = Rc::new(Cell::new(0));
    let inner = Rc::new(Cell::new(None));
    {
        let (calls, inner) = (Rc::clone(&calls), Rc::clone(&inner));
        set_pump(Some(Box::new(move |server: &Server| {
            calls.set(calls.get() + 1);
            // A pumped command cannot start a script, but even a tick from inside the pump
            // does not pump again.
            let mut nested = server.busy.start(ScriptKind::Eval, 2);
            inner.set(Some(nested.tick(server)));
        })));
    }
    let mut script = server.busy.start(ScriptKind::Eval, 1);
    assert_eq!(script.tick(server), Ok(()));
    assert_eq!(script.tick(server), Ok(()));
    assert_eq!(calls.get(), 2);
    assert_eq!(inner.get(), Some(Ok(())));
    set_pump(None);
    assert_eq!(script.tick(server), Ok(()));
    assert_eq!(calls.get(), 2);
}

/// A kill that reaches the pump's own command (SCRIPT KILL from another connection of the
/// same thread) ends the script at the end of that tick.
#[test]
fn a_kill_served_by_the_pump_ends_the_script_at_once() {
    let h = busy_at_once();
    let server = &h.server;
    set_pump(Some(Box::new(|server: &Server| {
        kill(server, ScriptKind::Eval).expect("a busy script");
    })));
    let mut script = server.busy.start(ScriptKind::Eval, 1);
    assert_eq!(script.tick(server), Err(Stop::Killed));
    set_pump(None);
}

/// Many threads start, tick and end scripts while one kills: a kill only ever hits a script
/// that was past the threshold, the busy count returns to zero, and no slot stays taken.
#[test]
fn concurrent_scripts_and_kills_keep_the_books_straight() {
    let h = Harness::new();
    h.server
        .config
        .set_many(&[("busy-reply-threshold", "1")])
        .expect("a valid threshold");
    let server = Arc::clone(&h.server);
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..6)
        .map(|t| {
            let (server, stop) = (Arc::clone(&server), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut seed = 0x9e37_79b9_u64 * (t + 1);
                while !stop.load(Ordering::Relaxed) {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let kind = if (seed >> 8) % 2 == 0 {
                        ScriptKind::Eval
                    } else {
                        ScriptKind::Function
                    };
                    let mut script = server.busy.start(kind, t);
                    if (seed >> 16) % 5 == 0 {
                        script.wrote();
                    }
                    for _ in 0..(seed >> 24) % 8 {
                        match script.tick(&server) {
                            Ok(()) => std::thread::sleep(Duration::from_micros(300)),
                            Err(Stop::Killed) => {
                                let w = script.slot.word.load(Ordering::Acquire);
                                assert_ne!(w & PAST, 0, "killed under the threshold");
                                assert_eq!(w & WROTE, 0, "killed after it wrote");
                                break;
                            }
                            Err(Stop::Shutdown) => unreachable!(),
                        }
                    }
                }
            })
        })
        .collect();
    // Kill for a while, and at least until some kill has landed (under load the scripts
    // pass the threshold more slowly).
    let started = Instant::now();
    let mut landed = false;
    while started.elapsed() < Duration::from_millis(300)
        || (!landed && started.elapsed() < Duration::from_secs(20))
    {
        landed |= kill(&server, ScriptKind::Eval).is_ok();
        landed |= kill(&server, ScriptKind::Function).is_ok();
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("no panic");
    }
    assert!(landed, "no kill found a busy script");
    assert!(!server.busy.is_busy());
    assert!(server
        .busy
        .slots
        .iter()
        .all(|s| s.word.load(Ordering::Acquire) & TAKEN == 0));
}

#[test]
fn script_kill_and_function_kill_reach_the_busy_scripts() {
    let mut h = busy_at_once();
    let server = Arc::clone(&h.server);
    assert_eq!(h.run(&["SCRIPT", "KILL"]), err(NOTBUSY));
    assert_eq!(h.run(&["FUNCTION", "KILL"]), err(NOTBUSY));
    let mut script = server.busy.start(ScriptKind::Eval, 999);
    assert_eq!(script.tick(&server), Ok(()));
    assert_eq!(h.run(&["FUNCTION", "KILL"]), err(BUSY_EVAL));
    // Redis refuses FUNCTION STATS while an EVAL script is busy.
    assert_eq!(h.run(&["FUNCTION", "STATS"]), err(BUSY_EVAL));
    assert_eq!(h.run(&["SCRIPT", "KILL"]), ok());
    assert_eq!(script.tick(&server), Err(Stop::Killed));
    drop(script);
    let mut function = server.busy.start(ScriptKind::Function, 999);
    function.describe("myfunc", &[b"FCALL", b"myfunc", b"0", b"x"]);
    assert_eq!(server.busy.running_function(), None, "not busy yet");
    assert_eq!(function.tick(&server), Ok(()));
    let (name, argv, duration_ms) = server.busy.running_function().expect("busy");
    assert_eq!(name, "myfunc");
    assert_eq!(
        argv,
        vec![
            b"FCALL".to_vec(),
            b"myfunc".to_vec(),
            b"0".to_vec(),
            b"x".to_vec()
        ]
    );
    assert!(duration_ms < 10_000);
    let Frame::Array(stats) = h.run(&["FUNCTION", "STATS"]) else {
        panic!("FUNCTION STATS is a map (an array in RESP2)")
    };
    assert_eq!(stats[0], bulk("running_script"));
    assert_eq!(h.run(&["SCRIPT", "KILL"]), err(BUSY_FUNCTION));
    function.wrote();
    assert_eq!(h.run(&["FUNCTION", "KILL"]), err(UNKILLABLE));
    assert_eq!(function.tick(&server), Ok(()));
    drop(function);
    // The description buffers are reused: a shorter command leaves nothing behind.
    let mut again = server.busy.start(ScriptKind::Function, 999);
    again.describe("g", &[b"FCALL", b"g"]);
    assert_eq!(again.tick(&server), Ok(()));
    let (name, argv, _) = server.busy.running_function().expect("busy");
    assert_eq!((name.as_str(), argv.len()), ("g", 2));
}
