//! Fuzzes the command handlers: commands built from the input run through `execute` on a
//! socket-free server (`larder_commands::testing::Harness`), as a connection would run them
//! after parsing. Nothing a client sends may panic the server, and every reply must be
//! well-formed RESP.
//!
//! Input: one command per line, arguments separated by spaces. A first token of one byte picks
//! a command from the table by index (so every command is reachable without spelling it);
//! argument tokens `#k` become one of a few shared key names, so commands meet each other's
//! keys and types; MULTI/EXEC, WATCH, the pub/sub commands and MONITOR run like any other.
//! A last token that starts with `@` is passed the way a connection passes a
//! large last argument it read into a buffer of its own (`ConnState::owned_arg`), so SET and
//! friends store it shared and later commands read, grow and send it. The keyspace is flushed
//! before each input.
//!
//! Left out, because they are meant to stop or stall the caller, not because they may panic:
//! `CLIENT PAUSE` (its held commands are the connection's business) and `DEBUG`. `CONFIG SET`
//! is limited to parameters that cannot make a later command allocate gigabytes.

#![no_main]

use std::sync::{Arc, Mutex, OnceLock};

use larder_commands::config::Config;
use larder_commands::testing::Harness;
use libfuzzer_sys::fuzz_target;

const KEYS: [&[u8]; 4] = [b"k", b"list", b"{k}2", b""];

/// One server for the whole run, in a static so that it is never dropped: the command table
/// leaks its names on purpose, and LeakSanitizer would report them once a drop made them
/// unreachable.
static HARNESS: OnceLock<Mutex<Harness>> = OnceLock::new();

fn harness() -> &'static Mutex<Harness> {
    HARNESS.get_or_init(|| {
        let config = Config::new();
        // Keep SETRANGE/APPEND within a fuzzer's memory limit.
        config
            .set_many(&[("proto-max-bulk-len", "1mb")])
            .expect("a valid setting");
        Mutex::new(Harness::with_config(config))
    })
}

fn allowed(argv: &[&[u8]]) -> bool {
    let is = |i: usize, name: &str| {
        argv.get(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(name.as_bytes()))
    };
    if is(0, "debug") || (is(0, "client") && is(1, "pause")) {
        return false;
    }
    if is(0, "config") && is(1, "set") {
        return argv.get(2).is_some_and(|p| {
            [
                &b"maxmemory-policy"[..],
                b"timeout",
                b"slowlog-log-slower-than",
                b"lfu-log-factor",
            ]
            .iter()
            .any(|ok| p.eq_ignore_ascii_case(ok))
        });
    }
    true
}

fuzz_target!(|data: &[u8]| {
    let mut h = harness().lock().expect("no earlier panic");
    // RESET ends what an earlier input left open: MULTI, watches, subscriptions, MONITOR,
    // RESP3, the selected database.
    h.run_raw(&[b"RESET"]);
    h.run_raw(&[b"FLUSHALL"]);
    h.run_raw(&[b"CLIENT", b"REPLY", b"ON"]);
    let names: Vec<&'static str> = h
        .server
        .registry
        .commands()
        .iter()
        .map(|spec| spec.name)
        .collect();
    for line in data.split(|&b| b == b'\n').take(64) {
        // `@bytes` as the last token: an owned argument of those bytes repeated to 40 KiB.
        let owned = line
            .rsplit(|&b| b == b' ')
            .next()
            .and_then(|last| last.strip_prefix(b"@"))
            .filter(|_| line.contains(&b' '))
            .map(|seed| {
                Arc::new(
                    seed.iter()
                        .copied()
                        .cycle()
                        .take(40 * 1024)
                        .collect::<Vec<u8>>(),
                )
            });
        let line = match owned {
            Some(_) => &line[..line.iter().rposition(|&b| b == b' ').unwrap_or(0)],
            None => line,
        };
        let mut argv: Vec<&[u8]> = Vec::new();
        for (i, token) in line.split(|&b| b == b' ').enumerate() {
            argv.push(match token {
                [b] if i == 0 => names[usize::from(*b) % names.len()].as_bytes(),
                [b'#', k] => KEYS[usize::from(*k) % KEYS.len()],
                _ => token,
            });
        }
        if let Some(owned) = &owned {
            argv.push(owned.as_slice());
        }
        if !allowed(&argv) {
            continue;
        }
        h.conn.owned_arg = owned.clone();
        let reply = h.run_raw(&argv);
        h.conn.owned_arg = None;
        // Zero replies (CLIENT REPLY OFF/SKIP), or well-formed frames: one per command, one
        // per channel for the (un)subscribe commands.
        let mut rest = &reply[..];
        while !rest.is_empty() {
            match larder_resp::decode(rest) {
                Ok(Some((_, used))) if used > 0 => rest = &rest[used..],
                other => panic!("malformed reply to {argv:?}: {other:?}"),
            }
        }
    }
});
