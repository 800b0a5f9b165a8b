//! Table-driven tests of the meta commands over raw bytes. Expected error texts were
//! checked against memcached 1.6.18.

use super::*;
use crate::parse_text;
use crate::text::tests::{drive, drive_bytewise, Step};

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

fn mg(bytes: &[u8]) -> MetaGet<'_> {
    match parse_one(bytes) {
        TextRequest::MetaGet(m) => m,
        other => panic!("{other:?}"),
    }
}

fn ms(bytes: &[u8]) -> MetaSet<'_> {
    match parse_one(bytes) {
        TextRequest::MetaSet(m) => m,
        other => panic!("{other:?}"),
    }
}

fn ma(bytes: &[u8]) -> MetaArithmetic<'_> {
    match parse_one(bytes) {
        TextRequest::MetaArithmetic(m) => m,
        other => panic!("{other:?}"),
    }
}

fn md(bytes: &[u8]) -> MetaDelete<'_> {
    match parse_one(bytes) {
        TextRequest::MetaDelete(m) => m,
        other => panic!("{other:?}"),
    }
}

#[test]
fn meta_get_flags() {
    let m = mg(b"mg a\r\n");
    assert_eq!(m.key.raw(), b"a");
    assert!(!m.key.is_base64());
    assert_eq!(m.flags, MetaFlags::default());

    let m = mg(b"mg a v k c f s t h l O123 q u\r\n");
    let f = m.flags;
    assert!(f.return_value && f.return_key && f.return_cas && f.return_flags);
    assert!(f.return_size && f.return_ttl && f.return_hit && f.return_last_access);
    assert!(f.quiet && f.no_bump);
    assert_eq!(f.opaque, Some(&b"123"[..]));
    assert_eq!(
        f.tokens().collect::<Vec<_>>(),
        [
            &b"v"[..],
            b"k",
            b"c",
            b"f",
            b"s",
            b"t",
            b"h",
            b"l",
            b"O123",
            b"q",
            b"u"
        ]
    );

    let m = mg(b"mg a N30 R10 T-1\r\n");
    assert_eq!(m.flags.vivify_ttl, Some(30));
    assert_eq!(m.flags.recache_ttl, Some(10));
    assert_eq!(m.flags.ttl, Some(-1));

    // Recognised by the first byte; P and L are proxy hints and ignored.
    let m = mg(b"mg a vv P/x L/y\r\n");
    assert!(m.flags.return_value);
    assert_eq!(mg(b"mg a O\r\n").flags.opaque, Some(&b""[..]));
    // Flags of other commands are accepted (and ignored by mg), as in memcached.
    let m = mg(b"mg a C6 E5 F7 MS D2 J3 I x\r\n");
    assert_eq!(m.flags.compare_cas, Some(6));
    assert_eq!(m.flags.new_cas, Some(5));
    assert_eq!(m.flags.client_flags, Some(7));
    assert_eq!(m.flags.mode, Some(b'S'));
    assert_eq!((m.flags.delta, m.flags.initial), (Some(2), Some(3)));
    assert!(m.flags.invalidate && m.flags.remove_value);
    // 32-bit truncation of the numeric tokens.
    assert_eq!(mg(b"mg a T4294967297\r\n").flags.ttl, Some(1));
}

#[test]
fn base64_keys() {
    let m = mg(b"mg YWJj b k v\r\n");
    assert!(m.key.is_base64());
    assert_eq!(m.key.raw(), b"YWJj");
    assert_eq!(m.key.with_bytes(<[u8]>::to_vec), b"abc");
    assert_eq!(
        m.key.decoded().map(|k| k.as_bytes().to_vec()),
        Some(b"abc".to_vec())
    );
    let plain = mg(b"mg abc v\r\n");
    assert_eq!(plain.key.with_bytes(<[u8]>::to_vec), b"abc");
    assert!(plain.key.decoded().is_none());

    let s = ms(b"ms 44OG44K544OI 2 b\r\nhi\r\n");
    assert_eq!(s.key.with_bytes(<[u8]>::to_vec), "テスト".as_bytes());

    let TextRequest::MetaDebug { key } = parse_one(b"me YWJj b\r\n") else {
        panic!("not me");
    };
    assert!(key.is_base64());
    let TextRequest::MetaDebug { key } = parse_one(b"me a x\r\n") else {
        panic!("not me");
    };
    assert!(!key.is_base64());
}

#[test]
fn meta_set_modes() {
    let s = ms(b"ms a 2\r\nhi\r\n");
    assert_eq!((s.data, s.mode), (&b"hi"[..], MetaSetMode::Set));
    assert_eq!(s.store_mode(), StoreMode::Set);
    let s = ms(b"ms a 2 T30 F5 c k I C9 E10 q MS\r\nhi\r\n");
    assert_eq!(s.flags.ttl, Some(30));
    assert_eq!(s.flags.client_flags, Some(5));
    assert_eq!(s.flags.compare_cas, Some(9));
    assert_eq!(s.flags.new_cas, Some(10));
    assert!(s.flags.invalidate && s.flags.quiet && s.flags.return_cas);
    assert_eq!(s.store_mode(), StoreMode::Cas);
    let cases: &[(&[u8], MetaSetMode, StoreMode)] = &[
        (b"ms a 1 ME\r\nx\r\n", MetaSetMode::Add, StoreMode::Add),
        (b"ms a 1 ME C5\r\nx\r\n", MetaSetMode::Add, StoreMode::Add),
        (
            b"ms a 1 MA\r\nx\r\n",
            MetaSetMode::Append,
            StoreMode::Append,
        ),
        (
            b"ms a 1 MA C5\r\nx\r\n",
            MetaSetMode::Append,
            StoreMode::Append,
        ),
        (
            b"ms a 1 MP\r\nx\r\n",
            MetaSetMode::Prepend,
            StoreMode::Prepend,
        ),
        (
            b"ms a 1 MR\r\nx\r\n",
            MetaSetMode::Replace,
            StoreMode::Replace,
        ),
        (
            b"ms a 1 MR C5\r\nx\r\n",
            MetaSetMode::Replace,
            StoreMode::Cas,
        ),
        (b"ms a 1 MS\r\nx\r\n", MetaSetMode::Set, StoreMode::Set),
        (b"ms a 1 C0\r\nx\r\n", MetaSetMode::Set, StoreMode::Cas),
    ];
    for &(bytes, mode, store) in cases {
        let s = ms(bytes);
        assert_eq!((s.mode, s.store_mode()), (mode, store), "{bytes:?}");
    }
    // 32-bit truncation of the data length, as in memcached.
    assert_eq!(ms(b"ms a 4294967297\r\nx\r\n").data, b"x");
    assert_eq!(ms(b"ms a 0\r\n\r\n").data, b"");
}

#[test]
fn meta_delete_and_arithmetic() {
    let d = md(b"md a\r\n");
    assert_eq!(d.flags, MetaFlags::default());
    let d = md(b"md a q I T30 C5 x k O1\r\n");
    assert!(d.flags.quiet && d.flags.invalidate && d.flags.remove_value);
    assert_eq!((d.flags.ttl, d.flags.compare_cas), (Some(30), Some(5)));

    let a = ma(b"ma a\r\n");
    assert_eq!((a.op, a.delta, a.initial), (CounterOp::Incr, 1, 0));
    let a = ma(b"ma a MD D5 J10 N0 v t c q\r\n");
    assert_eq!((a.op, a.delta, a.initial), (CounterOp::Decr, 5, 10));
    assert_eq!(a.flags.vivify_ttl, Some(0));
    for (bytes, op) in [
        (&b"ma a M-\r\n"[..], CounterOp::Decr),
        (b"ma a M+\r\n", CounterOp::Incr),
        (b"ma a MI\r\n", CounterOp::Incr),
    ] {
        assert_eq!(ma(bytes).op, op);
    }
    assert_eq!(ma(b"ma a D18446744073709551615\r\n").delta, u64::MAX);
}

#[test]
fn token_count_limit() {
    // 19 tokens are fine, 20 are too many (memcached counts a terminal token: ntokens > 20).
    let ok = b"mg a h k s c t f l v u q P L O C1 D1 J1 I\r\n";
    assert_eq!(ok.split(|&b| b == b' ').count(), 19);
    assert!(matches!(parse_one(ok), TextRequest::MetaGet(_)));
    let e = parse_text(
        b"mg a h k s c t f l v u q P L O C1 D1 J1 I x\r\n",
        &limits(),
    )
    .expect_err("too many");
    assert_eq!(e.kind, TextErrorKind::MetaGetFlagsTooLong);
    let ms_ok = b"ms a 1 h k s c t f l v u q P L O C1 D1 J1\r\nx\r\n";
    assert!(matches!(parse_one(ms_ok), TextRequest::MetaSet(_)));
    let e = parse_text(
        b"ms a 1 h k s c t f l v u q P L O C1 D1 J1 I\r\nx\r\n",
        &limits(),
    )
    .expect_err("too many");
    assert_eq!((e.kind, e.skip), (TextErrorKind::MetaFlagsTooLong, 45));
}

#[test]
fn meta_errors() {
    use TextErrorKind as K;
    let opaque33 = b"mg a O123456789012345678901234567890123\r\n";
    let cases: Vec<(&[u8], TextErrorKind)> = vec![
        (b"mg a zz\r\n", K::InvalidFlag),
        (b"mg a v v\r\n", K::DuplicateFlag),
        (b"mg a v v2\r\n", K::DuplicateFlag),
        (b"mg a \xc3\xa9\r\n", K::DuplicateFlag),
        (b"mg a Tx\r\n", K::BadToken),
        (b"mg a N\r\n", K::BadToken),
        (b"mg a Fx\r\n", K::BadCommandLineFormat),
        (b"mg a Fx Tx\r\n", K::BadToken),
        (b"mg a Tx Fx\r\n", K::BadToken),
        (b"mg a Tx zz\r\n", K::InvalidFlag),
        (
            b"mg a h k s c t f l v u q P L O I C D J\r\n",
            K::InvalidInitialValue,
        ),
        (b"mg a D\r\n", K::InvalidDeltaValue),
        (b"mg a MEE\r\n", K::ModeTokenLength),
        (b"mg !!! b\r\n", K::KeyDecode),
        (b"mg YWI b\r\n", K::KeyDecode),
        (b"mg a b Tx\r\n", K::BadToken),
        (opaque33, K::OpaqueTooLong),
        (
            b"mg a O12345678901234567890123456789012\r\n",
            K::OpaqueTooLong,
        ),
        (b"mg a\x01 v\r\n", K::BadCommandLineFormat),
        (b"md a zz\r\n", K::InvalidOrDuplicateFlag),
        (b"md a v v\r\n", K::InvalidOrDuplicateFlag),
        (b"md a Tx\r\n", K::InvalidOrDuplicateFlag),
        (
            b"md a O123456789012345678901234567890123\r\n",
            K::OpaqueTooLong,
        ),
        (
            b"md a h k s c t f l v u q P L O I C D J F\r\n",
            K::MetaFlagsTooLong,
        ),
        (b"ma a Dx\r\n", K::InvalidOrDuplicateFlag),
        (b"ma a Jx\r\n", K::InvalidOrDuplicateFlag),
        (b"ma a MEE\r\n", K::InvalidOrDuplicateFlag),
        (b"ma a MX\r\n", K::InvalidMetaArithmeticMode),
        (b"ma a Mi\r\n", K::InvalidMetaArithmeticMode),
        (b"me\r\n", K::BadCommandLineFormat),
        (b"me !!! b\r\n", K::BadCommandLineFormat),
        (b"ms a\r\n", K::BadCommandLineFormat),
        (b"ms a x\r\n", K::BadCommandLineFormat),
        (b"ms a -1\r\n", K::BadCommandLineFormat),
        (b"ms a 2147483647\r\n", K::BadCommandLineFormat),
    ];
    for (bytes, kind) in &cases {
        let e = parse_text(bytes, &limits())
            .expect_err(&format!("{:?} should fail", String::from_utf8_lossy(bytes)));
        assert_eq!(
            (e.kind, e.skip, e.noreply),
            (*kind, bytes.len(), false),
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    let mut long_key = b"mg ".to_vec();
    long_key.extend_from_slice(&[b'k'; 251]);
    long_key.extend_from_slice(b" v\r\n");
    for cmd in [b"mg", b"ms", b"md", b"ma", b"me"] {
        long_key[..2].copy_from_slice(cmd);
        let e = parse_text(&long_key, &limits()).expect_err("long key");
        assert_eq!(e.kind, K::BadCommandLineFormat);
        assert_eq!(e.skip, long_key.len());
    }
}

#[test]
fn meta_set_errors_swallow_the_data() {
    use TextErrorKind as K;
    // (request, error, whether the data block is skipped too)
    let cases: &[(&[u8], TextErrorKind, bool)] = &[
        (b"ms a 1 zz\r\nx\r\n", K::InvalidFlag, true),
        (b"ms a 1 v v\r\nx\r\n", K::DuplicateFlag, true),
        (b"ms a 1 MX\r\nx\r\n", K::InvalidMetaSetMode, true),
        (
            b"ms a 1 MD O11111111111111111111111111111111\r\nx\r\n",
            K::InvalidMetaSetMode,
            true,
        ),
        (b"ms a 1 Ms\r\nx\r\n", K::InvalidMetaSetMode, true),
        (b"ms a 1 MEE\r\nx\r\n", K::ModeTokenLength, true),
        (b"ms a 1 Fx\r\nx\r\n", K::BadCommandLineFormat, true),
        (b"ms a 1 C-1\r\nx\r\n", K::BadToken, true),
        (b"ms !!! 1 b\r\nx\r\n", K::KeyDecode, true),
        (
            b"ms a 1 O123456789012345678901234567890123\r\nx\r\n",
            K::OpaqueTooLong,
            true,
        ),
        (b"ms a\x01 1\r\nx\r\n", K::BadCommandLineFormat, true),
        (b"ms a 1 q\r\nxy\r\n", K::BadDataChunk, false),
        (
            b"ms a 1 h k s c t f l v u q P L O I C 5 D J\r\nx\r\n",
            K::MetaFlagsTooLong,
            false,
        ),
    ];
    for &(bytes, kind, data_too) in cases {
        let e = parse_text(bytes, &limits()).expect_err("ms error");
        let line = bytes.iter().position(|&b| b == b'\n').expect("line") + 1;
        let skip = if kind == K::BadDataChunk {
            line + 3
        } else if data_too {
            bytes.len()
        } else {
            line
        };
        assert_eq!(
            (e.kind, e.skip, e.noreply),
            (kind, skip, false),
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    // Too large: refused at once, errors are answered even with q.
    let e = parse_text(b"ms a 2000000 q T0\r\n", &limits()).expect_err("large");
    assert_eq!((e.kind, e.noreply), (K::ObjectTooLarge, false));
    assert_eq!(e.skip, 19 + 2_000_002);
}

#[test]
fn meta_pipeline_split_agrees() {
    let mut stream = Vec::new();
    for part in [
        &b"ms foo 2 T90 F1 q\r\nhi\r\n"[..],
        b"mg foo v q k O1\r\nmg bar v q k O2\r\n",
        b"ms YWJj 3 b MA c\r\nabc\r\n",
        b"ma n N0 J5 v\r\nma n MD D10 q\r\n",
        b"md foo I T30 q\r\nmd foo C99\r\n",
        b"mg foo zz\r\nms foo 1 MZ\r\nx\r\n",
        b"me foo\r\nmn\r\n",
    ] {
        stream.extend_from_slice(part);
    }
    let whole = drive(&stream, &limits());
    assert_eq!(whole, drive_bytewise(&stream, &limits()));
    let errors: Vec<_> = whole
        .iter()
        .filter_map(|s| match s {
            Step::Error(kind, _) => Some(*kind),
            Step::Request(_) => None,
        })
        .collect();
    assert_eq!(
        errors,
        [
            TextErrorKind::InvalidFlag,
            TextErrorKind::InvalidMetaSetMode
        ]
    );
    assert_eq!(whole.len(), 12);
    assert!(matches!(whole.last(), Some(Step::Request(r)) if r == "MetaNoop"));
}
