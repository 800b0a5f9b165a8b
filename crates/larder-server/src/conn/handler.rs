//! The contract between a connection and its door: the [`Handler`] trait a protocol
//! implements, and what it reports back ([`Processed`], [`Close`], [`BigArg`]). Apart from
//! `conn.rs` so that a door's author reads what it must provide without the I/O rules.

use std::sync::Arc;

use larder_commands::state::ClientHandle;
use larder_commands::Server;

use super::Output;

/// Why a connection is being closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Close {
    /// The peer closed, or an I/O error.
    Peer,
    /// After a protocol error, QUIT, or CLIENT KILL of itself: once replies are written.
    AfterReply,
    /// query buffer limit, idle timeout, CLIENT KILL: at once.
    Now,
}

/// What one [`Handler::process`] call did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Processed {
    /// Input bytes consumed.
    pub used: usize,
    /// Close the connection (once the answers are written, for [`Close::AfterReply`]).
    pub close: Option<Close>,
    /// CLIENT PAUSE held the next request back until this Unix ms, or a blocking command
    /// waits until then (`u64::MAX`: no deadline); it stays unconsumed.
    pub paused_until_ms: Option<u64>,
    /// The held request is a blocking command waiting for data (not a pause).
    pub blocked: bool,
    /// The request at the front of the input is answered over several turns (a memcached
    /// dump): it stays unconsumed, and the connection calls again on a later turn, without
    /// waiting for input.
    pub again: bool,
}

/// A large last argument that has begun to arrive (see [`Handler::big_arg`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BigArg {
    /// Where its data starts in the unparsed input.
    pub start: usize,
    /// Its length.
    pub len: usize,
    /// Bytes after the data that belong to it (RESP's `\r\n`).
    pub trailer: usize,
}

/// The protocol half of a connection: turns the bytes read into answers.
pub trait Handler {
    /// Parses and runs the complete requests at the front of `buf`, appending answers to
    /// `out`, and stops early once `out` holds `stop_at` bytes.
    fn process(
        &mut self,
        server: &Server,
        buf: &[u8],
        out: &mut Output,
        stop_at: usize,
    ) -> Processed;

    /// Do not parse again until the unparsed input holds this many bytes (a large value or
    /// bulk argument is arriving).
    fn min_total(&self) -> usize;

    /// The client as CLIENT LIST shows it and CLIENT KILL marks it.
    fn handle(&self) -> &ClientHandle;

    /// The most unparsed input the connection may hold; more closes it.
    fn input_limit(&self, server: &Server) -> usize;

    /// Protocol-specific accounting of bytes read and written (the server-wide counters are
    /// kept by the connection).
    fn count_io(&self, _read: usize, _written: usize) {}

    /// The connection gave up its turn with input possibly left unread.
    fn yielded(&self) {}

    /// What replaces replies that acknowledged writes the log then failed to make durable
    /// (`appendfsync always`): one error in the door's protocol, after which the connection
    /// closes.
    fn durability_error(&self, reason: &str) -> Vec<u8> {
        format!("-MISCONF Errors writing to the AOF file: {reason}\r\n").into_bytes()
    }

    /// After a [`Handler::process`] that stopped at an incomplete request: whether all that
    /// request still lacks is its last argument, whatever its size. If it is
    /// [`BIG_ARG`](super::BIG_ARG) bytes or more, the connection reads it into a buffer of its
    /// own, sized for it once, and hands it to [`Handler::process_big`], which may keep it as
    /// the stored value: Redis does the same, and it saves copying the value out of the input
    /// buffer.
    /// The default: never (values arrive in the input buffer and are copied from there).
    fn big_arg(&self) -> Option<BigArg> {
        None
    }

    /// Runs the request whose arguments but the last are in `front` (the unparsed input up
    /// to where [`Handler::big_arg`] said the last one starts) and whose last argument is
    /// `arg`. Consumes all of `front`, unless CLIENT PAUSE holds the request back (then
    /// nothing, and the connection calls again later). Only called after `big_arg` said so.
    /// The default, for handlers whose [`Handler::big_arg`] never names an argument: never
    /// called; should that break, the connection closes rather than the worker panicking.
    fn process_big(
        &mut self,
        _server: &Server,
        _front: &[u8],
        _arg: &Arc<Vec<u8>>,
        _out: &mut Output,
        _stop_at: usize,
    ) -> Processed {
        debug_assert!(false, "process_big without big_arg");
        Processed {
            close: Some(Close::Now),
            ..Processed::default()
        }
    }
}
