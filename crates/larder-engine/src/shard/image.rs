//! Keys kept as they were, to put back: what lets a script run be abandoned after it wrote.
//!
//! A script runs with its declared keys' shards locked; if it reaches a key outside them, the
//! executor abandons the run and starts it again with more locked (see ARCHITECTURE.md,
//! "Scripts"). Before each write of the run, the key's [`KeyImage`] is taken; abandoning puts
//! every image back and drops the run's records from the feed group
//! (`feed::rollback`). No other client saw the run's writes: its shards stayed locked.

use super::Shard;
use crate::entry::Entry;

/// A key as it was: its whole entry (value, deadline, version, memcached state, access
/// time), or its absence.
#[derive(Debug)]
pub struct KeyImage {
    key: Vec<u8>,
    hash: u64,
    entry: Option<Entry>,
}

impl KeyImage {
    /// The key it is an image of.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The memory the image holds (the copy of the value), to bound what a run keeps.
    pub fn memory_bytes(&self) -> usize {
        self.entry.as_ref().map_or(0, Entry::memory_bytes)
    }
}

impl Shard {
    /// The memory `key`'s entry takes now (0 when absent), to decide whether an image is
    /// worth its copy. Expires nothing.
    pub fn memory_of(&self, key: &[u8], hash: u64) -> usize {
        self.find_raw(key, hash)
            .map_or(0, |s| self.slot(s).memory_bytes())
    }

    /// An image of `key` now. A key past its deadline is removed first (recorded as
    /// expired, as any reader would) and imaged as absent.
    pub fn image(&mut self, key: &[u8], hash: u64, now_ms: u64) -> KeyImage {
        let entry = self.find(key, hash, now_ms).map(|slot| {
            let e = self.slot(slot);
            let mut copy = e.clone_with_key(key);
            copy.version = e.version;
            copy.mc_state = e.mc_state;
            copy
        });
        KeyImage {
            key: key.to_vec(),
            hash,
            entry,
        }
    }

    /// Put a key back as `image` says, recording nothing in the feed: the entry there now,
    /// if any, goes, and the imaged one (with its version, deadline and access time) takes
    /// its place.
    pub fn put_back(&mut self, image: KeyImage, now_ms: u64) {
        if let Some(slot) = self.find_raw(&image.key, image.hash) {
            // Undoing a change that was never committed: nothing to record.
            self.unlink(slot);
        }
        if let Some(entry) = image.entry {
            let access = entry.access;
            let slot = self.place_entry(entry, image.hash, now_ms);
            self.slot_mut(slot).access = access;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Object;

    fn hash(key: &[u8]) -> u64 {
        crate::Db::route(key).1
    }

    #[test]
    fn put_back_restores_value_version_and_deadline() {
        let mut s = Shard::new(0);
        let now = 1_000;
        let h = hash(b"k");
        let slot = s.insert_string(b"k", h, b"old", now + 60_000, now);
        let version = s.entry(slot).version();
        let image = s.image(b"k", h, now);
        assert!(image.memory_bytes() > 0);
        s.set_string(slot, b"new");
        s.set_expire(slot, None);
        s.put_back(image, now);
        let slot = s.find(b"k", h, now).expect("restored");
        let e = s.entry(slot);
        assert_eq!(e.string(), Some(&b"old"[..]));
        assert_eq!(e.version(), version);
        assert_eq!(e.expire_at_ms(), Some(now + 60_000));
        assert_eq!(s.next_deadline_ms(), Some(now + 60_000));
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn put_back_of_an_absent_key_removes_it() {
        let mut s = Shard::new(0);
        let h = hash(b"k");
        let image = s.image(b"k", h, 5);
        assert_eq!(image.memory_bytes(), 0);
        let used = s.used_bytes();
        s.insert_object(b"k", h, Object::Str(b"v".to_vec()), 0, 5);
        s.put_back(image, 5);
        assert!(s.find(b"k", h, 5).is_none());
        assert_eq!((s.len(), s.used_bytes()), (0, used));
    }

    #[test]
    fn an_expired_key_is_imaged_as_absent() {
        let mut s = Shard::new(0);
        let h = hash(b"k");
        s.insert_string(b"k", h, b"v", 10, 1);
        let image = s.image(b"k", h, 20);
        s.insert_string(b"k", h, b"w", 0, 20);
        s.put_back(image, 20);
        assert!(s.find_raw(b"k", h).is_none());
    }
}
