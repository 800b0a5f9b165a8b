//! The keys and channels a request names, each key with the access Redis 7.0's key specs
//! give it (CONTRACT SKELETON: the keyspec helper replaces this file).

use crate::table::Resolved;

/// One key of a request: its argument index and `super::access` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyRef {
    pub index: usize,
    pub access: u8,
}

/// The keys of `argv` (the whole request, name included) with their access, in argument
/// order, as Redis's `getKeysFromCommandWithSpecs` finds them (VARIABLE_FLAGS resolved, e.g.
/// SET without GET needs only write).
pub fn keys(resolved: &Resolved, argv: &[&[u8]], out: &mut Vec<KeyRef>) {
    let _ = (resolved, argv, out);
}

/// One channel of a request: its argument index, and whether it is a pattern (PSUBSCRIBE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelRef {
    pub index: usize,
    pub is_pattern: bool,
}

/// The channels of `argv` that ACL checks (PUBLISH, SPUBLISH, SUBSCRIBE, SSUBSCRIBE,
/// PSUBSCRIBE; not the UNSUBSCRIBE family), as Redis 7.0.
pub fn channels(resolved: &Resolved, argv: &[&[u8]], out: &mut Vec<ChannelRef>) {
    let _ = (resolved, argv, out);
}
