//! The thresholds at which a collection leaves its compact encoding, as Redis's config names
//! them (`hash-max-listpack-entries`, `set-max-intset-entries`, ...).
//!
//! The engine keeps no configuration of its own: the caller (a command handler, a door, the
//! snapshot loader) passes the limits in force to every operation that may grow a value, so
//! a CONFIG SET applies to the next write. A value converts to its full encoding once, when a
//! write passes a limit, and never converts back (as in Redis).

/// Compact-encoding limits, with Redis 7.0's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// A hash stays compact ("listpack") while it has at most this many fields...
    pub hash_max_listpack_entries: usize,
    /// ...and every field and value is at most this many bytes.
    pub hash_max_listpack_value: usize,
    /// A set of integers stays an "intset" while it has at most this many members.
    pub set_max_intset_entries: usize,
    /// A sorted set stays compact ("listpack") while it has at most this many members...
    pub zset_max_listpack_entries: usize,
    /// ...and every member is at most this many bytes.
    pub zset_max_listpack_value: usize,
    /// Redis's `list-max-listpack-size`: a positive count of elements per compact node, or
    /// -1..-5 for a byte budget of 4, 8, 16, 32 or 64 KiB.
    pub list_max_listpack_size: i64,
    /// Where a stream starts a new node (`stream-node-max-bytes`, `stream-node-max-entries`).
    pub stream_node: crate::stream::NodeLimits,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            list_max_listpack_size: -2,
            stream_node: crate::stream::NodeLimits::default(),
        }
    }
}

impl Limits {
    /// The byte budget `list_max_listpack_size` stands for when it is negative (Redis's
    /// `optimization_level`), or `None` for a count.
    pub fn list_node_bytes(&self) -> Option<usize> {
        match self.list_max_listpack_size {
            n if n >= 0 => None,
            n => Some(4096 << (n.unsigned_abs().clamp(1, 5) - 1)),
        }
    }
}
