//! Server commands: INFO, CONFIG, COMMAND, TIME, SLOWLOG, MEMORY, DBSIZE, SHUTDOWN.

use crate::table::CommandSpec;

/// The server family's table.
pub static COMMANDS: &[CommandSpec] = &[];
