//! Blocked clients: BLPOP and the other blocking commands wait here until a key they wait on
//! is written, their timeout passes, or CLIENT UNBLOCK / KILL ends the wait.
//!
//! How a wait works, end to end:
//! - A blocking command runs with every shard of its keys held by the executor. When none
//!   of its keys can serve it, [`wait`] registers the client under each key, still holding
//!   those shards, and tells the executor to block ([`crate::exec::Outcome::Blocked`]). The
//!   network layer keeps the request unconsumed and stops reading the connection's requests.
//! - The registry is a lossless change-feed consumer. It asks the feed for changes only while
//!   some blocked client is not woken yet (a woken client looks at its keys again itself, so
//!   what changes before it does is no news to it). A write to a key commits (under the key's
//!   shard lock) after any registration made under that lock, so no write can slip between a
//!   client's look at a key and its registration. At commit, for each written key with
//!   waiters, the **first** client that blocked on it is woken: a `Letter::Unblock` to its
//!   worker, which runs the request again. A transaction's writes commit when EXEC ends, so
//!   its waiters are served after it.
//! - The woken client either finds data (served; it leaves the registry, and if the key still
//!   holds data its own pop's write wakes the next waiter) or not (someone else took it): it
//!   stays blocked in its place. Clients blocked on one key are served in the order they
//!   blocked; nothing polls.
//! - The deadline is the connection's (`ConnState::blocked`), fixed when the command first
//!   blocked; the worker runs the request again when it passes and [`wait`] answers the
//!   timeout's null. CLIENT UNBLOCK records a reason here and wakes the client the same way.
//!   A client that disconnects or is killed leaves the registry (`Server::client_closed`).

mod commands;

pub use commands::COMMANDS;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use hashbrown::{Equivalent, HashMap};
use larder_engine::{Change, ChangeKind, Consumer, Feed, Interest};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::exec::Cmd;
use crate::state::ClientHandle;

/// The timeout argument that is not a number.
const TIMEOUT_NOT_FLOAT: &str = "ERR timeout is not a float or out of range";
const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
const TIMEOUT_OUT_OF_RANGE: &str = "ERR timeout is out of range";
/// The error a client gets when CLIENT UNBLOCK ... ERROR ends its wait.
const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

/// How CLIENT UNBLOCK ends a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unblock {
    /// As if the timeout had passed.
    Timeout,
    /// With an `-UNBLOCKED` error.
    Error,
}

/// One blocked client.
struct Waiter {
    handle: Arc<ClientHandle>,
    /// `(db, key)` pairs it waits on.
    keys: Vec<(u32, Vec<u8>)>,
    /// A wake-up is on its way and the client has not run its request again yet.
    woken: bool,
    unblock: Option<Unblock>,
}

#[derive(Default)]
struct Registry {
    /// `(db, key)` → the clients waiting on it, first blocked first.
    keys: HashMap<(u32, Vec<u8>), VecDeque<u64>>,
    waiters: HashMap<u64, Waiter>,
}

/// A `(db, key)` of the registry, borrowed: it hashes as the owned pair does, so a commit
/// looks its written keys up without copying them.
#[derive(Hash)]
struct KeyRef<'a>(u32, &'a [u8]);

impl Equivalent<(u32, Vec<u8>)> for KeyRef<'_> {
    fn equivalent(&self, key: &(u32, Vec<u8>)) -> bool {
        self.0 == key.0 && self.1 == key.1.as_slice()
    }
}

impl Registry {
    /// Wake the first client waiting on `key`, unless it is already woken; `sleeping` counts
    /// the clients not woken.
    fn wake_first(&mut self, key: KeyRef<'_>, sleeping: &AtomicUsize) {
        let Some(&first) = self.keys.get(&key).and_then(|q| q.front()) else {
            return;
        };
        if let Some(w) = self.waiters.get_mut(&first) {
            if !w.woken {
                w.woken = true;
                sleeping.fetch_sub(1, Ordering::Relaxed);
                w.handle.mail.unblock(w.handle.id);
            }
        }
    }
}

/// The registry of blocked clients; also the feed consumer that wakes them.
#[derive(Default)]
pub struct Blocking {
    inner: Mutex<Registry>,
    /// Held while the feed's interest is set after `sleeping` changed (the interest set
    /// last: whether changes are asked for); never taken while the feed's locks are held,
    /// nor while `inner` is (setting the interest waits for running commits, whose consumers
    /// take `inner`).
    toggle: Mutex<bool>,
    feed: OnceLock<(Weak<Feed>, u64)>,
    /// Blocked clients (INFO `blocked_clients`).
    count: AtomicUsize,
    /// Blocked clients not woken yet: while there are none, no change is news to the
    /// registry. Changed only with `inner` held; a commit reads it first, without the lock.
    sleeping: AtomicUsize,
}

impl Blocking {
    /// Subscribe to `feed`, asking for nothing until a client blocks.
    pub fn install(self: &Arc<Self>, feed: &Arc<Feed>) {
        let id = feed.subscribe(Interest::default(), Arc::clone(self) as Arc<dyn Consumer>);
        let _ = self.feed.set((Arc::downgrade(feed), id));
    }

    /// Blocked clients now.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether client `id` is blocked.
    pub fn is_blocked(&self, id: u64) -> bool {
        self.inner.lock().waiters.contains_key(&id)
    }

    /// Ask the feed for changes exactly while some blocked client is not woken.
    fn sync_interest(&self) {
        let mut asked = self.toggle.lock();
        let want = self.sleeping.load(Ordering::Relaxed) > 0;
        if *asked == want {
            return;
        }
        let Some((feed, id)) = self.feed.get() else {
            return;
        };
        let Some(feed) = feed.upgrade() else {
            return;
        };
        let interest = if want {
            Interest::CHANGES
        } else {
            Interest::default()
        };
        feed.set_interest(*id, interest);
        *asked = want;
    }

    /// Register `handle`'s client as waiting on `keys` of database `db`, after those in line
    /// before it; a client already registered (running its request again) keeps its place.
    /// Call with the keys' shards held.
    fn register(&self, handle: &Arc<ClientHandle>, db: usize, keys: &[&[u8]]) {
        {
            let mut r = self.inner.lock();
            if let Some(w) = r.waiters.get_mut(&handle.id) {
                if w.woken {
                    w.woken = false;
                    self.sleeping.fetch_add(1, Ordering::Relaxed);
                }
            } else {
                let keys: Vec<(u32, Vec<u8>)> =
                    keys.iter().map(|k| (db as u32, k.to_vec())).collect();
                for k in &keys {
                    let q = r.keys.entry(k.clone()).or_default();
                    if !q.contains(&handle.id) {
                        q.push_back(handle.id);
                    }
                }
                r.waiters.insert(
                    handle.id,
                    Waiter {
                        handle: Arc::clone(handle),
                        keys,
                        woken: false,
                        unblock: None,
                    },
                );
                self.count.fetch_add(1, Ordering::Relaxed);
                self.sleeping.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.sync_interest();
    }

    /// Client `id` no longer waits (served, timed out, unblocked or gone). If it had been
    /// woken, the next client in line on each of its keys is woken in its place: the client
    /// may have been served from another of its keys, or not at all, leaving the data that
    /// woke it for them (a woken client that finds nothing goes back to sleep).
    pub fn unregister(&self, id: u64) {
        {
            let mut r = self.inner.lock();
            let Some(w) = r.waiters.remove(&id) else {
                return;
            };
            if !w.woken {
                self.sleeping.fetch_sub(1, Ordering::Relaxed);
            }
            for k in &w.keys {
                if let Some(q) = r.keys.get_mut(k) {
                    q.retain(|&c| c != id);
                    if q.is_empty() {
                        r.keys.remove(k);
                    }
                }
            }
            if w.woken {
                for k in &w.keys {
                    r.wake_first(KeyRef(k.0, &k.1), &self.sleeping);
                }
            }
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        self.sync_interest();
    }

    /// CLIENT UNBLOCK: end client `id`'s wait `how`. False if it is not blocked.
    pub fn unblock(&self, id: u64, how: Unblock) -> bool {
        {
            let mut r = self.inner.lock();
            let Some(w) = r.waiters.get_mut(&id) else {
                return false;
            };
            w.unblock = Some(how);
            if !w.woken {
                w.woken = true;
                w.handle.mail.unblock(w.handle.id);
                self.sleeping.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.sync_interest();
        true
    }

    /// The reason CLIENT UNBLOCK gave for ending client `id`'s wait, if it did.
    fn unblocked(&self, id: u64) -> Option<Unblock> {
        self.inner.lock().waiters.get(&id).and_then(|w| w.unblock)
    }
}

impl Consumer for Blocking {
    /// The feed calls [`Consumer::committed_then_settle`]; this, for anyone else, leaves the
    /// interest as it is (it cannot change while the feed's locks are held).
    fn committed(&self, seq: u64, changes: &[Change]) {
        let _ = self.committed_then_settle(seq, changes);
    }

    /// Wakes the first client waiting on each written key; asks to be settled (to stop
    /// asking for changes) when that woke the last one sleeping.
    fn committed_then_settle(&self, _seq: u64, changes: &[Change]) -> bool {
        if self.sleeping.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let mut r = self.inner.lock();
        for c in changes {
            match c.kind {
                // A key that holds a value now (created, pushed to, renamed or moved here,
                // restored): the first client waiting on it looks again.
                ChangeKind::Written => r.wake_first(KeyRef(c.db, &c.key), &self.sleeping),
                // A removed key: a blocked XREADGROUP answers that its stream is gone, as
                // Redis's does; any other waiter finds nothing and keeps its place.
                ChangeKind::Deleted | ChangeKind::Expired | ChangeKind::Evicted => {
                    r.wake_first(KeyRef(c.db, &c.key), &self.sleeping)
                }
                ChangeKind::Flushed => {
                    let keys: Vec<(u32, Vec<u8>)> = r
                        .keys
                        .keys()
                        .filter(|(db, _)| *db == c.db)
                        .cloned()
                        .collect();
                    for k in &keys {
                        r.wake_first(KeyRef(k.0, &k.1), &self.sleeping);
                    }
                }
                // SWAPDB brings other values under every key of both databases.
                ChangeKind::Swapped => {
                    let keys: Vec<(u32, Vec<u8>)> = r
                        .keys
                        .keys()
                        .filter(|(db, _)| *db == c.db || *db == c.class)
                        .cloned()
                        .collect();
                    for k in &keys {
                        r.wake_first(KeyRef(k.0, &k.1), &self.sleeping);
                    }
                }
                _ => {}
            }
        }
        self.sleeping.load(Ordering::Relaxed) == 0
    }

    fn settle(&self) {
        self.sync_interest();
    }
}

/// A blocking command's timeout argument in seconds (a float; 0 waits for ever), as the
/// absolute deadline in Unix ms, 0 for none. Redis 7.0's rules: whole milliseconds rounded
/// up (0.0001 waits 1 ms), and a value too large for a 64-bit count of milliseconds reads
/// as negative, as the C conversion does on the platforms Redis runs on.
pub fn deadline_ms(arg: &[u8], now_ms: u64) -> Result<u64> {
    // A whole number of seconds (`0`, the common case) needs no float parser.
    let whole = (!arg.is_empty() && arg.len() <= 9 && arg.iter().all(u8::is_ascii_digit))
        .then(|| arg.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0')));
    let secs = match whole {
        Some(n) => f64::from(n),
        None => crate::args::parse_f64(arg)
            .filter(|v| !v.is_nan())
            .ok_or(Error::Static(TIMEOUT_NOT_FLOAT))?,
    };
    let ms = (secs * 1000.0).ceil();
    if !(ms >= 0.0 && ms < i64::MAX as f64) {
        return Err(Error::Static(TIMEOUT_NEGATIVE));
    }
    let ms = ms as u64;
    if ms == 0 {
        return Ok(0);
    }
    if ms > i64::MAX as u64 - now_ms {
        return Err(Error::Static(TIMEOUT_OUT_OF_RANGE));
    }
    Ok(now_ms + ms)
}

/// What a blocking command does when it found nothing to serve: wait on `keys` until
/// `deadline_ms` (0: for ever), or answer the timeout's null array now if the wait is over,
/// was ended by CLIENT UNBLOCK, or cannot happen (inside EXEC). Call with the keys' shards
/// held (the executor holds them for blocking commands).
pub fn wait(c: &mut Cmd<'_>, keys: &[&[u8]], deadline_ms: u64) -> Result<()> {
    let deadline = match c.conn.blocked {
        Some(d) => d,
        None => deadline_ms,
    };
    let unblocked = if c.conn.blocked.is_some() {
        c.server.blocking.unblocked(c.conn.id)
    } else {
        None
    };
    let expired = deadline != 0 && c.now_ms >= deadline;
    if c.conn.in_exec || expired || unblocked.is_some() {
        done(c);
        if unblocked == Some(Unblock::Error) {
            return Err(Error::Static(UNBLOCKED));
        }
        c.out.null_array();
        return Ok(());
    }
    c.server.blocking.register(&c.conn.handle, c.conn.db, keys);
    c.conn.blocked = Some(deadline);
    c.conn.block_now = true;
    Ok(())
}

/// Whether this run of the command is a blocked client's retry (woken, or at its deadline):
/// then a key that holds another type does not answer WRONGTYPE but is skipped, as Redis 7.0
/// leaves a client blocked when its key is set to another type.
pub fn retrying(c: &Cmd<'_>) -> bool {
    c.conn.blocked.is_some()
}

/// The command is served: the client leaves the registry if it was in it. Call it from the
/// handler, while the keys' shards are held: the executor holds them for blocking commands
/// and commits their changes before unlocking, so the serving change commits after the
/// handler returns and its commit finds the next client in line first. (The executor also
/// unregisters a blocked command that ends any other way, such as an error.)
pub fn done(c: &mut Cmd<'_>) {
    if c.conn.blocked.take().is_some() {
        c.server.blocking.unregister(c.conn.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{err, Harness};

    #[test]
    fn deadlines_follow_redis_rounding_and_errors() {
        let now = 1_000_000;
        assert_eq!(deadline_ms(b"0", now), Ok(0));
        assert_eq!(deadline_ms(b"-0", now), Ok(0));
        assert_eq!(deadline_ms(b"1", now), Ok(now + 1000));
        assert_eq!(deadline_ms(b"0.0001", now), Ok(now + 1));
        assert_eq!(deadline_ms(b"1.5", now), Ok(now + 1500));
        for (arg, want) in [
            (&b"-1"[..], TIMEOUT_NEGATIVE),
            (b"inf", TIMEOUT_NEGATIVE),
            (b"1e30", TIMEOUT_NEGATIVE),
            (b"nan", TIMEOUT_NOT_FLOAT),
            (b"x", TIMEOUT_NOT_FLOAT),
            (b"", TIMEOUT_NOT_FLOAT),
        ] {
            assert_eq!(deadline_ms(arg, now), Err(Error::Static(want)), "{arg:?}");
        }
    }

    /// The feed is asked for changes exactly while a blocked client is not woken, and a
    /// write to the key wakes the first client in line (here: records its wake-up).
    #[test]
    fn registry_counts_waiters_and_asks_the_feed_only_while_needed() {
        let mut h = Harness::new();
        assert!(!h.server.keyspace.feed().records_changes());
        assert_eq!(h.run_raw(&[b"BLPOP", b"k", b"0"]), b"");
        // The harness stops waiting at once (it has no network layer to wait in).
        assert_eq!(h.server.blocking.count(), 0);
        assert!(!h.server.keyspace.feed().records_changes());
        let handle = Arc::clone(&h.conn.handle);
        h.server.blocking.register(&handle, 0, &[b"k"]);
        assert_eq!(h.server.blocking.count(), 1);
        assert!(h.server.blocking.is_blocked(handle.id));
        assert!(h.server.keyspace.feed().records_changes());
        h.run(&["RPUSH", "k", "v"]);
        assert!(h.server.blocking.inner.lock().waiters[&handle.id].woken);
        // Woken, the client looks at its keys itself: no change is news until it sleeps again.
        assert_eq!(h.server.blocking.count(), 1);
        assert!(!h.server.keyspace.feed().records_changes());
        h.server.blocking.register(&handle, 0, &[b"k"]);
        assert!(h.server.keyspace.feed().records_changes());
        assert!(!h.server.blocking.inner.lock().waiters[&handle.id].woken);
        assert!(h.server.blocking.unblock(handle.id, Unblock::Error));
        assert!(!h.server.keyspace.feed().records_changes());
        assert_eq!(h.server.blocking.unblocked(handle.id), Some(Unblock::Error));
        h.server.blocking.unregister(handle.id);
        assert_eq!(h.server.blocking.count(), 0);
        assert!(!h.server.keyspace.feed().records_changes());
        assert!(!h.server.blocking.unblock(handle.id, Unblock::Timeout));
    }

    #[test]
    fn served_at_once_and_never_blocks_inside_exec() {
        let mut h = Harness::new();
        h.run(&["RPUSH", "k", "a", "b"]);
        h.check_plans(&["BLPOP nokey k 0", "BRPOP k nokey 0", "BLPOP a b c 0"]);
        h.run(&["SET", "s", "v"]);
        assert_eq!(
            h.run(&["BLPOP", "s", "0"]),
            err("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
        assert_eq!(h.server.blocking.count(), 0);
    }
}
