//! larder-resp: the RESP2/RESP3 codec of the larder server, byte-compatible with Redis 7.
//!
//! - [`request`]: server-side request parsing. [`parse_request`] reads one RESP multibulk or
//!   inline command from the front of a connection's buffer into borrowed arguments, enforcing
//!   Redis's [`Limits`] and reporting [`ParseError`]s with Redis's exact error text.
//! - [`reply`]: server-side reply encoding. [`ReplyBuf`] appends replies for the connection's
//!   negotiated [`Protocol`], degrading RESP3 types to RESP2 the way Redis does.
//! - [`frame`]: client-side decoding of whole replies into an owned [`Frame`] tree, for
//!   tests, benchmarks and tools that read from a Redis server.
//!
//! ```
//! use larder_resp::{parse_request, Limits, Parsed, Protocol, ReplyBuf};
//!
//! let mut argv = Vec::new();
//! let parsed = parse_request(b"*1\r\n$4\r\nPING\r\n", &Limits::default(), &mut argv);
//! assert_eq!(parsed, Ok(Parsed::Complete { consumed: 14 }));
//! assert_eq!(argv[0].as_ref(), b"PING");
//!
//! let mut out = ReplyBuf::new(Protocol::Resp3);
//! out.simple("PONG");
//! out.null();
//! assert_eq!(out.buf, b"+PONG\r\n_\r\n");
//! ```
//!
//! It is not a client or a server: it does no I/O, holds no per-connection state, and knows
//! nothing about commands. Incomplete input is a normal return value, never an error.

#![forbid(unsafe_code)]

pub mod frame;
mod number;
pub mod reply;
pub mod request;

pub use frame::{decode, encode_command, Frame, FrameError};
pub use reply::{Attachments, Protocol, ReplyBuf};
pub use request::{parse_request, parse_request_resume, Limits, ParseError, Parsed, Progress};
