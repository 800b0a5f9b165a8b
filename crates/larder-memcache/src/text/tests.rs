//! Table-driven tests of the classic text commands over raw bytes, and the connection
//! driver shared with the meta tests.

use super::*;

/// One step of a simulated connection: a request (its Debug form) or an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Request(String),
    Error(TextErrorKind, bool),
}

/// Parses a whole stream the way a server would: requests are consumed, errors skip their
/// bytes (also those not yet received), a closing error ends the stream.
pub(crate) fn drive(stream: &[u8], limits: &Limits) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut rest = stream;
    loop {
        match parse_text(rest, limits) {
            Ok(Some((req, used))) => {
                assert!(used >= 1 && used <= rest.len());
                steps.push(Step::Request(format!("{req:?}")));
                rest = &rest[used..];
            }
            Ok(None) => break,
            Err(e) => {
                assert!(e.skip >= 1);
                steps.push(Step::Error(e.kind, e.noreply));
                if e.closes_connection() {
                    break;
                }
                rest = &rest[e.skip.min(rest.len())..];
            }
        }
    }
    steps
}

/// As [`drive`], but receiving the stream one byte at a time into a growing buffer, with a
/// pending skip for refused data that has not arrived yet.
pub(crate) fn drive_bytewise(stream: &[u8], limits: &Limits) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut pending_skip = 0usize;
    for &b in stream {
        if pending_skip > 0 {
            pending_skip -= 1;
            continue;
        }
        buf.push(b);
        loop {
            match parse_text(&buf, limits) {
                Ok(Some((req, used))) => {
                    steps.push(Step::Request(format!("{req:?}")));
                    buf.drain(..used);
                }
                Ok(None) => break,
                Err(e) => {
                    steps.push(Step::Error(e.kind, e.noreply));
                    if e.closes_connection() {
                        return steps;
                    }
                    let now = e.skip.min(buf.len());
                    pending_skip = e.skip - now;
                    buf.drain(..now);
                }
            }
        }
    }
    steps
}

fn limits() -> Limits {
    Limits::default()
}

fn parse_one(bytes: &[u8]) -> TextRequest<'_> {
    match parse_text(bytes, &limits()) {
        Ok(Some((req, used))) => {
            assert_eq!(used, bytes.len(), "{:?}", String::from_utf8_lossy(bytes));
            req
        }
        other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bytes)),
    }
}

fn t(s: &[u8]) -> Tokens<'_> {
    Tokens::new(s)
}

fn store(mode: StoreMode, data: &'static [u8]) -> Store<'static> {
    Store {
        mode,
        key: b"k",
        flags: 0,
        exptime: 0,
        data,
        compare_cas: None,
        noreply: false,
    }
}

#[test]
fn classic_requests() {
    use TextRequest as R;
    let cases: Vec<(&[u8], TextRequest<'static>)> = vec![
        (b"get a\r\n", R::Get { keys: t(b"a") }),
        (b"get a b  c\r\n", R::Get { keys: t(b"a b  c") }),
        (b" get a\n", R::Get { keys: t(b"a") }),
        (b"get a \r\n", R::Get { keys: t(b"a") }),
        (b"bget a\r\n", R::Get { keys: t(b"a") }),
        (b"gets a b\r\n", R::Gets { keys: t(b"a b") }),
        (
            b"gat 10 a b\r\n",
            R::Gat {
                exptime: 10,
                keys: t(b"a b"),
            },
        ),
        (
            b"gat 10\r\n",
            R::Gat {
                exptime: 10,
                keys: t(b""),
            },
        ),
        (
            b"gats -1 a\r\n",
            R::Gats {
                exptime: -1,
                keys: t(b"a"),
            },
        ),
        (
            b"set k 5 100 3\r\nabc\r\n",
            R::Store(Store {
                flags: 5,
                exptime: 100,
                ..store(StoreMode::Set, b"abc")
            }),
        ),
        (
            b"set k 0 0 3 noreply\r\nabc\r\n",
            R::Store(Store {
                noreply: true,
                ..store(StoreMode::Set, b"abc")
            }),
        ),
        // An extra token that is not noreply is ignored, as in memcached.
        (
            b"set k 0 0 1 foo\r\nx\r\n",
            R::Store(store(StoreMode::Set, b"x")),
        ),
        // 32-bit truncation of flags, exptime and length, as memcached does.
        (
            b"set k 4294967297 4294967297 4294967297\r\nx\r\n",
            R::Store(Store {
                flags: 1,
                exptime: 1,
                ..store(StoreMode::Set, b"x")
            }),
        ),
        (
            b"set k +5 2147483648 1\r\nx\r\n",
            R::Store(Store {
                flags: 5,
                exptime: i64::from(i32::MIN),
                ..store(StoreMode::Set, b"x")
            }),
        ),
        (b"set k 0 0 0\r\n\r\n", R::Store(store(StoreMode::Set, b""))),
        (
            b"set k 0 0 4\r\na\r\nb\r\n",
            R::Store(store(StoreMode::Set, b"a\r\nb")),
        ),
        (b"set k 0 0 1\nx\r\n", R::Store(store(StoreMode::Set, b"x"))),
        (
            b"add k 0 0 1\r\nx\r\n",
            R::Store(store(StoreMode::Add, b"x")),
        ),
        (
            b"replace k 0 0 1\r\nx\r\n",
            R::Store(store(StoreMode::Replace, b"x")),
        ),
        (
            b"append k 0 0 1\r\nx\r\n",
            R::Store(store(StoreMode::Append, b"x")),
        ),
        (
            b"prepend k 0 0 1\r\nx\r\n",
            R::Store(store(StoreMode::Prepend, b"x")),
        ),
        (
            b"cas k 0 0 1 99\r\nx\r\n",
            R::Store(Store {
                compare_cas: Some(99),
                ..store(StoreMode::Cas, b"x")
            }),
        ),
        (
            b"cas k 0 0 1 0 noreply\r\nx\r\n",
            R::Store(Store {
                compare_cas: Some(0),
                noreply: true,
                ..store(StoreMode::Cas, b"x")
            }),
        ),
        (
            b"delete k\r\n",
            R::Delete {
                key: b"k",
                noreply: false,
            },
        ),
        (
            b"delete k 0\r\n",
            R::Delete {
                key: b"k",
                noreply: false,
            },
        ),
        (
            b"delete k noreply\r\n",
            R::Delete {
                key: b"k",
                noreply: true,
            },
        ),
        (
            b"delete k 0 noreply\r\n",
            R::Delete {
                key: b"k",
                noreply: true,
            },
        ),
        (
            b"incr k 5\r\n",
            R::Incr {
                key: b"k",
                delta: 5,
                noreply: false,
            },
        ),
        (
            b"incr k 18446744073709551615\r\n",
            R::Incr {
                key: b"k",
                delta: u64::MAX,
                noreply: false,
            },
        ),
        (
            b"incr k 1 2\r\n",
            R::Incr {
                key: b"k",
                delta: 1,
                noreply: false,
            },
        ),
        (
            b"decr k 1 noreply\r\n",
            R::Decr {
                key: b"k",
                delta: 1,
                noreply: true,
            },
        ),
        (
            b"touch k 10\r\n",
            R::Touch {
                key: b"k",
                exptime: 10,
                noreply: false,
            },
        ),
        (
            b"touch k 10 noreply\r\n",
            R::Touch {
                key: b"k",
                exptime: 10,
                noreply: true,
            },
        ),
        (
            b"touch k 1 2\r\n",
            R::Touch {
                key: b"k",
                exptime: 1,
                noreply: false,
            },
        ),
        (
            b"flush_all\r\n",
            R::FlushAll {
                delay: 0,
                noreply: false,
            },
        ),
        (
            b"flush_all 10\r\n",
            R::FlushAll {
                delay: 10,
                noreply: false,
            },
        ),
        (
            b"flush_all -1\r\n",
            R::FlushAll {
                delay: -1,
                noreply: false,
            },
        ),
        (
            b"flush_all noreply\r\n",
            R::FlushAll {
                delay: 0,
                noreply: true,
            },
        ),
        (
            b"flush_all 10 noreply\r\n",
            R::FlushAll {
                delay: 10,
                noreply: true,
            },
        ),
        (
            b"flush_all 1 2\r\n",
            R::FlushAll {
                delay: 1,
                noreply: false,
            },
        ),
        (
            b"verbosity 1\r\n",
            R::Verbosity {
                level: 1,
                noreply: false,
            },
        ),
        (
            b"verbosity 1 noreply\r\n",
            R::Verbosity {
                level: 1,
                noreply: true,
            },
        ),
        (
            b"verbosity 1 2\r\n",
            R::Verbosity {
                level: 1,
                noreply: false,
            },
        ),
        (b"version\r\n", R::Version),
        (b"version x\r\n", R::Version),
        (b"quit\r\n", R::Quit),
        (b"quit x\r\n", R::Quit),
        (b"stats\r\n", R::Stats { args: t(b"") }),
        (
            b"stats settings\r\n",
            R::Stats {
                args: t(b"settings"),
            },
        ),
        (
            b"stats detail on\r\n",
            R::Stats {
                args: t(b"detail on"),
            },
        ),
        (b"mn\r\n", R::MetaNoop),
        (b"mn foo\r\n", R::MetaNoop),
    ];
    for (bytes, want) in &cases {
        assert_eq!(
            &parse_one(bytes),
            want,
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn keys_and_tokens_iterate() {
    let TextRequest::Get { keys } = parse_one(b"get a  bb ccc\r\n") else {
        panic!("not a get");
    };
    assert_eq!(keys.collect::<Vec<_>>(), [&b"a"[..], b"bb", b"ccc"]);
    let TextRequest::Gat { keys, .. } = parse_one(b"gat 5 x y\r\n") else {
        panic!("not a gat");
    };
    assert_eq!(keys.count(), 2);
    let TextRequest::Stats { args } = parse_one(b"stats  detail   dump\r\n") else {
        panic!("not stats");
    };
    assert_eq!(args.collect::<Vec<_>>(), [&b"detail"[..], b"dump"]);
    assert!(Tokens::new(b"   ").is_empty());
}

#[test]
fn noreply_accessor() {
    assert!(parse_one(b"set k 0 0 1 noreply\r\nx\r\n").noreply());
    assert!(parse_one(b"flush_all noreply\r\n").noreply());
    assert!(!parse_one(b"get k\r\n").noreply());
    assert!(!parse_one(b"mg k q\r\n").noreply());
}

fn long(n: usize) -> Vec<u8> {
    vec![b'k'; n]
}

#[test]
fn classic_errors() {
    use TextErrorKind as K;
    let key251 = long(251);
    let mut cases: Vec<(Vec<u8>, TextErrorKind, usize, bool)> = vec![
        (b"\r\n".to_vec(), K::UnknownCommand, 2, false),
        (b"\n".to_vec(), K::UnknownCommand, 1, false),
        (b"  \r\n".to_vec(), K::UnknownCommand, 4, false),
        (b"foo\r\n".to_vec(), K::UnknownCommand, 5, false),
        (b"GET a\r\n".to_vec(), K::UnknownCommand, 7, false),
        (b"GET / HTTP/1.1\r\n".to_vec(), K::HttpRequest, 16, false),
        (b"set / HTTP/1.1\r\n".to_vec(), K::UnknownCommand, 16, false),
        (b"get\r\n".to_vec(), K::UnknownCommand, 5, false),
        (b"gets \r\n".to_vec(), K::UnknownCommand, 7, false),
        (b"gat\r\n".to_vec(), K::UnknownCommand, 5, false),
        (b"gat x a\r\n".to_vec(), K::InvalidExptime, 9, false),
        (b"get a\x01\r\n".to_vec(), K::BadCommandLineFormat, 8, false),
        (b"get a\r\r\n".to_vec(), K::BadCommandLineFormat, 8, false),
        (b"set k 0 0\r\n".to_vec(), K::UnknownCommand, 11, false),
        (
            b"set k 0 0 1 noreply extra\r\nx\r\n".to_vec(),
            K::UnknownCommand,
            27,
            false,
        ),
        (
            b"set k -1 0 1\r\nx\r\n".to_vec(),
            K::BadCommandLineFormat,
            14,
            false,
        ),
        (
            b"set k 0 0 1x noreply\r\n".to_vec(),
            K::BadCommandLineFormat,
            22,
            true,
        ),
        (
            b"set k 0 0 -1\r\n".to_vec(),
            K::BadCommandLineFormat,
            14,
            false,
        ),
        (
            b"set k 0 0 2147483647\r\n".to_vec(),
            K::BadCommandLineFormat,
            22,
            false,
        ),
        (
            b"set k 0 x 1\r\n".to_vec(),
            K::BadCommandLineFormat,
            13,
            false,
        ),
        (
            b"cas k 0 0 1 abc\r\n".to_vec(),
            K::BadCommandLineFormat,
            17,
            false,
        ),
        (b"cas k 0 0 1\r\n".to_vec(), K::UnknownCommand, 13, false),
        // The data block must end in \r\n; memcached consumes <bytes> + 2 either way.
        (b"set k 0 0 1\r\nxyz".to_vec(), K::BadDataChunk, 16, false),
        (b"set k 0 0 1\r\nx\ng".to_vec(), K::BadDataChunk, 16, false),
        (
            b"set k 0 0 1 noreply\r\nxy\r\n".to_vec(),
            K::BadDataChunk,
            24,
            true,
        ),
        // Refused before the data arrives; the skip covers data and \r\n.
        (
            b"set k 0 0 2000000\r\n".to_vec(),
            K::ObjectTooLarge,
            19 + 2_000_002,
            false,
        ),
        (
            b"append k 0 0 1048577 noreply\r\n".to_vec(),
            K::ObjectTooLarge,
            30 + 1_048_579,
            true,
        ),
        // Control characters in a key: refused, data skipped (memcached would store it).
        (
            b"set k\x01 0 0 1\r\nx\r\n".to_vec(),
            K::BadCommandLineFormat,
            17,
            false,
        ),
        (b"delete\r\n".to_vec(), K::UnknownCommand, 8, false),
        (b"delete k 1\r\n".to_vec(), K::DeleteUsage, 12, false),
        (b"delete k 1 noreply\r\n".to_vec(), K::DeleteUsage, 20, true),
        (
            b"delete k noreply 0\r\n".to_vec(),
            K::DeleteUsage,
            20,
            false,
        ),
        (b"delete k x y z\r\n".to_vec(), K::UnknownCommand, 16, false),
        (b"incr\r\n".to_vec(), K::UnknownCommand, 6, false),
        (b"incr k\r\n".to_vec(), K::UnknownCommand, 8, false),
        (
            b"incr k -1\r\n".to_vec(),
            K::InvalidDeltaArgument,
            11,
            false,
        ),
        (
            b"incr k abc noreply\r\n".to_vec(),
            K::InvalidDeltaArgument,
            20,
            true,
        ),
        (
            b"decr k 18446744073709551616\r\n".to_vec(),
            K::InvalidDeltaArgument,
            29,
            false,
        ),
        (b"touch k x\r\n".to_vec(), K::InvalidExptime, 11, false),
        (b"touch k\r\n".to_vec(), K::UnknownCommand, 9, false),
        (b"flush_all x\r\n".to_vec(), K::InvalidExptime, 13, false),
        (
            b"flush_all 1 2 3\r\n".to_vec(),
            K::UnknownCommand,
            17,
            false,
        ),
        (
            b"flush_all noreply 5\r\n".to_vec(),
            K::InvalidExptime,
            21,
            false,
        ),
        (b"verbosity\r\n".to_vec(), K::UnknownCommand, 11, false),
        (
            b"verbosity x\r\n".to_vec(),
            K::BadCommandLineFormat,
            13,
            false,
        ),
        (
            b"verbosity noreply\r\n".to_vec(),
            K::BadCommandLineFormat,
            19,
            true,
        ),
        (b"m\r\n".to_vec(), K::UnknownCommand, 3, false),
        (b"mx a\r\n".to_vec(), K::UnknownCommand, 6, false),
        (b"mg\r\n".to_vec(), K::UnknownCommand, 4, false),
    ];
    let mut get_long = b"get a ".to_vec();
    get_long.extend_from_slice(&key251);
    get_long.extend_from_slice(b" b\r\n");
    let n = get_long.len();
    cases.push((get_long, K::BadCommandLineFormat, n, false));
    // A too-long key on a storage line skips the line only, as in memcached.
    let mut set_long = b"set ".to_vec();
    set_long.extend_from_slice(&key251);
    set_long.extend_from_slice(b" 0 0 1 noreply\r\n");
    let n = set_long.len();
    set_long.extend_from_slice(b"x\r\n");
    cases.push((set_long, K::BadCommandLineFormat, n, true));
    let mut delete_long = b"delete ".to_vec();
    delete_long.extend_from_slice(&key251);
    delete_long.extend_from_slice(b"\r\n");
    let n = delete_long.len();
    cases.push((delete_long, K::BadCommandLineFormat, n, false));

    for (bytes, kind, skip, noreply) in &cases {
        let e = parse_text(bytes, &limits())
            .expect_err(&format!("{:?} should fail", String::from_utf8_lossy(bytes)));
        assert_eq!(
            (e.kind, e.skip, e.noreply),
            (*kind, *skip, *noreply),
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn error_replies() {
    let e = parse_text(b"set k 0 0 1 noreply\r\nxy\r\n", &limits()).expect_err("chunk");
    assert_eq!(e.reply(), b"");
    let e = parse_text(b"set k 0 0 1\r\nxy\r\n", &limits()).expect_err("chunk");
    assert_eq!(e.reply(), b"CLIENT_ERROR bad data chunk\r\n");
    let e = parse_text(b"delete k 1\r\n", &limits()).expect_err("usage");
    assert_eq!(
        e.reply(),
        &b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"[..]
    );
    let e = parse_text(b"set k 0 0 2000000\r\n", &limits()).expect_err("large");
    assert_eq!(e.reply(), b"SERVER_ERROR object too large for cache\r\n");
    let e = parse_text(b"GET / HTTP/1.0\r\n", &limits()).expect_err("http");
    assert!(e.closes_connection());
    assert_eq!(e.reply(), b"");
}

#[test]
fn incomplete() {
    let cases: &[&[u8]] = &[
        b"",
        b"g",
        b"get",
        b"get a\r",
        b"set k 0 0 3\r\n",
        b"set k 0 0 3\r\nab",
        b"set k 0 0 3\r\nabc",
        b"set k 0 0 3\r\nabc\r",
        b"cas k 0 0 3 1\r\nabc\r",
        b"ms k 3\r\nabc",
    ];
    for &bytes in cases {
        assert_eq!(
            parse_text(bytes, &limits()),
            Ok(None),
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn line_limits() {
    let l = limits();
    // A key of exactly 250 bytes is fine, 251 is not.
    let mut get = b"get ".to_vec();
    get.extend_from_slice(&long(250));
    get.extend_from_slice(b"\r\n");
    assert!(matches!(parse_text(&get, &l), Ok(Some(_))));

    // A line without a newline closes the connection, silently, once it fills the limit.
    let mut junk = b"foo ".to_vec();
    junk.extend_from_slice(&long(16379));
    assert_eq!(junk.len(), 16383);
    assert_eq!(parse_text(&junk, &l), Ok(None));
    junk.push(b'k');
    let e = parse_text(&junk, &l).expect_err("too long");
    assert_eq!(e.kind, TextErrorKind::LineTooLong);
    assert!(e.closes_connection());
    assert_eq!(e.reply(), b"");

    // With its newline present: 16384 bytes with the "\n" are served, one more is not.
    let mut line = b"set ".to_vec();
    line.extend_from_slice(&long(16377));
    line.extend_from_slice(b" 0 0 1\r\n");
    assert_eq!(line.len(), 16389);
    assert_eq!(
        parse_text(&line, &l).expect_err("too long").kind,
        TextErrorKind::LineTooLong
    );
    let mut exact = b"bogus ".to_vec();
    exact.extend_from_slice(&long(16376));
    exact.extend_from_slice(b"\r\n");
    assert_eq!(exact.len(), 16384);
    assert_eq!(
        parse_text(&exact, &l).expect_err("unknown").kind,
        TextErrorKind::UnknownCommand
    );
    exact.insert(0, b' ');
    assert_eq!(
        parse_text(&exact, &l).expect_err("too long").kind,
        TextErrorKind::LineTooLong
    );

    // A 3000-byte key on a whole line is a bad key, as memcached answers it.
    let mut line = b"set ".to_vec();
    line.extend_from_slice(&long(3000));
    line.extend_from_slice(b" 0 0 1\r\nx\r\n");
    assert_eq!(
        parse_text(&line, &l).expect_err("bad key").kind,
        TextErrorKind::BadCommandLineFormat
    );

    // get and gets lines may grow, up to get_line_len_max.
    let mut multiget = b"gets".to_vec();
    for i in 0..2000 {
        multiget.extend_from_slice(format!(" key:{i}").as_bytes());
    }
    assert!(multiget.len() > 10_000);
    assert_eq!(parse_text(&multiget, &l), Ok(None));
    multiget.extend_from_slice(b"\r\n");
    let TextRequest::Gets { keys } = parse_one(&multiget) else {
        panic!("not gets");
    };
    assert_eq!(keys.count(), 2000);
    let tight = Limits {
        get_line_len_max: 4096,
        ..l
    };
    assert_eq!(
        parse_text(&multiget, &tight).expect_err("limit").kind,
        TextErrorKind::LineTooLong
    );
}

#[test]
fn value_limits() {
    // With -I 1m, key "k" and flags 0, memcached stores 1048516 bytes and no more: the
    // 60 bytes left are its item header, the key, the CRLF and the CAS.
    let l = limits();
    let mut at_limit = b"set k 0 0 1048516\r\n".to_vec();
    at_limit.extend_from_slice(&vec![b'v'; 1_048_516]);
    at_limit.extend_from_slice(b"\r\n");
    let TextRequest::Store(s) = parse_one(&at_limit) else {
        panic!("not a store");
    };
    assert_eq!(s.data.len(), 1_048_516);
    let e = parse_text(b"set k 0 0 1048517\r\n", &l).expect_err("large");
    assert_eq!(e.kind, TextErrorKind::ObjectTooLarge);
    // Non-zero flags take 4 bytes more.
    let e = parse_text(b"set k 1 0 1048513\r\n", &l).expect_err("large");
    assert_eq!(e.kind, TextErrorKind::ObjectTooLarge);
    let small = Limits {
        item_size_max: 1024,
        ..l
    };
    let e = parse_text(b"set k 0 0 965\r\n", &small).expect_err("large");
    assert_eq!((e.kind, e.skip), (TextErrorKind::ObjectTooLarge, 15 + 967));
    let mut fits = b"set k 0 0 964\r\n".to_vec();
    fits.extend_from_slice(&[b'v'; 964]);
    fits.extend_from_slice(b"\r\n");
    assert!(matches!(parse_text(&fits, &small), Ok(Some(_))));
}

/// A `set` or `ms` refused for its size names the key whose item must go; `add` and the
/// others do not (memcached's "avoid stale data").
#[test]
fn too_large_drops_the_stale_item() {
    let small = Limits {
        item_size_max: 1024,
        ..limits()
    };
    // (request line, the key whose item goes, whether that key is base64)
    type Case = (&'static [u8], Option<&'static [u8]>, bool);
    let cases: &[Case] = &[
        (b"set key 0 0 2000\r\n", Some(b"key"), false),
        (b"set key 0 0 2000 noreply\r\n", Some(b"key"), false),
        (b"add key 0 0 2000\r\n", None, false),
        (b"append key 0 0 2000\r\n", None, false),
        (b"cas key 0 0 2000 1\r\n", None, false),
        (b"ms key 2000\r\n", Some(b"key"), false),
        (b"ms key 2000 MA\r\n", Some(b"key"), false),
        (b"ms a2V5 2000 b\r\n", Some(b"a2V5"), true),
    ];
    for &(line, key, base64) in cases {
        let e = parse_text(line, &small).expect_err("too large");
        assert_eq!(e.kind, TextErrorKind::ObjectTooLarge);
        let stale = e.stale_key(line);
        assert_eq!(stale.map(|k| k.raw()), key, "{line:?}");
        assert_eq!(stale.map(|k| k.is_base64()), key.map(|_| base64));
    }
    // A base64 key is sized decoded: "a2V5" is the 3-byte "key".
    let fits = 1024 - 59 - 3;
    let line = format!("ms a2V5 {} b\r\n", fits + 1);
    assert!(parse_text(line.as_bytes(), &small).is_err());
    let line = format!("ms a2V5 {fits} b\r\n");
    assert!(matches!(parse_text(line.as_bytes(), &small), Ok(None)));
}

/// A pipeline exercising every classic command, good and bad, noreply and not.
pub(crate) fn classic_pipeline() -> Vec<u8> {
    let mut s = Vec::new();
    for part in [
        &b"set k 1 2 3\r\nabc\r\n"[..],
        b"get k\r\n",
        b"gets a b c\r\n",
        b"set k 0 0 1 noreply\r\nxy\r\n",
        b"add k 0 0 1 noreply\r\nx\r\n",
        b"cas k 0 0 1 5\r\nx\r\n",
        b"append k 0 0 2\r\nzz\r\n",
        b"prepend k 0 0 2\r\nzz\r\n",
        b"replace k 0 0 0\r\n\r\n",
        b"incr k 5\r\ndecr k 5 noreply\r\nincr k -1\r\n",
        b"touch k 10\r\ngat 1 k\r\ngats 1 k l\r\n",
        b"delete k\r\ndelete k 0 noreply\r\ndelete k 1\r\n",
        b"flush_all\r\nflush_all 5 noreply\r\nverbosity 1\r\nversion\r\nstats items\r\n",
        b"bogus\r\n\r\nset k 0 0 1\r\nx\r\nquit\r\n",
        b"set k 0 0 5000000 noreply\r\n",
        &[b'x'; 64],
    ] {
        s.extend_from_slice(part);
    }
    s
}

#[test]
fn pipelined_and_split_inputs_agree() {
    let l = limits();
    let stream = classic_pipeline();
    let whole = drive(&stream, &l);
    let bytewise = drive_bytewise(&stream, &l);
    assert_eq!(whole, bytewise);
    // Errors: the bad chunk and the "\n" it leaves, incr -1, delete 1, bogus, the empty
    // line, and the oversized set swallowing the 64 bytes of a value that never completes.
    let errors = whole
        .iter()
        .filter(|s| matches!(s, Step::Error(..)))
        .count();
    assert_eq!(errors, 7, "{whole:#?}");
    assert_eq!(whole.len(), 7 + 22, "{whole:#?}");
    assert!(matches!(
        whole.last(),
        Some(Step::Error(TextErrorKind::ObjectTooLarge, true))
    ));
}

#[test]
fn bad_chunk_leaves_the_rest_to_be_read() {
    // memcached reads <bytes> + 2 bytes; the leftover "\nget k\r\n" is an empty command
    // (ERROR) followed by the get.
    let steps = drive(b"set k 0 0 1\r\nxy\r\nget k\r\n", &limits());
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[0], Step::Error(TextErrorKind::BadDataChunk, false));
    assert_eq!(steps[1], Step::Error(TextErrorKind::UnknownCommand, false));
    assert!(matches!(&steps[2], Step::Request(r) if r.starts_with("Get")));
}

#[test]
fn writes_are_what_client_pause_write_holds() {
    let limits = Limits::default();
    let writes = |line: &[u8]| match parse_text(line, &limits) {
        Ok(Some((req, _))) => req.writes(),
        other => panic!("{other:?}"),
    };
    for line in [
        &b"get a b\r\n"[..],
        b"gets a\r\n",
        b"version\r\n",
        b"stats\r\n",
        b"verbosity 1\r\n",
        b"mg a v f c\r\n",
        b"mn\r\n",
        b"me a\r\n",
    ] {
        assert!(!writes(line), "{}", String::from_utf8_lossy(line));
    }
    for line in [
        &b"set a 0 0 1\r\nx\r\n"[..],
        b"cas a 0 0 1 5\r\nx\r\n",
        b"append a 0 0 1\r\nx\r\n",
        b"delete a\r\n",
        b"incr a 1\r\n",
        b"decr a 1\r\n",
        b"touch a 10\r\n",
        b"gat 10 a\r\n",
        b"gats 10 a\r\n",
        b"flush_all\r\n",
        b"mg a v T30\r\n",
        b"mg a v N30\r\n",
        b"ms a 1\r\nx\r\n",
        b"md a\r\n",
        b"ma a\r\n",
    ] {
        assert!(writes(line), "{}", String::from_utf8_lossy(line));
    }
}
