//! Response heads and bodies, written into the connection's output buffer.

use std::fmt::Write as _;

/// The reason phrase of a status larder answers with.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Content",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// A response being written: [`Response::start`] writes the status line, [`Response::header`]
/// adds headers, and [`Response::body`] (or [`Response::stream`]) ends the head.
#[derive(Debug)]
pub struct Response<'o> {
    out: &'o mut Vec<u8>,
    /// A response to HEAD: the body's length is announced but the body is not sent.
    head_only: bool,
    /// `204` and `304` have no body and announce no length.
    bodiless: bool,
}

impl<'o> Response<'o> {
    /// Starts a response with `status`. `keep_alive: false` adds `Connection: close`.
    pub fn start(out: &'o mut Vec<u8>, status: u16, keep_alive: bool, head_only: bool) -> Self {
        out.extend_from_slice(b"HTTP/1.1 ");
        let _ = write!(Fmt(out), "{status} {}\r\n", reason(status));
        if !keep_alive {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        Response {
            out,
            head_only,
            bodiless: status == 204 || status == 304,
        }
    }

    /// Adds a header whose value is text.
    pub fn header(&mut self, name: &str, value: &str) -> &mut Self {
        self.header_bytes(name, value.as_bytes())
    }

    /// Adds a header; CR and LF in the value become spaces, so no value can split the head.
    pub fn header_bytes(&mut self, name: &str, value: &[u8]) -> &mut Self {
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b": ");
        self.out.extend(
            value
                .iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.out.extend_from_slice(b"\r\n");
        self
    }

    /// Adds a header whose value is a number.
    pub fn header_num(&mut self, name: &str, value: impl std::fmt::Display) -> &mut Self {
        self.out.extend_from_slice(name.as_bytes());
        let _ = write!(Fmt(self.out), ": {value}\r\n");
        self
    }

    /// Ends the head with `Content-Type` (when given) and `Content-Length`, then the body.
    pub fn body(self, content_type: Option<&str>, body: &[u8]) {
        self.body_with(content_type, body.len(), |out| out.extend_from_slice(body));
    }

    /// As [`Response::body`], with the body of `len` bytes written by `write` (straight from
    /// where it is stored). `write` must append exactly `len` bytes; it is not called for HEAD.
    /// `204` and `304` responses end their head with neither.
    pub fn body_with(
        self,
        content_type: Option<&str>,
        len: usize,
        write: impl FnOnce(&mut Vec<u8>),
    ) {
        if self.bodiless {
            self.out.extend_from_slice(b"\r\n");
            return;
        }
        if let Some(ct) = content_type {
            self.out.extend_from_slice(b"Content-Type: ");
            self.out.extend_from_slice(ct.as_bytes());
            self.out.extend_from_slice(b"\r\n");
        }
        let _ = write!(Fmt(self.out), "Content-Length: {len}\r\n\r\n");
        if !self.head_only {
            write(self.out);
        }
    }

    /// Ends the head of a response whose body follows as a stream until the connection
    /// closes (Server-Sent Events): no length, no chunking.
    pub fn stream(self, content_type: &str) {
        self.out.extend_from_slice(b"Content-Type: ");
        self.out.extend_from_slice(content_type.as_bytes());
        self.out.extend_from_slice(b"\r\n\r\n");
    }
}

/// `fmt::Write` over a byte vector.
struct Fmt<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Fmt<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_body() {
        let mut out = Vec::new();
        let mut r = Response::start(&mut out, 200, false, false);
        r.header("ETag", "\"7\"").header_bytes("X-Evil", b"a\r\nb");
        r.body(Some("text/plain"), b"hi");
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nETag: \"7\"\r\nX-Evil: a  b\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi"
        );
    }

    #[test]
    fn no_content_has_no_length() {
        let mut out = Vec::new();
        Response::start(&mut out, 204, true, false).body(None, b"");
        assert_eq!(out, b"HTTP/1.1 204 No Content\r\n\r\n");
    }

    #[test]
    fn head_request_gets_no_body() {
        let mut out = Vec::new();
        Response::start(&mut out, 200, true, true).body(None, b"hello");
        assert_eq!(out, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
    }
}
