//! Client-side RESP2/RESP3 decoding into an owned [`Frame`] tree, and the matching encoders.
//! Used by tests, benchmarks and the cache builder's `--from redis://` reader; the server
//! itself never builds frames (it parses with [`crate::request`] and encodes with
//! [`crate::reply`]).

use std::fmt;

use memchr::memchr;

use crate::number::{format_double, parse_i64, put_header, put_signed_header};

/// How deeply aggregates may nest before [`decode`] gives up; keeps recursion (and the
/// recursive drop of the result) far from the end of any thread's stack.
pub const MAX_DEPTH: usize = 512;

/// Element capacity reserved up front from a peer-supplied count; the rest grows as elements
/// actually arrive.
const PREALLOC_MAX: usize = 1024;

/// One decoded RESP value. RESP2's null bulk (`$-1`) and null array (`*-1`) both decode to
/// [`Frame::Null`], like RESP3's `_`.
#[derive(Clone, Debug, PartialEq)]
pub enum Frame {
    /// `+text`; bytes that are not UTF-8 are replaced with U+FFFD.
    Simple(String),
    /// `-CODE message` or RESP3's blob error `!len`; bytes that are not UTF-8 are replaced.
    Error(String),
    /// `:n`
    Integer(i64),
    /// `$len` followed by the bytes.
    Bulk(Vec<u8>),
    /// `_`, `$-1` or `*-1`.
    Null,
    /// `*n`
    Array(Vec<Frame>),
    /// `%n`, in wire order.
    Map(Vec<(Frame, Frame)>),
    /// `~n`, in wire order.
    Set(Vec<Frame>),
    /// `,text`
    Double(f64),
    /// `#t` / `#f`
    Boolean(bool),
    /// `(digits`
    BigNumber(String),
    /// `=len` followed by a three-byte format, `:`, and the text.
    Verbatim {
        /// `txt`, `mkd`, ...
        format: String,
        /// The text after the format prefix.
        text: Vec<u8>,
    },
    /// `>n`, an out-of-band message.
    Push(Vec<Frame>),
}

/// Malformed input to [`decode`]. The stream cannot be resynchronised after one.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A frame started with a byte that is not a RESP type marker.
    UnknownType(u8),
    /// A `\r` not followed by `\n`, or a bulk payload not followed by CRLF.
    MissingCrlf,
    /// A length or count that is not an integer or is negative (other than a RESP2 null).
    InvalidLength,
    /// An integer frame whose text is not an integer.
    InvalidInteger,
    /// A double frame whose text is not a number.
    InvalidDouble,
    /// A boolean frame other than `#t` / `#f`.
    InvalidBoolean,
    /// A big number that is not an optional `-` followed by digits.
    InvalidBigNumber,
    /// A verbatim string without its three-byte `fmt:` prefix.
    InvalidVerbatim,
    /// A null frame with text after the `_`.
    InvalidNull,
    /// Aggregates nested more than [`MAX_DEPTH`] deep.
    TooDeep,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownType(b) => {
                write!(f, "unknown RESP type byte {:?}", char::from(*b))
            }
            Self::MissingCrlf => f.write_str("expected CRLF"),
            Self::InvalidLength => f.write_str("invalid length or count"),
            Self::InvalidInteger => f.write_str("invalid integer"),
            Self::InvalidDouble => f.write_str("invalid double"),
            Self::InvalidBoolean => f.write_str("invalid boolean"),
            Self::InvalidBigNumber => f.write_str("invalid big number"),
            Self::InvalidVerbatim => f.write_str("invalid verbatim string"),
            Self::InvalidNull => f.write_str("invalid null"),
            Self::TooDeep => write!(f, "aggregates nested deeper than {MAX_DEPTH}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Decode one frame from the start of buf: Ok(Some((frame, consumed))), Ok(None) if incomplete.
/// Attributes (|) are read and discarded. Nesting deeper than [`MAX_DEPTH`] is an error.
///
/// The decoder keeps no state between calls, so a caller reading a large reply in small
/// pieces should wait for more than one read's worth before calling again.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
    let mut cursor = Cursor { buf, pos: 0 };
    match cursor.frame(0) {
        Ok(frame) => Ok(Some((frame, cursor.pos))),
        Err(Stop::Incomplete) => Ok(None),
        Err(Stop::Invalid(e)) => Err(e),
    }
}

/// Why decoding stopped early.
enum Stop {
    Incomplete,
    Invalid(FrameError),
}

impl From<FrameError> for Stop {
    fn from(e: FrameError) -> Self {
        Self::Invalid(e)
    }
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// The text of the line at the cursor, without its CRLF; moves past the CRLF.
    fn line(&mut self) -> Result<&'a [u8], Stop> {
        let rest = &self.buf[self.pos..];
        let cr = memchr(b'\r', rest).ok_or(Stop::Incomplete)?;
        match rest.get(cr + 1) {
            None => Err(Stop::Incomplete),
            Some(b'\n') => {
                self.pos += cr + 2;
                Ok(&rest[..cr])
            }
            Some(_) => Err(FrameError::MissingCrlf.into()),
        }
    }

    /// A length or count line: `Some(n)` for n >= 0, `None` for -1.
    fn length(&mut self) -> Result<Option<usize>, Stop> {
        match parse_i64(self.line()?) {
            Some(-1) => Ok(None),
            Some(n) => usize::try_from(n)
                .map(Some)
                .map_err(|_| FrameError::InvalidLength.into()),
            None => Err(FrameError::InvalidLength.into()),
        }
    }

    /// `len` payload bytes followed by CRLF.
    fn payload(&mut self, len: usize) -> Result<&'a [u8], Stop> {
        let end = self.pos.checked_add(len).ok_or(FrameError::InvalidLength)?;
        let Some(tail) = self.buf.get(end..end.saturating_add(2)) else {
            return Err(Stop::Incomplete);
        };
        if tail != b"\r\n" {
            return Err(FrameError::MissingCrlf.into());
        }
        let data = &self.buf[self.pos..end];
        self.pos = end + 2;
        Ok(data)
    }

    /// A blob (`$`, `!`, `=`) after its type byte: `None` for a RESP2 null.
    fn blob(&mut self) -> Result<Option<&'a [u8]>, Stop> {
        match self.length()? {
            Some(len) => self.payload(len).map(Some),
            None => Ok(None),
        }
    }

    fn elements(&mut self, count: usize, depth: usize) -> Result<Vec<Frame>, Stop> {
        let mut items = Vec::with_capacity(count.min(PREALLOC_MAX));
        for _ in 0..count {
            items.push(self.frame(depth + 1)?);
        }
        Ok(items)
    }

    fn pairs(&mut self, count: usize, depth: usize) -> Result<Vec<(Frame, Frame)>, Stop> {
        let mut items = Vec::with_capacity(count.min(PREALLOC_MAX));
        for _ in 0..count {
            let key = self.frame(depth + 1)?;
            let value = self.frame(depth + 1)?;
            items.push((key, value));
        }
        Ok(items)
    }

    fn frame(&mut self, depth: usize) -> Result<Frame, Stop> {
        if depth > MAX_DEPTH {
            return Err(FrameError::TooDeep.into());
        }
        loop {
            let &tag = self.buf.get(self.pos).ok_or(Stop::Incomplete)?;
            self.pos += 1;
            let frame = match tag {
                b'+' => Frame::Simple(lossy(self.line()?)),
                b'-' => Frame::Error(lossy(self.line()?)),
                b':' => Frame::Integer(parse_i64(self.line()?).ok_or(FrameError::InvalidInteger)?),
                b'$' => match self.blob()? {
                    Some(data) => Frame::Bulk(data.to_vec()),
                    None => Frame::Null,
                },
                b'!' => Frame::Error(lossy(self.blob()?.ok_or(FrameError::InvalidLength)?)),
                b'=' => {
                    let data = self.blob()?.ok_or(FrameError::InvalidLength)?;
                    match data {
                        [f0, f1, f2, b':', text @ ..] => Frame::Verbatim {
                            format: std::str::from_utf8(&[*f0, *f1, *f2])
                                .map_err(|_| FrameError::InvalidVerbatim)?
                                .to_owned(),
                            text: text.to_vec(),
                        },
                        _ => return Err(FrameError::InvalidVerbatim.into()),
                    }
                }
                b'*' => match self.length()? {
                    Some(n) => Frame::Array(self.elements(n, depth)?),
                    None => Frame::Null,
                },
                b'~' => {
                    let n = self.count()?;
                    Frame::Set(self.elements(n, depth)?)
                }
                b'>' => {
                    let n = self.count()?;
                    Frame::Push(self.elements(n, depth)?)
                }
                b'%' => {
                    let n = self.count()?;
                    Frame::Map(self.pairs(n, depth)?)
                }
                b'|' => {
                    // Attributes describe the frame that follows; nothing here uses them.
                    let n = self.count()?;
                    self.pairs(n, depth)?;
                    continue;
                }
                b'_' => {
                    if !self.line()?.is_empty() {
                        return Err(FrameError::InvalidNull.into());
                    }
                    Frame::Null
                }
                b',' => Frame::Double(parse_double(self.line()?)?),
                b'#' => match self.line()? {
                    b"t" => Frame::Boolean(true),
                    b"f" => Frame::Boolean(false),
                    _ => return Err(FrameError::InvalidBoolean.into()),
                },
                b'(' => {
                    let text = self.line()?;
                    let digits = text.strip_prefix(b"-").unwrap_or(text);
                    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                        return Err(FrameError::InvalidBigNumber.into());
                    }
                    Frame::BigNumber(lossy(text))
                }
                other => return Err(FrameError::UnknownType(other).into()),
            };
            return Ok(frame);
        }
    }

    /// A count for an aggregate that has no null form.
    fn count(&mut self) -> Result<usize, Stop> {
        self.length()?
            .ok_or_else(|| FrameError::InvalidLength.into())
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn parse_double(text: &[u8]) -> Result<f64, FrameError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or(FrameError::InvalidDouble)
}

/// `prefix`, the text, CRLF; for frames whose text never holds CR or LF.
fn put_line(out: &mut Vec<u8>, prefix: u8, text: &[u8]) {
    out.push(prefix);
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

/// `prefix`, the length, the bytes, CRLF.
fn put_blob(out: &mut Vec<u8>, prefix: u8, data: &[u8]) {
    put_header(out, prefix, false, data.len() as u64);
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

impl Frame {
    /// Appends this frame encoded as RESP3. An error containing CR or LF is written as a blob
    /// error (`!len`) so it survives the trip; a verbatim format that is not three bytes is
    /// written as `txt`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Self::Simple(s) => put_line(out, b'+', s.as_bytes()),
            Self::Error(s) => {
                if memchr::memchr2(b'\r', b'\n', s.as_bytes()).is_some() {
                    put_blob(out, b'!', s.as_bytes());
                } else {
                    put_line(out, b'-', s.as_bytes());
                }
            }
            Self::Integer(n) => put_signed_header(out, b':', *n),
            Self::Bulk(data) => put_blob(out, b'$', data),
            Self::Null => out.extend_from_slice(b"_\r\n"),
            Self::Array(items) | Self::Set(items) | Self::Push(items) => {
                let prefix = match self {
                    Self::Set(_) => b'~',
                    Self::Push(_) => b'>',
                    _ => b'*',
                };
                put_header(out, prefix, false, items.len() as u64);
                for item in items {
                    item.encode(out);
                }
            }
            Self::Map(pairs) => {
                put_header(out, b'%', false, pairs.len() as u64);
                for (key, value) in pairs {
                    key.encode(out);
                    value.encode(out);
                }
            }
            Self::Double(v) => put_line(out, b',', format_double(*v).as_bytes()),
            Self::Boolean(v) => out.extend_from_slice(if *v { b"#t\r\n" } else { b"#f\r\n" }),
            Self::BigNumber(digits) => put_line(out, b'(', digits.as_bytes()),
            Self::Verbatim { format, text } => {
                let format = if format.len() == 3 {
                    format.as_str()
                } else {
                    "txt"
                };
                put_header(out, b'=', false, text.len() as u64 + 4);
                out.extend_from_slice(format.as_bytes());
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// The payload of a string-like frame: simple string, bulk string, or verbatim text.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Self::Simple(s) => Some(s.as_bytes()),
            Self::Bulk(b) => Some(b),
            Self::Verbatim { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The payload of a string-like frame (see [`Frame::as_bytes`]) when it is UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Simple(s) => Some(s),
            Self::Bulk(b) | Self::Verbatim { text: b, .. } => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// The value of an integer frame. Bulk strings holding digits are not converted.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Self::Integer(n) => Some(*n),
            _ => None,
        }
    }

    /// Whether this is an error reply (`-` or `!`).
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Error(_))
    }
}

/// Encode a command as a RESP multibulk (client side).
pub fn encode_command(args: &[&[u8]], out: &mut Vec<u8>) {
    put_header(out, b'*', false, args.len() as u64);
    for arg in args {
        put_blob(out, b'$', arg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Frame {
        Frame::Bulk(s.as_bytes().to_vec())
    }

    #[test]
    fn decode_table() {
        let cases: Vec<(&[u8], Frame)> = vec![
            (b"+OK\r\n", Frame::Simple("OK".into())),
            (b"+\r\n", Frame::Simple(String::new())),
            (b"-ERR bad\r\n", Frame::Error("ERR bad".into())),
            (b"!8\r\nERR a\r\nb\r\n", Frame::Error("ERR a\r\nb".into())),
            (b":-12\r\n", Frame::Integer(-12)),
            (b"$3\r\nabc\r\n", bulk("abc")),
            (b"$0\r\n\r\n", bulk("")),
            (b"$4\r\na\r\nb\r\n", bulk("a\r\nb")),
            (b"$-1\r\n", Frame::Null),
            (b"*-1\r\n", Frame::Null),
            (b"_\r\n", Frame::Null),
            (b"*0\r\n", Frame::Array(vec![])),
            (
                b"*3\r\n:1\r\n$1\r\nx\r\n*1\r\n_\r\n",
                Frame::Array(vec![
                    Frame::Integer(1),
                    bulk("x"),
                    Frame::Array(vec![Frame::Null]),
                ]),
            ),
            (
                b"%1\r\n+k\r\n:2\r\n",
                Frame::Map(vec![(Frame::Simple("k".into()), Frame::Integer(2))]),
            ),
            (
                b"~2\r\n#t\r\n#f\r\n",
                Frame::Set(vec![Frame::Boolean(true), Frame::Boolean(false)]),
            ),
            (
                b">2\r\n+message\r\n$1\r\nx\r\n",
                Frame::Push(vec![Frame::Simple("message".into()), bulk("x")]),
            ),
            (b",1.5\r\n", Frame::Double(1.5)),
            (b",1\r\n", Frame::Double(1.0)),
            (b",-inf\r\n", Frame::Double(f64::NEG_INFINITY)),
            (b",1e+300\r\n", Frame::Double(1e300)),
            (
                b"(-123456789012345678901234567890\r\n",
                Frame::BigNumber("-123456789012345678901234567890".into()),
            ),
            (
                b"=8\r\ntxt:abcd\r\n",
                Frame::Verbatim {
                    format: "txt".into(),
                    text: b"abcd".to_vec(),
                },
            ),
            (
                b"=4\r\nmkd:\r\n",
                Frame::Verbatim {
                    format: "mkd".into(),
                    text: vec![],
                },
            ),
            (b"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n", bulk("v")),
            (b"|0\r\n|0\r\n:7\r\n", Frame::Integer(7)),
            (
                b"*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n",
                Frame::Array(vec![Frame::Integer(1)]),
            ),
            (b"+\xff\r\n", Frame::Simple("\u{fffd}".into())),
        ];
        for (input, want) in &cases {
            let label = String::from_utf8_lossy(input);
            let mut extended = input.to_vec();
            extended.extend_from_slice(b"+next\r\n");
            assert_eq!(
                decode(&extended),
                Ok(Some((want.clone(), input.len()))),
                "{label:?}"
            );
            for k in 0..input.len() {
                assert_eq!(decode(&input[..k]), Ok(None), "{label:?}[..{k}]");
            }
        }
    }

    #[test]
    fn decode_errors() {
        let cases: &[(&[u8], FrameError)] = &[
            (b"?\r\n", FrameError::UnknownType(b'?')),
            (b"+OK\rX", FrameError::MissingCrlf),
            (b"$3\r\nabcXY", FrameError::MissingCrlf),
            (b"$-2\r\n", FrameError::InvalidLength),
            (b"$x\r\n", FrameError::InvalidLength),
            (b"*-2\r\n", FrameError::InvalidLength),
            (b"%-1\r\n", FrameError::InvalidLength),
            (b"!-1\r\n", FrameError::InvalidLength),
            (b":1.5\r\n", FrameError::InvalidInteger),
            (b":\r\n", FrameError::InvalidInteger),
            (b",abc\r\n", FrameError::InvalidDouble),
            (b"#x\r\n", FrameError::InvalidBoolean),
            (b"(12a\r\n", FrameError::InvalidBigNumber),
            (b"(\r\n", FrameError::InvalidBigNumber),
            (b"=3\r\ntxt\r\n", FrameError::InvalidVerbatim),
            (b"=5\r\ntxtxy\r\n", FrameError::InvalidVerbatim),
            (b"_x\r\n", FrameError::InvalidNull),
            (b"*2\r\n:1\r\n?\r\n", FrameError::UnknownType(b'?')),
        ];
        for (input, want) in cases {
            assert_eq!(
                decode(input),
                Err(want.clone()),
                "{:?}",
                String::from_utf8_lossy(input)
            );
            assert!(!want.to_string().is_empty());
        }
    }

    #[test]
    fn nesting_is_capped() {
        let nested = |depth: usize| {
            let mut wire = b"*1\r\n".repeat(depth);
            wire.extend_from_slice(b":1\r\n");
            wire
        };
        let (frame, used) = decode(&nested(MAX_DEPTH))
            .expect("valid")
            .expect("complete");
        assert_eq!(used, MAX_DEPTH * 4 + 4);
        drop(frame);
        assert_eq!(decode(&nested(MAX_DEPTH + 1)), Err(FrameError::TooDeep));
        // Deep but incomplete input is still reported as too deep, not silently buffered.
        assert_eq!(decode(&b"*1\r\n".repeat(100_000)), Err(FrameError::TooDeep));
        // Chains of attributes do not recurse.
        let mut attrs = b"|0\r\n".repeat(100_000);
        attrs.extend_from_slice(b"_\r\n");
        assert_eq!(decode(&attrs), Ok(Some((Frame::Null, attrs.len()))));
    }

    #[test]
    fn huge_counts_do_not_preallocate() {
        assert_eq!(decode(b"*2147483647\r\n:1\r\n"), Ok(None));
        assert_eq!(decode(b"%9223372036854775807\r\n"), Ok(None));
        assert_eq!(decode(b"$9223372036854775807\r\n"), Ok(None));
    }

    #[test]
    fn accessors() {
        assert_eq!(bulk("x").as_bytes(), Some(&b"x"[..]));
        assert_eq!(bulk("x").as_str(), Some("x"));
        assert_eq!(Frame::Bulk(vec![0xff]).as_str(), None);
        assert_eq!(Frame::Simple("OK".into()).as_str(), Some("OK"));
        let verbatim = Frame::Verbatim {
            format: "txt".into(),
            text: b"t".to_vec(),
        };
        assert_eq!(verbatim.as_str(), Some("t"));
        assert_eq!(Frame::Integer(3).as_int(), Some(3));
        assert_eq!(bulk("3").as_int(), None);
        assert_eq!(Frame::Null.as_bytes(), None);
        assert!(Frame::Error("ERR".into()).is_error());
        assert!(!Frame::Simple("ERR".into()).is_error());
    }

    #[test]
    fn encode_command_is_a_multibulk() {
        let mut out = Vec::new();
        encode_command(&[b"SET", b"k", b""], &mut out);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
        assert_eq!(
            decode(&out),
            Ok(Some((
                Frame::Array(vec![bulk("SET"), bulk("k"), bulk("")]),
                out.len()
            )))
        );
    }

    #[test]
    fn encode_table() {
        let cases: Vec<(Frame, &[u8])> = vec![
            (Frame::Null, b"_\r\n"),
            (Frame::Double(2.0), b",2\r\n"),
            (Frame::Error("ERR x".into()), b"-ERR x\r\n"),
            (Frame::Error("ERR\nx".into()), b"!5\r\nERR\nx\r\n"),
            (
                Frame::Verbatim {
                    format: "toolong".into(),
                    text: b"a".to_vec(),
                },
                b"=5\r\ntxt:a\r\n",
            ),
            (
                Frame::Map(vec![(Frame::Integer(1), Frame::Boolean(true))]),
                b"%1\r\n:1\r\n#t\r\n",
            ),
        ];
        for (frame, want) in cases {
            let mut out = Vec::new();
            frame.encode(&mut out);
            assert_eq!(out, want, "{frame:?}");
        }
    }

    /// xorshift64: deterministic randomness without a dependency.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        fn bytes(&mut self) -> Vec<u8> {
            let len = self.below(12);
            (0..len).map(|_| self.below(256) as u8).collect()
        }

        fn text(&mut self) -> String {
            let len = self.below(12);
            (0..len)
                .map(|_| char::from(b' ' + self.below(95) as u8))
                .collect()
        }

        fn frame(&mut self, depth: u32) -> Frame {
            let kinds = if depth >= 4 { 9 } else { 13 };
            match self.below(kinds) {
                0 => Frame::Simple(self.text()),
                1 => Frame::Error(self.text()),
                2 => Frame::Integer(self.below(u64::MAX) as i64),
                3 => Frame::Bulk(self.bytes()),
                4 => Frame::Null,
                5 => Frame::Double(f64::from_bits(self.below(0x7ff0_0000_0000_0000))),
                6 => Frame::Boolean(self.below(2) == 0),
                7 => Frame::BigNumber(format!("-{}", self.below(u64::MAX))),
                8 => Frame::Verbatim {
                    format: "txt".into(),
                    text: self.bytes(),
                },
                kind => {
                    let n = self.below(4);
                    let items: Vec<Frame> = (0..n).map(|_| self.frame(depth + 1)).collect();
                    match kind {
                        9 => Frame::Array(items),
                        10 => Frame::Set(items),
                        11 => Frame::Push(items),
                        _ => Frame::Map(
                            items
                                .into_iter()
                                .map(|v| (self.frame(depth + 1), v))
                                .collect(),
                        ),
                    }
                }
            }
        }
    }

    #[test]
    fn random_frames_round_trip() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let frame = rng.frame(0);
            let mut wire = Vec::new();
            frame.encode(&mut wire);
            assert_eq!(
                decode(&wire),
                Ok(Some((frame.clone(), wire.len()))),
                "{frame:?}"
            );
            let cut = rng.below(wire.len() as u64) as usize;
            assert_eq!(decode(&wire[..cut]), Ok(None), "{frame:?} cut at {cut}");
        }
    }
}
