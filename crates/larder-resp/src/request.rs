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
mod tests {
    use super::*;

    /// What a table case expects from parsing its input.
    #[derive(Debug)]
    pub(super) enum Want {
        /// Complete, with this many bytes consumed and these arguments.
        Done(usize, &'static [&'static [u8]]),
        /// Incomplete with this `min_total`.
        More(usize),
        /// This exact error message.
        Fail(&'static str),
    }
    pub(super) use Want::{Done, Fail, More};

    fn small_limits() -> Limits {
        Limits {
            proto_max_bulk_len: 5,
            max_multibulk_len: 3,
            max_inline_len: 8,
            unauthenticated: false,
        }
    }

    fn run(input: &[u8], limits: &Limits) -> Result<(Parsed, Vec<Vec<u8>>), ParseError> {
        let mut argv = Vec::new();
        let parsed = parse_request(input, limits, &mut argv)?;
        Ok((parsed, argv.iter().map(|a| a.to_vec()).collect()))
    }

    pub(super) fn check_table(cases: &[(&[u8], Want)], limits: &Limits) {
        for (input, want) in cases {
            let label = String::from_utf8_lossy(input);
            let got = run(input, limits);
            match (want, &got) {
                (Done(consumed, args), Ok((Parsed::Complete { consumed: c }, argv))) => {
                    assert_eq!(c, consumed, "{label:?}");
                    let want_args: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
                    assert_eq!(argv, &want_args, "{label:?}");
                }
                (More(min), Ok((Parsed::Incomplete { min_total }, argv))) => {
                    assert_eq!(min_total, min, "{label:?}");
                    assert!(argv.is_empty(), "{label:?}");
                }
                (Fail(msg), Err(e)) => assert_eq!(e.message(), *msg, "{label:?}"),
                _ => panic!("{label:?}: want {want:?}, got {got:?}"),
            }
            check_prefixes(input, limits);
        }
    }

    /// Feeds every prefix of `input` and checks that the answers are consistent with what a
    /// caller honouring `min_total` would see: an incomplete prefix never claims more bytes
    /// than the point where the answer first changes, and once decided, the answer stays.
    fn check_prefixes(input: &[u8], limits: &Limits) {
        let results: Vec<_> = (0..=input.len())
            .map(|k| run(&input[..k], limits))
            .collect();
        let decided = results
            .iter()
            .position(|r| !matches!(r, Ok((Parsed::Incomplete { .. }, _))))
            .unwrap_or(usize::MAX);
        for (k, r) in results.iter().enumerate() {
            if let Ok((Parsed::Incomplete { min_total }, _)) = r {
                assert!(*min_total > k, "{input:?}[..{k}]: min_total {min_total}");
                if decided != usize::MAX {
                    assert!(
                        *min_total <= decided,
                        "{input:?}[..{k}] skips past byte {decided}"
                    );
                }
            } else {
                assert_eq!(
                    r, &results[decided],
                    "{input:?}[..{k}] differs from [..{decided}]"
                );
            }
        }
    }

    #[test]
    fn multibulk_table() {
        let cases: &[(&[u8], Want)] = &[
            (b"*1\r\n$4\r\nPING\r\n", Done(14, &[b"PING"])),
            (b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", Done(20, &[b"GET", b"k"])),
            (b"*1\r\n$0\r\n\r\n", Done(10, &[b""])),
            (b"*1\r\n$3\r\na\r\n\r\n", Done(13, &[b"a\r\n"])),
            (b"*1\r\n$10\r\n0123456789\r\n", Done(21, &[b"0123456789"])),
            (b"*0\r\n", Done(4, &[])),
            (b"*-1\r\n", Done(5, &[])),
            (b"*-10\r\n", Done(6, &[])),
            // Redis skips the byte after a header's `\r` and the two after the data unchecked.
            (b"*1\rX$1\r\na\r\n", Done(11, &[b"a"])),
            (b"*1\r\n$3\r\nabcXY", Done(13, &[b"abc"])),
            (b"*1\r\n$3\r\nabcXYZ", Done(13, &[b"abc"])),
            (b"", More(1)),
            (b"*", More(2)),
            (b"*1", More(3)),
            (b"*1\r", More(4)),
            (b"*1\r\n", More(5)),
            (b"*1\r\n$", More(6)),
            (b"*1\r\n$3\r", More(8)),
            (b"*1\r\n$3\r\n", More(13)),
            (b"*1\r\n$3\r\nab", More(13)),
            (b"*1\r\n$3\r\nabc\r", More(13)),
            (b"*1\r\nfoo", More(8)),
            (b"*2147483647\r\n", More(14)),
            (b"*1\r\n$536870912\r\n", More(16 + 536_870_912 + 2)),
            (
                b"*abc\r\n",
                Fail("ERR Protocol error: invalid multibulk length"),
            ),
            (
                b"*\r\n",
                Fail("ERR Protocol error: invalid multibulk length"),
            ),
            (
                b"*01\r\n",
                Fail("ERR Protocol error: invalid multibulk length"),
            ),
            (
                b"*+1\r\n",
                Fail("ERR Protocol error: invalid multibulk length"),
            ),
            (
                b"*-0\r\n",
                Fail("ERR Protocol error: invalid multibulk length"),
            ),
            (
                b"*1 \r\n",
                Fail("ERR Protocol error: invalid multibulk length"),
            ),
            (
                b"*2147483648\r\n",
                Fail("ERR Protocol error: invalid multibulk length"),
            ),
            (
                b"*9223372036854775808\r\n",
                Fail("ERR Protocol error: invalid multibulk length"),
            ),
            (
                b"*1\r\nfoo\r\n",
                Fail("ERR Protocol error: expected '$', got 'f'"),
            ),
            (
                b"*1\r\n:1\r\n",
                Fail("ERR Protocol error: expected '$', got ':'"),
            ),
            (
                b"*1\r\n\r\n",
                Fail("ERR Protocol error: expected '$', got ' '"),
            ),
            (
                b"*2\r\n$1\r\na\r\nX\r\n",
                Fail("ERR Protocol error: expected '$', got 'X'"),
            ),
            (
                b"*1\r\n$abc\r\n",
                Fail("ERR Protocol error: invalid bulk length"),
            ),
            (
                b"*1\r\n$-1\r\n",
                Fail("ERR Protocol error: invalid bulk length"),
            ),
            (
                b"*1\r\n$\r\n",
                Fail("ERR Protocol error: invalid bulk length"),
            ),
            (
                b"*1\r\n$01\r\n",
                Fail("ERR Protocol error: invalid bulk length"),
            ),
            (
                b"*1\r\n$3 \r\n",
                Fail("ERR Protocol error: invalid bulk length"),
            ),
            (
                b"*1\r\n$536870913\r\n",
                Fail("ERR Protocol error: invalid bulk length"),
            ),
            (
                b"*1\r\n$1234567890123456789\r\n",
                Fail("ERR Protocol error: invalid bulk length"),
            ),
            (
                b"*1\r\n$99999999999999999999\r\n",
                Fail("ERR Protocol error: invalid bulk length"),
            ),
        ];
        check_table(cases, &Limits::default());
    }

    #[test]
    fn limits_apply_to_incomplete_input() {
        let cases: &[(&[u8], Want)] = &[
            (b"*1234567", More(9)),
            (
                b"*12345678",
                Fail("ERR Protocol error: too big mbulk count string"),
            ),
            (
                b"*12345678\r\n",
                Fail("ERR Protocol error: too big mbulk count string"),
            ),
            (
                b"*1234567\r\n",
                Fail("ERR Protocol error: invalid multibulk length"),
            ),
            (b"*3\r\n", More(5)),
            (
                b"*4\r\n",
                Fail("ERR Protocol error: invalid multibulk length"),
            ),
            (b"*1\r\n$1234567", More(13)),
            (
                b"*1\r\n$12345678",
                Fail("ERR Protocol error: too big bulk count string"),
            ),
            (
                b"*1\r\nXXXXXXXXX",
                Fail("ERR Protocol error: too big bulk count string"),
            ),
            (
                b"*1\r\n$0000005\r\n",
                Fail("ERR Protocol error: invalid bulk length"),
            ),
            (b"*1\r\n$5\r\n", More(15)),
            (
                b"*1\r\n$6\r\n",
                Fail("ERR Protocol error: invalid bulk length"),
            ),
            (b"12345678", More(9)),
            (
                b"123456789",
                Fail("ERR Protocol error: too big inline request"),
            ),
            (b"1234567\r\n", Done(9, &[b"1234567"])),
            (b"12345678\n", Done(9, &[b"12345678"])),
            (
                b"12345678\r\n",
                Fail("ERR Protocol error: too big inline request"),
            ),
        ];
        check_table(cases, &small_limits());

        // A header line longer than max_inline_len is refused even when it is well formed.
        let tiny = Limits {
            proto_max_bulk_len: 100,
            max_multibulk_len: 100,
            max_inline_len: 3,
            unauthenticated: false,
        };
        let cases: &[(&[u8], Want)] = &[
            (b"*1\r\n$9\r\n123456789\r\n", Done(19, &[b"123456789"])),
            (b"*1\r\n$12\r\n", More(23)),
            (
                b"*1\r\n$123\r\n",
                Fail("ERR Protocol error: too big bulk count string"),
            ),
            (b"*12\r\n", More(6)),
            (
                b"*123\r\n",
                Fail("ERR Protocol error: too big mbulk count string"),
            ),
            (b"abc\n", Done(4, &[b"abc"])),
            (
                b"abc\r\n",
                Fail("ERR Protocol error: too big inline request"),
            ),
        ];
        check_table(cases, &tiny);

        // The same at Redis's real sizes: 70 KiB without a terminator is refused at once.
        let limits = Limits::default();
        let mut inline = vec![b'a'; 70 * 1024];
        assert_eq!(run(&inline, &limits), Err(ParseError::TooBigInlineRequest));
        inline.truncate(64 * 1024);
        assert_eq!(
            run(&inline, &limits),
            Ok((Parsed::Incomplete { min_total: 65537 }, vec![]))
        );
        let mut count = vec![b'1'; 70 * 1024];
        count[0] = b'*';
        assert_eq!(run(&count, &limits), Err(ParseError::TooBigMultibulkCount));
        let mut bulk = b"*1\r\n$".to_vec();
        bulk.resize(70 * 1024, b'1');
        assert_eq!(run(&bulk, &limits), Err(ParseError::TooBigBulkCount));
    }

    #[test]
    fn error_messages_and_display() {
        let cases = [
            (
                ParseError::TooBigInlineRequest,
                "ERR Protocol error: too big inline request",
            ),
            (
                ParseError::UnbalancedQuotes,
                "ERR Protocol error: unbalanced quotes in request",
            ),
            (
                ParseError::TooBigMultibulkCount,
                "ERR Protocol error: too big mbulk count string",
            ),
            (
                ParseError::InvalidMultibulkLength,
                "ERR Protocol error: invalid multibulk length",
            ),
            (
                ParseError::ExpectedDollar { got: b'x' },
                "ERR Protocol error: expected '$', got 'x'",
            ),
            (
                ParseError::ExpectedDollar { got: b'\n' },
                "ERR Protocol error: expected '$', got ' '",
            ),
            (
                ParseError::TooBigBulkCount,
                "ERR Protocol error: too big bulk count string",
            ),
            (
                ParseError::InvalidBulkLength,
                "ERR Protocol error: invalid bulk length",
            ),
            (
                ParseError::UnauthenticatedMultibulkLength,
                "ERR Protocol error: unauthenticated multibulk length",
            ),
            (
                ParseError::UnauthenticatedBulkLength,
                "ERR Protocol error: unauthenticated bulk length",
            ),
        ];
        for (err, text) in cases {
            assert_eq!(err.message(), text);
            assert_eq!(err.to_string(), text);
        }
    }

    #[test]
    fn multibulk_args_are_borrowed_and_argv_is_reset() {
        let input = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        let mut argv = vec![Cow::Owned(b"stale".to_vec())];
        let parsed = parse_request(input, &Limits::default(), &mut argv);
        assert_eq!(
            parsed,
            Ok(Parsed::Complete {
                consumed: input.len()
            })
        );
        assert!(argv.iter().all(|a| matches!(a, Cow::Borrowed(_))));

        let parsed = parse_request(&input[..10], &Limits::default(), &mut argv);
        assert_eq!(parsed, Ok(Parsed::Incomplete { min_total: 13 }));
        assert!(argv.is_empty());
    }

    #[test]
    fn huge_count_does_not_preallocate() {
        let mut argv = Vec::new();
        let parsed = parse_request(b"*2147483647\r\n$1\r\na\r\n", &Limits::default(), &mut argv);
        assert_eq!(parsed, Ok(Parsed::Incomplete { min_total: 21 }));
        assert!(
            argv.capacity() <= 2 * ARGV_PREALLOC_MAX,
            "{}",
            argv.capacity()
        );
    }

    #[test]
    fn streaming_bulk_is_not_rescanned() {
        // A 1 MiB argument arriving one byte at a time: the caller only re-parses when the
        // buffer reaches min_total, so the number of calls tracks the header bytes only.
        let payload = vec![b'x'; 1 << 20];
        let mut wire = Vec::new();
        crate::frame::encode_command(&[b"SET", b"k", &payload], &mut wire);
        let limits = Limits::default();
        let mut argv = Vec::new();
        let mut calls = 0;
        let mut need = 1;
        let mut done = None;
        for len in 1..=wire.len() {
            if len < need {
                continue;
            }
            calls += 1;
            match parse_request(&wire[..len], &limits, &mut argv) {
                Ok(Parsed::Incomplete { min_total }) => need = min_total,
                Ok(Parsed::Complete { consumed }) => {
                    done = Some(consumed);
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(done, Some(wire.len()));
        assert_eq!(argv.len(), 3);
        assert_eq!(argv[2].len(), payload.len());
        assert!(calls < 40, "{calls} parse calls");
    }

    #[test]
    fn pipelined_requests_back_to_back() {
        let mut wire = Vec::new();
        crate::frame::encode_command(&[b"SET", b"k", b"v"], &mut wire);
        wire.extend_from_slice(b"*0\r\n");
        wire.extend_from_slice(b"PING\r\n");
        wire.extend_from_slice(b"\r\n");
        crate::frame::encode_command(&[b"GET", b"k"], &mut wire);
        wire.extend_from_slice(b"echo \"a b\"\n");
        let want: &[&[&[u8]]] = &[
            &[b"SET", b"k", b"v"],
            &[],
            &[b"PING"],
            &[],
            &[b"GET", b"k"],
            &[b"echo", b"a b"],
        ];

        let limits = Limits::default();
        let mut argv = Vec::new();
        let mut pos = 0;
        let mut got = Vec::new();
        while pos < wire.len() {
            match parse_request(&wire[pos..], &limits, &mut argv) {
                Ok(Parsed::Complete { consumed }) => {
                    got.push(argv.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
                    pos += consumed;
                }
                other => panic!("at {pos}: {other:?}"),
            }
        }
        let want: Vec<Vec<Vec<u8>>> = want
            .iter()
            .map(|args| args.iter().map(|a| a.to_vec()).collect())
            .collect();
        assert_eq!(got, want);
        check_prefixes(&wire, &limits);
    }

    /// xorshift64: deterministic randomness without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> usize {
            (self.next() % n) as usize
        }
    }

    /// Writes `arg` so that sdssplitargs reads it back unchanged.
    fn quote_inline(rng: &mut Rng, arg: &[u8], out: &mut Vec<u8>) {
        let plain = |b: &u8| b.is_ascii_graphic() && !matches!(b, b'"' | b'\'' | b'\\');
        if !arg.is_empty() && arg.iter().all(plain) && rng.below(2) == 0 {
            out.extend_from_slice(arg);
        } else if !arg.contains(&b'\n') && !arg.contains(&b'\\') && rng.below(2) == 0 {
            out.push(b'\'');
            for &b in arg {
                if b == b'\'' {
                    out.extend_from_slice(b"\\'");
                } else {
                    out.push(b);
                }
            }
            out.push(b'\'');
        } else {
            out.push(b'"');
            for &b in arg {
                match b {
                    b'"' => out.extend_from_slice(b"\\\""),
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    b if b.is_ascii_graphic() || b == b' ' => out.push(b),
                    b => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
                }
            }
            out.push(b'"');
        }
    }

    #[test]
    fn random_commands_split_at_random_points() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let limits = Limits::default();
        for _round in 0..200 {
            let mut wire = Vec::new();
            let mut want = Vec::new();
            for _ in 0..rng.below(20) + 1 {
                let argc = rng.below(6) + 1;
                let args: Vec<Vec<u8>> = (0..argc)
                    .map(|_| {
                        let len = match rng.below(10) {
                            0 => rng.below(5000),
                            1 => 0,
                            _ => rng.below(16),
                        };
                        (0..len).map(|_| rng.next() as u8).collect()
                    })
                    .collect();
                if rng.below(3) == 0 && args.iter().map(Vec::len).sum::<usize>() < 1000 {
                    for (i, arg) in args.iter().enumerate() {
                        if i > 0 {
                            wire.push(b' ');
                        }
                        quote_inline(&mut rng, arg, &mut wire);
                    }
                    wire.extend_from_slice(if rng.below(2) == 0 { b"\r\n" } else { b"\n" });
                } else {
                    let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                    crate::frame::encode_command(&refs, &mut wire);
                }
                want.push(args);
            }

            // A connection that receives the stream in random pieces and only re-parses
            // once min_total bytes are buffered.
            let mut got = Vec::new();
            let mut start = 0;
            let mut end = 0;
            let mut need = 1;
            let mut argv = Vec::new();
            while got.len() < want.len() {
                assert!(
                    end < wire.len() || end - start >= need,
                    "stalled at {start}"
                );
                end = (end + rng.below(300) + 1).min(wire.len());
                while end - start >= need {
                    match parse_request(&wire[start..end], &limits, &mut argv) {
                        Ok(Parsed::Complete { consumed }) => {
                            got.push(argv.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
                            start += consumed;
                            need = 1;
                        }
                        Ok(Parsed::Incomplete { min_total }) => {
                            assert!(min_total > end - start);
                            need = min_total;
                        }
                        Err(e) => panic!("{e} at {start}"),
                    }
                }
            }
            assert_eq!(start, wire.len());
            assert_eq!(got, want);
        }
    }
}

#[cfg(test)]
mod unauthenticated_tests {
    use super::*;

    #[test]
    fn unauthenticated_limits() {
        let limits = Limits {
            unauthenticated: true,
            ..Limits::default()
        };
        let mut argv = Vec::new();
        assert_eq!(
            parse_request(b"*11\r\n", &limits, &mut argv),
            Err(ParseError::UnauthenticatedMultibulkLength)
        );
        assert!(matches!(
            parse_request(b"*10\r\n", &limits, &mut argv),
            Ok(Parsed::Incomplete { .. })
        ));
        assert_eq!(
            parse_request(b"*1\r\n$16385\r\n", &limits, &mut argv),
            Err(ParseError::UnauthenticatedBulkLength)
        );
        assert!(matches!(
            parse_request(b"*1\r\n$16384\r\n", &limits, &mut argv),
            Ok(Parsed::Incomplete { .. })
        ));
        let open = Limits::default();
        assert!(matches!(
            parse_request(b"*11\r\n", &open, &mut argv),
            Ok(Parsed::Incomplete { .. })
        ));
    }
}

#[cfg(test)]
mod resume_tests {
    use super::*;

    /// Feeding a request in pieces through `parse_request_resume` gives exactly what
    /// `parse_request` gives on the whole, for complete, incomplete and erroneous input.
    #[test]
    fn resume_matches_stateless_parse() {
        let mut req = b"*4\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n$2\r\nEX\r\n".to_vec();
        req.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        let limits = Limits::default();
        for step in 1..8 {
            let mut progress = Progress::default();
            let mut end = 0;
            loop {
                end = (end + step).min(req.len());
                let mut a = Vec::new();
                let mut b = Vec::new();
                let resumed = parse_request_resume(&req[..end], &limits, &mut a, &mut progress);
                let whole = parse_request(&req[..end], &limits, &mut b);
                assert_eq!(resumed, whole, "step {step} end {end}");
                assert_eq!(a, b);
                if matches!(resumed, Ok(Parsed::Complete { .. })) {
                    break;
                }
            }
        }
        let bad = b"*2\r\n$3\r\nGET\r\n+x\r\n";
        let mut progress = Progress::default();
        let mut argv = Vec::new();
        assert!(matches!(
            parse_request_resume(&bad[..10], &limits, &mut argv, &mut progress),
            Ok(Parsed::Incomplete { .. })
        ));
        assert_eq!(
            parse_request_resume(bad, &limits, &mut argv, &mut progress),
            Err(ParseError::ExpectedDollar { got: b'+' })
        );
    }

    /// The pending last argument is reported only while its data is what the request still
    /// waits for, and only for the last argument.
    #[test]
    fn pending_last_bulk_names_the_last_arguments_data() {
        let req = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123456789\r\n";
        let data_start = req.len() - 12;
        let limits = Limits::default();
        let pending = |end: usize| {
            let mut progress = Progress::default();
            let mut argv = Vec::new();
            let parsed = parse_request_resume(&req[..end], &limits, &mut argv, &mut progress);
            let mut args = Vec::new();
            progress.parsed_args(&req[..end], &mut args);
            (parsed, progress.pending_last_bulk(), args.len())
        };
        // The header of the last argument is not complete: nothing to report yet.
        assert_eq!(pending(data_start - 2).1, None);
        // Waiting for the first argument's data: not the last argument.
        assert_eq!(pending(10).1, None);
        for end in data_start..req.len() {
            let (parsed, bulk, parsed_args) = pending(end);
            assert!(matches!(parsed, Ok(Parsed::Incomplete { .. })), "end {end}");
            assert_eq!(bulk, Some((data_start, 10)), "end {end}");
            assert_eq!(parsed_args, 2);
        }
        let (parsed, bulk, _) = pending(req.len());
        assert_eq!(
            parsed,
            Ok(Parsed::Complete {
                consumed: req.len()
            })
        );
        assert_eq!(bulk, None);
    }
}
