//! HyperLogLog commands: PFADD PFCOUNT PFMERGE, with Redis 7.0 semantics.
//!
//! Placeholder: the data-types issue fills in this family (argument parsing and reply
//! shaping only; the structure lives in larder-engine).

use crate::table::CommandSpec;

/// The family's table.
pub static COMMANDS: &[CommandSpec] = &[];
