//! Server-side request parsing: RESP multibulk (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) and inline
//! commands (`GET k\r\n`), with the limits, error texts and quirks of Redis 7's
//! `processMultibulkBuffer` and `processInlineBuffer`.
//!
//! The parser is stateless: each call starts from the beginning of the request. What keeps
//! that cheap is [`Parsed::Incomplete::min_total`], which tells the caller how many bytes must
//! be buffered before another call can change the answer, so a large bulk argument streaming
//! in is parsed once when its header arrives and once when its data is complete.

use std::borrow::Cow;
use std::fmt;

use memchr::memchr;

use crate::number::parse_i64;

mod inline;

/// Upper bound on the argv capacity reserved up front from a client-supplied count, as Redis
/// caps its initial `argv_len` at 1024: a `*2147483647` header must not allocate 48 GiB.
const ARGV_PREALLOC_MAX: usize = 1024;

/// Size and count limits applied while parsing. The defaults are Redis 7's.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// proto-max-bulk-len (Redis default 512 MiB)
    pub proto_max_bulk_len: u64,
    /// largest accepted multibulk count (Redis 7: i32::MAX)
    pub max_multibulk_len: u64,
    /// PROTO_INLINE_MAX_SIZE: 64 KiB; also the cap on a `*`/`$` header line
    pub max_inline_len: usize,
    /// The client has not authenticated yet: Redis then refuses more than 10 arguments and
    /// bulks over 16 KiB, so that an anonymous client cannot make the server buffer much.
    pub unauthenticated: bool,
}

/// Most arguments an unauthenticated client may send in one request.
pub const UNAUTHENTICATED_MULTIBULK_MAX: u64 = 10;
/// Largest bulk an unauthenticated client may send.
pub const UNAUTHENTICATED_BULK_MAX: u64 = 16384;

impl Default for Limits {
    fn default() -> Self {
        Self {
            proto_max_bulk_len: 512 * 1024 * 1024,
            max_multibulk_len: i32::MAX as u64,
            max_inline_len: 64 * 1024,
            unauthenticated: false,
        }
    }
}

/// The outcome of a successful [`parse_request`] call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole request was parsed; `consumed` bytes of the buffer belong to it.
    /// `argv` (the out-parameter) holds its arguments; it may be empty (an empty inline line,
    /// or `*0\r\n` / `*-1\r\n`, which Redis silently skips).
    Complete {
        /// Bytes of the buffer taken by this request, always at least 1.
        consumed: usize,
    },
    /// Not enough bytes yet. Do not call again before the buffer holds at least
    /// `min_total` bytes (lets the caller skip re-parsing while a big bulk streams in).
    Incomplete {
        /// The smallest buffer length at which the answer can change; always greater than
        /// the length of the buffer that was passed.
        min_total: usize,
    },
}

/// A protocol violation. Redis replies with [`ParseError::message`] and closes the connection.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// More than `max_inline_len` bytes of an inline command without a newline.
    TooBigInlineRequest,
    /// An inline command with an unterminated quote, or a closing quote followed by
    /// something other than a space.
    UnbalancedQuotes,
    /// More than `max_inline_len` bytes of a `*` header without a `\r`.
    TooBigMultibulkCount,
    /// A `*` count that is not an integer or exceeds `max_multibulk_len`.
    InvalidMultibulkLength,
    /// A multibulk element whose header line does not start with `$`.
    ExpectedDollar {
        /// The byte found instead.
        got: u8,
    },
    /// More than `max_inline_len` bytes of a `$` header without a `\r`.
    TooBigBulkCount,
    /// A `$` length that is not an integer, is negative, or exceeds `proto_max_bulk_len`.
    InvalidBulkLength,
    /// More than 10 arguments before authentication.
    UnauthenticatedMultibulkLength,
    /// A bulk over 16 KiB before authentication.
    UnauthenticatedBulkLength,
}

impl ParseError {
    /// The exact error reply Redis 7 sends, without the leading '-' and trailing CRLF, e.g.
    /// "ERR Protocol error: invalid multibulk length".
    pub fn message(&self) -> String {
        let text = match self {
            Self::TooBigInlineRequest => "too big inline request",
            Self::UnbalancedQuotes => "unbalanced quotes in request",
            Self::TooBigMultibulkCount => "too big mbulk count string",
            Self::InvalidMultibulkLength => "invalid multibulk length",
            Self::ExpectedDollar { got } => {
                // addReplyErrorFormat maps CR and LF to spaces so the reply stays one line.
                let shown = match got {
                    b'\r' | b'\n' => ' ',
                    &b => char::from(b),
                };
                return format!("ERR Protocol error: expected '$', got '{shown}'");
            }
            Self::TooBigBulkCount => "too big bulk count string",
            Self::InvalidBulkLength => "invalid bulk length",
            Self::UnauthenticatedMultibulkLength => "unauthenticated multibulk length",
            Self::UnauthenticatedBulkLength => "unauthenticated bulk length",
        };
        format!("ERR Protocol error: {text}")
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ParseError {}

/// Parse one request (RESP multibulk if `buf[0] == b'*'`, otherwise an inline command line
/// terminated by `\n`, with an optional `\r` before it) from the start of `buf`.
///
/// Multibulk arguments are borrowed from `buf` (`Cow::Borrowed`, zero copy). Inline arguments
/// are split like Redis's `sdssplitargs` (double quotes with `\n \r \t \b \a \\ \" \xHH`
/// escapes, single quotes with `\'` only, a closing quote must be followed by a space or the
/// end); they are borrowed too when no quote was involved, and owned otherwise.
///
/// `argv` is cleared first, and is left empty unless the result is [`Parsed::Complete`].
pub fn parse_request<'a>(
    buf: &'a [u8],
    limits: &Limits,
    argv: &mut Vec<Cow<'a, [u8]>>,
) -> Result<Parsed, ParseError> {
    argv.clear();
    let result = match buf.first() {
        None => return Ok(Parsed::Incomplete { min_total: 1 }),
        Some(b'*') => parse_multibulk(buf, limits, argv),
        Some(_) => inline::parse_inline(buf, limits, argv),
    };
    if !matches!(result, Ok(Parsed::Complete { .. })) {
        argv.clear();
    }
    result
}

/// Where the `\r` ending a header line is, if it is there.
enum Line {
    /// The `\r` is at this index of the buffer.
    Found(usize),
    /// No `\r` yet, and the line is still within its size limit.
    Incomplete,
    /// More than the limit has been buffered without a `\r`.
    TooLong,
}

/// Finds the `\r` ending the header line that starts at `start`. Like Redis, only `\r` is
/// searched for; the byte after it is skipped without being checked.
///
/// Redis searches the whole buffer and fails once more than `max` bytes are buffered with no
/// `\r`. Looking only at the first `max + 1` bytes gives the same answer independent of how
/// the input was split into reads, which is what a stateless parser needs.
#[inline]
fn find_cr(buf: &[u8], start: usize, max: usize) -> Line {
    let avail = buf.get(start..).unwrap_or_default();
    let window = &avail[..avail.len().min(max.saturating_add(1))];
    match memchr(b'\r', window) {
        Some(i) => Line::Found(start + i),
        None if avail.len() > max => Line::TooLong,
        None => Line::Incomplete,
    }
}

/// Where an incomplete multibulk request stopped: the next call with the same buffer prefix
/// resumes there instead of re-scanning every argument header from the start, which keeps a
/// request of a million small arguments arriving over many reads linear instead of quadratic.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Announced argument count; 0 = no request in progress.
    count: usize,
    /// Offset of the first argument header not parsed yet.
    pos: usize,
    /// Data spans of the arguments parsed so far.
    spans: Vec<(usize, usize)>,
    /// Data start and length of the argument whose header is parsed but whose data (or its
    /// two trailing bytes) has not all arrived.
    bulk: Option<(usize, usize)>,
}

impl Progress {
    /// Forget any request in progress (after the buffer's front moved to a new request).
    pub fn reset(&mut self) {
        self.count = 0;
        self.pos = 0;
        self.spans.clear();
        self.bulk = None;
    }

    /// When the incomplete request waits only for the data of its last argument: where that
    /// data starts in the buffer and how long it is (the two bytes after it not counted). A
    /// server can then read that argument into a buffer of its own and hand it to the command
    /// whole, as Redis does with large arguments, instead of copying it out of the input.
    pub fn pending_last_bulk(&self) -> Option<(usize, usize)> {
        self.bulk.filter(|_| self.spans.len() + 1 == self.count)
    }

    /// Appends the arguments parsed so far (all but the pending one) to `args`; `buf` is the
    /// buffer they were parsed from.
    pub fn parsed_args<'a>(&self, buf: &'a [u8], args: &mut Vec<&'a [u8]>) {
        args.extend(self.spans.iter().map(|&(s, e)| &buf[s..e]));
    }
}

/// Like [`parse_request`], remembering in `progress` how far an incomplete multibulk request
/// got. The caller must pass a buffer that starts at the same request as the previous call
/// (more bytes appended is fine) and must [`Progress::reset`] it once that request is
/// consumed or the buffer's start moves. Results are identical to [`parse_request`]'s.
pub fn parse_request_resume<'a>(
    buf: &'a [u8],
    limits: &Limits,
    argv: &mut Vec<Cow<'a, [u8]>>,
    progress: &mut Progress,
) -> Result<Parsed, ParseError> {
    if buf.first() != Some(&b'*') {
        progress.reset();
        return parse_request(buf, limits, argv);
    }
    argv.clear();
    if progress.count == 0 {
        // A request not started before is parsed straight into `argv`, as most arrive
        // whole; only one that is not complete yet is parsed again, once, into `progress`.
        match parse_multibulk_resumable(buf, limits, argv, None) {
            Ok(Parsed::Incomplete { .. }) => argv.clear(),
            Ok(done) => return Ok(done),
            Err(e) => {
                argv.clear();
                return Err(e);
            }
        }
    }
    let result = parse_multibulk_resumable(buf, limits, argv, Some(progress));
    if !matches!(result, Ok(Parsed::Incomplete { .. })) {
        progress.reset();
        if result.is_err() {
            argv.clear();
        }
    }
    result
}

fn parse_multibulk<'a>(
    buf: &'a [u8],
    limits: &Limits,
    argv: &mut Vec<Cow<'a, [u8]>>,
) -> Result<Parsed, ParseError> {
    parse_multibulk_resumable(buf, limits, argv, None)
}

fn parse_multibulk_resumable<'a>(
    buf: &'a [u8],
    limits: &Limits,
    argv: &mut Vec<Cow<'a, [u8]>>,
    mut progress: Option<&mut Progress>,
) -> Result<Parsed, ParseError> {
    let more = Parsed::Incomplete {
        min_total: buf.len() + 1,
    };
    if let Some(p) = progress.as_deref_mut() {
        if p.count > 0 {
            return multibulk_args(buf, limits, argv, p.count, p.pos, progress);
        }
    }
    let (count, cr) = match short_count(buf, 0, limits.max_inline_len) {
        Some((count, cr)) => (count as i64, cr),
        None => {
            let cr = match find_cr(buf, 0, limits.max_inline_len) {
                Line::Found(cr) => cr,
                Line::Incomplete => return Ok(more),
                Line::TooLong => return Err(ParseError::TooBigMultibulkCount),
            };
            // Redis waits for one byte after the `\r` and skips it unchecked.
            if cr + 1 >= buf.len() {
                return Ok(more);
            }
            let count = parse_i64(&buf[1..cr]).ok_or(ParseError::InvalidMultibulkLength)?;
            (count, cr)
        }
    };
    let pos = cr + 2;
    if count <= 0 {
        return Ok(Parsed::Complete { consumed: pos });
    }
    if count.unsigned_abs() > limits.max_multibulk_len {
        return Err(ParseError::InvalidMultibulkLength);
    }
    if limits.unauthenticated && count.unsigned_abs() > UNAUTHENTICATED_MULTIBULK_MAX {
        return Err(ParseError::UnauthenticatedMultibulkLength);
    }
    let count = usize::try_from(count).map_err(|_| ParseError::InvalidMultibulkLength)?;
    if let Some(p) = progress.as_deref_mut() {
        p.count = count;
        p.pos = pos;
        p.spans.clear();
        p.bulk = None;
    }
    multibulk_args(buf, limits, argv, count, pos, progress)
}

/// Parse the arguments of a multibulk request whose header announced `count` arguments, from
/// `pos` (the first argument not parsed yet).
fn multibulk_args<'a>(
    buf: &'a [u8],
    limits: &Limits,
    argv: &mut Vec<Cow<'a, [u8]>>,
    count: usize,
    mut pos: usize,
    mut progress: Option<&mut Progress>,
) -> Result<Parsed, ParseError> {
    let done = progress.as_deref().map_or(0, |p| p.spans.len());
    if progress.is_none() {
        argv.reserve(count.min(ARGV_PREALLOC_MAX));
    }
    for _ in done..count {
        let Some((len, data_start)) = bulk_header(buf, pos, limits)? else {
            if let Some(p) = progress.as_deref_mut() {
                p.pos = pos;
                p.bulk = None;
            }
            return Ok(Parsed::Incomplete {
                min_total: buf.len() + 1,
            });
        };
        let data_end = data_start.saturating_add(len);
        // The two bytes after the data are skipped unchecked, as Redis does.
        let next = data_end.saturating_add(2);
        if buf.len() < next {
            if let Some(p) = progress.as_deref_mut() {
                p.pos = pos;
                p.bulk = Some((data_start, len));
            }
            return Ok(Parsed::Incomplete { min_total: next });
        }
        match progress.as_deref_mut() {
            Some(p) => p.spans.push((data_start, data_end)),
            None => argv.push(Cow::Borrowed(&buf[data_start..data_end])),
        }
        pos = next;
    }
    if let Some(p) = progress {
        argv.reserve(p.spans.len());
        argv.extend(p.spans.iter().map(|&(s, e)| Cow::Borrowed(&buf[s..e])));
    }
    Ok(Parsed::Complete { consumed: pos })
}

/// The fast path for the header shape every client sends: a type byte at `pos`, then 1 to 18
/// digits without a leading zero (or a lone `0`), `\r`, and one more byte. Returns the value
/// and the index of the `\r`, or `None` for anything else, which the general path (Redis's
/// exact algorithm) then decides; for inputs accepted here both paths agree.
#[inline]
fn short_count(buf: &[u8], pos: usize, max_line: usize) -> Option<(u64, usize)> {
    let digits_start = pos + 1;
    let scan_end = buf.len().min(digits_start + 18);
    let mut i = digits_start;
    let mut value = 0u64;
    while i < scan_end && buf[i].is_ascii_digit() {
        value = value * 10 + u64::from(buf[i] - b'0');
        i += 1;
    }
    let ndigits = i - digits_start;
    let accepted = ndigits > 0
        && (ndigits == 1 || buf[digits_start] != b'0')
        && i + 1 < buf.len()
        && buf[i] == b'\r'
        && i - pos <= max_line;
    accepted.then_some((value, i))
}

/// Parses the `$<len>\r\n` header at `pos`: `Ok(Some((len, data_start)))`, or `Ok(None)` when
/// the header line is not complete yet.
#[inline]
fn bulk_header(
    buf: &[u8],
    pos: usize,
    limits: &Limits,
) -> Result<Option<(usize, usize)>, ParseError> {
    if buf.get(pos) == Some(&b'$') {
        if let Some((len, cr)) = short_count(buf, pos, limits.max_inline_len) {
            if len > limits.proto_max_bulk_len {
                return Err(ParseError::InvalidBulkLength);
            }
            if limits.unauthenticated && len > UNAUTHENTICATED_BULK_MAX {
                return Err(ParseError::UnauthenticatedBulkLength);
            }
            let len = usize::try_from(len).map_err(|_| ParseError::InvalidBulkLength)?;
            return Ok(Some((len, cr + 2)));
        }
    }

    let cr = match find_cr(buf, pos, limits.max_inline_len) {
        Line::Found(cr) => cr,
        Line::Incomplete => return Ok(None),
        Line::TooLong => return Err(ParseError::TooBigBulkCount),
    };
    if cr + 1 >= buf.len() {
        return Ok(None);
    }
    // Redis checks for `$` only once the whole line is there.
    if buf[pos] != b'$' {
        return Err(ParseError::ExpectedDollar { got: buf[pos] });
    }
    let len = parse_i64(&buf[pos + 1..cr]).ok_or(ParseError::InvalidBulkLength)?;
    if len < 0 || len.unsigned_abs() > limits.proto_max_bulk_len {
        return Err(ParseError::InvalidBulkLength);
    }
    if limits.unauthenticated && len.unsigned_abs() > UNAUTHENTICATED_BULK_MAX {
        return Err(ParseError::UnauthenticatedBulkLength);
    }
    let len = usize::try_from(len).map_err(|_| ParseError::InvalidBulkLength)?;
    Ok(Some((len, cr + 2)))
}

#[cfg(test)]
mod tests;
