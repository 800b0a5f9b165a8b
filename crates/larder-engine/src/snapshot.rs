//! Point-in-time captures of the whole keyspace without fork, while writes continue.
//!
//! [`Keyspace::begin_capture`] locks every shard of every database (in the global order),
//! gives each shard a capture state, runs the caller's `at_point` (where it reads the
//! feed's position: no group commits while every shard is locked, so that is one point of
//! the feed's total order) and unlocks. From then on two things hand the point-in-time
//! entries over, each exactly once:
//!
//! - the *walk*, [`Capture::step`], visits each shard's slots in order, one shard locked at a
//!   time, skipping the slots that no longer hold their point-in-time entry;
//! - the *hook*: before a write changes or removes an entry the walk has not reached and
//!   that still holds its point-in-time value, the shard hands that entry to the capture's
//!   [`PreImage`] sink (as Dragonfly serializes an entry before its first change).
//!
//! Extra memory is bounded: one bit per slot that existed at the point, allocated only in
//! shards changed during the capture; pre-images go straight to the sink. FLUSHDB and
//! FLUSHALL during a capture hand the slab of each shard the walk has not finished to the
//! capture instead of freeing it (no serializing under the lock; the memory is freed once
//! walked, so a flush followed by a refill may briefly hold both); SWAPDB moves the capture
//! states with the data, at no cost.
//!
//! The shard side (the hook and the walk over one shard) is in `shard/snapshot.rs`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::entry::Entry;
use crate::keyspace::{Db, DbGuards, Keyspace, SHARDS_PER_DB};
use crate::shard::{Orphan, RestoreValue, Restored};
use parking_lot::Mutex;

/// Where a capture's point-in-time entries go when a write is about to change them: the
/// sink serializes the entry as it is now (its value at the capture's point). Called with
/// the entry's shard locked, from whichever thread writes.
pub trait PreImage: Send + Sync {
    /// `entry` of database `db` (as it was numbered at the point), before its first change.
    fn save(&self, db: u32, entry: &Entry);
}

/// A part of the capture is done (in `CaptureCtx::location`).
pub(crate) const DONE: u32 = u32::MAX;

/// What the shards of a running capture share.
pub(crate) struct CaptureCtx {
    sink: Arc<dyn PreImage>,
    /// For each part of the capture (numbered by the global shard id that held its data at
    /// the point), the global shard id that holds it now (SWAPDB moves it), or [`DONE`].
    /// Written under that shard's lock.
    pub(crate) location: Box<[AtomicU32]>,
    /// Entries handed to the sink.
    saved: AtomicU64,
    /// Slabs of shards flushed before the walk finished them, for the walk to finish.
    pub(crate) orphans: Mutex<Vec<Orphan>>,
}

impl CaptureCtx {
    pub(crate) fn save(&self, db: u32, entry: &Entry) {
        self.saved.fetch_add(1, Ordering::Relaxed);
        self.sink.save(db, entry);
    }
}

/// A running capture (see the module docs). Dropping it ends the capture, finished or not.
pub struct Capture<'a> {
    keyspace: &'a Keyspace,
    ctx: Arc<CaptureCtx>,
    /// The next part the walk works on.
    next: usize,
}

impl Keyspace {
    /// Begin a point-in-time capture: every shard locked, each given its capture state, then
    /// `at_point` runs while all are still held (it gets them, to read the keyspace as it is
    /// at the point if it wants), then they are unlocked. Returns `None` if another capture
    /// is running.
    pub fn begin_capture(
        &self,
        sink: Arc<dyn PreImage>,
        at_point: impl FnOnce(&mut DbGuards<'_>),
    ) -> Option<Capture<'_>> {
        if self.capture_flag().swap(true, Ordering::AcqRel) {
            return None;
        }
        let parts = self.db_count() * SHARDS_PER_DB;
        let ctx = Arc::new(CaptureCtx {
            sink,
            location: (0..parts as u32).map(AtomicU32::new).collect(),
            saved: AtomicU64::new(0),
            orphans: Mutex::new(Vec::new()),
        });
        // Declared before the guards so that, should `at_point` panic, the guards are
        // released before the capture's drop locks shards again.
        let capture = Capture {
            keyspace: self,
            ctx: Arc::clone(&ctx),
            next: 0,
        };
        let all: Vec<usize> = (0..self.db_count()).collect();
        let mut guards = self.lock_dbs(&all);
        for shard in guards.iter_mut() {
            shard.capture_start(&ctx);
        }
        at_point(&mut guards);
        drop(guards);
        Some(capture)
    }

    /// Load one entry of database `db` from a snapshot (see [`crate::Shard::restore_entry`]).
    ///
    /// # Panics
    /// If `db >= db_count()`: the loader checks the number first.
    #[allow(clippy::too_many_arguments)]
    pub fn restore(
        &self,
        db: usize,
        key: &[u8],
        value: RestoreValue<'_>,
        expire_at_ms: u64,
        version: u64,
        flags: u32,
        now_ms: u64,
    ) -> Restored {
        let (shard, hash) = Db::route(key);
        self.db(db).lock(shard).restore_entry(
            key,
            hash,
            value,
            expire_at_ms,
            version,
            flags,
            now_ms,
        )
    }
}

impl Capture<'_> {
    /// Visit up to `max` point-in-time entries not yet visited or saved, with their database
    /// (as numbered at the point), locking one shard at a time; an entry past its deadline
    /// but not yet removed is visited as it is. Returns false once every shard is done.
    pub fn step(&mut self, max: usize, mut visit: impl FnMut(u32, &Entry)) -> bool {
        let parts = self.ctx.location.len();
        let mut left = max.max(1);
        loop {
            // Flushed slabs first: they hold memory the flush meant to free.
            let Some(mut orphan) = self.ctx.orphans.lock().pop() else {
                break;
            };
            let (n, done) = orphan.step(left, &mut visit);
            if !done {
                self.ctx.orphans.lock().push(orphan);
            }
            left = left.saturating_sub(n);
            if left == 0 {
                return true;
            }
        }
        while self.next < parts {
            let part = self.next;
            let at = self.ctx.location[part].load(Ordering::Acquire);
            if at == DONE {
                self.next += 1;
                continue;
            }
            let (db, shard) = (at as usize / SHARDS_PER_DB, at as usize % SHARDS_PER_DB);
            let mut guard = self.keyspace.db(db).lock(shard);
            // `None`: SWAPDB moved this part after `location` was read; read it again.
            if let Some(n) = guard.capture_step(part as u32, left, &mut visit) {
                left = left.saturating_sub(n);
                if left == 0 {
                    return true;
                }
            }
        }
        // A flush during the last shard's walk may have left a slab.
        if self.ctx.orphans.lock().is_empty() {
            return false;
        }
        self.step(left, visit)
    }

    /// Entries the write path handed to the sink so far.
    pub fn saved(&self) -> u64 {
        self.ctx.saved.load(Ordering::Relaxed)
    }
}

impl Drop for Capture<'_> {
    fn drop(&mut self) {
        for d in 0..self.keyspace.db_count() {
            let db = self.keyspace.db(d);
            for s in 0..SHARDS_PER_DB {
                db.lock(s).capture_end();
            }
        }
        self.keyspace.capture_flag().store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests;
