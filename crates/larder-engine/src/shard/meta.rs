//! Writes to an entry's metadata rather than its value: its deadline, version, memcached
//! flags and state, and access time, and the record of a memcached write as a command. Apart
//! from the slab and index code because none of these moves an entry or changes its key.

use super::{Shard, SlotId, CHUNK_SHIFT, CHUNK_SLOTS};
use crate::feed::{Argv, ChangeKind};

impl Shard {
    /// Set (`Some`) or clear (`None`) the deadline. Counts as a write (bumps the version).
    pub fn set_expire(&mut self, slot: SlotId, expire_at_ms: Option<u64>) {
        let new_at = expire_at_ms.unwrap_or(0);
        let old_at = self.slot(slot).expire_at_ms;
        if old_at != 0 {
            self.expires.remove(&(old_at, slot));
        }
        if new_at != 0 {
            self.expires.insert((new_at, slot));
        }
        let version = self.next_version();
        let e = self.slot_mut(slot);
        e.expire_at_ms = new_at;
        e.version = version;
        self.record(ChangeKind::Written, slot);
    }

    /// Record the command that recreates the string at `slot` as it now is (value, deadline;
    /// its version and flags follow in the log), for a door whose requests are not commands
    /// of the table: memcached's writes are logged as their result, `SET key value [PXAT ms]`,
    /// never as the request. Call it after the write, under the same lock.
    pub fn record_state(&self, slot: SlotId) {
        if !self.feed.records_commands() {
            return;
        }
        let e = self.slot(slot);
        let Some(value) = e.string() else {
            debug_assert!(false, "record_state on a collection");
            return;
        };
        let argv = if e.expire_at_ms != 0 {
            let at = e.expire_at_ms.to_string();
            Argv::new(&[b"SET".as_slice(), e.key(), value, b"PXAT", at.as_bytes()])
        } else {
            Argv::new(&[b"SET".as_slice(), e.key(), value])
        };
        // The command carries the version and flags the entry ended with (an insert recorded
        // its change before the door set the flags).
        self.feed
            .command_now(self.db_index(), argv, Some((e, e.flags)));
    }

    /// Give a replayed or loaded entry back the version and flags it had, and keep this
    /// shard's version counter past it, so no version is ever issued twice.
    pub fn restore_version(&mut self, slot: SlotId, version: u64, flags: u32) {
        self.version_seq = self.version_seq.max(version >> 20);
        self.set_version(slot, version);
        self.slot_mut(slot).flags = flags;
    }

    /// Set memcached client flags.
    pub fn set_flags(&mut self, slot: SlotId, flags: u32) {
        self.slot_mut(slot).flags = flags;
    }

    /// Set (`Some`) or clear (`None`) the deadline without counting as a write: the version
    /// stays. memcached's touch, gat and `mg T` change an item's TTL but not its CAS.
    pub fn set_expire_keep_version(&mut self, slot: SlotId, expire_at_ms: Option<u64>) {
        let new_at = expire_at_ms.unwrap_or(0);
        let old_at = self.slot(slot).expire_at_ms;
        if old_at == new_at {
            return;
        }
        if old_at != 0 {
            self.expires.remove(&(old_at, slot));
        }
        if new_at != 0 {
            self.expires.insert((new_at, slot));
        }
        self.slot_mut(slot).expire_at_ms = new_at;
        self.record(ChangeKind::Written, slot);
    }

    /// Give the entry a version chosen by the client (memcached's meta `E<cas>` flag) instead
    /// of the fresh one its last write got. Versions stop being unique if clients choose
    /// duplicates, as memcached's CAS values do then. 0 is refused (it marks a vacant slot):
    /// the entry keeps its version and `false` is returned.
    pub fn set_version(&mut self, slot: SlotId, version: u64) -> bool {
        if version == 0 {
            return false;
        }
        let e = self.slot_mut(slot);
        let bits = e.mc_state();
        e.version = version;
        e.set_mc_state(bits);
        true
    }

    /// Set the memcached item state bits (see [`Entry::mc_state`](crate::Entry::mc_state)); not a write.
    pub fn set_mc_state(&mut self, slot: SlotId, bits: u8) {
        self.meta_mut(slot).set_mc_state(bits);
    }

    /// Record an access at `now_ms` (TOUCH): the LRU clock, or under an LFU policy a
    /// logarithmic increment of the decayed counter.
    #[inline]
    pub fn touch(&mut self, slot: SlotId, now_ms: u64) {
        let policy = &self.policy;
        let e = &mut self.chunks[(slot >> CHUNK_SHIFT) as usize][slot as usize & (CHUNK_SLOTS - 1)];
        e.access = policy.touched(e.access, now_ms);
    }

    /// Set the raw `access` field (tests, DEBUG-style aging).
    pub fn set_access(&mut self, slot: SlotId, access: u32) {
        self.meta_mut(slot).access = access;
    }
}
