//! Server commands: INFO, COMMAND, CONFIG, TIME, SLOWLOG, MEMORY, SHUTDOWN, DEBUG.
//!
//! This file holds the family's table, what the handlers share (`cmd`, `reply_help`), and
//! INFO, TIME, SHUTDOWN, SLOWLOG and MEMORY. COMMAND is in `command`, CONFIG in `config_cmd`
//! (the parameter table itself is the crate's `config` module), DEBUG in `debug`.

mod command;
mod command_meta;
mod config_cmd;
pub mod debug;

use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::info;
use crate::table::{flags::*, CommandSpec, Group, KeySpec, Scope};

const NO_SHUTDOWN: &str = "ERR No shutdown in progress.";
const SLOWLOG_COUNT: &str = "ERR count should be greater than or equal to -1";

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: KeySpec,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        keys,
        Group::Server,
        summary,
        since,
        handler,
    )
}

const fn container(
    name: &'static str,
    summary: &'static str,
    since: &'static str,
    subcommands: &'static [CommandSpec],
) -> CommandSpec {
    CommandSpec {
        name,
        arity: -2,
        flags: 0,
        keys: KeySpec::NONE,
        group: Group::Server,
        summary,
        since,
        handler: unreachable_container,
        subcommands,
    }
}

/// The framework runs a container's subcommands, never the container itself.
fn unreachable_container(_: &mut Cmd<'_>) -> Result<()> {
    Err(Error::Static("ERR internal error"))
}

const HELP_SUMMARY: &str = "Show helpful text about the different subcommands";

/// The server family's table.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("info", -1, LOADING | STALE, KeySpec::NONE, "Get information and statistics about the server", "1.0.0", info),
    // COMMAND answers without a subcommand too (arity -1), so it dispatches itself rather than
    // being a container; its subcommands are in `command::COMMAND_SUBCOMMANDS`.
    cmd("command", -1, LOADING | STALE, KeySpec::NONE, "Get array of Redis command details", "2.8.13", command::command),
    container("config", "A container for server configuration commands", "2.0.0", config_cmd::CONFIG_SUBCOMMANDS),
    cmd("time", 1, LOADING | STALE | FAST, KeySpec::NONE, "Return the current server time", "2.6.0", time),
    container("slowlog", "A container for slow log commands", "2.2.12", SLOWLOG_SUBCOMMANDS),
    container("memory", "A container for memory diagnostics commands", "4.0.0", MEMORY_SUBCOMMANDS),
    // DEBUG dispatches itself too (Redis lists no subcommands for it); it holds every shard.
    cmd("debug", -2, ADMIN | NOSCRIPT | LOADING | STALE, KeySpec::NONE.with_scope(Scope::All), "A container for debugging commands", "1.0.0", debug::debug),
    cmd("shutdown", -1, ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY, KeySpec::NONE, "Synchronously save the dataset to disk and then shut down the server", "1.0.0", shutdown),
];

#[rustfmt::skip]
static SLOWLOG_SUBCOMMANDS: &[CommandSpec] = &[
    cmd("get", -2, ADMIN | LOADING | STALE, KeySpec::NONE, "Get the slow log's entries", "2.2.12", slowlog_get),
    cmd("len", 2, ADMIN | LOADING | STALE, KeySpec::NONE, "Get the slow log's length", "2.2.12", slowlog_len),
    cmd("reset", 2, ADMIN | LOADING | STALE, KeySpec::NONE, "Clear all entries from the slow log", "2.2.12", slowlog_reset),
    cmd("help", 2, LOADING | STALE, KeySpec::NONE, HELP_SUMMARY, "6.2.0", slowlog_help),
];

#[rustfmt::skip]
static MEMORY_SUBCOMMANDS: &[CommandSpec] = &[
    cmd("usage", -3, READONLY, KeySpec { first: 2, last: 2, step: 1, scope: Scope::Keys }, "Estimate the memory usage of a key", "4.0.0", memory_usage),
    cmd("stats", 2, 0, KeySpec::NONE, "Show memory usage details", "4.0.0", memory_stats),
    cmd("doctor", 2, 0, KeySpec::NONE, "Outputs memory problems report", "4.0.0", memory_doctor),
    cmd("malloc-stats", 2, 0, KeySpec::NONE, "Show allocator internal stats", "4.0.0", memory_malloc_stats),
    cmd("purge", 2, 0, KeySpec::NONE, "Ask the allocator to release memory", "4.0.0", memory_purge),
    cmd("help", 2, LOADING | STALE, KeySpec::NONE, HELP_SUMMARY, "4.0.0", memory_help),
];

/// Reply with a HELP text: an array of status lines.
pub(crate) fn reply_help(c: &mut Cmd<'_>, lines: &[&str]) -> Result<()> {
    c.out.array(lines.len());
    for l in lines {
        c.out.simple(l);
    }
    Ok(())
}

/// Redis's `addReplySubcommandSyntaxError`, naming the subcommand as the client typed it.
pub(crate) fn subcommand_syntax_error(c: &Cmd<'_>, container: &str) -> Error {
    let typed = c.args.argv().get(1).copied().unwrap_or_default();
    Error::Owned(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {container} HELP.",
        String::from_utf8_lossy(typed)
    ))
}

// ---------------------------------------------------------------------------------------------
// INFO, TIME, SHUTDOWN

/// INFO [section ...]
fn info(c: &mut Cmd<'_>) -> Result<()> {
    let selection = info::Selection::parse(c.args.rest());
    let text = info::render(c.server, selection, c.now_ms);
    c.out.verbatim("txt", text.as_bytes());
    Ok(())
}

/// TIME
fn time(c: &mut Cmd<'_>) -> Result<()> {
    let now_us = larder_engine::now_us();
    c.out.array(2);
    c.out.bulk((now_us / 1_000_000).to_string().as_bytes());
    c.out.bulk((now_us % 1_000_000).to_string().as_bytes());
    Ok(())
}

/// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]
///
/// larder has no replicas to wait for, so a shutdown is never pending: it is requested at
/// once (the network layer stops and closes this connection without a reply; the binary then
/// takes the last snapshot SAVE or the `save` rules ask for, and fsyncs the log), and ABORT
/// always finds nothing to abort.
fn shutdown(c: &mut Cmd<'_>) -> Result<()> {
    let (mut nosave, mut save, mut other_flag, mut abort) = (false, false, false, false);
    for a in c.args.rest() {
        match a.to_ascii_lowercase().as_slice() {
            b"nosave" => nosave = true,
            b"save" => save = true,
            b"now" | b"force" => other_flag = true,
            b"abort" => abort = true,
            _ => return Err(Error::Static(error::SYNTAX)),
        }
    }
    if (abort && (nosave || save || other_flag)) || (nosave && save) {
        return Err(Error::Static(error::SYNTAX));
    }
    if abort {
        return Err(Error::Static(NO_SHUTDOWN));
    }
    if save || nosave {
        *c.server.shutdown_save.lock() = Some(save);
    }
    c.server.request_shutdown();
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// SLOWLOG

/// SLOWLOG GET [count]: newest first; count defaults to 10, -1 means all.
fn slowlog_get(c: &mut Cmd<'_>) -> Result<()> {
    if c.args.remaining() > 1 {
        return Err(subcommand_syntax_error(c, "SLOWLOG"));
    }
    let count = match c.args.opt() {
        None => 10,
        Some(raw) => match parse_i64(raw) {
            Some(-1) => usize::MAX,
            Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => return Err(Error::Static(SLOWLOG_COUNT)),
        },
    };
    let log = c.server.slowlog.lock();
    let n = log.entries.len().min(count);
    c.out.array(n);
    for e in log.entries.iter().take(n) {
        c.out.array(6);
        c.out.int(e.id as i64);
        c.out.int(e.time_s as i64);
        c.out.int(e.duration_us as i64);
        c.out.array(e.argv.len());
        for a in &e.argv {
            c.out.bulk(a);
        }
        c.out.bulk(e.addr.as_bytes());
        c.out.bulk(e.name.as_bytes());
    }
    Ok(())
}

/// SLOWLOG LEN
fn slowlog_len(c: &mut Cmd<'_>) -> Result<()> {
    let n = c.server.slowlog.lock().entries.len();
    c.out.int(n as i64);
    Ok(())
}

/// SLOWLOG RESET
fn slowlog_reset(c: &mut Cmd<'_>) -> Result<()> {
    c.server.slowlog.lock().entries.clear();
    c.out.simple("OK");
    Ok(())
}

/// SLOWLOG HELP
fn slowlog_help(c: &mut Cmd<'_>) -> Result<()> {
    reply_help(
        c,
        &[
            "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
            "HELP",
            "    Prints this help.",
        ],
    )
}

// ---------------------------------------------------------------------------------------------
// MEMORY

/// MEMORY USAGE key [SAMPLES count]: the entry's whole footprint (larder measures nested
/// values exactly, so SAMPLES is validated and otherwise unused). Not a keyspace hit or miss,
/// and not an access, as in Redis.
fn memory_usage(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    while let Some(opt) = c.args.opt() {
        if !opt.eq_ignore_ascii_case(b"samples") {
            return Err(Error::Static(error::SYNTAX));
        }
        if c.args.i64()? < 0 {
            return Err(Error::Static(error::SYNTAX));
        }
    }
    let (mut shard, hash) = c.shard_of(key);
    let bytes = shard
        .find(key, hash, c.now_ms)
        .map(|slot| shard.entry(slot).memory_bytes());
    drop(shard);
    match bytes {
        Some(b) => c.out.int(b as i64),
        None => c.out.null(),
    }
    Ok(())
}

/// MEMORY STATS: Redis's field names where larder has the figure.
fn memory_stats(c: &mut Cmd<'_>) -> Result<()> {
    let m = info::memory_report(c.server);
    let per_key = m.overhead_bytes().checked_div(m.keys).unwrap_or(0);
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            100.0 * a as f64 / b as f64
        }
    };
    let ints: [(&str, u64); 13] = [
        ("peak.allocated", m.peak_bytes),
        ("total.allocated", m.used_bytes),
        ("startup.allocated", 0),
        ("replication.backlog", 0),
        ("clients.slaves", 0),
        ("clients.normal", m.clients_bytes),
        ("cluster.links", 0),
        ("aof.buffer", 0),
        ("lua.caches", 0),
        ("functions.caches", 0),
        ("overhead.total", m.overhead_bytes()),
        ("keys.count", m.keys),
        ("keys.bytes-per-key", per_key),
    ];
    c.out.map(ints.len() + 5);
    for (name, v) in ints {
        c.out.bulk(name.as_bytes());
        c.out.int(v as i64);
    }
    c.out.bulk(b"dataset.bytes");
    c.out.int(m.dataset_bytes as i64);
    c.out.bulk(b"dataset.percentage");
    c.out.double(pct(m.dataset_bytes, m.used_bytes).min(100.0));
    c.out.bulk(b"peak.percentage");
    c.out.double(pct(m.used_bytes, m.peak_bytes));
    c.out.bulk(b"fragmentation");
    c.out.double(m.fragmentation_ratio());
    c.out.bulk(b"fragmentation.bytes");
    c.out.int(m.rss_bytes as i64 - m.used_bytes as i64);
    Ok(())
}

/// MEMORY DOCTOR: larder has no issue detector yet; it answers like Redis does when there is
/// too little data to judge, or reports nothing found.
fn memory_doctor(c: &mut Cmd<'_>) -> Result<()> {
    const SMALL_INSTANCE_BYTES: u64 = 5 << 20;
    let used = info::memory_report(c.server).used_bytes;
    let report = if used < SMALL_INSTANCE_BYTES {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
    } else {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
    };
    c.out.verbatim("txt", report.as_bytes());
    Ok(())
}

/// MEMORY MALLOC-STATS
fn memory_malloc_stats(c: &mut Cmd<'_>) -> Result<()> {
    c.out
        .verbatim("txt", b"Stats not supported for the current allocator");
    Ok(())
}

/// MEMORY PURGE: nothing to ask of the allocator from here.
fn memory_purge(c: &mut Cmd<'_>) -> Result<()> {
    c.out.simple("OK");
    Ok(())
}

/// MEMORY HELP
fn memory_help(c: &mut Cmd<'_>) -> Result<()> {
    reply_help(
        c,
        &[
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
            "HELP",
            "    Prints this help.",
        ],
    )
}

#[cfg(test)]
mod tests;
