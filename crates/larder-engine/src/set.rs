//! The set type: unique members, an "intset" while every member is an integer and the set is
//! small, a hash table past [`crate::Limits`]'s thresholds.
//!
//! Placeholder: the set commands' issue fills this module in. The methods below are the
//! contract the rest of the engine relies on (the entry's memory accounting, OBJECT ENCODING,
//! the change feed's value copies); keep them, and keep `size_of::<Set>()` within
//! `entry::OBJECT_PAYLOAD_MAX`.

/// A set value. Never empty while stored: commands delete a set that empties.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    members: Vec<Box<[u8]>>,
}

impl Set {
    pub fn new() -> Set {
        Set::default()
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Heap bytes owned by the set, in O(1).
    pub fn heap_bytes(&self) -> usize {
        self.members.capacity() * std::mem::size_of::<Box<[u8]>>()
    }

    /// Redis's name for the current encoding: "intset" or "hashtable".
    pub fn encoding(&self) -> &'static str {
        "hashtable"
    }

    /// A copy of every member, in the set's own order (integers in decimal).
    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        self.members.iter().map(|m| m.to_vec()).collect()
    }
}
