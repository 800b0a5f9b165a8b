//! The memcached door: connections on the memcached port, speaking the text, meta and binary
//! protocols against database 0 of the same keyspace the RESP door serves.
//!
//! - [`McHandler`] is one connection's protocol half (its I/O is the shared
//!   [`crate::conn::Conn`]: a bounded number of reads per readiness turn, output back
//!   pressure, pipelining, requests split across reads); its `Session` tells binary from text
//!   by the first byte (as memcached does, once per connection), parses with
//!   `larder-memcache` and runs each request.
//! - `text` and `binary` map parsed requests onto the engine operations of `ops` and encode
//!   the answers; `stats` renders `stats`; `flush` is `flush_all` with a delay.
//! - `auth` logs clients in (binary SASL PLAIN, the text protocol's `set`) as ACL users;
//!   `perm` checks each request as its RESP equivalent (`crate::acl_door`).
//! - [`McShared`] is the door's server-wide state: counters, the pending flush, verbosity and
//!   the list of memcached connections.
//!
//! It is not a RESP translator: memcached commands never become RESP argv; they call shard
//! operations directly.

mod admin;
mod auth;
mod binary;
mod conn;
mod crawler;
mod detail;
mod flush;
mod job;
mod perm;
mod session;
mod slabs;
mod stats;
mod text;
mod tune;
mod watch;

pub use conn::McHandler;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use larder_commands::config::Param;
use larder_commands::state::{bump, ClientHandle};
use larder_commands::Server;
use larder_engine::Keyspace;
use larder_memcache::Limits;
use parking_lot::Mutex;

/// What memcached answers a connection over the limit before closing it.
pub const TOO_MANY_CONNECTIONS: &[u8] = b"ERROR Too many open connections\r\n";

/// The memcached door's server-wide state.
pub struct McShared {
    /// Per-worker counters.
    pub stats: stats::Stats,
    /// The pending delayed `flush_all`.
    pub flush: flush::FlushTimer,
    /// `stats detail`'s per-prefix counts.
    pub detail: detail::Detail,
    /// The LRU crawler's settings and counters.
    pub crawler: crawler::Crawler,
    /// `watch`: the watchers and their counters.
    pub watch: watch::Watch,
    verbosity: AtomicU32,
    conns: Mutex<HashMap<u64, Arc<ClientHandle>>>,
    total_connections: AtomicU64,
    rejected_connections: AtomicU64,
    /// The listening sockets: file descriptor and address (`stats conns`).
    pub listeners: Vec<(i64, String)>,
}

impl McShared {
    /// State for a door served by `threads` workers on `listeners`.
    pub fn new(threads: usize, listeners: Vec<(i64, String)>) -> McShared {
        McShared {
            stats: stats::Stats::new(threads),
            flush: flush::FlushTimer::default(),
            detail: detail::Detail::default(),
            crawler: crawler::Crawler::default(),
            watch: watch::Watch::default(),
            verbosity: AtomicU32::new(0),
            conns: Mutex::new(HashMap::new()),
            total_connections: AtomicU64::new(0),
            rejected_connections: AtomicU64::new(0),
            listeners,
        }
    }

    /// Open memcached connections.
    pub fn curr_connections(&self) -> usize {
        self.conns.lock().len()
    }

    /// Connections accepted since start.
    pub fn total_connections(&self) -> u64 {
        self.total_connections.load(Ordering::Relaxed)
    }

    /// Connections refused because of maxclients.
    pub fn rejected_connections(&self) -> u64 {
        self.rejected_connections.load(Ordering::Relaxed)
    }

    /// Counts a connection refused because of maxclients.
    pub fn note_rejected(&self) {
        self.rejected_connections.fetch_add(1, Ordering::Relaxed);
    }

    /// The open memcached connections, oldest first.
    pub fn conn_handles(&self) -> Vec<Arc<ClientHandle>> {
        let mut v: Vec<_> = self.conns.lock().values().cloned().collect();
        v.sort_by_key(|h| h.id);
        v
    }

    /// The level last set by `verbosity` (shown by `stats settings`).
    pub fn verbosity(&self) -> u32 {
        self.verbosity.load(Ordering::Relaxed)
    }

    /// `verbosity <level>`: sets `loglevel` as CONFIG SET does, which changes what the
    /// server logs at once: 0 is `notice`, 1 `verbose`, 2 and above `debug`.
    fn set_verbosity(&self, server: &Server, level: u32) {
        self.verbosity.store(level, Ordering::Relaxed);
        let loglevel = match level {
            0 => "notice",
            1 => "verbose",
            _ => "debug",
        };
        if let Err(why) = server.config.set_many(&[("loglevel", loglevel)]) {
            tracing::warn!(error = %why, "verbosity: loglevel not changed");
        }
    }

    /// Runs the delayed-flush timer until `stop` returns true (on its own thread).
    pub fn run_flush_timer(&self, keyspace: &Keyspace, stop: impl Fn() -> bool) {
        self.flush.run(keyspace, stop);
    }
}

/// What the connection does after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    /// Close once the replies so far are written (quit, binary QUIT).
    Close,
    /// The connection became a watcher (`watch`): it reads no more requests.
    Watch,
}

/// What a request handler needs: the server, the door's state and the request's clock.
struct Ctx<'a> {
    server: &'a Server,
    mc: &'a McShared,
    counters: &'a stats::Counters,
    worker: usize,
    now_ms: u64,
    item_size_max: usize,
    conn_id: u64,
    /// The client's address, as MONITOR shows it.
    addr: &'a str,
    /// Whether `maxmemory-policy` is an LFU one: entries then hold an access counter, not
    /// an access time, so meta `l` and `me la=` have no answer (they report 0).
    lfu: bool,
    /// A request that runs over several turns, started by the request being run.
    job: std::cell::RefCell<Option<job::Job>>,
}

impl<'a> Ctx<'a> {
    /// The context of requests read now by worker `worker` for connection `conn_id`. Runs a
    /// delayed flush that has come due first.
    fn new(
        server: &'a Server,
        mc: &'a McShared,
        worker: usize,
        conn_id: u64,
        addr: &'a str,
    ) -> Ctx<'a> {
        let now_ms = larder_engine::now_ms();
        mc.flush.run_due(&server.keyspace, now_ms);
        Ctx {
            server,
            mc,
            counters: mc.stats.thread(worker),
            worker,
            now_ms,
            item_size_max: limits(server).item_size_max,
            conn_id,
            addr,
            lfu: larder_commands::config::lfu_selected(&server.config),
            job: std::cell::RefCell::new(None),
        }
    }

    /// Makes the request being run continue as `job` ([`job`]).
    fn start_job(&self, job: job::Job) {
        *self.job.borrow_mut() = Some(job);
    }

    /// The job the request just run started, if any.
    fn take_job(&self) -> Option<job::Job> {
        self.job.borrow_mut().take()
    }

    /// The memcached door always uses database 0.
    fn db(&self) -> &larder_engine::Db {
        self.server.keyspace.db(0)
    }

    /// Over maxmemory with nothing left to evict ([`crate::items::out_of_memory`]): the
    /// store is refused with memcached's out-of-memory answer.
    fn out_of_memory(&self) -> bool {
        crate::items::out_of_memory(self.server, self.now_ms)
    }

    /// The prefix delimiter of `stats detail` (`memcached-prefix-delimiter`).
    fn delimiter(&self) -> u8 {
        u8::try_from(self.server.config.num(Param::MemcachedPrefixDelimiter)).unwrap_or(b':')
    }

    /// Counts a get of `key` for `stats detail`, while it is on.
    fn detail_get(&self, key: &[u8], hit: bool) {
        if self.mc.detail.enabled() {
            self.mc.detail.get(self.delimiter(), key, hit);
        }
    }

    /// Counts a set-family command on `key` for `stats detail`, while it is on.
    fn detail_set(&self, key: &[u8]) {
        if self.mc.detail.enabled() {
            self.mc.detail.set(self.delimiter(), key);
        }
    }

    /// Counts a delete of `key` for `stats detail`, while it is on.
    fn detail_delete(&self, key: &[u8]) {
        if self.mc.detail.enabled() {
            self.mc.detail.delete(self.delimiter(), key);
        }
    }

    /// Counts a keyspace hit or miss for INFO as well as the door's own counters.
    fn count_get(&self, hit: bool) {
        let t = &self.server.stats.threads[self.worker];
        let (server, door) = if hit {
            (&t.keyspace_hits, &self.counters.get_hits)
        } else {
            (&t.keyspace_misses, &self.counters.get_misses)
        };
        bump(server, 1);
        bump(door, 1);
    }
}

/// `key` as memcached's `uriencode` (metadump and watch lines), byte by byte into `push`:
/// letters, digits and `-._~` as they are, every other byte as `%XX` (upper-case hex).
fn uriencode(key: &[u8], mut push: impl FnMut(u8)) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in key {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            push(b);
        } else {
            push(b'%');
            push(HEX[usize::from(b >> 4)]);
            push(HEX[usize::from(b & 15)]);
        }
    }
}

/// The codec limits, with the configured item size.
fn limits(server: &Server) -> Limits {
    let item_size_max = server
        .config
        .num(Param::MemcachedItemSizeMax)
        .clamp(1024, i64::from(u32::MAX)) as usize;
    Limits {
        item_size_max,
        binary_body_max: item_size_max + 1024,
        ..Limits::default()
    }
}

#[cfg(test)]
mod tests;
