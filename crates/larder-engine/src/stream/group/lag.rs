//! A group's read counter and lag (Redis 7.0's `entries_read`): how many of the stream's
//! entries the group has read, known exactly while no deleted entry lies ahead of it, else
//! estimated where the stream's counters allow and unknown otherwise (`streamReplyWithCGLag`,
//! `streamEstimateDistanceFromFirstEverEntry` and `streamRangeHasTombstones` in t_stream.c).

use super::{Group, StreamId};

/// What the read counter needs to know of the stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamMeta {
    /// Entries in the stream now.
    pub length: u64,
    /// Entries ever added.
    pub entries_added: u64,
    pub last_id: StreamId,
    /// The first entry's ID (as Redis records it).
    pub first_id: StreamId,
    /// The greatest ID ever deleted (0-0: none).
    pub max_deleted_id: StreamId,
}

impl StreamMeta {
    /// Whether a deleted entry may lie in `start..` (`streamRangeHasTombstones` with no end).
    fn has_tombstones_from(&self, start: StreamId) -> bool {
        if self.length == 0 || self.max_deleted_id == StreamId::MIN {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id
    }

    /// The read counter of `id`: how many entries were added up to it, when the stream's
    /// counters tell (`streamEstimateDistanceFromFirstEverEntry`).
    pub fn entries_up_to(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.length == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        if id == self.last_id {
            return Some(self.entries_added);
        }
        if id > self.last_id {
            return None;
        }
        if self.max_deleted_id == StreamId::MIN || self.max_deleted_id < self.first_id {
            if id < self.first_id {
                return Some(self.entries_added - self.length);
            }
            if id == self.first_id {
                return Some(self.entries_added - self.length + 1);
            }
        }
        None
    }
}

impl Group {
    /// A read of new entries reached `id`: if it is past the last delivered ID, it becomes
    /// the last delivered ID and the read counter follows it (counted on while no deleted
    /// entry lies ahead, else estimated). True if the last delivered ID moved.
    pub fn advance(&mut self, id: StreamId, meta: &StreamMeta) -> bool {
        if id <= self.last_id {
            return false;
        }
        match self.entries_read {
            Some(n) if !meta.has_tombstones_from(id) => self.entries_read = Some(n + 1),
            _ if meta.entries_added != 0 => self.entries_read = meta.entries_up_to(id),
            _ => {}
        }
        self.last_id = id;
        true
    }

    /// Entries of the stream not yet delivered to the group, `None` when it cannot be told
    /// (XINFO's `lag`). Negative only after an ENTRIESREAD past the stream's count.
    pub fn lag(&self, meta: &StreamMeta) -> Option<i64> {
        if meta.entries_added == 0 {
            return Some(0);
        }
        let read = match self.entries_read {
            Some(n) if !meta.has_tombstones_from(self.last_id) => n,
            _ => meta.entries_up_to(self.last_id)?,
        };
        Some((meta.entries_added as i64).wrapping_sub(read as i64))
    }
}
