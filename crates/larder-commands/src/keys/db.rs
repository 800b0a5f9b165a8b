//! Whole-database commands: KEYS, RANDOMKEY, DBSIZE, FLUSHDB, FLUSHALL, SELECT and SWAPDB.

use std::cell::Cell;
use std::sync::atomic::Ordering;

use larder_engine::{Db, Entry, SHARDS_PER_DB};

use super::{checked_db, db_index, parse_int};
use crate::config::Param;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

const INVALID_FIRST_DB: &str = "ERR invalid first DB index";
const INVALID_SECOND_DB: &str = "ERR invalid second DB index";

/// KEYS pattern
pub(super) fn keys(c: &mut Cmd<'_>) -> Result<()> {
    let pattern = c.args.next_arg()?;
    let all = pattern == b"*";
    // One buffer for all names instead of one allocation per key.
    let mut names = Vec::new();
    let mut ends = Vec::new();
    Db::for_each_with(c.lock_fn(c.conn.db), c.now_ms, |e| {
        if all || larder_engine::glob::matches(pattern, e.key(), false) {
            names.extend_from_slice(e.key());
            ends.push(names.len());
        }
    });
    c.out.array(ends.len());
    let mut start = 0;
    for end in ends {
        c.out.bulk(names.get(start..end).unwrap_or_default());
        start = end;
    }
    Ok(())
}

thread_local! {
    static RANDOM_STATE: Cell<u64> = const { Cell::new(0) };
}

/// A pseudo-random number for RANDOMKEY (per-thread xorshift, seeded from the clock).
fn next_random() -> u64 {
    RANDOM_STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            x = larder_engine::now_us() | 1;
        }
        x = crate::state::xorshift(x);
        s.set(x);
        x
    })
}

/// RANDOMKEY
pub(super) fn randomkey(c: &mut Cmd<'_>) -> Result<()> {
    match Db::random_key_with(c.lock_fn(c.conn.db), next_random(), c.now_ms) {
        Some(key) => c.out.bulk(&key),
        None => c.out.null(),
    }
    Ok(())
}

/// DBSIZE
pub(super) fn dbsize(c: &mut Cmd<'_>) -> Result<()> {
    // Inside a transaction, count the held shards (they may hold its uncounted writes);
    // otherwise the counts each shard published when it was last unlocked.
    let n = match c.held {
        Some(_) => Db::len_with(c.lock_fn(c.conn.db)),
        None => c.db().len(),
    };
    c.out.int(n as i64);
    Ok(())
}

/// How FLUSHDB / FLUSHALL free the removed values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FlushMode {
    Sync,
    Async,
}

/// `[ASYNC | SYNC]`; without a mode, `lazyfree-lazy-user-flush` decides.
fn flush_mode(c: &mut Cmd<'_>) -> Result<FlushMode> {
    let mode = match c.args.opt() {
        None if c.server.config.num(Param::LazyfreeLazyUserFlush) != 0 => FlushMode::Async,
        None => FlushMode::Sync,
        Some(a) if a.eq_ignore_ascii_case(b"sync") => FlushMode::Sync,
        Some(a) if a.eq_ignore_ascii_case(b"async") => FlushMode::Async,
        Some(_) => return Err(Error::Static(error::SYNTAX)),
    };
    c.args.finish()?;
    Ok(mode)
}

/// Free flushed slabs: now, or on a background thread for ASYNC.
fn free_slabs(slabs: Vec<Vec<Vec<Entry>>>, mode: FlushMode) {
    if mode == FlushMode::Sync || slabs.iter().flatten().all(Vec::is_empty) {
        return;
    }
    // If the thread cannot be spawned the closure (and the slabs) come back in the error and
    // are dropped here instead.
    let _ = std::thread::Builder::new()
        .name("larder-lazyfree".into())
        .spawn(move || drop(slabs));
}

/// FLUSHDB [ASYNC | SYNC]
pub(super) fn flushdb(c: &mut Cmd<'_>) -> Result<()> {
    let mode = flush_mode(c)?;
    free_slabs(clear_db(c, c.conn.db), mode);
    c.out.simple("OK");
    Ok(())
}

/// FLUSHALL [ASYNC | SYNC]
pub(super) fn flushall(c: &mut Cmd<'_>) -> Result<()> {
    let mode = flush_mode(c)?;
    let mut slabs = Vec::new();
    for db in 0..c.server.keyspace.db_count() {
        slabs.extend(clear_db(c, db));
    }
    free_slabs(slabs, mode);
    c.out.simple("OK");
    Ok(())
}

/// Empty database `db`, whose shards the executor holds, as one change in the feed.
fn clear_db(c: &Cmd<'_>, db: usize) -> Vec<Vec<Vec<Entry>>> {
    let mut shards: Vec<_> = (0..SHARDS_PER_DB).map(|s| c.shard_at(db, s)).collect();
    Db::clear_locked(shards.iter_mut().map(|g| &mut **g))
}

/// SELECT index
pub(super) fn select(c: &mut Cmd<'_>) -> Result<()> {
    let raw = c.args.next_arg()?;
    let db = db_index(c, raw)?;
    c.conn.db = db;
    c.conn.handle.db.store(db, Ordering::Relaxed);
    c.out.simple("OK");
    Ok(())
}

/// SWAPDB index1 index2
pub(super) fn swapdb(c: &mut Cmd<'_>) -> Result<()> {
    let a = parse_int(c.args.next_arg()?, Some(INVALID_FIRST_DB))?;
    let b = parse_int(c.args.next_arg()?, Some(INVALID_SECOND_DB))?;
    let a = checked_db(c, a)?;
    let b = checked_db(c, b)?;
    if a != b {
        // Every shard is held by the executor (SWAPDB's scope is the whole keyspace).
        let mut pairs: Vec<_> = (0..SHARDS_PER_DB)
            .map(|s| (c.shard_at(a, s), c.shard_at(b, s)))
            .collect();
        c.server
            .keyspace
            .swap_locked(a, b, pairs.iter_mut().map(|(x, y)| (&mut **x, &mut **y)));
    }
    c.out.simple("OK");
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use larder_resp::{Frame, Protocol};

    use crate::testing::*;

    fn arr(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|s| bulk(s)).collect())
    }

    fn sorted(f: Frame) -> Frame {
        match f {
            Frame::Array(mut v) => {
                v.sort_by(|a, b| match (a, b) {
                    (Frame::Bulk(a), Frame::Bulk(b)) => a.cmp(b),
                    _ => std::cmp::Ordering::Equal,
                });
                Frame::Array(v)
            }
            other => other,
        }
    }

    #[test]
    fn keys_randomkey_dbsize() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["KEYS", "*"]), Frame::Array(vec![]));
        assert_eq!(h.run(&["RANDOMKEY"]), Frame::Null);
        assert_eq!(h.run_raw(&[b"RANDOMKEY"]), b"$-1\r\n");
        h.out.proto = Protocol::Resp3;
        assert_eq!(h.run_raw(&[b"RANDOMKEY"]), b"_\r\n");
        h.out.proto = Protocol::Resp2;
        for k in ["user:1", "user:2", "other", "u[x]"] {
            h.run(&["SET", k, "v"]);
        }
        assert_eq!(
            sorted(h.run(&["KEYS", "*"])),
            arr(&["other", "u[x]", "user:1", "user:2"])
        );
        assert_eq!(
            sorted(h.run(&["KEYS", "user:*"])),
            arr(&["user:1", "user:2"])
        );
        assert_eq!(h.run(&["KEYS", "u\\[x\\]"]), arr(&["u[x]"]));
        assert_eq!(h.run(&["KEYS", "nomatch*"]), Frame::Array(vec![]));
        assert_eq!(h.run(&["DBSIZE"]), int(4));
        for _ in 0..20 {
            let Frame::Bulk(k) = h.run(&["RANDOMKEY"]) else {
                panic!("randomkey")
            };
            assert!(["user:1", "user:2", "other", "u[x]"].contains(&&*String::from_utf8_lossy(&k)));
        }
        // Expired keys are neither listed nor picked.
        h.run(&["PEXPIREAT", "other", "1"]);
        h.run(&["DEL", "user:1", "user:2", "u[x]"]);
        assert_eq!(h.run(&["KEYS", "*"]), Frame::Array(vec![]));
        assert_eq!(h.run(&["RANDOMKEY"]), Frame::Null);
        assert_eq!(
            h.run(&["KEYS"]),
            err("ERR wrong number of arguments for 'keys' command")
        );
    }

    #[test]
    fn select_and_swapdb() {
        let mut h = Harness::new();
        assert_eq!(
            h.run(&["SELECT", "x"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            h.run(&["SELECT", "16"]),
            err("ERR DB index is out of range")
        );
        assert_eq!(
            h.run(&["SELECT", "-1"]),
            err("ERR DB index is out of range")
        );
        assert_eq!(
            h.run(&["SELECT", "99999999999"]),
            err("ERR value is out of range, value must between -2147483648 and 2147483647")
        );
        assert_eq!(h.run(&["SELECT", "2"]), ok());
        assert_eq!(h.conn.db, 2);
        assert_eq!(
            h.conn.handle.db.load(std::sync::atomic::Ordering::Relaxed),
            2
        );
        h.run(&["SET", "k", "in2"]);
        assert_eq!(
            h.run(&["SWAPDB", "x", "1"]),
            err("ERR invalid first DB index")
        );
        assert_eq!(
            h.run(&["SWAPDB", "1", "x"]),
            err("ERR invalid second DB index")
        );
        assert_eq!(
            h.run(&["SWAPDB", "99", "x"]),
            err("ERR invalid second DB index")
        );
        assert_eq!(
            h.run(&["SWAPDB", "99999999999", "1"]),
            err("ERR invalid first DB index")
        );
        assert_eq!(
            h.run(&["SWAPDB", "0", "99"]),
            err("ERR DB index is out of range")
        );
        assert_eq!(
            h.run(&["SWAPDB", "-1", "0"]),
            err("ERR DB index is out of range")
        );
        assert_eq!(h.run(&["SWAPDB", "2", "2"]), ok());
        assert_eq!(h.run(&["GET", "k"]), bulk("in2"));
        let mut other = Harness::connect(Arc::clone(&h.server));
        assert_eq!(h.run(&["SWAPDB", "2", "0"]), ok());
        assert_eq!(h.run(&["GET", "k"]), Frame::Null);
        assert_eq!(other.run(&["GET", "k"]), bulk("in2"));
    }

    /// RENAMENX, MOVE and SWAPDB from several threads: no deadlock, and since none of them
    /// creates or destroys keys, the key count across both databases stays the same.
    #[test]
    fn flushdb_and_flushall() {
        let mut h = Harness::new();
        let fill = |h: &mut Harness| {
            for db in ["0", "1"] {
                h.run(&["SELECT", db]);
                for i in 0..50 {
                    h.run(&["SET", &format!("k{i}"), "v"]);
                }
            }
            h.run(&["SELECT", "0"]);
        };
        fill(&mut h);
        assert_eq!(h.run(&["FLUSHDB", "foo"]), err("ERR syntax error"));
        assert_eq!(h.run(&["FLUSHDB", "ASYNC", "x"]), err("ERR syntax error"));
        assert_eq!(
            h.run(&["FLUSHALL", "SYNC", "SYNC"]),
            err("ERR syntax error")
        );
        assert_eq!(h.run(&["FLUSHDB"]), ok());
        assert_eq!(h.run(&["DBSIZE"]), int(0));
        h.run(&["SELECT", "1"]);
        assert_eq!(h.run(&["DBSIZE"]), int(50));
        assert_eq!(h.run(&["FLUSHDB", "async"]), ok());
        assert_eq!(h.run(&["DBSIZE"]), int(0));
        fill(&mut h);
        assert_eq!(h.run(&["FLUSHALL", "SYNC"]), ok());
        assert_eq!(h.server.keyspace.db(1).len(), 0);
        fill(&mut h);
        assert_eq!(h.run(&["FLUSHALL", "ASYNC"]), ok());
        assert_eq!(
            h.server.keyspace.db(0).len() + h.server.keyspace.db(1).len(),
            0
        );
        h.server
            .config
            .set_many(&[("lazyfree-lazy-user-flush", "yes")])
            .expect("config");
        fill(&mut h);
        assert_eq!(h.run(&["FLUSHALL"]), ok());
        assert_eq!(h.server.keyspace.db(1).len(), 0);
        assert_eq!(h.run(&["SET", "k", "v"]), ok());
    }
}
