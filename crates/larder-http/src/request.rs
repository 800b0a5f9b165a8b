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
}

impl HttpError {
    const fn new(status: u16, message: &'static str) -> HttpError {
        HttpError { status, message }
    }
}

/// Reads one request from the front of `buf`.
pub fn parse_request<'a>(buf: &'a [u8], limits: &Limits) -> Result<Parsed<'a>, HttpError> {
    let mut raw = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut raw);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() > limits.max_head {
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
    if head_len > limits.max_head {
        return Err(HttpError::new(431, "request head too large"));
    }
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
        return match decode_chunked(rest, limits.max_body)? {
            Some((body, used)) => {
                request.body = Cow::Owned(body);
                Ok(Parsed::Complete {
                    request,
                    consumed: head_len + used,
                })
            }
            None => Ok(Parsed::Incomplete {
                min_total: 0,
                expect_continue: expects,
            }),
        };
    }
    let mut len: Option<usize> = None;
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
    if len > limits.max_body {
        return Err(HttpError::new(413, "request body too large"));
    }
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

/// A non-empty run of ASCII digits that fits a `usize`.
fn parse_decimal(v: &[u8]) -> Option<usize> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 18 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0usize, |n, &d| {
        n.checked_mul(10)?.checked_add(usize::from(d - b'0'))
    })
}

/// Decodes a chunked body from the front of `buf`: the body and the bytes it took, or `None`
/// while it is incomplete. Chunk extensions are ignored, trailers skipped.
fn decode_chunked(buf: &[u8], max_body: usize) -> Result<Option<(Vec<u8>, usize)>, HttpError> {
    const BAD: HttpError = HttpError::new(400, "malformed chunked body");
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(eol) = memchr::memmem::find(&buf[at..], b"\r\n") else {
            if buf.len() - at > 1024 {
                return Err(BAD);
            }
            return Ok(None);
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
                    return Ok(None);
                };
                at += eol + 2;
                if eol == 0 {
                    return Ok(Some((body, at)));
                }
            }
        }
        if body.len() + size > max_body {
            return Err(HttpError::new(413, "request body too large"));
        }
        if buf.len() < at + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&buf[at..at + size]);
        if &buf[at + size..at + size + 2] != b"\r\n" {
            return Err(BAD);
        }
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
    }
}
