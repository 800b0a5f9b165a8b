//! Table-driven tests of the classic text commands over raw bytes, and the connection
//! driver shared with the meta tests.

use super::*;

mod errors;

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
