//! The hash type: field → value, compact ("listpack") while small, a hash table past
//! [`crate::Limits`]'s thresholds.
//!
//! Placeholder: the hash commands' issue fills this module in. The methods below are the
//! contract the rest of the engine relies on (the entry's memory accounting, OBJECT ENCODING,
//! the change feed's value copies); keep them, and keep `size_of::<Hash>()` within
//! `entry::OBJECT_PAYLOAD_MAX`.

/// A hash value. Never empty while stored: commands delete a hash that empties.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hash {
    pairs: Vec<(Box<[u8]>, Box<[u8]>)>,
}

impl Hash {
    pub fn new() -> Hash {
        Hash::default()
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Heap bytes owned by the hash, in O(1).
    pub fn heap_bytes(&self) -> usize {
        self.pairs.capacity() * std::mem::size_of::<(Box<[u8]>, Box<[u8]>)>()
    }

    /// Redis's name for the current encoding: "listpack" or "hashtable".
    pub fn encoding(&self) -> &'static str {
        "listpack"
    }

    /// Every field with its value, in the hash's own order.
    pub fn pairs(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.pairs.iter().map(|(f, v)| (&**f, &**v))
    }
}
