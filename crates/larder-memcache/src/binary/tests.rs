//! Binary request parsing tests over raw packets.

use super::*;

/// Builds a request packet.
pub(crate) fn packet(op: u8, extras: &[u8], key: &[u8], value: &[u8], cas: u64) -> Vec<u8> {
    let body = extras.len() + key.len() + value.len();
    let h = BinaryHeader {
        magic: REQUEST_MAGIC,
        opcode: op,
        key_len: u16::try_from(key.len()).expect("key"),
        extras_len: u8::try_from(extras.len()).expect("extras"),
        data_type: 0,
        vbucket_or_status: 0,
        body_len: u32::try_from(body).expect("body"),
        opaque: 0xdead_beef,
        cas,
    };
    let mut out = h.to_bytes().to_vec();
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    out
}

fn parse(buf: &[u8]) -> Result<Option<(BinaryRequest<'_>, usize)>, BinaryError> {
    parse_binary(buf, &Limits::default())
}

fn one(buf: &[u8]) -> BinaryCommand<'_> {
    match parse(buf) {
        Ok(Some((req, used))) => {
            assert_eq!(used, buf.len());
            assert_eq!(req.opaque, 0xdead_beef);
            req.command
        }
        other => panic!("{other:?}"),
    }
}

fn set_extras(flags: u32, exptime: u32) -> Vec<u8> {
    let mut e = flags.to_be_bytes().to_vec();
    e.extend_from_slice(&exptime.to_be_bytes());
    e
}

fn counter_extras(delta: u64, initial: u64, exptime: u32) -> Vec<u8> {
    let mut e = delta.to_be_bytes().to_vec();
    e.extend_from_slice(&initial.to_be_bytes());
    e.extend_from_slice(&exptime.to_be_bytes());
    e
}

#[test]
fn header_round_trip() {
    let h = BinaryHeader {
        magic: RESPONSE_MAGIC,
        opcode: 0x0c,
        key_len: 0x0102,
        extras_len: 4,
        data_type: 0,
        vbucket_or_status: 0x0081,
        body_len: 0x0a0b_0c0d,
        opaque: 0x1122_3344,
        cas: 0x0102_0304_0506_0708,
    };
    let bytes = h.to_bytes();
    assert_eq!(
        bytes,
        [
            0x81, 0x0c, 0x01, 0x02, 4, 0, 0x00, 0x81, 0x0a, 0x0b, 0x0c, 0x0d, 0x11, 0x22, 0x33,
            0x44, 1, 2, 3, 4, 5, 6, 7, 8
        ]
    );
    assert_eq!(BinaryHeader::parse(&bytes), h);
}

#[test]
fn every_opcode() {
    let t4 = 100u32.to_be_bytes();
    let cases: Vec<(Vec<u8>, BinaryCommand<'static>)> = vec![
        (
            packet(0x00, b"", b"k", b"", 0),
            BinaryCommand::Get { key: b"k" },
        ),
        (
            packet(0x09, b"", b"k", b"", 0),
            BinaryCommand::Get { key: b"k" },
        ),
        (
            packet(0x0c, b"", b"k", b"", 0),
            BinaryCommand::Get { key: b"k" },
        ),
        (
            packet(0x0d, b"", b"k", b"", 0),
            BinaryCommand::Get { key: b"k" },
        ),
        (
            packet(0x1c, &t4, b"k", b"", 0),
            BinaryCommand::Touch {
                key: b"k",
                exptime: 100,
            },
        ),
        (
            packet(0x1d, &t4, b"k", b"", 0),
            BinaryCommand::GetAndTouch {
                key: b"k",
                exptime: 100,
            },
        ),
        (
            packet(0x1e, &t4, b"k", b"", 0),
            BinaryCommand::GetAndTouch {
                key: b"k",
                exptime: 100,
            },
        ),
        (
            packet(0x23, &t4, b"k", b"", 0),
            BinaryCommand::GetAndTouch {
                key: b"k",
                exptime: 100,
            },
        ),
        (
            packet(0x24, &u32::MAX.to_be_bytes(), b"k", b"", 0),
            BinaryCommand::GetAndTouch {
                key: b"k",
                exptime: i64::from(u32::MAX),
            },
        ),
        (
            packet(0x01, &set_extras(7, 60), b"k", b"hello", 0),
            BinaryCommand::Store {
                mode: StoreMode::Set,
                key: b"k",
                flags: 7,
                exptime: 60,
                value: b"hello",
                compare_cas: None,
            },
        ),
        (
            packet(0x11, &set_extras(u32::MAX, 0), b"k", b"", 0),
            BinaryCommand::Store {
                mode: StoreMode::Set,
                key: b"k",
                flags: u32::MAX,
                exptime: 0,
                value: b"",
                compare_cas: None,
            },
        ),
        (
            packet(0x02, &set_extras(0, 0), b"k", b"v", 0),
            BinaryCommand::Store {
                mode: StoreMode::Add,
                key: b"k",
                flags: 0,
                exptime: 0,
                value: b"v",
                compare_cas: None,
            },
        ),
        (
            packet(0x13, &set_extras(0, 0), b"k", b"v", 0),
            BinaryCommand::Store {
                mode: StoreMode::Replace,
                key: b"k",
                flags: 0,
                exptime: 0,
                value: b"v",
                compare_cas: None,
            },
        ),
        // SET/ADD/REPLACE with a CAS become CAS stores, as in memcached.
        (
            packet(0x12, &set_extras(0, 0), b"k", b"v", 9),
            BinaryCommand::Store {
                mode: StoreMode::Cas,
                key: b"k",
                flags: 0,
                exptime: 0,
                value: b"v",
                compare_cas: Some(9),
            },
        ),
        (
            packet(0x0e, b"", b"k", b"tail", 0),
            BinaryCommand::Store {
                mode: StoreMode::Append,
                key: b"k",
                flags: 0,
                exptime: 0,
                value: b"tail",
                compare_cas: None,
            },
        ),
        (
            packet(0x1a, b"", b"k", b"", 5),
            BinaryCommand::Store {
                mode: StoreMode::Prepend,
                key: b"k",
                flags: 0,
                exptime: 0,
                value: b"",
                compare_cas: Some(5),
            },
        ),
        (
            packet(0x04, b"", b"k", b"", 0),
            BinaryCommand::Delete {
                key: b"k",
                compare_cas: None,
            },
        ),
        (
            packet(0x14, b"", b"k", b"", 3),
            BinaryCommand::Delete {
                key: b"k",
                compare_cas: Some(3),
            },
        ),
        (
            packet(0x05, &counter_extras(5, 10, 0), b"n", b"", 0),
            BinaryCommand::Counter {
                op: CounterOp::Incr,
                key: b"n",
                delta: 5,
                initial: 10,
                exptime: Some(0),
                compare_cas: None,
            },
        ),
        (
            packet(0x16, &counter_extras(u64::MAX, 0, u32::MAX), b"n", b"", 0),
            BinaryCommand::Counter {
                op: CounterOp::Decr,
                key: b"n",
                delta: u64::MAX,
                initial: 0,
                exptime: None,
                compare_cas: None,
            },
        ),
        (packet(0x07, b"", b"", b"", 0), BinaryCommand::Quit),
        (packet(0x17, b"", b"", b"", 0), BinaryCommand::Quit),
        (
            packet(0x08, b"", b"", b"", 0),
            BinaryCommand::Flush { delay: 0 },
        ),
        (
            packet(0x18, &t4, b"", b"", 0),
            BinaryCommand::Flush { delay: 100 },
        ),
        (packet(0x0a, b"", b"", b"", 0), BinaryCommand::Noop),
        (packet(0x0b, b"", b"", b"", 0), BinaryCommand::Version),
        (
            packet(0x10, b"", b"", b"", 0),
            BinaryCommand::Stat { group: b"" },
        ),
        (
            packet(0x10, b"", b"settings", b"", 0),
            BinaryCommand::Stat { group: b"settings" },
        ),
        // Trailing bytes after a STAT key are consumed with the packet.
        (
            packet(0x10, b"", b"items", b"junk", 0),
            BinaryCommand::Stat { group: b"items" },
        ),
    ];
    for (bytes, want) in &cases {
        assert_eq!(&one(bytes), want, "{bytes:02x?}");
    }
}

#[test]
fn quiet_and_key_opcodes() {
    for b in 0..=255u8 {
        let Some(op) = Opcode::from_u8(b) else {
            continue;
        };
        assert_eq!(op as u8, b);
    }
    assert!(Opcode::GetKQ.is_quiet() && Opcode::GetKQ.returns_key());
    assert!(Opcode::FlushQ.is_quiet() && !Opcode::Flush.is_quiet());
    assert!(Opcode::GatK.returns_key() && !Opcode::GatK.is_quiet());
    assert!(!Opcode::Noop.is_quiet());
    assert_eq!(Opcode::from_u8(0x1b), None);
    assert_eq!(Opcode::from_u8(0x1f), None);
}

fn kind_of(buf: &[u8]) -> (BinaryErrorKind, usize) {
    match parse(buf) {
        Err(e) => {
            assert!(e.skip >= 1);
            (e.kind, e.skip)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn invalid_lengths_close() {
    let t4 = 1u32.to_be_bytes();
    let cases: Vec<Vec<u8>> = vec![
        packet(0x00, b"abcd", b"k", b"", 0),
        packet(0x00, b"", b"", b"", 0),
        packet(0x00, b"", b"k", b"v", 0),
        packet(0x01, b"abcd", b"k", b"v", 0),
        packet(0x01, &set_extras(0, 0), b"", b"v", 0),
        packet(0x0e, b"abcd", b"k", b"v", 0),
        packet(0x0e, b"", b"", b"v", 0),
        packet(0x04, b"", b"k", b"v", 0),
        packet(0x05, &t4, b"k", b"", 0),
        packet(0x05, &counter_extras(1, 1, 1), b"k", b"x", 0),
        packet(0x0a, b"", b"k", b"", 0),
        packet(0x0b, b"", b"", b"v", 0),
        packet(0x07, &t4, b"", b"", 0),
        packet(0x08, b"ab", b"", b"", 0),
        packet(0x08, b"", b"k", b"", 0),
        packet(0x10, &t4, b"", b"", 0),
        packet(0x1c, b"", b"k", b"", 0),
        packet(0x1d, &t4, b"", b"", 0),
        packet(0x20, b"", b"k", b"", 0),
        packet(0x21, b"", b"", b"", 0),
        packet(0x00, b"", &[b'k'; 251], b"", 0),
        // Key length is checked before the opcode.
        packet(0x50, b"", &[b'k'; 251], b"", 0),
    ];
    for bytes in &cases {
        let (kind, _) = kind_of(bytes);
        assert_eq!(kind, BinaryErrorKind::InvalidArguments, "{bytes:02x?}");
    }
    // 250 is fine.
    let ok = packet(0x00, b"", &[b'k'; 250], b"", 0);
    assert!(matches!(parse(&ok), Ok(Some(_))));
}

#[test]
fn refusals_without_closing() {
    let p = packet(0x50, b"", b"abc", b"xyz", 0);
    assert_eq!(kind_of(&p), (BinaryErrorKind::UnknownCommand, p.len()));
    let p = packet(0x1b, &1u32.to_be_bytes(), b"", b"", 0);
    assert_eq!(kind_of(&p), (BinaryErrorKind::UnknownCommand, p.len()));
    // The header alone is enough to refuse an unknown opcode.
    let p = packet(0x50, b"", b"abc", b"xyz", 0);
    assert_eq!(
        kind_of(&p[..HEADER_LEN]),
        (BinaryErrorKind::UnknownCommand, p.len())
    );
}

#[test]
fn sasl_requests() {
    let p = packet(0x20, b"", b"", b"", 0);
    let (req, used) = parse(&p).expect("valid").expect("complete");
    assert_eq!((req.command, used), (BinaryCommand::SaslListMechs, p.len()));
    let p = packet(0x21, b"", b"PLAIN", b"\0u\0p", 7);
    let (req, _) = parse(&p).expect("valid").expect("complete");
    assert_eq!(
        req.command,
        BinaryCommand::Sasl {
            step: false,
            mechanism: b"PLAIN",
            data: b"\0u\0p"
        }
    );
    assert!(!req.command.writes());
    let p = packet(0x22, b"", b"PLAIN", b"", 0);
    let (req, _) = parse(&p).expect("valid").expect("complete");
    assert!(matches!(
        req.command,
        BinaryCommand::Sasl {
            step: true,
            data: b"",
            ..
        }
    ));
}

#[test]
fn too_large_decided_from_the_header() {
    // Sized as memcached sizes it once extras and key are in: header, key, flags, value.
    let limits = Limits::default();
    let value = vec![b'x'; 1_048_516 - 2];
    let p = packet(0x11, &set_extras(0, 0), b"big", &value[..1], 0);
    let mut p = p[..HEADER_LEN + 8 + 3].to_vec();
    let body = u32::try_from(8 + 3 + value.len() + 1).expect("small");
    p[8..12].copy_from_slice(&body.to_be_bytes());
    assert!(matches!(parse_binary(&p[..HEADER_LEN], &limits), Ok(None)));
    let head = crate::BinaryHeader::parse(p[..HEADER_LEN].try_into().expect("24"));
    assert_eq!(head.bytes_needed(HEADER_LEN), HEADER_LEN + 8 + 3);
    assert_eq!(
        head.bytes_needed(HEADER_LEN + 11),
        HEADER_LEN + body as usize
    );
    let e = parse_binary(&p, &limits).expect_err("too large");
    assert_eq!(e.kind, BinaryErrorKind::TooLarge);
    assert_eq!(e.skip, HEADER_LEN + body as usize);
    assert_eq!(e.opcode, 0x11);
    assert!(!e.closes_connection());
    // SET and SETQ drop the old item.
    assert_eq!(e.stale_key(&p), Some(&b"big"[..]));
    let p = packet(0x01, &set_extras(0, 0), b"big", &value, 0);
    assert!(matches!(parse(&p), Ok(Some(_))));
    let p = packet(0x01, &set_extras(1, 0), b"big", &value, 0);
    let e = parse(&p).expect_err("flags take 4 bytes");
    assert_eq!(e.kind, BinaryErrorKind::TooLarge);
    assert_eq!(e.stale_key(&p), Some(&b"big"[..]));
    // Append carries no flags; ADD keeps the old item.
    let p = packet(0x0e, b"", b"big", &value, 0);
    assert!(matches!(parse(&p), Ok(Some(_))));
    let p = packet(0x02, &set_extras(1, 0), b"big", &value, 0);
    assert_eq!(parse(&p).expect_err("too large").stale_key(&p), None);
    // A tighter body limit refuses what item_size_max allows.
    let tight = Limits {
        binary_body_max: 100,
        ..limits
    };
    let p = packet(0x01, &set_extras(0, 0), b"k", &[b'x'; 100], 0);
    let e = parse_binary(&p, &tight).expect_err("body limit");
    assert_eq!(e.kind, BinaryErrorKind::TooLarge);
}

#[test]
fn bad_magic_and_lengths_close() {
    let mut p = packet(0x0a, b"", b"", b"", 0);
    p[0] = 0x81;
    let e = parse(&p).expect_err("magic");
    assert_eq!(e.kind, BinaryErrorKind::BadMagic);
    assert!(e.closes_connection() && e.status().is_none());
    // One byte is enough to know.
    assert_eq!(
        parse(b"G").expect_err("magic").kind,
        BinaryErrorKind::BadMagic
    );
    let mut p = packet(0x00, b"", b"key", b"", 0);
    p[8..12].copy_from_slice(&2u32.to_be_bytes());
    let e = parse(&p).expect_err("lengths");
    assert_eq!(e.kind, BinaryErrorKind::BadLengths);
    assert!(e.closes_connection());
    assert_eq!(e.status(), Some(Status::UNKNOWN_COMMAND));
}

#[test]
fn split_and_pipelined() {
    let mut stream = Vec::new();
    let packets = [
        packet(0x01, &set_extras(1, 2), b"key", b"value", 0),
        packet(0x0d, b"", b"key", b"", 0),
        packet(0x0a, b"", b"", b"", 0),
        packet(0x05, &counter_extras(1, 0, 0), b"n", b"", 0),
    ];
    for p in &packets {
        stream.extend_from_slice(p);
    }
    // Every strict prefix of a packet is incomplete.
    for p in &packets {
        for cut in 0..p.len() {
            assert_eq!(parse(&p[..cut]), Ok(None), "cut {cut} of {p:02x?}");
        }
    }
    let mut rest = &stream[..];
    let mut seen = Vec::new();
    while let Some((req, used)) = parse(rest).expect("valid") {
        seen.push(req.opcode);
        rest = &rest[used..];
    }
    assert!(rest.is_empty());
    assert_eq!(
        seen,
        [Opcode::Set, Opcode::GetKQ, Opcode::Noop, Opcode::Increment]
    );
}

#[test]
fn status_constants() {
    assert_eq!(Status::INVALID_ARGUMENTS.0, 4);
    assert_eq!(Status::UNKNOWN_COMMAND.0, 0x81);
    assert_eq!(Status::TEMPORARY_FAILURE.0, 0x86);
    assert_eq!(Status::KEY_NOT_FOUND.message(), "Not found");
    assert_eq!(Status::SUCCESS.message(), "");
}

#[test]
fn writes_are_what_client_pause_write_holds() {
    let e = set_extras(0, 0);
    let c = counter_extras(1, 0, 0);
    let t = 10u32.to_be_bytes();
    let reads: [(u8, &[u8], &[u8]); 6] = [
        (0x00, &[], b"k"),
        (0x0d, &[], b"k"),
        (0x0a, &[], b""),
        (0x0b, &[], b""),
        (0x10, &[], b""),
        (0x07, &[], b""),
    ];
    for (op, extras, key) in reads {
        assert!(!one(&packet(op, extras, key, b"", 0)).writes(), "{op:#x}");
    }
    let writes: [(u8, &[u8], &[u8]); 9] = [
        (0x01, &e, b"k"),
        (0x12, &e, b"k"),
        (0x0e, &[], b"k"),
        (0x04, &[], b"k"),
        (0x05, &c, b"k"),
        (0x16, &c, b"k"),
        (0x08, &[], b""),
        (0x1c, &t, b"k"),
        (0x1d, &t, b"k"),
    ];
    for (op, extras, key) in writes {
        let value: &[u8] = if matches!(op, 0x01 | 0x12 | 0x0e) {
            b"v"
        } else {
            b""
        };
        assert!(one(&packet(op, extras, key, value, 0)).writes(), "{op:#x}");
    }
}
