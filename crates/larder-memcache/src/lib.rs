//! larder-memcache: the memcached codec of the larder server, byte-compatible with
//! memcached 1.6 on its text, meta and binary protocols.
//!
//! - [`detect`] tells the two wire formats apart from a connection's first byte.
//! - [`parse_text`] reads one text or meta request from the front of a buffer into a borrowed
//!   [`TextRequest`] (storage commands together with their data block); [`TextWriter`] encodes
//!   the replies, meta return flags included. Rejected input comes back as a [`TextError`]
//!   that says what to answer, how many bytes to skip and whether to close.
//! - [`parse_binary`] reads one binary-protocol packet into a [`BinaryRequest`];
//!   [`BinaryWriter`] encodes response packets. Rejected packets come back as a
//!   [`BinaryError`].
//! - [`resolve_exptime`] and [`apply_delta`] are memcached's rules for expiration times and
//!   incr/decr, shared by all three protocols.
//!
//! `SEMANTICS.md` next to this crate says what the server must do for each command.
//!
//! It is not a server: it does no I/O, holds no per-connection state and knows nothing about
//! the keyspace. Incomplete input is a normal return value (`Ok(None)`), never an error. Keys
//! and values are borrowed from the input buffer; the common get and set paths allocate
//! nothing.

#![forbid(unsafe_code)]

mod base64;
mod binary;
mod binary_response;
mod error;
mod meta;
mod number;
mod text;
mod text_response;

pub use base64::KeyBuf;
pub use binary::{
    parse_binary, BinaryCommand, BinaryHeader, BinaryRequest, CounterOp, Opcode, Status,
    HEADER_LEN, REQUEST_MAGIC, RESPONSE_MAGIC,
};
pub use binary_response::BinaryWriter;
pub use error::{BinaryError, BinaryErrorKind, TextError, TextErrorKind};
pub use meta::{MetaArithmetic, MetaDelete, MetaFlags, MetaGet, MetaKey, MetaSet, MetaSetMode};
pub use number::{apply_delta, parse_i32, parse_u32, NonNumeric};
pub use text::{parse_text, AdminCommand, Keys, Store, StoreMode, TextRequest, Tokens};
pub use text_response::{MetaItem, MetaStatus, Recache, TextReply, TextWriter};

/// The two wire formats memcached serves on one port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// The text protocol, classic and meta commands alike.
    Text,
    /// The binary protocol (request magic 0x80).
    Binary,
}

/// Which protocol a connection speaks, judged as memcached does from its first byte: the
/// binary request magic `0x80` means binary, anything else text. A connection keeps the
/// protocol of its first byte for its whole life.
pub fn detect(first_byte: u8) -> Protocol {
    if first_byte == REQUEST_MAGIC {
        Protocol::Binary
    } else {
        Protocol::Text
    }
}

/// Size limits applied while parsing. The defaults are memcached 1.6's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest key, in bytes of the key as sent (KEY_MAX_LENGTH, 250). Meta keys sent in
    /// base64 are measured before decoding, as memcached does.
    pub key_len_max: usize,
    /// Largest item a storage command may store (`-I`, 1 MiB), counted as memcached counts
    /// it: item header, key and value together ([`Limits::item_fits`]). Larger items are
    /// refused with `SERVER_ERROR object too large for cache` (text, meta) or status 0x0003
    /// (binary) and their data is skipped.
    pub item_size_max: usize,
    /// Longest command line, its `\n` included (16384, memcached's read buffer: a line
    /// memcached receives whole is served however long, and one that fills the buffer
    /// without a newline closes the connection). A longer line closes the connection
    /// without a reply, except `get`/`gets` lines, which memcached lets grow.
    pub line_len_max: usize,
    /// Longest `get`/`gets` line, its `\n` included (memcached has no bound; 1 MiB here).
    pub get_line_len_max: usize,
    /// Largest binary body (extras + key + value) that is buffered. Storage requests with a
    /// value over `item_size_max` are refused before this applies.
    pub binary_body_max: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            key_len_max: 250,
            item_size_max: 1024 * 1024,
            line_len_max: 16 * 1024,
            get_line_len_max: 1024 * 1024,
            binary_body_max: 1024 * 1024 + 1024,
        }
    }
}

/// `sizeof(item)` in a 64-bit memcached 1.6: the header every item carries.
const ITEM_HEADER_LEN: usize = 48;

/// The CAS value memcached keeps in every item (it is started without `-C`).
const ITEM_CAS_LEN: usize = 8;

impl Limits {
    /// Whether memcached 1.6 (`item_size_ok`) stores an item of this key length, client
    /// flags and value length under [`Limits::item_size_max`]: the item's total size is its
    /// header (48 bytes), the key and a NUL, 4 bytes of client flags when they are not 0,
    /// the value with its `\r\n`, and the 8-byte CAS. So with `-I 1m` a 1-byte key and
    /// flags 0 allow a value of 1048516 bytes, and non-zero flags 4 bytes less.
    pub fn item_fits(&self, key_len: usize, flags: u32, value_len: usize) -> bool {
        let flags_len = if flags == 0 { 0 } else { 4 };
        let total = (ITEM_HEADER_LEN + 1 + flags_len + 2 + ITEM_CAS_LEN)
            .saturating_add(key_len)
            .saturating_add(value_len);
        total <= self.item_size_max
    }
}

/// Relative expiration times go up to this many seconds (30 days); larger values are
/// absolute unix times (REALTIME_MAXDELTA).
pub const RELATIVE_EXPTIME_MAX_S: i64 = 60 * 60 * 24 * 30;

/// When an item expires, as decided by [`resolve_exptime`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// Exptime 0: the item never expires.
    Never,
    /// The item expires at this unix time, in seconds.
    At {
        /// Expiry instant, unix seconds; always later than the `now` it was resolved at.
        unix_s: u64,
    },
    /// The item is expired from the start: a negative exptime, or an absolute time that has
    /// already passed. A storage command still succeeds (memcached answers `STORED`), but
    /// the item is never visible.
    Expired,
}

/// memcached's `realtime()`: turns a protocol exptime (text, meta `T`/`N`/`R` tokens, binary
/// extras, flush delays) into an [`Expiry`], given the current unix time.
///
/// - `0`: never expires;
/// - negative: already expired;
/// - `1..=2_592_000` (30 days): that many seconds from now;
/// - larger: an absolute unix time, already expired if not in the future.
pub fn resolve_exptime(exptime: i64, now_unix_s: u64) -> Expiry {
    if exptime == 0 {
        return Expiry::Never;
    }
    if exptime < 0 {
        return Expiry::Expired;
    }
    // exptime > 0 here, so the conversion cannot fail.
    let secs = exptime.unsigned_abs();
    if exptime <= RELATIVE_EXPTIME_MAX_S {
        return Expiry::At {
            unix_s: now_unix_s.saturating_add(secs),
        };
    }
    if secs <= now_unix_s {
        Expiry::Expired
    } else {
        Expiry::At { unix_s: secs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_by_first_byte() {
        assert_eq!(detect(0x80), Protocol::Binary);
        assert_eq!(detect(b'g'), Protocol::Text);
        // The response magic is not a request: memcached treats it as text.
        assert_eq!(detect(0x81), Protocol::Text);
        assert_eq!(detect(0), Protocol::Text);
    }

    #[test]
    fn exptime_rules() {
        let now = 1_700_000_000;
        let cases: &[(i64, Expiry)] = &[
            (0, Expiry::Never),
            (-1, Expiry::Expired),
            (i64::from(i32::MIN), Expiry::Expired),
            (1, Expiry::At { unix_s: now + 1 }),
            (
                RELATIVE_EXPTIME_MAX_S,
                Expiry::At {
                    unix_s: now + 2_592_000,
                },
            ),
            (RELATIVE_EXPTIME_MAX_S + 1, Expiry::Expired),
            (1_699_999_999, Expiry::Expired),
            (1_700_000_000, Expiry::Expired),
            (
                1_700_000_001,
                Expiry::At {
                    unix_s: 1_700_000_001,
                },
            ),
        ];
        for &(exptime, want) in cases {
            assert_eq!(resolve_exptime(exptime, now), want, "exptime {exptime}");
        }
    }

    #[test]
    fn default_limits_are_memcacheds() {
        let l = Limits::default();
        assert_eq!(l.key_len_max, 250);
        assert_eq!(l.item_size_max, 1 << 20);
        assert_eq!(l.line_len_max, 16384);
    }

    /// The largest value memcached 1.6.18 stores, probed on the real server for each `-I`,
    /// key length and flags (`set` answering STORED, one byte more answering `SERVER_ERROR
    /// object too large for cache`).
    #[test]
    fn item_size_boundary_is_memcacheds() {
        let cases: &[(usize, usize, u32, usize)] = &[
            // (-I, key length, flags, largest value)
            (1 << 20, 1, 0, 1_048_516),
            (1 << 20, 1, 1, 1_048_512),
            (1 << 20, 10, 0, 1_048_507),
            (1 << 20, 10, u32::MAX, 1_048_503),
            (1 << 20, 250, 0, 1_048_267),
            (1 << 20, 250, 7, 1_048_263),
            (2 << 20, 1, 0, 2_097_092),
            (2 << 20, 250, 1, 2_096_839),
            (512 << 10, 10, 0, 524_219),
            (1024, 1, 0, 964),
            (1024, 1, 1, 960),
            (1024, 250, 0, 715),
            (1024, 250, 1, 711),
            (2048, 10, 1, 1975),
        ];
        for &(max, key_len, flags, value_max) in cases {
            let l = Limits {
                item_size_max: max,
                ..Limits::default()
            };
            let case = format!("-I {max} key {key_len} flags {flags}");
            assert!(l.item_fits(key_len, flags, value_max), "{case}");
            assert!(!l.item_fits(key_len, flags, value_max + 1), "{case}");
        }
        assert!(!Limits::default().item_fits(1, 0, usize::MAX));
    }
}
