//! [`Cmd`], the command being run as its handler sees it: the connection, the arguments, the
//! reply buffer, and the shards it may use (held by the executor's plan, or locked on
//! demand). Apart from `exec.rs` because handlers use only this, never the checks.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_resp::ReplyBuf;

use larder_engine::Db;

use crate::args::Args;
use crate::locks::{Held, Pair, ShardGuard};
use crate::state::{bump, Server};
use crate::table::Resolved;

use super::ConnState;

/// A command being run: what a handler sees.
pub struct Cmd<'a> {
    pub server: &'a Server,
    pub conn: &'a mut ConnState,
    pub args: Args<'a>,
    pub out: &'a mut ReplyBuf,
    /// Unix ms when the command started (one clock read per command).
    pub now_ms: u64,
    pub resolved: Resolved,
    /// The shards the executor locked for this command (a planned command, or any command
    /// inside EXEC); `None` when the command locks its one shard on demand.
    pub held: Option<&'a Held<'a>>,
}

impl<'a> Cmd<'a> {
    /// The selected database.
    #[inline]
    pub fn db(&self) -> &'a larder_engine::Db {
        self.server.keyspace.db(self.conn.db)
    }

    /// The shard that owns `key` in the selected database, with the key's hash: one the
    /// executor holds for this command, or else locked now. A command that runs unplanned
    /// holds at most one shard at a time.
    #[inline]
    pub fn shard_of(&self, key: &[u8]) -> (ShardGuard<'a>, u64) {
        let (shard, hash) = Db::route(key);
        (self.shard_at(self.conn.db, shard), hash)
    }

    /// Shard `shard` of database `db` (see [`Cmd::shard_of`]).
    #[inline]
    pub fn shard_at(&self, db: usize, shard: usize) -> ShardGuard<'a> {
        shard_in(self.server, self.held, db, shard)
    }

    /// The shards of two keys (RENAME, COPY, MOVE): `src` and `dst` are `(db, key)`.
    pub fn shard_pair(&self, src: (usize, &[u8]), dst: (usize, &[u8])) -> (Pair<'a>, u64, u64) {
        let (s_shard, s_hash) = Db::route(src.1);
        let (d_shard, d_hash) = Db::route(dst.1);
        let (s, d) = ((src.0, s_shard), (dst.0, d_shard));
        let pair = if s == d {
            Pair::Same(self.shard_at(s.0, s.1))
        } else if s < d {
            let src = self.shard_at(s.0, s.1);
            Pair::Two {
                src,
                dst: self.shard_at(d.0, d.1),
            }
        } else {
            let dst = self.shard_at(d.0, d.1);
            Pair::Two {
                src: self.shard_at(s.0, s.1),
                dst,
            }
        };
        (pair, s_hash, d_hash)
    }

    /// Visit shard `0..SHARDS_PER_DB` of database `db` in turn, each held (inside EXEC) or
    /// locked for the visit alone.
    pub fn lock_fn(&self, db: usize) -> impl FnMut(usize) -> ShardGuard<'a> + 'a {
        let (server, held) = (self.server, self.held);
        move |i| shard_in(server, held, db, i)
    }

    /// Raise Redis keyspace notification `event` of `class` (a `larder_engine::feed::class`
    /// bit) for `key` in the selected database. Call it while the key's shard is held, after
    /// the change it announces, so it joins that change's group in the feed.
    #[inline]
    pub fn notify(&self, class: u32, event: &'static str, key: &[u8]) {
        self.server
            .keyspace
            .feed()
            .notice(class, event, self.conn.db, key);
    }

    /// Record `argv` for replay (the append-only log, replicas) instead of the request the
    /// client sent, so that replaying it gives the same result whenever it runs: a relative
    /// deadline becomes an absolute one (EXPIRE as PEXPIREAT), a computed value is stored as
    /// such (INCRBYFLOAT as SET ... KEEPTTL). Called several times, every `argv` is recorded,
    /// in order. Costs nothing while no consumer records commands.
    pub fn propagate(&mut self, argv: &[&[u8]]) {
        if self.records_commands() {
            self.conn.propagate.push(larder_engine::Argv::new(argv));
        }
    }

    /// Whether write commands are recorded now (the log, a replica): a handler that builds
    /// what [`Cmd::propagate`] records asks first, so it builds nothing when nobody listens.
    #[inline]
    pub fn records_commands(&self) -> bool {
        self.server.keyspace.feed().records_commands()
    }

    /// [`Cmd::notify`] in database `db`.
    #[inline]
    pub fn notify_in(&self, db: usize, class: u32, event: &'static str, key: &[u8]) {
        self.server.keyspace.feed().notice(class, event, db, key);
    }

    /// The compact-encoding limits in force, for engine operations that grow a collection.
    #[inline]
    pub fn limits(&self) -> larder_engine::Limits {
        crate::config::limits(&self.server.config)
    }

    /// Whether this client's reads update keys' access time (CLIENT NO-TOUCH turns it off).
    #[inline]
    pub fn access(&self) -> larder_engine::Access {
        if self.conn.handle.no_touch.load(Ordering::Relaxed) {
            larder_engine::Access::NoTouch
        } else {
            larder_engine::Access::Touch
        }
    }

    /// The buffer that holds `arg`, when the connection read this argument into one of its
    /// own ([`ConnState::owned_arg`]): storing it costs no copy. Taken, so at most one key
    /// stores it.
    #[inline]
    pub fn adopt(&mut self, arg: &[u8]) -> Option<Arc<Vec<u8>>> {
        self.conn
            .owned_arg
            .take_if(|owned| std::ptr::eq(owned.as_slice(), arg))
    }

    /// Count a keyspace hit or miss (INFO stats).
    #[inline]
    pub fn hit(&self, hit: bool) {
        let t = &self.server.stats.threads[self.conn.worker];
        bump(
            if hit {
                &t.keyspace_hits
            } else {
                &t.keyspace_misses
            },
            1,
        );
    }
}

/// Shard `shard` of database `db`: held by the command's plan, or locked now.
#[inline]
fn shard_in<'a>(
    server: &'a Server,
    held: Option<&'a Held<'a>>,
    db: usize,
    shard: usize,
) -> ShardGuard<'a> {
    match held {
        None => ShardGuard::Own(server.keyspace.db(db).lock(shard)),
        Some(held) => held_shard(server, held, db, shard),
    }
}

/// [`shard_in`] for a planned command (kept out of line: single-key commands never get here).
#[inline(never)]
fn held_shard<'a>(
    server: &'a Server,
    held: &'a Held<'a>,
    db: usize,
    shard: usize,
) -> ShardGuard<'a> {
    if let Some(g) = held.get(db, shard) {
        return ShardGuard::Held(g);
    }
    // The plan missed a shard the handler uses: a wrong key spec. Locking it now could
    // deadlock against a thread that waits for one of ours; a test runs
    // every command alone and inside EXEC (`locks::plan_tests`) to keep this unreachable.
    debug_assert!(false, "shard {db}/{shard} is not in the command's plan");
    ShardGuard::Own(server.keyspace.db(db).lock(shard))
}
