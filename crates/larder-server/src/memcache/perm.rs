//! Each memcached request checked as its RESP equivalent for a user that is not
//! unrestricted (the table in docs/security.md): get/gets → GET, gat/gats → GETEX, the
//! set family → SET (append/prepend → APPEND), incr/decr → INCRBY/DECRBY, delete → DEL,
//! touch → EXPIRE, flush_all → FLUSHDB, stats → INFO, and the meta commands as the classic
//! ones they extend. A multi-key get is refused whole when any key is.

use larder_commands::error::Error;
use larder_commands::ConnState;
use larder_memcache::{AdminCommand, BinaryCommand, CounterOp, Keys, StoreMode, TextRequest};

use super::text::meta_key;
use super::Ctx;
use crate::acl_door::{check, check_all_keys};

/// The RESP equivalent of storing with `mode`.
fn store_command(mode: StoreMode) -> &'static [u8] {
    match mode {
        StoreMode::Append | StoreMode::Prepend => b"APPEND",
        _ => b"SET",
    }
}

fn counter_command(op: CounterOp) -> &'static [u8] {
    match op {
        CounterOp::Incr => b"INCRBY",
        CounterOp::Decr => b"DECRBY",
    }
}

/// One key under `command` (the value-like arguments only make the arity right).
fn key_op(cx: &Ctx<'_>, conn: &ConnState, command: &[u8], key: &[u8]) -> Result<(), Error> {
    match command {
        b"GET" | b"GETEX" | b"DEL" | b"TTL" => check(cx.server, conn, &[command, key]),
        _ => check(cx.server, conn, &[command, key, b"0"]),
    }
}

fn keys_op(
    cx: &Ctx<'_>,
    conn: &ConnState,
    command: &[u8],
    mut keys: Keys<'_>,
) -> Result<(), Error> {
    keys.try_for_each(|key| key_op(cx, conn, command, key))
}

/// `stats [group]`: INFO, except the groups that show clients (CLIENT LIST), change the
/// door's state (CONFIG RESETSTAT, CONFIG SET) or reveal every key (`detail dump`: MONITOR,
/// with `allkeys`).
fn stats(cx: &Ctx<'_>, conn: &ConnState, group: &[&[u8]]) -> Result<(), Error> {
    let s = cx.server;
    match group {
        [] | [b"settings" | b"items" | b"slabs" | b"sizes", ..] => check(s, conn, &[b"INFO"]),
        [b"conns", ..] => check(s, conn, &[b"CLIENT", b"LIST"]),
        [b"reset", ..] => check(s, conn, &[b"CONFIG", b"RESETSTAT"]),
        [b"detail", b"dump", ..] => check_all_keys(s, conn, &[b"MONITOR"]),
        [b"detail", ..] => check(s, conn, &[b"CONFIG", b"SET", b"loglevel", b"notice"]),
        // An unknown group is answered ERROR by the command itself.
        _ => check(s, conn, &[b"INFO"]),
    }
}

/// An operator's command: the ones that show every key (`lru_crawler metadump`/`mgdump`,
/// `watch`) as MONITOR with `allkeys`; `cache_memlimit` as CONFIG SET maxmemory; the other
/// settings (crawler, slabs, lru) as CONFIG SET.
fn admin(
    cx: &Ctx<'_>,
    conn: &ConnState,
    command: AdminCommand,
    first: Option<&[u8]>,
) -> Result<(), Error> {
    let s = cx.server;
    match (command, first) {
        (AdminCommand::LruCrawler, Some(b"metadump" | b"mgdump")) | (AdminCommand::Watch, _) => {
            check_all_keys(s, conn, &[b"MONITOR"])
        }
        (AdminCommand::CacheMemlimit, _) => {
            check(s, conn, &[b"CONFIG", b"SET", b"maxmemory", b"0"])
        }
        _ => check(s, conn, &[b"CONFIG", b"SET", b"loglevel", b"notice"]),
    }
}

/// Checks a text or meta request; `Err` holds the NOPERM error to answer.
pub(super) fn text(cx: &Ctx<'_>, conn: &ConnState, req: &TextRequest<'_>) -> Result<(), Error> {
    if conn.user.unrestricted() {
        return Ok(());
    }
    match *req {
        TextRequest::Get { keys } | TextRequest::Gets { keys } => keys_op(cx, conn, b"GET", keys),
        TextRequest::Gat { keys, .. } | TextRequest::Gats { keys, .. } => {
            keys_op(cx, conn, b"GETEX", keys)
        }
        TextRequest::Store(ref s) => key_op(cx, conn, store_command(s.mode), s.key),
        TextRequest::Delete { key, .. } => key_op(cx, conn, b"DEL", key),
        TextRequest::Incr { key, .. } => key_op(cx, conn, b"INCRBY", key),
        TextRequest::Decr { key, .. } => key_op(cx, conn, b"DECRBY", key),
        TextRequest::Touch { key, .. } => key_op(cx, conn, b"EXPIRE", key),
        TextRequest::FlushAll { .. } => check(cx.server, conn, &[b"FLUSHDB"]),
        TextRequest::Verbosity { .. } => check(
            cx.server,
            conn,
            &[b"CONFIG", b"SET", b"loglevel", b"notice"],
        ),
        TextRequest::Version | TextRequest::Quit | TextRequest::MetaNoop => Ok(()),
        TextRequest::Stats { args } => stats(cx, conn, &args.collect::<Vec<_>>()),
        TextRequest::MetaGet(ref mg) => {
            let f = &mg.flags;
            // Touching or creating the item writes: GETEX needs read and write.
            let writes = f.ttl.is_some() || f.vivify_ttl.is_some() || f.recache_ttl.is_some();
            let command: &[u8] = if writes { b"GETEX" } else { b"GET" };
            key_op(cx, conn, command, meta_key(&mg.key).as_ref())
        }
        TextRequest::MetaSet(ref ms) => key_op(
            cx,
            conn,
            store_command(ms.store_mode()),
            meta_key(&ms.key).as_ref(),
        ),
        TextRequest::MetaDelete(ref md) => key_op(cx, conn, b"DEL", meta_key(&md.key).as_ref()),
        TextRequest::MetaArithmetic(ref ma) => {
            key_op(cx, conn, counter_command(ma.op), meta_key(&ma.key).as_ref())
        }
        TextRequest::MetaDebug { ref key } => key_op(cx, conn, b"TTL", meta_key(key).as_ref()),
        TextRequest::Admin { command, mut args } => admin(cx, conn, command, args.next()),
    }
}

/// Checks a binary request (SASL ones never come here); `Err` holds the NOPERM error.
pub(super) fn binary(
    cx: &Ctx<'_>,
    conn: &ConnState,
    command: &BinaryCommand<'_>,
) -> Result<(), Error> {
    if conn.user.unrestricted() {
        return Ok(());
    }
    match *command {
        BinaryCommand::Get { key } => key_op(cx, conn, b"GET", key),
        BinaryCommand::GetAndTouch { key, .. } => key_op(cx, conn, b"GETEX", key),
        BinaryCommand::Touch { key, .. } => key_op(cx, conn, b"EXPIRE", key),
        BinaryCommand::Store { mode, key, .. } => key_op(cx, conn, store_command(mode), key),
        BinaryCommand::Delete { key, .. } => key_op(cx, conn, b"DEL", key),
        BinaryCommand::Counter { op, key, .. } => key_op(cx, conn, counter_command(op), key),
        BinaryCommand::Flush { .. } => check(cx.server, conn, &[b"FLUSHDB"]),
        BinaryCommand::Stat { group } => {
            let words: Vec<&[u8]> = group
                .split(|&b| b == b' ')
                .filter(|w| !w.is_empty())
                .collect();
            stats(cx, conn, &words)
        }
        BinaryCommand::Quit
        | BinaryCommand::Noop
        | BinaryCommand::Version
        | BinaryCommand::SaslListMechs
        | BinaryCommand::Sasl { .. } => Ok(()),
    }
}
