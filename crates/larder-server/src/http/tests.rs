//! Socket-free tests of the HTTP door: requests through [`HttpHandler::process`] against a
//! real [`Server`], as a connection would run them.

use larder_commands::config::Config;
use larder_commands::testing::detached_handle;
use larder_http::{parse_request, Limits};

use super::*;
use crate::conn::{Close, Output, Processed};

#[test]
fn tags() {
    assert_eq!(parse_tags(b"*"), Some(Tags::Any));
    assert_eq!(
        parse_tags(b"\"5\", W/\"7\""),
        Some(Tags::Versions(vec![5, 7]))
    );
    assert_eq!(parse_tags(b"\"x\""), Some(Tags::Versions(vec![])));
    assert_eq!(etag(42), "\"42\"");
}

/// A server, the door's shared state, and connections to it without sockets.
struct Door {
    server: Arc<Server>,
    shared: Arc<HttpShared>,
}

impl Door {
    fn new(config: &[(&str, &str)]) -> Door {
        let server = Arc::new(Server::new(Config::new(), 1));
        server.config.set_many(config).expect("config");
        let shared = Arc::new(HttpShared::new(&server));
        Door { server, shared }
    }

    fn connect(&self) -> HttpHandler {
        let handle = detached_handle(&self.server);
        self.server.clients.register(Arc::clone(&handle));
        HttpHandler::new(
            ConnState::new(&self.server, handle, 0),
            Arc::clone(&self.shared),
        )
    }

    /// Runs `input` on `conn` in one call: the output and what the call did.
    fn feed(&self, conn: &mut HttpHandler, input: &[u8]) -> (Vec<u8>, Processed) {
        let mut out = Output::default();
        let done = conn.process(&self.server, input, &mut out, usize::MAX);
        assert!(out.attached.is_empty());
        (out.bytes, done)
    }

    /// One complete request on a fresh connection; its response parsed.
    fn ask(&self, input: &str) -> Reply {
        let mut conn = self.connect();
        self.ask_on(&mut conn, input)
    }

    /// One complete request on `conn`; its response parsed.
    fn ask_on(&self, conn: &mut HttpHandler, input: &str) -> Reply {
        let (out, done) = self.feed(conn, input.as_bytes());
        assert_eq!(done.used, input.len(), "{input:?} not consumed");
        let replies = responses(&out, &[method_of(input)]).expect("well-formed");
        assert_eq!(replies.len(), 1, "{}", String::from_utf8_lossy(&out));
        replies.into_iter().next().expect("one reply")
    }
}

fn method_of(input: &str) -> Method {
    match input.split(' ').next() {
        Some("HEAD") => Method::Head,
        _ => Method::Get,
    }
}

/// A response as a client reads it.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }
}

/// Reads the responses in `out` as a strict client would, `methods` being the methods of the
/// requests answered in order (a response to HEAD has no body). Interim `1xx` responses are
/// skipped. A streamed response (no length, `text/event-stream`) ends the reading.
fn responses(mut out: &[u8], methods: &[Method]) -> Result<Vec<Reply>, String> {
    let mut replies = Vec::new();
    while !out.is_empty() {
        let end = out
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("a head without its end")?;
        let head = std::str::from_utf8(&out[..end]).map_err(|_| "a head that is not text")?;
        out = &out[end + 4..];
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let rest = status_line
            .strip_prefix("HTTP/1.1 ")
            .ok_or_else(|| format!("bad status line {status_line:?}"))?;
        let status: u16 = rest
            .get(..3)
            .and_then(|s| s.parse().ok())
            .filter(|s| (100..600).contains(s) && rest.as_bytes().get(3) == Some(&b' '))
            .ok_or_else(|| format!("bad status line {status_line:?}"))?;
        if rest[4..].is_empty() || rest[4..].contains(['\r', '\n']) {
            return Err(format!("bad reason in {status_line:?}"));
        }
        let mut headers = Vec::new();
        for line in lines {
            let (name, value) = line
                .split_once(": ")
                .ok_or_else(|| format!("bad header line {line:?}"))?;
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                return Err(format!("bad header name {name:?}"));
            }
            headers.push((name.to_string(), value.as_bytes().to_vec()));
        }
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
        };
        if status < 200 {
            continue;
        }
        let lengths: Vec<&str> = reply
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| std::str::from_utf8(v).unwrap_or("x"))
            .collect();
        let head_only = methods.get(replies.len()) == Some(&Method::Head);
        if status == 204 || status == 304 {
            if !lengths.is_empty() {
                return Err(format!("{status} with a Content-Length"));
            }
        } else if lengths.is_empty() {
            if reply.header("content-type") != Some("text/event-stream") {
                return Err(format!("{status} without a length: {head}"));
            }
            reply.body = out.to_vec();
            replies.push(reply);
            return Ok(replies);
        } else {
            let [len] = lengths[..] else {
                return Err("several Content-Length".into());
            };
            let len: usize = len.parse().map_err(|_| "bad Content-Length")?;
            if !head_only {
                if out.len() < len {
                    return Err(format!("body cut short: {len} announced, {}", out.len()));
                }
                reply.body = out[..len].to_vec();
                out = &out[len..];
            }
        }
        replies.push(reply);
    }
    Ok(replies)
}

fn json(reply: &Reply) -> serde_json::Value {
    serde_json::from_slice(&reply.body).expect("a JSON body")
}

#[test]
fn token_in_header_or_query_and_requirepass_at_once() {
    let door = Door::new(&[]);
    // No password: anyone.
    assert_eq!(door.ask("GET /v1/kv/k HTTP/1.1\r\n\r\n").status, 404);
    door.server
        .config
        .set_many(&[("requirepass", "s3cret")])
        .expect("config");
    door.server.acl.set_requirepass("s3cret");
    let r = door.ask("GET /v1/kv/k HTTP/1.1\r\n\r\n");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("www-authenticate"),
        Some("Bearer realm=\"larder\"")
    );
    assert!(json(&r)["error"]
        .as_str()
        .is_some_and(|e| e.starts_with("NOAUTH")));
    for good in [
        "Authorization: Bearer s3cret\r\n",
        "Authorization: bearer default:s3cret\r\n",
        "Authorization: BEARER  s3cret \r\n",
    ] {
        let r = door.ask(&format!("GET /v1/kv/k HTTP/1.1\r\n{good}\r\n"));
        assert_eq!(r.status, 404, "{good}");
    }
    assert_eq!(
        door.ask("GET /v1/kv/k?_token=s3cret HTTP/1.1\r\n\r\n")
            .status,
        404
    );
    assert_eq!(
        door.ask("GET /v1/kv/k?a=1&_token=default%3As3cret HTTP/1.1\r\n\r\n")
            .status,
        404
    );
    for bad in [
        "Authorization: Bearer wrong\r\n",
        "Authorization: Bearer alice:s3cret\r\n",
        "Authorization: Basic s3cret\r\n",
        "Authorization: Bearer s3cret\r\nX: ?_token=s3cret\r\n",
    ] {
        let bad = bad.replace("Bearer s3cret\r\nX", "Bearer s3cretx\r\nX");
        let r = door.ask(&format!("GET /v1/kv/k HTTP/1.1\r\n{bad}\r\n"));
        assert_eq!(r.status, 401, "{bad}");
    }
    let r = door.ask("GET /v1/kv/k HTTP/1.1\r\nAuthorization: Bearer wrong\r\n\r\n");
    assert!(json(&r)["error"]
        .as_str()
        .is_some_and(|e| e.starts_with("WRONGPASS")));
    // The operations endpoints need no token.
    assert_ne!(door.ask("GET /healthz HTTP/1.1\r\n\r\n").status, 401);

    // One keep-alive connection across password changes.
    let mut conn = door.connect();
    let req = "GET /v1/kv/k HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n";
    assert_eq!(door.ask_on(&mut conn, req).status, 404);
    door.server
        .config
        .set_many(&[("requirepass", "other")])
        .expect("config");
    door.server.acl.set_requirepass("other");
    assert_eq!(door.ask_on(&mut conn, req).status, 401);
    let req2 = "GET /v1/kv/k HTTP/1.1\r\nAuthorization: Bearer other\r\n\r\n";
    assert_eq!(door.ask_on(&mut conn, req2).status, 404);
    door.server
        .config
        .set_many(&[("requirepass", "")])
        .expect("config");
    door.server.acl.set_requirepass("");
    assert_eq!(
        door.ask_on(&mut conn, "GET /v1/kv/k HTTP/1.1\r\n\r\n")
            .status,
        404
    );
}

#[test]
fn cors_allowlist_and_preflight() {
    let door = Door::new(&[("http-cors-origins", "https://app.example http://b.test")]);
    let pre = |origin: &str| {
        door.ask(&format!(
            "OPTIONS /v1/kv/k HTTP/1.1\r\nOrigin: {origin}\r\n\
             Access-Control-Request-Method: PUT\r\n\
             Access-Control-Request-Headers: if-match\r\n\r\n"
        ))
    };
    let r = pre("https://app.example");
    assert_eq!(r.status, 204);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert_eq!(r.header("vary"), Some("Origin"));
    assert!(r
        .header("access-control-allow-methods")
        .is_some_and(|m| m.contains("PUT") && m.contains("DELETE")));
    let allowed = r.header("access-control-allow-headers").unwrap_or_default();
    for h in [
        "Authorization",
        "Content-Type",
        "If-Match",
        "If-None-Match",
        "Upstash-Encoding",
        "Last-Event-ID",
    ] {
        assert!(allowed.contains(h), "{h}");
    }
    assert_eq!(r.header("access-control-max-age"), Some("600"));
    assert_eq!(pre("http://b.test").status, 204);
    let r = pre("https://evil.example");
    assert_eq!(r.status, 403);
    assert_eq!(r.header("access-control-allow-origin"), None);

    // A preflight needs no token.
    door.server
        .config
        .set_many(&[("requirepass", "pw")])
        .expect("config");
    door.server.acl.set_requirepass("pw");
    assert_eq!(pre("https://app.example").status, 204);
    // Every response to an allowed origin names it, errors included.
    let r = door.ask("GET /v1/kv/k HTTP/1.1\r\nOrigin: https://app.example\r\n\r\n");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    assert!(r
        .header("access-control-expose-headers")
        .is_some_and(|h| h.contains("ETag")));
    // A page of another origin cannot even make a simple request.
    let r = door.ask(
        "POST /v1/kv/k HTTP/1.1\r\nOrigin: https://evil.example\r\n\
         Authorization: Bearer pw\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(r.status, 403);
    // Nor can an image or link of another site reach data, though it may reach /healthz.
    let cross = "Sec-Fetch-Site: cross-site\r\n";
    assert_eq!(
        door.ask(&format!("GET /v1/kv/k?_token=pw HTTP/1.1\r\n{cross}\r\n"))
            .status,
        403
    );
    assert_ne!(
        door.ask(&format!("GET /healthz HTTP/1.1\r\n{cross}\r\n"))
            .status,
        403
    );
    // The door's own pages (the console) are same-origin.
    let r = door.ask(
        "PUT /v1/kv/k HTTP/1.1\r\nHost: 127.0.0.1:7379\r\nOrigin: http://127.0.0.1:7379\r\n\
         Sec-Fetch-Site: same-origin\r\nAuthorization: Bearer pw\r\nContent-Length: 1\r\n\r\nv",
    );
    assert!((200..300).contains(&r.status), "{r:?}");

    // `*` allows any origin, and it is live.
    door.server
        .config
        .set_many(&[("http-cors-origins", "*")])
        .expect("config");
    assert_eq!(pre("https://evil.example").status, 204);
    door.server
        .config
        .set_many(&[("http-cors-origins", "")])
        .expect("config");
    assert_eq!(pre("https://app.example").status, 403);
}

#[test]
fn rate_limit_answers_429_with_retry_after() {
    let door = Door::new(&[("http-rate-limit", "3")]);
    let mut conn = door.connect();
    let req = "GET /v1/kv/k HTTP/1.1\r\n\r\n";
    for _ in 0..3 {
        assert_eq!(door.ask_on(&mut conn, req).status, 404);
    }
    let r = door.ask_on(&mut conn, req);
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(json(&r)["error"].as_str().is_some());
    // The budget is per address, not per connection.
    assert_eq!(door.ask(req).status, 429);
    door.server
        .config
        .set_many(&[("http-rate-limit", "0")])
        .expect("config");
    assert_eq!(door.ask_on(&mut conn, req).status, 404);
}

#[test]
fn body_over_the_limit_is_read_and_dropped_then_closed() {
    let door = Door::new(&[("http-max-body", "1024")]);
    let mut conn = door.connect();
    let head = "PUT /v1/kv/k HTTP/1.1\r\nContent-Length: 5000\r\n\r\n";
    let mut input = head.as_bytes().to_vec();
    input.extend_from_slice(&[b'x'; 1000]);
    let (out, done) = door.feed(&mut conn, &input);
    let replies = responses(&out, &[Method::Put]).expect("well-formed");
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0].status, 413);
    assert_eq!(replies[0].header("connection"), Some("close"));
    assert_eq!(done.used, input.len());
    assert_eq!(done.close, None, "closing now would reset the connection");
    // The rest of the body is dropped, even when it looks like requests.
    let (out, done) = door.feed(&mut conn, &b"GET / HTTP/1.1\r\n\r\n".repeat(100));
    assert!(out.is_empty());
    assert_eq!(done.close, None);
    let (out, done) = door.feed(&mut conn, &[b'y'; 3000]);
    assert!(out.is_empty());
    assert_eq!(done.used, 2200);
    assert_eq!(done.close, Some(Close::AfterReply));

    // An absurd announced length closes at once, as do other rejections.
    for raw in [
        "PUT /v1/kv/k HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "GET / HTTP/1.1\r\nBad header\r\n\r\n",
    ] {
        let mut conn = door.connect();
        let (out, done) = door.feed(&mut conn, raw.as_bytes());
        assert_eq!(done.close, Some(Close::AfterReply));
        let replies = responses(&out, &[Method::Put]).expect("well-formed");
        assert!([413, 400].contains(&replies[0].status));
    }
}

/// A deterministic generator for the mutations (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Valid requests to every route, the seeds of the mutations.
fn seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<String> = [
        "GET /v1/kv/k1 HTTP/1.1\r\nHost: h\r\n\r\n",
        "HEAD /v1/kv/k1 HTTP/1.1\r\n\r\n",
        "PUT /v1/kv/k1?ttl=30s HTTP/1.1\r\nContent-Length: 5\r\nIf-None-Match: *\r\n\r\nhello",
        "PUT /v1/kv/k%00%ff HTTP/1.1\r\nIf-Match: \"1\", W/\"2\"\r\nContent-Length: 1\r\n\r\nv",
        "DELETE /v1/kv/k1 HTTP/1.1\r\nIf-Match: *\r\n\r\n",
        "GET /v1/kv/k1?wait_ver=1&wait=1ms HTTP/1.1\r\nIf-None-Match: \"1\"\r\n\r\n",
        "GET /v1/hash/h/f HTTP/1.1\r\n\r\n",
        "PUT /v1/hash/h/f HTTP/1.1\r\nContent-Length: 2\r\n\r\nhv",
        "GET /v1/set/s HTTP/1.1\r\n\r\n",
        "PUT /v1/zset/z/m?score=1.5 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
        "GET /v1/keys?prefix=k&cursor=0&count=10 HTTP/1.1\r\n\r\n",
        "GET /v1/watch?key=k1&prefix=p&events=set,del HTTP/1.1\r\nLast-Event-ID: 3\r\n\r\n",
        "GET /v1/subscribe?channel=c HTTP/1.1\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 19\r\n\r\n[\"SET\",\"a\",\"b\",\"EX\"]",
        "POST /pipeline HTTP/1.1\r\nContent-Length: 27\r\n\r\n[[\"INCR\",\"n\"],[\"GET\",\"a\"]]",
        "POST /multi-exec HTTP/1.1\r\nUpstash-Encoding: base64\r\nContent-Length: 25\r\n\r\n[[\"SET\",\"x\",\"1\"],[\"GET\"]]",
        "GET /get/a HTTP/1.1\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n[\"GET\r\n6\r\n\",\"a\"]\r\n0\r\n\r\n",
        "GET /metrics HTTP/1.1\r\n\r\n",
        "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "GET /readyz HTTP/1.1\r\n\r\n",
        "GET /ui HTTP/1.1\r\n\r\n",
        "OPTIONS /v1/kv/k HTTP/1.1\r\nOrigin: https://a.test\r\nAccess-Control-Request-Method: PUT\r\n\r\n",
        "PUT /v1/kv/big HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nabcd",
        "GET /v1/kv/k1 HTTP/1.1\r\nConnection: close\r\n\r\n",
    ]
    .map(String::from)
    .to_vec();
    v.push(format!(
        "GET /v1/kv/{} HTTP/1.1\r\n{}\r\n",
        "%41".repeat(2000),
        "X-Many: 1\r\n".repeat(62)
    ));
    v.into_iter().map(String::into_bytes).collect()
}

/// Mutates `input` a few times: bytes flipped, cut, duplicated or spliced header lines,
/// numbers made huge, requests glued together.
fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], mut input: Vec<u8>) -> Vec<u8> {
    const HUGE: [&[u8]; 5] = [
        b"99999999999999999999999",
        b"18446744073709551616",
        b"-1",
        b"4294967296",
        b"ffffffffffffffff",
    ];
    for _ in 0..=rng.below(3) {
        let at = rng.below(input.len() + 1);
        match rng.below(9) {
            0 => {
                if let Some(b) = input.get_mut(at) {
                    *b ^= 1 << rng.below(8);
                }
            }
            1 => {
                if let Some(b) = input.get_mut(at) {
                    *b = rng.next() as u8;
                }
            }
            2 => input.truncate(at),
            3 => {
                // A header line (or any line) again, somewhere.
                let lines: Vec<&[u8]> = input.split_inclusive(|&b| b == b'\n').collect();
                if let Some(line) = lines.get(rng.below(lines.len())) {
                    let again = line.repeat(1 + rng.below(3));
                    input.splice(at..at, again);
                }
            }
            4 => {
                // A run of digits becomes a huge or odd number.
                if let Some(start) = input[at..].iter().position(u8::is_ascii_digit) {
                    let start = at + start;
                    let end = input[start..]
                        .iter()
                        .position(|b| !b.is_ascii_digit())
                        .map_or(input.len(), |n| start + n);
                    input.splice(start..end, HUGE[rng.below(HUGE.len())].iter().copied());
                }
            }
            5 => input.extend_from_slice(&seeds[rng.below(seeds.len())]),
            6 => {
                let junk: &[u8] = [
                    &b"\r\n"[..],
                    b"\n",
                    b"\0",
                    b"%",
                    b"%zz",
                    b":",
                    b" ",
                    b"\xff",
                ][rng.below(8)];
                input.splice(at..at, junk.iter().copied());
            }
            7 => {
                let end = (at + rng.below(16)).min(input.len());
                input.drain(at..end);
            }
            _ => {
                let other = &seeds[rng.below(seeds.len())];
                let from = rng.below(other.len());
                input.splice(at..at, other[from..].iter().copied());
            }
        }
    }
    input
}

/// The methods of the requests at the front of `input`, as far as they parse.
fn methods(input: &[u8], limits: &Limits) -> Vec<Method> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Ok(Parsed::Complete { request, consumed }) = parse_request(&input[at..], limits) {
        out.push(request.method);
        at += consumed;
    }
    out
}

/// Runs `input` the way a connection does: in pieces of `step` bytes, parsing only once the
/// input holds `min_total` bytes, until the handler closes, streams or waits. Returns the
/// output.
fn run_in_pieces(door: &Door, conn: &mut HttpHandler, input: &[u8], step: usize) -> Vec<u8> {
    let mut out = Output::default();
    let mut buf = Vec::new();
    for piece in input.chunks(step.max(1)) {
        buf.extend_from_slice(piece);
        if buf.len() < conn.min_total() {
            continue;
        }
        let done = conn.process(&door.server, &buf, &mut out, usize::MAX);
        assert!(done.used <= buf.len());
        buf.drain(..done.used);
        if done.close.is_some() || done.blocked || conn.streaming {
            break;
        }
    }
    out.bytes
}

#[test]
fn mutated_requests_never_panic_and_get_well_formed_answers() {
    let door = Door::new(&[
        ("http-max-body", "4096"),
        ("http-cors-origins", "https://a.test"),
    ]);
    let limits = Limits {
        max_body: 4096,
        ..Limits::default()
    };
    let seeds = seeds();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut conn = door.connect();
    let mut statuses = std::collections::BTreeMap::new();
    for round in 0..30_000 {
        let seed = seeds[round % seeds.len()].clone();
        let input = if round < seeds.len() {
            seed
        } else {
            mutate(&mut rng, &seeds, seed)
        };
        // Keep-alive connections carry state from request to request; start afresh now and
        // then, and whenever the last one ended.
        if round % 50 == 0 || conn.streaming || conn.discard > 0 {
            conn = door.connect();
        }
        let (out, done) = door.feed(&mut conn, &input);
        let what = || {
            format!(
                "round {round}: {:?}\n-> {:?}",
                String::from_utf8_lossy(&input),
                String::from_utf8_lossy(&out)
            )
        };
        assert!(done.used <= input.len(), "{}", what());
        let replies = responses(&out, &methods(&input, &limits))
            .unwrap_or_else(|e| panic!("{e}: {}", what()));
        if done.close.is_some() {
            // Whatever ends the connection is answered first (unless the input was cut).
            conn = door.connect();
        } else if !done.blocked && !conn.streaming && conn.discard == 0 {
            // Whatever was not consumed is an incomplete request.
            let rest = &input[done.used..];
            assert!(
                matches!(parse_request(rest, &limits), Ok(Parsed::Incomplete { .. })),
                "{}",
                what()
            );
        }
        for r in &replies {
            *statuses.entry(r.status).or_insert(0u32) += 1;
            assert!(r.status != 500, "{}", what());
        }
        // The same bytes arriving a few at a time.
        let step = 1 + rng.below(64);
        let mut piecewise = door.connect();
        let out = run_in_pieces(&door, &mut piecewise, &input, step);
        responses(&out, &methods(&input, &limits))
            .unwrap_or_else(|e| panic!("{e} (in pieces of {step}): {}", what()));
    }
    // The mutations reached the codec's rejections and the routes' answers alike.
    for status in [200, 400, 404, 413, 431] {
        assert!(statuses.contains_key(&status), "{statuses:?}");
    }
}

#[test]
fn a_replica_serves_reads_and_refuses_writes_with_409_naming_its_master() {
    let door = Door::new(&[]);
    let put = "PUT /v1/kv/k HTTP/1.1\r\nContent-Length: 1\r\n\r\nv";
    assert!(door.ask(put).status < 300);
    let _ = door
        .server
        .replication
        .set(Arc::new(crate::repl::guard::ReplicaOf("10.0.0.1", 6379)));
    for write in [
        put,
        "DELETE /v1/kv/k HTTP/1.1\r\n\r\n",
        "POST /v1/hash/h HTTP/1.1\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
        "DELETE /v1/set/s HTTP/1.1\r\n\r\n",
        "GET /v1/queue/q?worker=w HTTP/1.1\r\n\r\n",
        "POST /v1/queue/q/ack HTTP/1.1\r\n\r\n",
    ] {
        let r = door.ask(write);
        assert_eq!(r.status, 409, "{write:?}");
        let body = json(&r);
        assert_eq!(body["master"], "10.0.0.1:6379", "{write:?}");
        assert_eq!(
            body["error"],
            "READONLY You can't write against a read only replica (master: 10.0.0.1:6379)"
        );
    }
    let r = door.ask("GET /v1/kv/k HTTP/1.1\r\n\r\n");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"v"[..]));
    assert_eq!(
        door.ask("GET /v1/queue/q/stats HTTP/1.1\r\n\r\n").status,
        200
    );
}
