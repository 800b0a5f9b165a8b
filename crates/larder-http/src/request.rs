//! One HTTP/1.1 request: head and body, from the front of a buffer.

use std::borrow::Cow;

/// Headers a request may carry; more is `431`.
pub const MAX_HEADERS: usize = 64;

/// What the parser enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes the request line and headers may take (`431` beyond).
    pub max_head: usize,
    /// The largest body (`413` beyond).
    pub max_body: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_head: 16 * 1024,
            max_body: 8 * 1024 * 1024,
        }
    }
}

/// A request method larder routes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Put,
    Post,
    Delete,
    Options,
    /// Any other token: answered `405`.
    Other,
}

impl Method {
    fn of(s: &str) -> Method {
        match s {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "PUT" => Method::Put,
            "POST" => Method::Post,
            "DELETE" => Method::Delete,
            "OPTIONS" => Method::Options,
            _ => Method::Other,
        }
    }
}

/// One header, borrowed from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    pub name: &'a str,
    pub value: &'a [u8],
}

/// A complete request, borrowed from the input where it can be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    pub method: Method,
    /// The method as sent.
    pub method_name: &'a str,
    /// The target's path, still percent-encoded.
    pub path: &'a str,
    /// The target after `?` (empty when there is none), still percent-encoded.
    pub query: &'a str,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    pub headers: Vec<Header<'a>>,
    /// The body: borrowed when framed by `Content-Length`, decoded when chunked.
    pub body: Cow<'a, [u8]>,
}

impl<'a> Request<'a> {
    /// The first header named `name` (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    /// The first header named `name`, when it is UTF-8, trimmed.
    pub fn header_str(&self, name: &str) -> Option<&'a str> {
        self.header(name)
            .and_then(|v| std::str::from_utf8(v).ok())
            .map(str::trim)
    }

    /// Whether the connection stays open after this request's response: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    pub fn keep_alive(&self) -> bool {
        let conn = self.header_str("connection").unwrap_or("");
        let has = |token: &str| {
            conn.split(',')
                .any(|t| t.trim().eq_ignore_ascii_case(token))
        };
        if self.minor == 0 {
            has("keep-alive")
        } else {
            !has("close")
        }
    }
}

/// What [`parse_request`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A whole request that took `consumed` bytes of the input.
    Complete {
        request: Request<'a>,
        consumed: usize,
    },
    /// More input is needed. `min_total`: do not parse again before the input holds this many
    /// bytes (0: any more). `expect_continue`: the head is complete, asks for
    /// `100 Continue`, and its body has not all arrived.
    Incomplete {
        min_total: usize,
        expect_continue: bool,
    },
}

/// A request that cannot be served; answer `status` and close the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpError {
    pub status: u16,
    pub message: &'static str,
    /// For a body over the limit framed by `Content-Length`: the bytes from the front of the
    /// input that the rejected request takes, head and announced body. A client that sends
    /// its whole body before it reads sees the answer only if the server reads and drops that
    /// body before it closes (closing with input unread resets the connection).
    pub skip: Option<u64>,
}

impl HttpError {
    const fn new(status: u16, message: &'static str) -> HttpError {
        HttpError {
            status,
            message,
            skip: None,
        }
    }
}

/// Reads one request from the front of `buf`.
pub fn parse_request<'a>(buf: &'a [u8], limits: &Limits) -> Result<Parsed<'a>, HttpError> {
    let mut raw = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut raw);
    // Only the first `max_head` bytes are parsed: a head that does not end within them is
    // 431 however its later bytes look, so the answer does not depend on how the input
    // arrives, and no more than `max_head` bytes are scanned per attempt.
    let window = &buf[..buf.len().min(limits.max_head)];
    let head_len = match req.parse(window) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() >= limits.max_head {
                return Err(HttpError::new(431, "request head too large"));
            }
            return Ok(Parsed::Incomplete {
                min_total: 0,
                expect_continue: false,
            });
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HttpError::new(431, "too many headers"))
        }
        Err(httparse::Error::Version) => {
            return Err(HttpError::new(505, "HTTP version not supported"))
        }
        Err(_) => return Err(HttpError::new(400, "malformed request")),
    };
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(HttpError::new(400, "malformed request"));
    };
    let headers: Vec<Header<'a>> = req
        .headers
        .iter()
        .map(|h| Header {
            name: h.name,
            value: h.value,
        })
        .collect();
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, q),
        None => (target, ""),
    };
    if !path.starts_with('/') {
        // Absolute-form and authority-form targets are for proxies.
        return Err(HttpError::new(400, "request target must be a path"));
    }
    let mut request = Request {
        method: Method::of(method),
        method_name: method,
        path,
        query,
        minor,
        headers,
        body: Cow::Borrowed(&[]),
    };
    let expects = request
        .header_str("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    let rest = &buf[head_len..];
    if request
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("transfer-encoding"))
        .count()
        > 1
    {
        return Err(HttpError::new(501, "unsupported transfer-encoding"));
    }
    let chunked = match request.header_str("transfer-encoding") {
        None => false,
        Some(te) if te.eq_ignore_ascii_case("chunked") => true,
        Some(_) => return Err(HttpError::new(501, "unsupported transfer-encoding")),
    };
    if chunked {
        if request.header("content-length").is_some() {
            return Err(HttpError::new(
                400,
                "both content-length and transfer-encoding",
            ));
        }
        return match walk_chunked(rest, limits.max_body, None)? {
            Chunked::Complete { len, used } => {
                let mut body = Vec::with_capacity(len);
                walk_chunked(&rest[..used], limits.max_body, Some(&mut body))?;
                request.body = Cow::Owned(body);
                Ok(Parsed::Complete {
                    request,
                    consumed: head_len + used,
                })
            }
            Chunked::Incomplete { min_used } => Ok(Parsed::Incomplete {
                min_total: if min_used == 0 {
                    0
                } else {
                    head_len + min_used
                },
                expect_continue: expects,
            }),
        };
    }
    let mut len: Option<u64> = None;
    for h in request
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("content-length"))
    {
        let n = parse_decimal(h.value).ok_or(HttpError::new(400, "invalid content-length"))?;
        if len.is_some_and(|l| l != n) {
            return Err(HttpError::new(400, "conflicting content-length"));
        }
        len = Some(n);
    }
    let len = len.unwrap_or(0);
    if len > limits.max_body as u64 {
        return Err(HttpError {
            skip: Some((head_len as u64).saturating_add(len)),
            ..HttpError::new(413, "request body too large")
        });
    }
    let len = len as usize;
    if rest.len() < len {
        return Ok(Parsed::Incomplete {
            min_total: head_len + len,
            expect_continue: expects,
        });
    }
    request.body = Cow::Borrowed(&rest[..len]);
    Ok(Parsed::Complete {
        request,
        consumed: head_len + len,
    })
}

/// A non-empty run of ASCII digits (RFC 9110's `Content-Length = 1*DIGIT`); a number past
/// `u64` is `u64::MAX`, larger than any body limit.
fn parse_decimal(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

/// How far a chunked body got.
enum Chunked {
    /// Complete: the decoded length and the bytes the body took.
    Complete { len: usize, used: usize },
    /// Incomplete; nothing changes before the input (from the body's start) holds
    /// `min_used` bytes (0: any more).
    Incomplete { min_used: usize },
}

/// Walks a chunked body at the front of `buf`, checking its framing, and appends its data to
/// `sink` when given. Chunk extensions are ignored, trailers skipped. The body is copied only
/// once it is complete, in a second walk, so a body arriving over many reads costs one copy.
fn walk_chunked(
    buf: &[u8],
    max_body: usize,
    mut sink: Option<&mut Vec<u8>>,
) -> Result<Chunked, HttpError> {
    const BAD: HttpError = HttpError::new(400, "malformed chunked body");
    let mut len = 0usize;
    let mut at = 0;
    loop {
        let Some(eol) = memchr::memmem::find(&buf[at..], b"\r\n") else {
            if buf.len() - at > 1024 {
                return Err(BAD);
            }
            return Ok(Chunked::Incomplete { min_used: 0 });
        };
        let line = &buf[at..at + eol];
        let size_text = line
            .split(|&b| b == b';')
            .next()
            .unwrap_or_default()
            .trim_ascii();
        if size_text.is_empty() || size_text.len() > 15 {
            return Err(BAD);
        }
        let mut size = 0usize;
        for &b in size_text {
            let d = (b as char).to_digit(16).ok_or(BAD)?;
            size = size * 16 + d as usize;
        }
        at += eol + 2;
        if size == 0 {
            // Trailer fields, then an empty line.
            loop {
                let Some(eol) = memchr::memmem::find(&buf[at..], b"\r\n") else {
                    if buf.len() - at > 8 * 1024 {
                        return Err(BAD);
                    }
                    return Ok(Chunked::Incomplete { min_used: 0 });
                };
                at += eol + 2;
                if eol == 0 {
                    return Ok(Chunked::Complete { len, used: at });
                }
            }
        }
        if len + size > max_body {
            return Err(HttpError::new(413, "request body too large"));
        }
        if buf.len() < at + size + 2 {
            return Ok(Chunked::Incomplete {
                min_used: at + size + 2,
            });
        }
        if &buf[at + size..at + size + 2] != b"\r\n" {
            return Err(BAD);
        }
        if let Some(sink) = sink.as_deref_mut() {
            sink.extend_from_slice(&buf[at..at + size]);
        }
        len += size;
        at += size + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(buf: &[u8]) -> (Request<'_>, usize) {
        match parse_request(buf, &Limits::default()) {
            Ok(Parsed::Complete { request, consumed }) => (request, consumed),
            other => panic!("not complete: {other:?}"),
        }
    }

    #[test]
    fn get_with_query_and_keep_alive() {
        let raw = b"GET /v1/kv/a%20b?ttl=5 HTTP/1.1\r\nHost: x\r\n\r\nGET /";
        let (r, used) = complete(raw);
        assert_eq!(r.method, Method::Get);
        assert_eq!(r.path, "/v1/kv/a%20b");
        assert_eq!(r.query, "ttl=5");
        assert_eq!(used, raw.len() - 5);
        assert!(r.keep_alive());
        assert_eq!(r.header_str("HOST"), Some("x"));
    }

    #[test]
    fn http10_closes_unless_asked() {
        let (r, _) = complete(b"GET / HTTP/1.0\r\n\r\n");
        assert!(!r.keep_alive());
        let (r, _) = complete(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
        assert!(r.keep_alive());
        let (r, _) = complete(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
        assert!(!r.keep_alive());
    }

    #[test]
    fn content_length_body_waits_for_all_of_it() {
        let raw = b"PUT /k HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nab";
        assert_eq!(
            parse_request(raw, &Limits::default()),
            Ok(Parsed::Incomplete {
                min_total: raw.len() + 3,
                expect_continue: true
            })
        );
        let raw = b"PUT /k HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcdeX";
        let (r, used) = complete(raw);
        assert_eq!(&*r.body, b"abcde");
        assert_eq!(used, raw.len() - 1);
    }

    #[test]
    fn chunked_body_is_decoded() {
        let raw = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\nNEXT";
        let (r, used) = complete(raw);
        assert_eq!(&*r.body, b"abcde");
        assert_eq!(&raw[used..], b"NEXT");
        for cut in 1..raw.len() - 4 {
            match parse_request(&raw[..cut], &Limits::default()) {
                Ok(Parsed::Incomplete { .. }) => {}
                other => panic!("cut at {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn rejections() {
        let status = |raw: &[u8], limits: Limits| match parse_request(raw, &limits) {
            Err(e) => e.status,
            other => panic!("accepted: {other:?}"),
        };
        let d = Limits::default();
        assert_eq!(
            status(b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", d),
            400
        );
        assert_eq!(
            status(
                b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                d
            ),
            400
        );
        assert_eq!(
            status(b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", d),
            501
        );
        let small = Limits {
            max_head: 64,
            max_body: 4,
        };
        assert_eq!(
            status(b"PUT / HTTP/1.1\r\nContent-Length: 5\r\n\r\n", small),
            413
        );
        assert_eq!(status(&[b'G'; 100], small), 431);
        assert_eq!(status(b"GET / HTTP/1.1\r\nBad Header\r\n\r\n", d), 400);
        assert_eq!(status(b"GET / HTTP/2.0\r\n\r\n", d), 505);
        let mut long = b"GET / HTTP/1.1\r\nX: ".to_vec();
        long.extend(std::iter::repeat_n(b'a', 100));
        assert_eq!(status(&long, small), 431);
        assert_eq!(status(b"GET http://x/ HTTP/1.1\r\n\r\n", d), 400);
        assert_eq!(
            status(
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                d
            ),
            400
        );
        assert_eq!(
            status(
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n",
                d
            ),
            501
        );
    }

    #[test]
    fn too_large_body_says_how_much_to_skip() {
        let small = Limits {
            max_head: 1024,
            max_body: 4,
        };
        let raw = b"PUT / HTTP/1.1\r\nContent-Length: 10\r\n\r\nab";
        let e = parse_request(raw, &small).expect_err("413");
        assert_eq!((e.status, e.skip), (413, Some(raw.len() as u64 + 8)));
        // A length past u64 is still a length: too large, not malformed.
        let raw = b"PUT / HTTP/1.1\r\nContent-Length: 123456789012345678901234567890\r\n\r\n";
        let e = parse_request(raw, &Limits::default()).expect_err("413");
        assert_eq!((e.status, e.skip), (413, Some(u64::MAX)));
        let raw = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n";
        let e = parse_request(raw, &small).expect_err("413");
        assert_eq!((e.status, e.skip), (413, None));
    }

    #[test]
    fn chunk_data_in_flight_sets_min_total() {
        let head = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        let mut raw = head.to_vec();
        raw.extend_from_slice(b"2\r\nab\r\n100\r\nxyz");
        let want = head.len() + 7 + 5 + 0x100 + 2;
        assert_eq!(
            parse_request(&raw, &Limits::default()),
            Ok(Parsed::Incomplete {
                min_total: want,
                expect_continue: false
            })
        );
        raw.resize(want, b'q');
        raw.truncate(want - 2);
        raw.extend_from_slice(b"\r\n0\r\n\r\n");
        let (r, used) = complete(&raw);
        assert_eq!(used, raw.len());
        assert_eq!(r.body.len(), 2 + 0x100);
        assert_eq!(&r.body[..5], b"abxyz");
    }
}
