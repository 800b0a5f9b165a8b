//! Every client-visible error text of the memcached door, byte for byte as memcached 1.6
//! sends it, and the error values the parsers return.

use std::fmt;

use crate::binary::Status;
use crate::meta::MetaKey;

macro_rules! text_error_kinds {
    ($($(#[$doc:meta])* $name:ident => $msg:literal,)*) => {
        /// What went wrong with a text or meta request, and so what memcached answers.
        #[non_exhaustive]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum TextErrorKind {
            $($(#[$doc])* $name,)*
        }

        impl TextErrorKind {
            /// The reply line without its `\r\n` (empty for [`TextErrorKind::HttpRequest`]; for
    /// [`TextErrorKind::LineTooLong`] a text for logs, as nothing is sent).
            pub fn message(self) -> &'static str {
                match self {
                    $(Self::$name => $msg,)*
                }
            }

            fn message_crlf(self) -> &'static [u8] {
                match self {
                    $(Self::$name => concat!($msg, "\r\n").as_bytes(),)*
                }
            }
        }
    };
}

text_error_kinds! {
    /// A command name memcached does not know, or a known one with the wrong number of
    /// arguments.
    UnknownCommand => "ERROR",
    /// A malformed line: a key over the limit or with control characters, a bad number.
    BadCommandLineFormat => "CLIENT_ERROR bad command line format",
    /// A data block not followed by `\r\n`.
    BadDataChunk => "CLIENT_ERROR bad data chunk",
    /// A value over `item_size_max`.
    ObjectTooLarge => "SERVER_ERROR object too large for cache",
    /// A `touch`, `gat`, `gats` or `flush_all` time that is not a number.
    InvalidExptime => "CLIENT_ERROR invalid exptime argument",
    /// An `incr`/`decr` delta that is not an unsigned 64-bit number.
    InvalidDeltaArgument => "CLIENT_ERROR invalid numeric delta argument",
    /// `delete <key> <something>` other than the legacy `0` or `noreply`.
    DeleteUsage => "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
    /// A meta flag memcached does not know (mg, ms).
    InvalidFlag => "CLIENT_ERROR invalid flag",
    /// A meta flag given twice, or starting with a byte >= 127 (mg, ms).
    DuplicateFlag => "CLIENT_ERROR duplicate flag",
    /// Any flag error of md and ma.
    InvalidOrDuplicateFlag => "CLIENT_ERROR invalid or duplicate flag",
    /// A numeric token (N, T, R, C, E) that is not a number.
    BadToken => "CLIENT_ERROR bad token in command line format",
    /// More than 17 flags on an mg line.
    MetaGetFlagsTooLong => "CLIENT_ERROR options flags are too long",
    /// Too many tokens on an ms, md or ma line.
    MetaFlagsTooLong => "CLIENT_ERROR options flags too long",
    /// An `O` token longer than 32 bytes, flag letter included.
    OpaqueTooLong => "CLIENT_ERROR opaque token too long",
    /// A `b` key that is not valid base64.
    KeyDecode => "CLIENT_ERROR error decoding key",
    /// An `M` token that is not exactly one mode character.
    ModeTokenLength => "CLIENT_ERROR incorrect length for M token",
    /// An ms mode other than E A P R S.
    InvalidMetaSetMode => "CLIENT_ERROR invalid mode for ms M token",
    /// An ma mode other than I + D -.
    InvalidMetaArithmeticMode => "CLIENT_ERROR invalid mode for ma M token",
    /// A `J` token that is not an unsigned 64-bit number (mg, ms).
    InvalidInitialValue => "CLIENT_ERROR invalid numeric initial value",
    /// A `D` token that is not an unsigned 64-bit number (mg, ms).
    InvalidDeltaValue => "CLIENT_ERROR invalid numeric delta value",
    /// A command line over [`crate::Limits::line_len_max`]: memcached closes the connection
    /// without replying (the text is for logs).
    LineTooLong => "line too long",
    /// A line whose last token starts with `HTTP/`: memcached closes the connection without
    /// replying.
    HttpRequest => "",
    /// Never returned by the parser: the server's answer to incr/decr/ma on a value that is
    /// not a number.
    NonNumericValue => "CLIENT_ERROR cannot increment or decrement non-numeric value",
    /// Never returned by the parser: the server's answer when it cannot allocate an item.
    OutOfMemory => "SERVER_ERROR out of memory storing object",
}

/// A text or meta request that cannot be served. The server writes [`TextError::reply`],
/// discards [`TextError::skip`] bytes from the front of the buffer it parsed (more than it
/// holds when a refused data block has not arrived yet: the rest is discarded as it comes),
/// and closes the connection when [`TextError::closes_connection`] says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextError {
    /// What went wrong.
    pub kind: TextErrorKind,
    /// Bytes to discard, counted from the start of the parsed buffer; always at least 1.
    pub skip: usize,
    /// The request carried `noreply`, which in memcached silences errors too. Meta
    /// commands always answer errors, so this is false for them.
    pub noreply: bool,
    /// Where the key lies in the parsed buffer when the refusal also drops the item the
    /// key holds: read it with [`TextError::stale_key`].
    stale: Option<KeySpan>,
}

/// A key inside a parsed buffer: its offset, length, and whether it was sent in base64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeySpan {
    pub(crate) start: usize,
    pub(crate) len: usize,
    pub(crate) base64: bool,
}

impl TextErrorKind {
    /// The reply line with its `\r\n` (empty for [`TextErrorKind::HttpRequest`] and
    /// [`TextErrorKind::LineTooLong`], which close without a word).
    pub fn line(self) -> &'static [u8] {
        match self {
            Self::HttpRequest | Self::LineTooLong => b"",
            other => other.message_crlf(),
        }
    }
}

impl TextError {
    pub(crate) fn new(kind: TextErrorKind, skip: usize) -> Self {
        Self::noreply(kind, skip, false)
    }

    pub(crate) fn noreply(kind: TextErrorKind, skip: usize, noreply: bool) -> Self {
        Self {
            kind,
            skip,
            noreply,
            stale: None,
        }
    }

    pub(crate) fn with_stale(self, stale: Option<KeySpan>) -> Self {
        Self { stale, ..self }
    }

    /// The key whose item the server must delete along with this refusal, read from `buf`
    /// (the buffer that was parsed). memcached drops the item a `set` (text), any `ms` or
    /// a binary SET would have replaced when the new item is too large, so that no stale
    /// value outlives a failed write.
    pub fn stale_key<'a>(&self, buf: &'a [u8]) -> Option<MetaKey<'a>> {
        let s = self.stale?;
        let raw = buf.get(s.start..s.start + s.len)?;
        Some(MetaKey::new(raw, s.base64))
    }

    /// The error line without `\r\n`.
    pub fn message(&self) -> &'static str {
        self.kind.message()
    }

    /// The bytes to send: the error line with `\r\n`, or nothing when `noreply` silences it
    /// or the connection is closed without a word.
    pub fn reply(&self) -> &'static [u8] {
        if self.noreply {
            b""
        } else {
            self.kind.line()
        }
    }

    /// Whether the server must close the connection after sending [`TextError::reply`].
    pub fn closes_connection(&self) -> bool {
        matches!(
            self.kind,
            TextErrorKind::LineTooLong | TextErrorKind::HttpRequest
        )
    }
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TextErrorKind::HttpRequest => f.write_str("HTTP request on the memcached port"),
            kind => f.write_str(kind.message()),
        }
    }
}

impl std::error::Error for TextError {}

/// The body memcached sends with an error status (`write_bin_error`).
pub(crate) fn status_message(status: Status) -> &'static str {
    match status {
        Status::SUCCESS => "",
        Status::KEY_NOT_FOUND => "Not found",
        Status::KEY_EXISTS => "Data exists for key.",
        Status::VALUE_TOO_LARGE => "Too large.",
        Status::INVALID_ARGUMENTS => "Invalid arguments",
        Status::NOT_STORED => "Not stored.",
        Status::NON_NUMERIC => "Non-numeric server-side value for incr or decr",
        Status::NOT_MY_VBUCKET => "Not my vbucket",
        Status::AUTH_ERROR | Status::AUTH_ERROR_MEMCACHED => "Auth failure.",
        Status::AUTH_CONTINUE | Status::AUTH_CONTINUE_MEMCACHED => "Auth continue",
        Status::UNKNOWN_COMMAND => "Unknown command",
        Status::OUT_OF_MEMORY => "Out of memory",
        Status::NOT_SUPPORTED => "Not supported",
        Status::INTERNAL_ERROR => "Internal error",
        Status::BUSY => "Busy",
        Status::TEMPORARY_FAILURE => "Temporary failure",
        _ => "Unknown error",
    }
}

/// Why a binary packet cannot be served.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryErrorKind {
    /// The packet does not start with the request magic 0x80: memcached closes the
    /// connection without replying.
    BadMagic,
    /// Key length plus extras length exceed the body length: status 0x0081 and close.
    BadLengths,
    /// Extras, key or body lengths wrong for the opcode, or a key over the limit:
    /// status 0x0004 and close.
    InvalidArguments,
    /// An opcode memcached does not serve: status 0x0081,
    /// the packet is skipped and the connection goes on.
    UnknownCommand,
    /// A value over `item_size_max`, or a body over `binary_body_max`: status 0x0003, the
    /// packet is skipped and the connection goes on.
    TooLarge,
}

/// A binary packet that cannot be served. The server writes the error response
/// ([`crate::BinaryWriter::error`]) unless [`BinaryError::status`] is `None`, discards
/// [`BinaryError::skip`] bytes (possibly more than it holds yet), and closes the connection
/// when [`BinaryError::closes_connection`] says so. Errors are sent for quiet opcodes too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinaryError {
    /// What went wrong.
    pub kind: BinaryErrorKind,
    /// The request's opcode, echoed in the response.
    pub opcode: u8,
    /// The request's opaque, echoed in the response.
    pub opaque: u32,
    /// Bytes to discard from the start of the parsed buffer; always at least 1.
    pub skip: usize,
    /// Where the key lies in the parsed buffer when the refusal also drops the item the
    /// key holds: read it with [`BinaryError::stale_key`].
    pub(crate) stale: Option<(usize, usize)>,
}

impl BinaryError {
    /// The key whose item the server must delete along with this refusal, read from `buf`
    /// (the buffer that was parsed): memcached drops the item a SET or SETQ too large to
    /// store would have replaced.
    pub fn stale_key<'a>(&self, buf: &'a [u8]) -> Option<&'a [u8]> {
        let (start, len) = self.stale?;
        buf.get(start..start + len)
    }

    /// The response status, or `None` when the connection is closed without a reply.
    pub fn status(&self) -> Option<Status> {
        match self.kind {
            BinaryErrorKind::BadMagic => None,
            BinaryErrorKind::BadLengths | BinaryErrorKind::UnknownCommand => {
                Some(Status::UNKNOWN_COMMAND)
            }
            BinaryErrorKind::InvalidArguments => Some(Status::INVALID_ARGUMENTS),
            BinaryErrorKind::TooLarge => Some(Status::VALUE_TOO_LARGE),
        }
    }

    /// Whether the server must close the connection after the reply.
    pub fn closes_connection(&self) -> bool {
        matches!(
            self.kind,
            BinaryErrorKind::BadMagic
                | BinaryErrorKind::BadLengths
                | BinaryErrorKind::InvalidArguments
        )
    }
}

impl fmt::Display for BinaryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status() {
            None => write!(f, "bad binary request magic, opcode 0x{:02x}", self.opcode),
            Some(status) => write!(
                f,
                "{} (status 0x{:04x}, opcode 0x{:02x})",
                status_message(status),
                status.0,
                self.opcode
            ),
        }
    }
}

impl std::error::Error for BinaryError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_lines_end_in_crlf() {
        let kinds = [
            TextErrorKind::UnknownCommand,
            TextErrorKind::BadCommandLineFormat,
            TextErrorKind::BadDataChunk,
            TextErrorKind::ObjectTooLarge,
            TextErrorKind::DeleteUsage,
            TextErrorKind::NonNumericValue,
        ];
        for kind in kinds {
            let line = kind.line();
            assert!(line.ends_with(b"\r\n"));
            assert_eq!(&line[..line.len() - 2], kind.message().as_bytes());
        }
        assert_eq!(TextErrorKind::HttpRequest.line(), b"");
        assert_eq!(TextErrorKind::LineTooLong.line(), b"");
    }

    #[test]
    fn every_text_error_is_memcacheds() {
        use TextErrorKind as K;
        let cases: &[(TextErrorKind, &str)] = &[
            (K::UnknownCommand, "ERROR"),
            (
                K::BadCommandLineFormat,
                "CLIENT_ERROR bad command line format",
            ),
            (K::BadDataChunk, "CLIENT_ERROR bad data chunk"),
            (K::ObjectTooLarge, "SERVER_ERROR object too large for cache"),
            (K::InvalidExptime, "CLIENT_ERROR invalid exptime argument"),
            (
                K::InvalidDeltaArgument,
                "CLIENT_ERROR invalid numeric delta argument",
            ),
            (
                K::DeleteUsage,
                "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
            ),
            (K::InvalidFlag, "CLIENT_ERROR invalid flag"),
            (K::DuplicateFlag, "CLIENT_ERROR duplicate flag"),
            (
                K::InvalidOrDuplicateFlag,
                "CLIENT_ERROR invalid or duplicate flag",
            ),
            (K::BadToken, "CLIENT_ERROR bad token in command line format"),
            (
                K::MetaGetFlagsTooLong,
                "CLIENT_ERROR options flags are too long",
            ),
            (K::MetaFlagsTooLong, "CLIENT_ERROR options flags too long"),
            (K::OpaqueTooLong, "CLIENT_ERROR opaque token too long"),
            (K::KeyDecode, "CLIENT_ERROR error decoding key"),
            (
                K::ModeTokenLength,
                "CLIENT_ERROR incorrect length for M token",
            ),
            (
                K::InvalidMetaSetMode,
                "CLIENT_ERROR invalid mode for ms M token",
            ),
            (
                K::InvalidMetaArithmeticMode,
                "CLIENT_ERROR invalid mode for ma M token",
            ),
            (
                K::InvalidInitialValue,
                "CLIENT_ERROR invalid numeric initial value",
            ),
            (
                K::InvalidDeltaValue,
                "CLIENT_ERROR invalid numeric delta value",
            ),
            (K::LineTooLong, "line too long"),
            (K::HttpRequest, ""),
            (
                K::NonNumericValue,
                "CLIENT_ERROR cannot increment or decrement non-numeric value",
            ),
            (K::OutOfMemory, "SERVER_ERROR out of memory storing object"),
        ];
        for &(kind, text) in cases {
            assert_eq!(kind.message(), text);
        }
    }

    #[test]
    fn noreply_silences() {
        let e = TextError::noreply(TextErrorKind::BadDataChunk, 10, true);
        assert_eq!(e.reply(), b"");
        let e = TextError::new(TextErrorKind::BadDataChunk, 10);
        assert_eq!(e.reply(), b"CLIENT_ERROR bad data chunk\r\n");
        assert_eq!(e.to_string(), "CLIENT_ERROR bad data chunk");
        assert!(!e.closes_connection());
        assert!(TextError::new(TextErrorKind::LineTooLong, 1).closes_connection());
    }

    #[test]
    fn status_messages_are_memcacheds() {
        assert_eq!(status_message(Status::KEY_NOT_FOUND), "Not found");
        assert_eq!(status_message(Status::KEY_EXISTS), "Data exists for key.");
        assert_eq!(status_message(Status::VALUE_TOO_LARGE), "Too large.");
        assert_eq!(
            status_message(Status::INVALID_ARGUMENTS),
            "Invalid arguments"
        );
        assert_eq!(status_message(Status::NOT_STORED), "Not stored.");
        assert_eq!(
            status_message(Status::NON_NUMERIC),
            "Non-numeric server-side value for incr or decr"
        );
        assert_eq!(status_message(Status::UNKNOWN_COMMAND), "Unknown command");
        assert_eq!(status_message(Status::OUT_OF_MEMORY), "Out of memory");
        assert_eq!(
            status_message(Status::AUTH_ERROR_MEMCACHED),
            "Auth failure."
        );
    }

    #[test]
    fn binary_error_policy() {
        let e = BinaryError {
            kind: BinaryErrorKind::BadMagic,
            opcode: 0,
            opaque: 0,
            skip: 24,
            stale: None,
        };
        assert_eq!(e.status(), None);
        assert!(e.closes_connection());
        let e = BinaryError {
            kind: BinaryErrorKind::UnknownCommand,
            ..e
        };
        assert_eq!(e.status(), Some(Status::UNKNOWN_COMMAND));
        assert!(!e.closes_connection());
        assert_eq!(
            e.to_string(),
            "Unknown command (status 0x0081, opcode 0x00)"
        );
    }
}
