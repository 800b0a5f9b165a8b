//! Server-side reply encoding into a reusable per-connection buffer, in RESP2 or RESP3 as the
//! connection negotiated with `HELLO`. Each encoder mirrors the Redis 7 `addReply*` function
//! of the same meaning, including how RESP3-only types degrade in RESP2.

use std::sync::Arc;

use memchr::memchr2;

use crate::number::{format_double, format_score, put_header, put_signed_header};

/// The wire protocol a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Protocol {
    /// RESP2, the default until a client sends `HELLO 3`.
    #[default]
    Resp2,
    /// RESP3, with maps, sets, doubles, booleans, a distinct null and push messages.
    Resp3,
}

/// Large values that replies send by reference instead of copying them into the reply
/// bytes (see [`ReplyBuf::bulk_shared`]). Each goes out right before the reply byte at its
/// position, and positions only grow.
#[derive(Clone, Debug, Default)]
pub struct Attachments {
    list: Vec<(usize, Arc<Vec<u8>>)>,
    /// Their total length.
    bytes: usize,
}

impl Attachments {
    /// How many there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Their total length in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The `i`th: the reply byte it goes before, and its bytes.
    pub fn get(&self, i: usize) -> Option<(usize, &[u8])> {
        self.list.get(i).map(|(at, v)| (*at, v.as_slice()))
    }

    /// Adds `value`, to go out before reply byte `at` (no smaller than any before it).
    pub fn push(&mut self, at: usize, value: Arc<Vec<u8>>) {
        debug_assert!(self.list.last().is_none_or(|(last, _)| *last <= at));
        self.bytes += value.len();
        self.list.push((at, value));
    }

    /// Drops those that go before reply byte `len` or later: what [`ReplyBuf::truncate`]
    /// cuts away.
    pub fn truncate(&mut self, len: usize) {
        while let Some((at, v)) = self.list.last() {
            if *at < len {
                break;
            }
            self.bytes -= v.len();
            self.list.pop();
        }
    }

    pub fn clear(&mut self) {
        self.list.clear();
        self.bytes = 0;
    }

    /// `bytes` with the attachments put in place: what goes on the wire.
    pub fn splice(&self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len() + self.bytes);
        let mut pos = 0;
        for (at, v) in &self.list {
            out.extend_from_slice(&bytes[pos..*at]);
            out.extend_from_slice(v);
            pos = *at;
        }
        out.extend_from_slice(&bytes[pos..]);
        out
    }
}

/// An output buffer that encodes replies for one connection's negotiated protocol.
///
/// Encoders only append; the caller drains `buf` to the socket and clears it, keeping its
/// capacity for the next batch of replies. Large shared values are not copied into `buf`
/// but attached (`attached`), and the caller writes them in place.
#[derive(Clone, Debug, Default)]
pub struct ReplyBuf {
    /// Encoded bytes not yet written to the socket.
    pub buf: Vec<u8>,
    /// Values that go out between the bytes of `buf`.
    pub attached: Attachments,
    /// The protocol replies are encoded for.
    pub proto: Protocol,
}

impl ReplyBuf {
    /// An empty buffer for `proto`.
    pub fn new(proto: Protocol) -> Self {
        Self {
            buf: Vec::new(),
            attached: Attachments::default(),
            proto,
        }
    }

    /// The length of the replies: bytes and attachments.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len() + self.attached.bytes()
    }

    /// Whether no reply has been written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty() && self.attached.is_empty()
    }

    /// Drops what was written after the first `len` bytes of `buf` (a reply CLIENT REPLY
    /// suppresses), attachments included.
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
        self.attached.truncate(len);
    }

    /// The replies as they go on the wire, attachments in place; the buffer is left empty.
    pub fn take_bytes(&mut self) -> Vec<u8> {
        let bytes = if self.attached.is_empty() {
            std::mem::take(&mut self.buf)
        } else {
            self.attached.splice(&self.buf)
        };
        self.buf.clear();
        self.attached.clear();
        bytes
    }

    /// A status reply: `+OK`. CR and LF in `s` become spaces so the reply stays one line.
    #[inline]
    pub fn simple(&mut self, s: &str) {
        self.line(b'+', s.as_bytes());
    }

    /// An error reply: `-ERR ...`. `msg` starts with the error code ("ERR syntax error",
    /// "WRONGTYPE ..."); a leading `-` in it is not doubled. CR and LF become spaces, as
    /// Redis's `addReplyErrorLength` callers ensure.
    #[inline]
    pub fn error(&mut self, msg: &str) {
        let msg = msg.strip_prefix('-').unwrap_or(msg);
        self.line(b'-', msg.as_bytes());
    }

    /// An integer reply: `:1`.
    #[inline]
    pub fn int(&mut self, v: i64) {
        put_signed_header(&mut self.buf, b':', v);
    }

    /// A bulk string: `$3\r\nabc\r\n`.
    #[inline]
    pub fn bulk(&mut self, v: &[u8]) {
        self.buf.reserve(v.len() + 16);
        put_header(&mut self.buf, b'$', false, v.len() as u64);
        self.buf.extend_from_slice(v);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A bulk string sent by reference: the same bytes on the wire as [`ReplyBuf::bulk`],
    /// without copying `v`, which the caller writes in place from [`ReplyBuf::attached`].
    /// Worth it for large values only: each attachment is one more piece of a `writev`.
    #[inline]
    pub fn bulk_shared(&mut self, v: &Arc<Vec<u8>>) {
        put_header(&mut self.buf, b'$', false, v.len() as u64);
        self.attached.push(self.buf.len(), Arc::clone(v));
        self.buf.extend_from_slice(b"\r\n");
    }

    /// A missing value: RESP2 `$-1`, RESP3 `_`.
    #[inline]
    pub fn null(&mut self) {
        self.buf.extend_from_slice(match self.proto {
            Protocol::Resp2 => b"$-1\r\n",
            Protocol::Resp3 => b"_\r\n",
        });
    }

    /// A missing aggregate (e.g. a timed-out `BLPOP`): RESP2 `*-1`, RESP3 `_`.
    #[inline]
    pub fn null_array(&mut self) {
        self.buf.extend_from_slice(match self.proto {
            Protocol::Resp2 => b"*-1\r\n",
            Protocol::Resp3 => b"_\r\n",
        });
    }

    /// The header of an array of `len` elements: `*len`.
    #[inline]
    pub fn array(&mut self, len: usize) {
        put_header(&mut self.buf, b'*', false, len as u64);
    }

    /// The header of a map of `pairs` key-value pairs: RESP2 a flat `*2n` array, RESP3 `%n`.
    #[inline]
    pub fn map(&mut self, pairs: usize) {
        match self.proto {
            Protocol::Resp2 => put_header(&mut self.buf, b'*', false, (pairs as u64) * 2),
            Protocol::Resp3 => put_header(&mut self.buf, b'%', false, pairs as u64),
        }
    }

    /// The header of a set of `len` members: RESP2 `*n`, RESP3 `~n`.
    #[inline]
    pub fn set(&mut self, len: usize) {
        self.aggregate(b'~', len);
    }

    /// The header of an out-of-band push message (pub/sub, invalidation): RESP2 `*n`,
    /// RESP3 `>n`.
    #[inline]
    pub fn push(&mut self, len: usize) {
        self.aggregate(b'>', len);
    }

    /// A double, formatted like Redis 7.2+ `d2string` (`1`, `1.5`, `1e+300`, `inf`, `-inf`,
    /// `nan`): RESP3 `,<text>`, RESP2 a bulk string of the same text.
    #[inline]
    pub fn double(&mut self, v: f64) {
        let text = format_double(v);
        match self.proto {
            Protocol::Resp2 => self.bulk(text.as_bytes()),
            Protocol::Resp3 => self.line(b',', text.as_bytes()),
        }
    }

    /// A sorted-set score as Redis 7.0 replies it (`%.17g`: `1.1000000000000001`, `-0`,
    /// `inf`): RESP3 `,<text>`, RESP2 a bulk string of the same text.
    #[inline]
    pub fn score(&mut self, v: f64) {
        let text = format_score(v);
        match self.proto {
            Protocol::Resp2 => self.bulk(text.as_bytes()),
            Protocol::Resp3 => self.line(b',', text.as_bytes()),
        }
    }

    /// A sorted-set score as a bulk string in both protocols, in [`ReplyBuf::score`]'s text
    /// (ZSCAN's scores).
    #[inline]
    pub fn score_bulk(&mut self, v: f64) {
        let text = format_score(v);
        self.bulk(text.as_bytes());
    }

    /// A boolean: RESP3 `#t` / `#f`, RESP2 `:1` / `:0`.
    #[inline]
    pub fn boolean(&mut self, v: bool) {
        self.buf.extend_from_slice(match (self.proto, v) {
            (Protocol::Resp2, true) => b":1\r\n",
            (Protocol::Resp2, false) => b":0\r\n",
            (Protocol::Resp3, true) => b"#t\r\n",
            (Protocol::Resp3, false) => b"#f\r\n",
        });
    }

    /// Verbatim text such as `INFO` output: RESP3 `=len\r\nfmt:text\r\n`, RESP2 a plain bulk
    /// string of `text`. `format` must be three bytes (`txt`, `mkd`); anything else is written
    /// as `txt` so the frame stays well formed.
    #[inline]
    pub fn verbatim(&mut self, format: &str, text: &[u8]) {
        match self.proto {
            Protocol::Resp2 => self.bulk(text),
            Protocol::Resp3 => {
                debug_assert_eq!(format.len(), 3, "verbatim format must be 3 bytes");
                let format = if format.len() == 3 { format } else { "txt" };
                self.buf.reserve(text.len() + 20);
                put_header(&mut self.buf, b'=', false, text.len() as u64 + 4);
                self.buf.extend_from_slice(format.as_bytes());
                self.buf.push(b':');
                self.buf.extend_from_slice(text);
                self.buf.extend_from_slice(b"\r\n");
            }
        }
    }

    /// An arbitrary-precision integer given as decimal digits: RESP3 `(digits`, RESP2 a bulk
    /// string of the digits.
    #[inline]
    pub fn big_number(&mut self, digits: &str) {
        match self.proto {
            Protocol::Resp2 => self.bulk(digits.as_bytes()),
            Protocol::Resp3 => self.line(b'(', digits.as_bytes()),
        }
    }

    /// Appends pre-encoded bytes unchanged (a cached reply, a proxied frame).
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// An aggregate header that is `*` in RESP2 and `resp3_prefix` in RESP3.
    #[inline]
    fn aggregate(&mut self, resp3_prefix: u8, len: usize) {
        let prefix = match self.proto {
            Protocol::Resp2 => b'*',
            Protocol::Resp3 => resp3_prefix,
        };
        put_header(&mut self.buf, prefix, false, len as u64);
    }

    /// `prefix`, `text` with CR and LF replaced by spaces, CRLF.
    #[inline]
    fn line(&mut self, prefix: u8, text: &[u8]) {
        self.buf.reserve(text.len() + 3);
        self.buf.push(prefix);
        if memchr2(b'\r', b'\n', text).is_none() {
            self.buf.extend_from_slice(text);
        } else {
            self.buf.extend(
                text.iter()
                    .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
            );
        }
        self.buf.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` against a fresh buffer in each protocol and returns both encodings.
    fn both(f: impl Fn(&mut ReplyBuf)) -> (String, String) {
        let mut r2 = ReplyBuf::new(Protocol::Resp2);
        let mut r3 = ReplyBuf::new(Protocol::Resp3);
        f(&mut r2);
        f(&mut r3);
        let text = |r: ReplyBuf| String::from_utf8(r.buf).expect("utf-8 in tests");
        (text(r2), text(r3))
    }

    #[test]
    fn encodings_in_both_protocols() {
        type Case = (&'static str, fn(&mut ReplyBuf), &'static str, &'static str);
        let cases: &[Case] = &[
            ("simple", |r| r.simple("OK"), "+OK\r\n", "+OK\r\n"),
            (
                "simple crlf",
                |r| r.simple("a\r\nb"),
                "+a  b\r\n",
                "+a  b\r\n",
            ),
            (
                "error",
                |r| r.error("ERR syntax error"),
                "-ERR syntax error\r\n",
                "-ERR syntax error\r\n",
            ),
            (
                "error dash",
                |r| r.error("-WRONGTYPE x"),
                "-WRONGTYPE x\r\n",
                "-WRONGTYPE x\r\n",
            ),
            (
                "error crlf",
                |r| r.error("ERR a\nb\rc"),
                "-ERR a b c\r\n",
                "-ERR a b c\r\n",
            ),
            ("int 0", |r| r.int(0), ":0\r\n", ":0\r\n"),
            ("int neg", |r| r.int(-42), ":-42\r\n", ":-42\r\n"),
            (
                "int min",
                |r| r.int(i64::MIN),
                ":-9223372036854775808\r\n",
                ":-9223372036854775808\r\n",
            ),
            ("bulk", |r| r.bulk(b"abc"), "$3\r\nabc\r\n", "$3\r\nabc\r\n"),
            ("bulk empty", |r| r.bulk(b""), "$0\r\n\r\n", "$0\r\n\r\n"),
            (
                "bulk crlf",
                |r| r.bulk(b"a\r\nb"),
                "$4\r\na\r\nb\r\n",
                "$4\r\na\r\nb\r\n",
            ),
            ("null", |r| r.null(), "$-1\r\n", "_\r\n"),
            ("null array", |r| r.null_array(), "*-1\r\n", "_\r\n"),
            ("array", |r| r.array(3), "*3\r\n", "*3\r\n"),
            ("array 0", |r| r.array(0), "*0\r\n", "*0\r\n"),
            ("array big", |r| r.array(12345), "*12345\r\n", "*12345\r\n"),
            ("map", |r| r.map(2), "*4\r\n", "%2\r\n"),
            ("map 5", |r| r.map(5), "*10\r\n", "%5\r\n"),
            ("set", |r| r.set(2), "*2\r\n", "~2\r\n"),
            ("push", |r| r.push(3), "*3\r\n", ">3\r\n"),
            ("double int", |r| r.double(1.0), "$1\r\n1\r\n", ",1\r\n"),
            (
                "double frac",
                |r| r.double(1.5),
                "$3\r\n1.5\r\n",
                ",1.5\r\n",
            ),
            (
                "double inf",
                |r| r.double(f64::INFINITY),
                "$3\r\ninf\r\n",
                ",inf\r\n",
            ),
            (
                "double -inf",
                |r| r.double(f64::NEG_INFINITY),
                "$4\r\n-inf\r\n",
                ",-inf\r\n",
            ),
            (
                "double nan",
                |r| r.double(f64::NAN),
                "$3\r\nnan\r\n",
                ",nan\r\n",
            ),
            (
                "double exp",
                |r| r.double(1e300),
                "$6\r\n1e+300\r\n",
                ",1e+300\r\n",
            ),
            ("bool t", |r| r.boolean(true), ":1\r\n", "#t\r\n"),
            ("bool f", |r| r.boolean(false), ":0\r\n", "#f\r\n"),
            (
                "verbatim",
                |r| r.verbatim("txt", b"hi"),
                "$2\r\nhi\r\n",
                "=6\r\ntxt:hi\r\n",
            ),
            (
                "big",
                |r| r.big_number("-123"),
                "$4\r\n-123\r\n",
                "(-123\r\n",
            ),
            ("raw", |r| r.raw(b"+PONG\r\n"), "+PONG\r\n", "+PONG\r\n"),
        ];
        for (name, f, want2, want3) in cases {
            let (got2, got3) = both(f);
            assert_eq!(got2, *want2, "{name} resp2");
            assert_eq!(got3, *want3, "{name} resp3");
        }
    }

    #[test]
    fn nested_reply_appends_in_order() {
        let mut r = ReplyBuf::new(Protocol::Resp3);
        r.map(1);
        r.bulk(b"k");
        r.array(2);
        r.int(1);
        r.null();
        assert_eq!(r.buf, b"%1\r\n$1\r\nk\r\n*2\r\n:1\r\n_\r\n");
        assert_eq!(ReplyBuf::default().proto, Protocol::Resp2);
    }

    #[test]
    fn replies_decode_back() {
        use crate::frame::{decode, Frame};
        let mut r = ReplyBuf::new(Protocol::Resp3);
        r.push(2);
        r.double(-0.25);
        r.verbatim("mkd", b"# x");
        let (frame, used) = decode(&r.buf).expect("valid").expect("complete");
        assert_eq!(used, r.buf.len());
        assert_eq!(
            frame,
            Frame::Push(vec![
                Frame::Double(-0.25),
                Frame::Verbatim {
                    format: "mkd".into(),
                    text: b"# x".to_vec()
                },
            ])
        );
    }

    #[test]
    fn shared_bulk_is_a_bulk_sent_in_place() {
        let v = Arc::new(b"0123456789".to_vec());
        let mut r = ReplyBuf::new(Protocol::Resp3);
        r.simple("OK");
        r.bulk_shared(&v);
        r.int(1);
        let cut = r.buf.len();
        r.bulk_shared(&v);
        r.bulk(b"x");
        assert_eq!(r.len(), r.buf.len() + 20);
        assert_eq!(Arc::strong_count(&v), 3);
        // Truncating to the end of a reply drops the attachments after it, not before.
        r.truncate(cut);
        assert_eq!(r.attached.len(), 1);
        assert_eq!(Arc::strong_count(&v), 2);
        assert_eq!(r.take_bytes(), b"+OK\r\n$10\r\n0123456789\r\n:1\r\n");
        assert!(r.is_empty());
        assert_eq!(Arc::strong_count(&v), 1);
        let mut plain = ReplyBuf::new(Protocol::Resp3);
        plain.bulk(&v);
        let mut shared = ReplyBuf::new(Protocol::Resp3);
        shared.bulk_shared(&v);
        assert_eq!(plain.take_bytes(), shared.take_bytes());
    }
}
