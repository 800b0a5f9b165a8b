//! Active expiry: the pass over shards whose earliest deadline is due, the thread loop that
//! runs it, and the count of expired keys. Apart because it is the keyspace's one background
//! task; the deadlines it reads are published by `ShardRef`'s drop in the parent module.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Keyspace;
use crate::entry::Entry;

/// Most keys one shard reclaims per active expiry pass, so a mass expiry never holds a shard
/// lock for long.
const EXPIRE_BATCH: usize = 512;

impl Keyspace {
    /// Keys removed by expiry so far (lazy and active).
    pub fn expired_keys(&self) -> u64 {
        self.shared.expired_keys.load(Ordering::Relaxed)
    }

    /// Count keys expired lazily by a command.
    pub fn note_expired(&self, n: u64) {
        self.shared.expired_keys.fetch_add(n, Ordering::Relaxed);
    }

    /// One active expiry pass over all shards whose earliest deadline is due. Returns the
    /// number of keys removed and the next deadline (u64::MAX if none).
    pub fn expire_cycle(
        &self,
        now_ms: u64,
        mut on_expired: impl FnMut(usize, &Entry),
    ) -> (usize, u64) {
        let mut removed = 0;
        let mut next = u64::MAX;
        for (d, db) in self.dbs.iter().enumerate() {
            for (s, cell) in db.cells.iter().enumerate() {
                let hint = cell.deadline_hint.load(Ordering::Relaxed);
                if hint <= now_ms {
                    let mut shard = db.lock(s);
                    removed += shard.expire_due(now_ms, EXPIRE_BATCH, |e| on_expired(d, e));
                    next = next.min(shard.next_deadline_ms().unwrap_or(u64::MAX));
                } else {
                    next = next.min(hint);
                }
            }
        }
        self.shared
            .expired_keys
            .fetch_add(removed as u64, Ordering::Relaxed);
        (removed, next)
    }

    /// Run the active expiry cycle on the current thread until `stop` returns true. Sleeps
    /// until the earliest deadline (at most `idle_ms`), and is woken early when a command sets
    /// an earlier one, so keys disappear within about a millisecond of their deadline.
    pub fn run_expiry(
        &self,
        idle_ms: u64,
        stop: impl Fn() -> bool,
        mut on_expired: impl FnMut(usize, &Entry),
    ) {
        *self.shared.expiry_thread.lock() = Some(std::thread::current());
        while !stop() {
            let now = crate::clock::now_ms();
            // Publish "awake until further notice" before scanning so that a deadline set
            // during the pass is noticed on the next one.
            self.shared.expiry_wake_ms.store(0, Ordering::Relaxed);
            let (removed, next) = self.expire_cycle(now, &mut on_expired);
            let now = crate::clock::now_ms();
            let wake = if removed > 0 && next <= now {
                now
            } else {
                next.min(now + idle_ms)
            };
            self.shared
                .expiry_wake_ms
                .store(wake.max(now + 1), Ordering::Relaxed);
            // Re-check hints published while we were scanning (they saw wake=0 and did not
            // unpark us).
            let missed = self
                .dbs
                .iter()
                .flat_map(|db| db.cells.iter())
                .any(|c| c.deadline_hint.load(Ordering::Relaxed) < wake);
            if missed && removed == 0 && next > now {
                std::thread::park_timeout(Duration::from_millis(1));
                continue;
            }
            let sleep_ms = wake.saturating_sub(now).max(1);
            std::thread::park_timeout(Duration::from_millis(sleep_ms));
        }
        *self.shared.expiry_thread.lock() = None;
    }
}
