//! The sorted set type: members ordered by (score, member), compact ("listpack") while small,
//! an ordered index plus a member → score map past [`crate::Limits`]'s thresholds.
//!
//! Placeholder: the sorted-set commands' issue fills this module in. The methods below are
//! the contract the rest of the engine relies on (the entry's memory accounting, OBJECT
//! ENCODING, the change feed's value copies); keep them, and keep `size_of::<ZSet>()` within
//! `entry::OBJECT_PAYLOAD_MAX`.

/// A sorted set value. Never empty while stored: commands delete a sorted set that empties.
/// Scores are never NaN, which is what makes `Eq` sound.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZSet {
    members: Vec<(Box<[u8]>, f64)>,
}

impl Eq for ZSet {}

impl ZSet {
    pub fn new() -> ZSet {
        ZSet::default()
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Heap bytes owned by the sorted set, in O(1).
    pub fn heap_bytes(&self) -> usize {
        self.members.capacity() * std::mem::size_of::<(Box<[u8]>, f64)>()
    }

    /// Redis's name for the current encoding: "listpack" or "skiplist".
    pub fn encoding(&self) -> &'static str {
        "listpack"
    }

    /// Every member with its score, lowest first.
    pub fn scored(&self) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        self.members.iter().map(|(m, s)| (&**m, *s))
    }
}
