//! A shard's side of a point-in-time capture (see `crate::snapshot`), and loading entries
//! back from a snapshot.
//!
//! While a capture runs, a shard holds a [`ShardCapture`]: the slots that existed at the
//! point (`limit`), how far the capture's walk has come (`cursor`), and a bitmap of the slots
//! in `cursor..limit` that no longer hold their point-in-time entry because it was saved
//! before a change (or because the slot was vacant at the point and has been filled since).
//! A slot in `cursor..limit` that is live and unmarked holds exactly the entry it held at the
//! point: every change to an entry goes through `Shard::slot_mut` or `Shard::alloc_slot`,
//! which call [`Shard::capture_before_change`] first, and slots never move while a key lives.
//!
//! Versions are not used to tell the two apart: memcached's `E` flag sets a version the
//! client chose (possibly lower than any issued at the point), and client flags and
//! memcached TTL touches change an entry without a new version.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{slot_in, Shard, SlotId};
use crate::entry::{Entry, Object};
use crate::snapshot::{CaptureCtx, DONE};

/// One shard's part of a running capture.
pub(crate) struct ShardCapture {
    /// Which part of the capture this is: the global shard id (`db * SHARDS_PER_DB + shard`)
    /// that held this data at the point.
    pub(crate) id: u32,
    /// The database the data belonged to at the point (SWAPDB may move it since).
    pub(crate) db: u32,
    /// Slots below this are done (visited, saved, or new since the point).
    pub(crate) cursor: SlotId,
    /// Slots at and above this did not exist at the point.
    pub(crate) limit: SlotId,
    /// One bit per slot below `limit` (allocated on the first change): set when the slot no
    /// longer holds its point-in-time entry.
    pub(crate) marked: Vec<u64>,
    pub(crate) ctx: Arc<CaptureCtx>,
}

impl std::fmt::Debug for ShardCapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardCapture")
            .field("id", &self.id)
            .field("db", &self.db)
            .field("cursor", &self.cursor)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// Whether `slot`'s bit is set in a capture's bitmap (not allocated: none is).
#[inline]
fn bit(marked: &[u64], slot: SlotId) -> bool {
    marked
        .get(slot as usize / 64)
        .is_some_and(|w| w & (1 << (slot % 64)) != 0)
}

/// How many slots ahead of a capture's walk an entry's block is prefetched, and the rest of
/// its value (read from the block's header, which has arrived by then).
const PREFETCH_AHEAD: SlotId = 8;
const PREFETCH_VALUE_AHEAD: SlotId = 4;

/// Visit the live, unmarked entries of `chunks` from slot `from` up to `end`, until `max`
/// were visited or `8 * max` slots looked at. Returns the slot to go on from and how many
/// were visited.
fn walk(
    chunks: &[Vec<Entry>],
    marked: &[u64],
    db: u32,
    (from, end): (SlotId, SlotId),
    max: usize,
    visit: &mut dyn FnMut(u32, &Entry),
) -> (SlotId, usize) {
    let mut slot = from;
    let mut visited = 0;
    let mut looked = 0;
    while slot < end && visited < max && looked < max.saturating_mul(8) {
        // The walk waits on each entry's block and value: ask for a later one's while this
        // one is written, in two steps (the value's length is in the block's header).
        if end - slot > PREFETCH_AHEAD {
            slot_in(chunks, slot + PREFETCH_AHEAD).prefetch_block();
        }
        if end - slot > PREFETCH_VALUE_AHEAD {
            slot_in(chunks, slot + PREFETCH_VALUE_AHEAD).prefetch_value();
        }
        if !bit(marked, slot) {
            let e = slot_in(chunks, slot);
            if !e.is_vacant() {
                visit(db, e);
                visited += 1;
            }
        }
        slot += 1;
        looked += 1;
    }
    (slot, visited)
}

/// The slab of a shard flushed while a capture had not finished it: the capture owns it now
/// and walks it like a shard, without any lock.
pub(crate) struct Orphan {
    db: u32,
    chunks: Vec<Vec<Entry>>,
    cursor: SlotId,
    end: SlotId,
    marked: Vec<u64>,
}

impl Orphan {
    /// Visit up to `max` of its point-in-time entries; returns how many, and whether it is
    /// done.
    pub(crate) fn step(&mut self, max: usize, visit: &mut dyn FnMut(u32, &Entry)) -> (usize, bool) {
        let (next, visited) = walk(
            &self.chunks,
            &self.marked,
            self.db,
            (self.cursor, self.end),
            max,
            visit,
        );
        self.cursor = next;
        (visited, next >= self.end)
    }
}

impl ShardCapture {
    #[inline]
    fn is_marked(&self, slot: SlotId) -> bool {
        bit(&self.marked, slot)
    }

    fn mark(&mut self, slot: SlotId) {
        if self.marked.is_empty() {
            self.marked = vec![0; (self.limit as usize).div_ceil(64)];
        }
        self.marked[slot as usize / 64] |= 1 << (slot % 64);
    }
}

/// What [`Shard::restore_entry`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restored {
    /// The entry is in the shard, in this slot.
    Inserted(SlotId),
    /// Its deadline had passed: nothing was inserted.
    Expired,
    /// The key was already present: nothing was inserted.
    Exists,
}

/// A value read back from a snapshot, for [`Shard::restore_entry`].
#[derive(Debug)]
pub enum RestoreValue<'a> {
    String(&'a [u8]),
    Object(Object),
}

impl Shard {
    /// Start this shard's part of a capture whose parts are numbered by global shard id. The
    /// caller holds every shard of the keyspace.
    pub(crate) fn capture_start(&mut self, ctx: &Arc<CaptureCtx>) {
        let limit = self.slot_count() as SlotId;
        if limit == 0 {
            ctx.location[self.id as usize].store(DONE, Ordering::Release);
            return;
        }
        self.capture = Some(Box::new(ShardCapture {
            id: self.id,
            db: self.db_index() as u32,
            cursor: 0,
            limit,
            marked: Vec::new(),
            ctx: Arc::clone(ctx),
        }));
    }

    /// The capture hook: `slot` is about to change (or be filled). If it still holds its
    /// point-in-time entry and the capture has not visited it yet, hand that entry to the
    /// sink now; either way the capture will not look at the slot again.
    #[cold]
    #[inline(never)]
    pub(super) fn capture_before_change(&mut self, slot: SlotId) {
        let total = self.slot_count();
        let Some(c) = self.capture.as_mut() else {
            return;
        };
        if slot < c.cursor || slot >= c.limit || c.is_marked(slot) {
            return;
        }
        c.mark(slot);
        if (slot as usize) < total {
            let e = slot_in(&self.chunks, slot);
            if !e.is_vacant() {
                c.ctx.save(c.db, e);
            }
        }
    }

    /// Visit up to `max` point-in-time entries from the cursor (looking at no more than
    /// `8 * max` slots), if this shard holds part `id` of the capture. Returns `None` when it
    /// does not (SWAPDB moved it), else how many were visited; once the part is done, the
    /// shard drops its capture state and marks the part done.
    pub(crate) fn capture_step(
        &mut self,
        id: u32,
        max: usize,
        visit: &mut dyn FnMut(u32, &Entry),
    ) -> Option<usize> {
        let total = self.slot_count();
        let c = self.capture.as_mut().filter(|c| c.id == id)?;
        let end = (c.limit as usize).min(total) as SlotId;
        let (slot, visited) = walk(&self.chunks, &c.marked, c.db, (c.cursor, end), max, visit);
        c.cursor = slot;
        if slot >= end {
            self.capture_done();
        }
        Some(visited)
    }

    /// Every key is about to go (FLUSHDB, FLUSHALL): if the capture has not finished this
    /// shard, hand the slab itself over to it (see `Orphan`), so the flush costs no
    /// serializing under the lock; the capture frees it once walked.
    #[cold]
    pub(super) fn capture_detach(&mut self) {
        let total = self.slot_count();
        let Some(c) = self.capture.take() else {
            return;
        };
        c.ctx.location[c.id as usize].store(DONE, Ordering::Release);
        let end = (c.limit as usize).min(total) as SlotId;
        if c.cursor < end {
            let c = *c;
            c.ctx.orphans.lock().push(Orphan {
                db: c.db,
                chunks: std::mem::take(&mut self.chunks),
                cursor: c.cursor,
                end,
                marked: c.marked,
            });
        }
    }

    /// SWAPDB: the capture states go with the data they describe.
    #[cold]
    pub(super) fn capture_swap(&mut self, other: &mut Shard) {
        std::mem::swap(&mut self.capture, &mut other.capture);
        for shard in [&*self, &*other] {
            if let Some(c) = &shard.capture {
                c.ctx.location[c.id as usize].store(shard.id, Ordering::Release);
            }
        }
    }

    fn capture_done(&mut self) {
        if let Some(c) = self.capture.take() {
            c.ctx.location[c.id as usize].store(DONE, Ordering::Release);
        }
    }

    /// Drop this shard's capture state, whatever its progress (the capture ended).
    pub(crate) fn capture_end(&mut self) {
        self.capture = None;
    }

    /// Load one entry from a snapshot: insert `key` (which must be absent) with exactly this
    /// version, deadline and memcached flags. The shard's version counter moves above
    /// `version`, so no version issued afterwards repeats it. Nothing is recorded in the feed
    /// (loading happens before anyone reads it). An entry whose deadline is at or before
    /// `now_ms` is skipped, and so is a key that is already present; version 0 (which marks
    /// a vacant slot) gets a fresh version instead.
    #[allow(clippy::too_many_arguments)]
    pub fn restore_entry(
        &mut self,
        key: &[u8],
        hash: u64,
        value: RestoreValue<'_>,
        expire_at_ms: u64,
        version: u64,
        flags: u32,
        now_ms: u64,
    ) -> Restored {
        if expire_at_ms != 0 && expire_at_ms <= now_ms {
            return Restored::Expired;
        }
        if self.find_raw(key, hash).is_some() {
            return Restored::Exists;
        }
        let mut entry = match value {
            RestoreValue::String(s) => Entry::new_string(key, s),
            RestoreValue::Object(o) => Entry::new_object(key, o),
        };
        entry.version = if version == 0 {
            self.next_version()
        } else {
            self.version_seq = self.version_seq.max(version >> 20);
            version
        };
        entry.expire_at_ms = expire_at_ms;
        entry.flags = flags;
        Restored::Inserted(self.place_entry(entry, hash, now_ms))
    }
}
