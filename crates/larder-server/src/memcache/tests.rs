//! The door without sockets: text, meta and binary requests through a [`Session`], as a
//! connection would run them.

use larder_commands::config::Config;
use larder_memcache::HEADER_LEN;

use super::session::Session;
use super::*;

/// The door without sockets: a server, the door's state and one session.
struct Door {
    server: Server,
    mc: McShared,
    session: Session,
    conn: larder_commands::ConnState,
}

impl Door {
    fn new() -> Door {
        let server = Server::new(Config::new(), 1);
        let handle = larder_commands::testing::detached_handle(&server);
        let conn = conn::door_conn(&server, &handle, 0);
        Door {
            server,
            mc: McShared::new(1, Vec::new()),
            session: Session::default(),
            conn,
        }
    }

    /// Runs `input`; returns the answers, the bytes consumed and whether to close. Calls
    /// again while a job (a dump, a stats walk) asks to, as the connection does.
    fn feed(&mut self, input: &[u8]) -> (Vec<u8>, usize, bool) {
        let mut out = Vec::new();
        let mut used = 0;
        loop {
            let cx = Ctx::new(&self.server, &self.mc, 0, 1, "127.0.0.1:0");
            let (n, close) =
                self.session
                    .run(&cx, &mut self.conn, &input[used..], &mut out, usize::MAX);
            used += n;
            if close || !self.session.again {
                return (out, used, close);
            }
        }
    }

    /// Runs complete text requests and returns the answers.
    fn text(&mut self, input: &str) -> String {
        let (out, used, _) = self.feed(input.as_bytes());
        assert_eq!(used, input.len(), "{input:?} not fully consumed");
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn packet(opcode: u8, extras: &[u8], key: &[u8], value: &[u8], cas: u64) -> Vec<u8> {
    let h = larder_memcache::BinaryHeader {
        magic: 0x80,
        opcode,
        key_len: key.len() as u16,
        extras_len: extras.len() as u8,
        data_type: 0,
        vbucket_or_status: 0,
        body_len: (extras.len() + key.len() + value.len()) as u32,
        opaque: 0xABCD,
        cas,
    };
    let mut v = h.to_bytes().to_vec();
    v.extend_from_slice(extras);
    v.extend_from_slice(key);
    v.extend_from_slice(value);
    v
}

/// (status, opaque, cas, value) of each response packet.
fn responses(mut buf: &[u8]) -> Vec<(u16, u32, u64, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(head) = buf.first_chunk::<HEADER_LEN>() {
        let h = larder_memcache::BinaryHeader::parse(head);
        assert_eq!(h.magic, 0x81);
        let end = HEADER_LEN + h.body_len as usize;
        let skip = HEADER_LEN + usize::from(h.extras_len) + usize::from(h.key_len);
        out.push((
            h.vbucket_or_status,
            h.opaque,
            h.cas,
            buf[skip..end].to_vec(),
        ));
        buf = &buf[end..];
    }
    out
}

#[test]
fn text_commands_table() {
    let mut d = Door::new();
    let cases: &[(&str, &str)] = &[
        ("set a 5 0 1\r\n1\r\n", "STORED\r\n"),
        (
            "get a b a\r\n",
            "VALUE a 5 1\r\n1\r\nVALUE a 5 1\r\n1\r\nEND\r\n",
        ),
        ("add a 0 0 1\r\nx\r\n", "NOT_STORED\r\n"),
        ("replace b 0 0 1\r\nx\r\n", "NOT_STORED\r\n"),
        ("incr a 41\r\n", "42\r\n"),
        ("decr a 50\r\n", "0\r\n"),
        ("incr b 1\r\n", "NOT_FOUND\r\n"),
        ("append a 0 0 2\r\n!!\r\n", "STORED\r\n"),
        ("prepend a 0 0 1\r\n<\r\n", "STORED\r\n"),
        ("get a\r\n", "VALUE a 5 4\r\n<0!!\r\nEND\r\n"),
        (
            "incr a 1\r\n",
            "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n",
        ),
        ("touch a 100\r\n", "TOUCHED\r\n"),
        ("touch b 100\r\n", "NOT_FOUND\r\n"),
        ("delete a\r\n", "DELETED\r\n"),
        ("delete a\r\n", "NOT_FOUND\r\n"),
        ("cas a 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n"),
        ("version\r\n", "VERSION 1.6.18\r\n"),
        ("verbosity 1\r\n", "OK\r\n"),
        ("flush_all\r\n", "OK\r\n"),
        (
            "set n 0 0 1 noreply\r\n1\r\nincr n 1 noreply\r\nmn\r\n",
            "MN\r\n",
        ),
        ("get n\r\n", "VALUE n 0 1\r\n2\r\nEND\r\n"),
        ("gat 0\r\n", "END\r\n"),
        ("bogus\r\n", "ERROR\r\n"),
        ("stats reset\r\n", "RESET\r\n"),
        ("stats nope\r\n", "ERROR\r\n"),
    ];
    for (req, want) in cases {
        assert_eq!(d.text(req), *want, "{req:?}");
    }
    assert_eq!(d.mc.verbosity(), 1);
}

#[test]
fn cas_round_trip() {
    let mut d = Door::new();
    d.text("set k 0 0 1\r\na\r\n");
    let gets = d.text("gets k\r\n");
    let cas: u64 = gets
        .lines()
        .next()
        .and_then(|l| l.split(' ').nth(4))
        .and_then(|c| c.parse().ok())
        .expect("cas");
    assert_eq!(
        d.text(&format!("cas k 0 0 1 {}\r\nb\r\n", cas + 1)),
        "EXISTS\r\n"
    );
    assert_eq!(d.text(&format!("cas k 0 0 1 {cas}\r\nb\r\n")), "STORED\r\n");
    assert_eq!(d.text(&format!("cas k 0 0 1 {cas}\r\nc\r\n")), "EXISTS\r\n");
}

#[test]
fn meta_commands() {
    let mut d = Door::new();
    assert_eq!(d.text("ms k 2 F9 T0\r\nhi\r\n"), "HD\r\n");
    assert_eq!(d.text("mg k v f s t\r\n"), "VA 2 f9 s2 t-1\r\nhi\r\n");
    assert_eq!(d.text("mg nope v\r\n"), "EN\r\n");
    assert_eq!(d.text("mg nope v q\r\nmn\r\n"), "MN\r\n");
    assert_eq!(d.text("ma c N0 J5 v\r\n"), "VA 1\r\n5\r\n");
    assert_eq!(d.text("ma c v D2\r\n"), "VA 1\r\n7\r\n");
    assert_eq!(d.text("md k q\r\nmd k\r\n"), "NF\r\n");
    assert_eq!(d.text("me k\r\n"), "EN\r\n");
    assert_eq!(d.text("mn\r\n"), "MN\r\n");
}

#[test]
fn quit_closes_after_earlier_answers() {
    let mut d = Door::new();
    let input = b"version\r\nquit\r\nversion\r\n";
    let (out, used, close) = d.feed(input);
    assert_eq!(out, b"VERSION 1.6.18\r\n");
    assert_eq!(used, b"version\r\nquit\r\n".len());
    assert!(close);
}

#[test]
fn oversized_value_is_dropped_as_it_arrives() {
    let mut d = Door::new();
    let line = b"set big 0 0 2000000\r\n";
    let mut first = line.to_vec();
    first.extend_from_slice(&[b'x'; 1000]);
    let (out, used, close) = d.feed(&first);
    assert_eq!(out, b"SERVER_ERROR object too large for cache\r\n");
    assert_eq!((used, close), (first.len(), false));
    // The rest of the value (and its \r\n) is discarded; the next request runs.
    let mut rest = vec![b'x'; 2_000_000 - 1000];
    rest.extend_from_slice(b"\r\nversion\r\n");
    let (out, used, _) = d.feed(&rest);
    assert_eq!(out, b"VERSION 1.6.18\r\n");
    assert_eq!(used, rest.len());
}

#[test]
fn partial_requests_wait() {
    let mut d = Door::new();
    let (out, used, _) = d.feed(b"set k 0 0 5\r\nhel");
    assert_eq!((out.as_slice(), used), (&b""[..], 0));
    assert_eq!(
        d.text("set k 0 0 5\r\nhello\r\nget k\r\n"),
        "STORED\r\nVALUE k 0 5\r\nhello\r\nEND\r\n"
    );
}

#[test]
fn line_too_long_closes() {
    let mut d = Door::new();
    // A line that fits memcached's 16 KiB read buffer is served; a longer one closes the
    // connection without a word, as memcached does.
    let long = format!("set {} 0 0 1\r\n", "k".repeat(3000));
    let (out, _, close) = d.feed(long.as_bytes());
    assert_eq!(out, b"CLIENT_ERROR bad command line format\r\n");
    assert!(!close);
    let long = format!("set {} 0 0 1\r\n", "k".repeat(20_000));
    let (out, _, close) = d.feed(long.as_bytes());
    assert_eq!(out, b"");
    assert!(close);
}

#[test]
fn binary_commands() {
    let mut d = Door::new();
    let set = packet(0x01, &[0, 0, 0, 7, 0, 0, 0, 0], b"k", b"v", 0);
    let (out, used, _) = d.feed(&set);
    assert_eq!(used, set.len());
    let r = responses(&out);
    assert_eq!((r[0].0, r[0].1), (0, 0xABCD));
    let cas = r[0].2;
    assert_ne!(cas, 0);
    let (out, _, _) = d.feed(&packet(0x00, &[], b"k", b"", 0));
    assert_eq!(responses(&out), vec![(0, 0xABCD, cas, b"v".to_vec())]);
    // A stale CAS, a quiet miss, then NOOP.
    let mut input = packet(0x01, &[0; 8], b"k", b"w", cas + 1);
    input.extend(packet(0x09, &[], b"missing", b"", 0));
    input.extend(packet(0x0a, &[], b"", b"", 0));
    let (out, _, _) = d.feed(&input);
    let r = responses(&out);
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[0].0, r[0].3.as_slice()),
        (2, &b"Data exists for key."[..])
    );
    assert_eq!(r[1].0, 0);
    // Counter created from its initial value, then incremented.
    let mut extras = Vec::new();
    extras.extend_from_slice(&3u64.to_be_bytes());
    extras.extend_from_slice(&10u64.to_be_bytes());
    extras.extend_from_slice(&0u32.to_be_bytes());
    let (out, _, _) = d.feed(&packet(0x05, &extras, b"n", b"", 0));
    assert_eq!(responses(&out)[0].3, 10u64.to_be_bytes());
    let (out, _, _) = d.feed(&packet(0x05, &extras, b"n", b"", 0));
    assert_eq!(responses(&out)[0].3, 13u64.to_be_bytes());
    // VERSION, then QUIT closes.
    let (out, _, _) = d.feed(&packet(0x0b, &[], b"", b"", 0));
    assert_eq!(responses(&out)[0].3, b"1.6.18");
    let (out, _, close) = d.feed(&packet(0x07, &[], b"", b"", 0));
    assert_eq!(responses(&out).len(), 1);
    assert!(close);
}

#[test]
fn binary_partial_body_sets_min_total() {
    let mut d = Door::new();
    let set = packet(0x01, &[0; 8], b"k", &[b'v'; 100], 0);
    let (out, used, _) = d.feed(&set[..50]);
    assert_eq!((out.len(), used), (0, 0));
    assert_eq!(d.session.min_total, set.len());
    let (out, used, _) = d.feed(&set);
    assert_eq!((responses(&out)[0].0, used), (0, set.len()));
}

#[test]
fn binary_bad_magic_closes_without_answer() {
    let mut d = Door::new();
    let (out, _, _) = d.feed(&packet(0x0a, &[], b"", b"", 0));
    assert_eq!(out.len(), HEADER_LEN);
    let mut bad = packet(0x0a, &[], b"", b"", 0);
    bad[0] = 0x81;
    let (out, used, close) = d.feed(&bad);
    assert_eq!((out.len(), used, close), (0, bad.len(), true));
}

#[test]
fn one_protocol_per_connection() {
    let mut d = Door::new();
    assert_eq!(d.text("version\r\n"), "VERSION 1.6.18\r\n");
    // After text, a binary magic byte is just an unknown text command.
    let (out, _, _) = d.feed(&[0x80, b'\r', b'\n']);
    assert_eq!(out, b"ERROR\r\n");
}

/// MONITOR shows the door's requests that ran, in memcached's words, in database 0.
#[test]
fn monitors_see_requests_in_memcached_words() {
    let mut d = Door::new();
    let handle = larder_commands::testing::detached_handle(&d.server);
    let mut monitor = larder_commands::ConnState::new(&d.server, handle, 0);
    let mut reply = larder_resp::ReplyBuf::new(larder_resp::Protocol::Resp2);
    larder_commands::execute(&d.server, &mut monitor, &[b"MONITOR"], &mut reply);
    assert_eq!(reply.buf, b"+OK\r\n");
    d.text("set k 0 0 5\r\nhello\r\nget k  x\r\nbogus\r\nmg k v\r\n");
    d.session = Session::default();
    let mut input = packet(0x11, &[0, 0, 0, 7, 0, 0, 0, 0], b"b", b"xyz", 0);
    input.extend(packet(0x0c, &[], b"b", &[], 0));
    input.extend(packet(
        0x05,
        &[0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0],
        b"n",
        &[],
        0,
    ));
    input.extend(packet(0x0a, &[], &[], &[], 0));
    d.feed(&input);
    let text = String::from_utf8(monitor.handle.mail.take()).expect("ASCII");
    let shown: Vec<&str> = text
        .split("\r\n")
        .filter(|l| !l.is_empty())
        .map(|l| {
            assert!(l.contains(" [0 127.0.0.1:0] "), "{l}");
            l.split_once("] ").map_or("", |(_, rest)| rest)
        })
        .collect();
    assert_eq!(
        shown,
        [
            r#""set" "k" "0" "0" "5""#,
            r#""get" "k" "x""#,
            r#""mg" "k" "v""#,
            r#""setq" "b" "7" "0" "3""#,
            r#""getk" "b""#,
            r#""increment" "n" "2" "1" "0""#,
            r#""noop""#,
        ]
    );
}

#[test]
fn text_login_as_memcached_dash_y() {
    let mut d = Door::new();
    // No password: the default user, no login needed.
    assert_eq!(d.text("get k\r\n"), "END\r\n");
    d.server.acl.set_requirepass("pw");
    let cases: &[(&str, &str)] = &[
        ("get k\r\n", "CLIENT_ERROR unauthenticated\r\n"),
        ("mn\r\n", "CLIENT_ERROR unauthenticated\r\n"),
        ("bogus\r\n", "CLIENT_ERROR unauthenticated\r\n"),
        ("add k 0 0 1\r\nx\r\n", "CLIENT_ERROR unauthenticated\r\n"),
        (
            "set k 0 0 5\r\nnoone\r\n",
            "CLIENT_ERROR bad authentication token format\r\n",
        ),
        (
            "set k 0 0 9\r\nnobody pw\r\n",
            "CLIENT_ERROR authentication failure\r\n",
        ),
        ("set k 0 0 10 noreply\r\ndefault pw\r\n", "STORED\r\n"),
        // Logged in: the set family stores again.
        ("set k 0 0 1\r\nv\r\n", "STORED\r\n"),
        ("get k\r\n", "VALUE k 0 1\r\nv\r\nEND\r\n"),
    ];
    for (req, want) in cases {
        assert_eq!(d.text(req), *want, "{req:?}");
    }
    let stats = d.text("stats\r\n");
    // A malformed token is not a login (memcached counts neither).
    assert!(stats.contains("STAT auth_cmds 2\r\n"), "{stats}");
    assert!(stats.contains("STAT auth_errors 1\r\n"), "{stats}");
    assert!(d
        .text("stats settings\r\n")
        .contains("STAT auth_enabled_sasl yes\r\n"));
}

#[test]
fn binary_sasl_plain() {
    let mut d = Door::new();
    d.server.acl.set_requirepass("pw");
    let run = |d: &mut Door, p: Vec<u8>| {
        let (out, used, close) = d.feed(&p);
        assert_eq!(used, p.len());
        (responses(&out), close)
    };
    let (r, close) = run(&mut d, packet(0x20, b"", b"", b"", 0));
    assert_eq!(r[0].0, 0);
    assert_eq!(r[0].3, b"PLAIN");
    assert!(!close);
    let (r, _) = run(&mut d, packet(0x0b, b"", b"", b"", 0));
    assert_eq!(r[0].3, b"1.6.18");
    let (r, close) = run(&mut d, packet(0x21, b"", b"PLAIN", b"\0nobody\0pw", 0));
    assert_eq!(
        (r[0].0, r[0].3.as_slice(), close),
        (0x20, &b"Auth failure."[..], false)
    );
    let (r, _) = run(&mut d, packet(0x21, b"", b"CRAM-MD5", b"x", 0));
    assert_eq!(r[0].0, 0x20);
    // STEP without AUTH fails; AUTH without data continues, STEP finishes.
    let (r, _) = run(&mut d, packet(0x22, b"", b"PLAIN", b"\0default\0pw", 0));
    assert_eq!(r[0].0, 0x20);
    let (r, _) = run(&mut d, packet(0x21, b"", b"PLAIN", b"", 0));
    assert_eq!((r[0].0, r[0].3.len()), (0x21, 0));
    let (r, _) = run(&mut d, packet(0x22, b"", b"PLAIN", b"\0default\0pw", 0));
    assert_eq!((r[0].0, r[0].3.as_slice()), (0, &b"Authenticated"[..]));
    let (r, _) = run(&mut d, packet(0x00, b"", b"k", b"", 0));
    assert_eq!(r[0].0, 0x01);
    // A fresh connection that skips SASL is refused and closed.
    let mut fresh = Door::new();
    fresh.server.acl.set_requirepass("pw");
    let (r, close) = run(&mut fresh, packet(0x00, b"", b"k", b"", 0));
    assert_eq!(
        (r[0].0, r[0].3.as_slice(), close),
        (0x20, &b"Auth failure."[..], true)
    );
    let (r, _) = run(&mut fresh, packet(0x21, b"", &[b'M'; 33], b"", 0));
    assert_eq!(r[0].0, 0x04);
}

/// `stats slabs` and `stats items` count database 0's items by class; a metadump lists them,
/// and the requests pipelined after it are answered after its `END`.
#[test]
fn slabs_items_and_metadump() {
    let mut d = Door::new();
    let big = "x".repeat(2000);
    d.text(&format!(
        "set a 5 0 3\r\nabc\r\nset b 0 100 2000\r\n{big}\r\n"
    ));
    d.text("set c%20d 1 0 1\r\nz\r\nget a\r\n");
    let slabs = d.text("stats slabs\r\n");
    assert!(slabs.starts_with("STAT 1:chunk_size 96\r\n"), "{slabs}");
    assert!(slabs.contains("STAT 1:used_chunks 2\r\n"), "{slabs}");
    assert!(slabs.contains("STAT 15:used_chunks 1\r\n"), "{slabs}");
    assert!(slabs.contains("STAT active_slabs 2\r\n"), "{slabs}");
    let items = d.text("stats items\r\n");
    assert!(items.starts_with("STAT items:1:number 2\r\n"), "{items}");
    assert_eq!(items.matches("items:15:").count(), 28, "{items}");
    let dump = d.text("lru_crawler metadump all\r\nmn\r\n");
    let lines: Vec<&str> = dump.split('\n').collect();
    assert_eq!(lines.len(), 6, "{dump}");
    assert!(dump.ends_with("END\r\nMN\r\n"), "{dump}");
    assert!(dump.contains("key=c%2520d exp=-1 "), "{dump}");
    assert!(dump.contains(" fetch=yes cls=1 "), "{dump}");
    let b = lines
        .iter()
        .find(|l| l.starts_with("key=b "))
        .expect("b is dumped");
    let exp: Option<u64> = b.split(' ').nth(1).and_then(|f| f[4..].parse().ok());
    let exp = exp.expect("exp=<unix>");
    let now = larder_engine::now_ms() / 1000;
    assert!((now + 99..=now + 101).contains(&exp), "{b}");
    assert!(b.ends_with(" cls=15 size=2064"), "{b}");
    assert_eq!(
        d.text("lru_crawler metadump 15\r\n").lines().count(),
        2,
        "one item and END"
    );
    let mg = d.text("lru_crawler mgdump all\r\n");
    assert!(mg.contains("mg a\r\n") && mg.ends_with("EN\r\n"), "{mg}");
}

#[test]
fn crawler_settings_and_errors() {
    let mut d = Door::new();
    let cases: &[(&str, &str)] = &[
        ("lru_crawler\r\n", "ERROR\r\n"),
        ("lru_crawler metadump\r\n", "ERROR\r\n"),
        (
            "lru_crawler metadump 0\r\n",
            "BADCLASS invalid class id\r\n",
        ),
        (
            "lru_crawler metadump ,\r\n",
            "NOTSTARTED no items to crawl\r\n",
        ),
        (
            "lru_crawler crawl hash\r\n",
            "ERROR an unknown error happened\r\n",
        ),
        ("lru_crawler crawl all\r\n", "OK\r\n"),
        (
            "lru_crawler sleep 2000000\r\n",
            "CLIENT_ERROR sleep must be one second or less\r\n",
        ),
        ("lru_crawler sleep 0\r\n", "OK\r\n"),
        (
            "lru_crawler sleep 50\r\n",
            "CLIENT_ERROR sleep not supported: larder's crawl makes one pass without pauses \
             (sleep 0)\r\n",
        ),
        (
            "lru_crawler tocrawl -1\r\n",
            "CLIENT_ERROR bad command line format\r\n",
        ),
        ("lru_crawler tocrawl 0\r\n", "OK\r\n"),
        (
            "lru_crawler tocrawl 5\r\n",
            "CLIENT_ERROR tocrawl not supported: larder's crawl checks every item (tocrawl 0)\r\n",
        ),
        (
            "lru_crawler enable\r\n",
            "ERROR failed to start lru crawler thread\r\n",
        ),
        ("lru_crawler disable\r\n", "OK\r\n"),
        (
            "lru_crawler metadump all\r\n",
            "CLIENT_ERROR lru crawler disabled\r\n",
        ),
        (
            "lru_crawler crawl 1\r\n",
            "CLIENT_ERROR lru crawler disabled\r\n",
        ),
        ("lru_crawler enable\r\n", "OK\r\n"),
        ("stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n"),
    ];
    for (req, want) in cases {
        assert_eq!(d.text(req), *want, "{req:?}");
    }
    let settings = d.text("stats settings\r\n");
    assert!(
        settings.contains("STAT lru_crawler_sleep 0\r\n"),
        "{settings}"
    );
    assert!(
        settings.contains("STAT lru_crawler_tocrawl 0\r\n"),
        "{settings}"
    );
}

/// A second dump while one runs is refused, as memcached's single crawler refuses it; the
/// crawler is free again once the dumping connection is gone.
#[test]
fn one_dump_at_a_time() {
    let mut d = Door::new();
    for i in 0..3000 {
        d.text(&format!("set key{i} 0 0 1\r\nx\r\n"));
    }
    let req = b"lru_crawler metadump all\r\n";
    let busy = "BUSY currently processing crawler request\r\n";
    let mut dumping = Session::default();
    {
        let cx = Ctx::new(&d.server, &d.mc, 0, 1, "127.0.0.1:0");
        let mut out = Vec::new();
        // A small output limit leaves the dump unfinished.
        let (used, _) = dumping.run(&cx, &mut d.conn, req, &mut out, 1);
        assert_eq!((used, dumping.again), (0, true));
    }
    assert_eq!(d.text("lru_crawler metadump all\r\n"), busy);
    assert_eq!(d.text("lru_crawler crawl all\r\n"), busy);
    drop(dumping);
    assert_eq!(d.text("lru_crawler crawl all\r\n"), "OK\r\n");
    assert_eq!(d.text("lru_crawler metadump all\r\n").lines().count(), 3001);
}

#[test]
fn keys_are_url_encoded_as_memcached_does() {
    let mut out = Vec::new();
    super::uriencode(b"c%20d a/\xff-._~Z9", |b| out.push(b));
    assert_eq!(out, b"c%2520d%20a%2F%FF-._~Z9");
}

#[test]
fn a_replica_serves_reads_and_refuses_writes_naming_its_master() {
    let mut d = Door::new();
    // Data as the master's stream would have left it.
    assert_eq!(d.text("set k 3 0 1\r\nv\r\n"), "STORED\r\n");
    let _ = d
        .server
        .replication
        .set(Arc::new(crate::repl::guard::ReplicaOf("10.0.0.1", 6379)));
    let refusal =
        "SERVER_ERROR READONLY You can't write against a read only replica (master: 10.0.0.1:6379)\r\n";
    for write in [
        "set k 0 0 1\r\nw\r\n",
        "add n 0 0 1\r\nw\r\n",
        "delete k\r\n",
        "incr k 1\r\n",
        "touch k 10\r\n",
        "gat 10 k\r\n",
        "flush_all\r\n",
        "ms k 1\r\nw\r\n",
        "md k\r\n",
        "ma k\r\n",
        "mg k v T10\r\n",
    ] {
        assert_eq!(d.text(write), refusal, "{write:?}");
    }
    assert_eq!(d.text("set k 0 0 1 noreply\r\nw\r\n"), "");
    assert_eq!(d.text("get k\r\n"), "VALUE k 3 1\r\nv\r\nEND\r\n");
    assert_eq!(d.text("mg k v\r\n"), "VA 1\r\nv\r\n");
    // Binary (a new connection): a SET is refused with status 0x0084 and the text; a GET
    // is served.
    d.session = Session::default();
    let (out, _, _) = d.feed(&packet(0x01, &[0; 8], b"k", b"w", 0));
    let r = responses(&out);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].0, 0x0084);
    assert_eq!(
        r[0].3,
        b"READONLY You can't write against a read only replica (master: 10.0.0.1:6379)"
    );
    let (out, _, _) = d.feed(&packet(0x00, &[], b"k", b"", 0));
    let r = responses(&out);
    assert_eq!((r[0].0, r[0].3.as_slice()), (0, &b"v"[..]));
}
