//! Connection commands: PING, ECHO, HELLO, AUTH, QUIT, RESET, SELECT, CLIENT.

use crate::table::CommandSpec;

/// The connection family's table.
pub static COMMANDS: &[CommandSpec] = &[];
