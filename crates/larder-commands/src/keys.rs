//! Keyspace commands: DEL, EXISTS, EXPIRE, SCAN, SELECT, FLUSHALL and friends.

use crate::table::CommandSpec;

/// The keyspace family's table.
pub static COMMANDS: &[CommandSpec] = &[];
