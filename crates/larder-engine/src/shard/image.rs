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
/// time, and the key with it), or its absence.
#[derive(Debug)]
pub struct KeyImage {
    hash: u64,
    was: Was,
}

#[derive(Debug)]
enum Was {
    Present(Entry),
    Absent(Vec<u8>),
}

impl KeyImage {
    /// The key it is an image of.
    pub fn key(&self) -> &[u8] {
        match &self.was {
            Was::Present(e) => e.key(),
            Was::Absent(key) => key,
        }
    }

    /// The memory the image holds (the copy of the value), to bound what a run keeps.
    pub fn memory_bytes(&self) -> usize {
        match &self.was {
            Was::Present(e) => e.memory_bytes(),
            Was::Absent(_) => 0,
        }
    }
}

impl Shard {
    /// An image of `key` now, or `None` if its entry takes more than `max_bytes` (not worth
    /// the copy). A key past its deadline is removed first (recorded as expired, as any
    /// reader would) and imaged as absent.
    pub fn image(
        &mut self,
        key: &[u8],
        hash: u64,
        now_ms: u64,
        max_bytes: usize,
    ) -> Option<KeyImage> {
        let was = match self.find(key, hash, now_ms) {
            None => Was::Absent(key.to_vec()),
            Some(slot) => {
                let e = self.slot(slot);
                if e.memory_bytes() > max_bytes {
                    return None;
                }
                let mut copy = e.clone_with_key(key);
                copy.version = e.version;
                copy.mc_state = e.mc_state;
                Was::Present(copy)
            }
        };
        Some(KeyImage { hash, was })
    }

    /// Put a key back as `image` says, recording nothing in the feed: the entry there now,
    /// if any, goes, and the imaged one (with its version, deadline and access time) takes
    /// its place.
    pub fn put_back(&mut self, image: KeyImage, now_ms: u64) {
        if let Some(slot) = self.find_raw(image.key(), image.hash) {
            // Undoing a change that was never committed: nothing to record.
            self.unlink(slot);
        }
        if let Was::Present(entry) = image.was {
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
        let image = s.image(b"k", h, now, usize::MAX).expect("small");
        assert!(image.memory_bytes() > 0);
        assert_eq!(image.key(), b"k");
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
        let image = s.image(b"k", h, 5, usize::MAX).expect("absent");
        assert_eq!(image.memory_bytes(), 0);
        assert_eq!(image.key(), b"k");
        let used = s.used_bytes();
        s.insert_object(b"k", h, Object::Str(b"v".to_vec()), 0, 5);
        s.put_back(image, 5);
        assert!(s.find(b"k", h, 5).is_none());
        assert_eq!((s.len(), s.used_bytes()), (0, used));
    }

    #[test]
    fn a_key_over_the_bound_is_not_imaged() {
        let mut s = Shard::new(0);
        let h = hash(b"k");
        s.insert_string(b"k", h, &[7u8; 1000], 0, 1);
        assert!(s.image(b"k", h, 1, 100).is_none());
        let image = s.image(b"k", h, 1, 100_000).expect("within the bound");
        assert!(image.memory_bytes() >= 1000);
    }

    #[test]
    fn an_expired_key_is_imaged_as_absent() {
        let mut s = Shard::new(0);
        let h = hash(b"k");
        s.insert_string(b"k", h, b"v", 10, 1);
        let image = s.image(b"k", h, 20, 0).expect("expired: absent");
        s.insert_string(b"k", h, b"w", 0, 20);
        s.put_back(image, 20);
        assert!(s.find_raw(b"k", h).is_none());
    }
}
