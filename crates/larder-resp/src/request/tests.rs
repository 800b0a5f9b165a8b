//! Tests of request parsing: table-driven multibulk cases over raw bytes (with the helpers
//! `inline.rs`'s tests share), limits, error texts, pipelining, random splits of random
//! commands, the unauthenticated limits, and resumed parsing. Apart from `request.rs` because
//! they are longer than the parser.

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
