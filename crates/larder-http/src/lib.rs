//! larder-http: the HTTP/1.1 codec of larder's HTTP door.
//!
//! - [`parse_request`] reads one request from the front of a buffer: its head (parsed by
//!   `httparse`, the parser under hyper) and its body, whether framed by `Content-Length` or
//!   chunked. Incomplete input is a normal return value, never an error. A rejected request
//!   comes back as an [`HttpError`] with the status to answer; the connection then closes,
//!   since its framing can no longer be trusted.
//! - [`Response`] writes a response's status line, headers and body into an output buffer.
//! - [`path_segments`], [`percent_decode`] and [`Query`] take a request target apart; a key is
//!   one percent-encoded path segment, so any bytes can name it.
//!
//! It is not a server: it does no I/O, holds no per-connection state and knows nothing about
//! the keyspace. Parsers of untrusted bytes never panic (`fuzz/fuzz_targets/http_request.rs`).

#![forbid(unsafe_code)]

mod request;
mod response;
mod target;

pub use request::{parse_request, Header, HttpError, Limits, Method, Parsed, Request};
pub use response::{reason, Response};
pub use target::{parse_duration_ms, path_segments, percent_decode, percent_encode, Query};
