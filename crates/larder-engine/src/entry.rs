//! One key and everything stored with it.

/// The Redis type of a value, as `TYPE` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    String,
    List,
    Hash,
    Set,
    ZSet,
    Stream,
}

impl ObjectKind {
    /// The name `TYPE` and `SCAN ... TYPE` use.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::String => "string",
            ObjectKind::List => "list",
            ObjectKind::Hash => "hash",
            ObjectKind::Set => "set",
            ObjectKind::ZSet => "zset",
            ObjectKind::Stream => "stream",
        }
    }
}

/// A value that does not live inline in the entry's key allocation.
///
/// Strings start inline (one allocation holds key and value); a string that is grown in place
/// (APPEND, SETRANGE) moves here so that repeated growth is amortised. Collection types live
/// here too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Object {
    /// A string that has been modified in place.
    Str(Vec<u8>),
    /// A list, head first. Never empty while stored: commands delete a list that empties.
    List(std::collections::VecDeque<Box<[u8]>>),
}

impl Object {
    pub fn kind(&self) -> ObjectKind {
        match self {
            Object::Str(_) => ObjectKind::String,
            Object::List(_) => ObjectKind::List,
        }
    }

    /// Approximate heap bytes owned by the object. O(n) for a list: each element is one
    /// allocation rounded up to 8 bytes.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Object::Str(v) => v.capacity(),
            Object::List(l) => {
                l.capacity() * std::mem::size_of::<Box<[u8]>>()
                    + l.iter().map(|e| e.len().next_multiple_of(8)).sum::<usize>()
            }
        }
    }
}

/// One key with its metadata and value.
///
/// Layout is chosen for memory: key and inline string value share one allocation (`kv`), and
/// the metadata a later issue needs (per-key version for compare-and-set, memcached client
/// flags, access time for LRU/LFU) lives in fixed fields. 56 bytes plus the `kv` allocation.
///
/// Invariant: `version == 0` marks a vacant slab slot; live entries have `version >= 1`.
#[derive(Debug)]
pub struct Entry {
    /// Key bytes, followed by the string value when `object` is `None`.
    kv: Box<[u8]>,
    /// A value that is not an inline string.
    object: Option<Box<Object>>,
    /// Unique, increasing per write; 0 = vacant slot.
    pub(crate) version: u64,
    /// Absolute deadline in Unix milliseconds; 0 = no expiry.
    pub(crate) expire_at_ms: u64,
    key_len: u32,
    /// memcached client flags.
    pub(crate) flags: u32,
    /// LRU clock (seconds) of the last access.
    pub(crate) access: u32,
    /// memcached item state bits (low 8 bits) tagged with bits 20..44 of the version they
    /// were set at (high 24 bits). See [`Entry::mc_state`].
    pub(crate) mc_state: u32,
}

impl Entry {
    pub(crate) fn vacant() -> Entry {
        Entry {
            kv: Box::default(),
            object: None,
            version: 0,
            expire_at_ms: 0,
            key_len: 0,
            flags: 0,
            access: 0,
            mc_state: 0,
        }
    }

    pub(crate) fn new_string(key: &[u8], value: &[u8]) -> Entry {
        let mut kv = Vec::with_capacity(key.len() + value.len());
        kv.extend_from_slice(key);
        kv.extend_from_slice(value);
        Entry {
            kv: kv.into_boxed_slice(),
            object: None,
            version: 0,
            expire_at_ms: 0,
            key_len: key.len() as u32,
            flags: 0,
            access: 0,
            mc_state: 0,
        }
    }

    pub(crate) fn new_object(key: &[u8], object: Object) -> Entry {
        Entry {
            kv: Box::from(key),
            object: Some(Box::new(object)),
            version: 0,
            expire_at_ms: 0,
            key_len: key.len() as u32,
            flags: 0,
            access: 0,
            mc_state: 0,
        }
    }

    #[inline]
    pub(crate) fn is_vacant(&self) -> bool {
        self.version == 0
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.kv[..self.key_len as usize]
    }

    /// The value's Redis type.
    #[inline]
    pub fn kind(&self) -> ObjectKind {
        match &self.object {
            None => ObjectKind::String,
            Some(o) => o.kind(),
        }
    }

    /// The string value, or `None` if the key holds another type.
    #[inline]
    pub fn string(&self) -> Option<&[u8]> {
        match &self.object {
            None => Some(&self.kv[self.key_len as usize..]),
            Some(o) => match o.as_ref() {
                Object::Str(v) => Some(v),
                Object::List(_) => None,
            },
        }
    }

    /// True if the string was modified in place (Redis's "raw" encoding).
    pub fn is_grown_string(&self) -> bool {
        matches!(self.object.as_deref(), Some(Object::Str(_)))
    }

    /// The non-inline value, if any.
    pub fn object(&self) -> Option<&Object> {
        self.object.as_deref()
    }

    /// Replace the value by an inline string, reusing the allocation when sizes match.
    pub(crate) fn set_string(&mut self, value: &[u8]) {
        let key_len = self.key_len as usize;
        if self.object.is_none() && self.kv.len() == key_len + value.len() {
            self.kv[key_len..].copy_from_slice(value);
            return;
        }
        let mut kv = Vec::with_capacity(key_len + value.len());
        kv.extend_from_slice(&self.kv[..key_len]);
        kv.extend_from_slice(value);
        self.kv = kv.into_boxed_slice();
        self.object = None;
    }

    /// The string value as a growable buffer, moving an inline value out of `kv` first.
    /// Returns `None` if the key holds another type.
    pub(crate) fn string_mut(&mut self) -> Option<&mut Vec<u8>> {
        if self.object.is_none() {
            let key_len = self.key_len as usize;
            let value = self.kv[key_len..].to_vec();
            self.kv = Box::from(&self.kv[..key_len]);
            self.object = Some(Box::new(Object::Str(value)));
        }
        match self.object.as_deref_mut() {
            Some(Object::Str(v)) => Some(v),
            _ => None,
        }
    }

    /// The non-inline value for in-place modification, if any.
    pub(crate) fn object_mut(&mut self) -> Option<&mut Object> {
        self.object.as_deref_mut()
    }

    pub(crate) fn set_object(&mut self, object: Object) {
        let key_len = self.key_len as usize;
        if self.kv.len() != key_len {
            self.kv = Box::from(&self.kv[..key_len]);
        }
        self.object = Some(Box::new(object));
    }

    /// A copy of the value under another key (COPY, RENAME across shards).
    pub(crate) fn clone_with_key(&self, key: &[u8]) -> Entry {
        let mut e = match &self.object {
            None => Entry::new_string(key, self.string().unwrap_or_default()),
            Some(o) => Entry::new_object(key, o.as_ref().clone()),
        };
        e.expire_at_ms = self.expire_at_ms;
        e.flags = self.flags;
        e.access = self.access;
        e
    }

    /// Per-key version; increases on every write and doubles as memcached's CAS unique.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Absolute expiry deadline in Unix ms, if any.
    #[inline]
    pub fn expire_at_ms(&self) -> Option<u64> {
        (self.expire_at_ms != 0).then_some(self.expire_at_ms)
    }

    /// memcached client flags.
    #[inline]
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// LRU clock (seconds) of the last access.
    #[inline]
    pub fn access(&self) -> u32 {
        self.access
    }

    /// The memcached item state bits (fetched, stale, win sent, binary key; their meaning
    /// belongs to the memcached door) set by [`crate::Shard::set_mc_state`] since the last
    /// write. Any write clears them, whichever door made it: the bits are tagged with the
    /// version they were set at, and a write changes the version.
    #[inline]
    pub fn mc_state(&self) -> u8 {
        if self.mc_state >> 8 == mc_tag(self.version) {
            (self.mc_state & 0xff) as u8
        } else {
            0
        }
    }

    pub(crate) fn set_mc_state(&mut self, bits: u8) {
        self.mc_state = (mc_tag(self.version) << 8) | u32::from(bits);
    }

    /// Whether the entry is past its deadline at `now_ms`.
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != 0 && self.expire_at_ms <= now_ms
    }

    /// Approximate bytes this entry costs: the slot, the allocations, and the index share.
    pub fn memory_bytes(&self) -> usize {
        let slot = std::mem::size_of::<Entry>() + 8;
        let kv = self.kv.len().next_multiple_of(8);
        let obj = self
            .object
            .as_ref()
            .map_or(0, |o| std::mem::size_of::<Object>() + o.heap_bytes());
        slot + kv + obj
    }
}

/// The 24 bits of a version that tag memcached state: the low bits of the shard's write
/// sequence (the version's low 20 bits are the shard id, the same for every write).
#[inline]
fn mc_tag(version: u64) -> u32 {
    ((version >> 20) & 0x00ff_ffff) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_is_compact() {
        assert!(
            std::mem::size_of::<Entry>() <= 56,
            "{}",
            std::mem::size_of::<Entry>()
        );
    }

    #[test]
    fn inline_and_grown_strings() {
        let mut e = Entry::new_string(b"key", b"value");
        assert_eq!(e.key(), b"key");
        assert_eq!(e.string(), Some(&b"value"[..]));
        e.set_string(b"VALUE");
        assert_eq!(e.string(), Some(&b"VALUE"[..]));
        if let Some(v) = e.string_mut() {
            v.extend_from_slice(b"!!");
        }
        assert!(e.is_grown_string());
        assert_eq!(e.key(), b"key");
        assert_eq!(e.string(), Some(&b"VALUE!!"[..]));
        e.set_string(b"x");
        assert!(!e.is_grown_string());
        assert_eq!(e.string(), Some(&b"x"[..]));
        let c = e.clone_with_key(b"other");
        assert_eq!(c.key(), b"other");
        assert_eq!(c.string(), Some(&b"x"[..]));
    }

    #[test]
    fn list_object() {
        let list: std::collections::VecDeque<Box<[u8]>> =
            [Box::from(&b"a"[..]), Box::from(&b"bb"[..])].into();
        let e = Entry::new_object(b"k", Object::List(list));
        assert_eq!(e.kind(), ObjectKind::List);
        assert_eq!(e.string(), None);
        assert!(!e.is_grown_string());
        assert!(e.memory_bytes() > std::mem::size_of::<Entry>() + 16);
        let c = e.clone_with_key(b"c");
        assert_eq!(c.object(), e.object());
    }

    #[test]
    fn empty_key_is_not_vacant() {
        let e = Entry::new_string(b"", b"");
        assert_eq!(e.key(), b"");
        assert!(Entry::vacant().is_vacant());
    }
}
