//! Placeholder for the busy-script machinery (BUSY, SCRIPT KILL); replaced by the busy
//! branch. The contract is in the lead's notes.

use crate::error::{Error, Result};
use crate::state::Server;

/// What kind of script runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScriptKind {
    Eval,
    Function,
}

/// Why a script must stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Killed,
    Shutdown,
}

/// Scripts running now.
#[derive(Debug, Default)]
pub struct Busy;

/// One running script.
pub struct Running<'a>(&'a Busy);

impl Busy {
    /// A script starts running on this thread.
    pub fn start(&self, _kind: ScriptKind, _client_id: u64) -> Running<'_> {
        Running(self)
    }
}

impl Busy {
    /// The function running now, for FUNCTION STATS: its name, the command that called
    /// it, and how long it has run (ms).
    pub fn running_function(&self) -> Option<(String, Vec<Vec<u8>>, u64)> {
        None
    }
}

impl Running<'_> {
    /// The script wrote to the dataset.
    pub fn wrote(&self) {
        let _ = self.0;
    }

    /// From the script's count hook.
    pub fn tick(&mut self, _server: &Server) -> std::result::Result<(), Stop> {
        Ok(())
    }
}

/// SCRIPT KILL / FUNCTION KILL.
pub fn kill(_server: &Server, _kind: ScriptKind) -> Result<()> {
    Err(Error::Static("NOTBUSY No scripts in execution right now."))
}
