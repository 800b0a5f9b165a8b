//! The text protocol's refusals: error lines, what is skipped after them, and the limits on
//! lines, keys and values.

use super::*;

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
