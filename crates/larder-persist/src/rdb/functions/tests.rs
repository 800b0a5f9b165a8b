//! FUNCTION DUMP / RESTORE payloads: Redis 7.0.15's golden payloads (`testdata/functions/`,
//! made by its `make.py`), round trips and corrupt inputs.

use std::path::PathBuf;

use super::*;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/functions")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A golden payload's codes, in payload order.
fn codes(name: &str) -> Vec<String> {
    String::from_utf8(read(&format!("{name}.codes")))
        .expect("text")
        .lines()
        .map(|l| String::from_utf8(unhex(l)).expect("utf-8 code"))
        .collect()
}

/// With its footer (RDB version 10 and checksum) recomputed.
fn with_footer(body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

const GOLDEN: [&str; 6] = ["empty", "one", "unicode", "compressed", "raw", "several"];

#[test]
fn redis_payloads_read_back_to_their_codes() {
    for name in GOLDEN {
        let payload = read(&format!("{name}.dump"));
        assert_eq!(parse_dump_payload(&payload), Ok(codes(name)), "{name}");
    }
    assert_eq!(codes("several").len(), 3);
    assert!(codes("unicode")[0].contains('\u{1f389}'));
}

#[test]
fn dump_payload_is_what_redis_writes() {
    for name in GOLDEN {
        let codes = codes(name);
        let refs: Vec<&str> = codes.iter().map(String::as_str).collect();
        assert!(
            dump_payload(&refs) == read(&format!("{name}.dump")),
            "{name}: the payload differs from redis-server's"
        );
    }
}

#[test]
fn golden_payloads_use_the_encodings_they_are_named_for() {
    // FUNCTION2, then the string's first byte: 0xc3 is LZF, 0x80 a 32-bit length.
    assert_eq!(read("compressed.dump")[..2], [OPCODE_FUNCTION2, 0xc3]);
    assert_eq!(read("raw.dump")[..2], [OPCODE_FUNCTION2, 0x80]);
    assert_eq!(read("one.dump")[..2], [OPCODE_FUNCTION2, 0x40]);
}

#[test]
fn corrupt_payloads_give_redis_errors() {
    for name in ["crc", "version", "short", "type", "cut", "tail", "lzf"] {
        let payload = read(&format!("bad-{name}.dump"));
        let expected = String::from_utf8(read(&format!("bad-{name}.error"))).expect("text");
        let err = parse_dump_payload(&payload).expect_err(name);
        assert_eq!(format!("ERR {err}"), expected.trim_end(), "bad-{name}");
    }
}

#[test]
fn pre_ga_libraries_are_rebuilt_with_a_shebang() {
    let mut body = vec![OPCODE_FUNCTION_PRE_GA];
    for s in [b"mylib".as_slice(), b"LUA"] {
        put_string(&mut body, s);
    }
    body.push(1);
    put_string(&mut body, b"a description");
    put_string(
        &mut body,
        b"redis.register_function('f', function() return 1 end)",
    );
    body.push(OPCODE_FUNCTION_PRE_GA);
    for s in [b"other".as_slice(), b"LUA"] {
        put_string(&mut body, s);
    }
    body.push(0);
    put_string(&mut body, b"return");
    assert_eq!(
        parse_dump_payload(&with_footer(&body)),
        Ok(vec![
            "#!LUA name=mylib\nredis.register_function('f', function() return 1 end)".to_string(),
            "#!LUA name=other\nreturn".to_string(),
        ])
    );
    // Each field cut short names itself.
    let cases: [(&[u8], &str); 5] = [
        (&[0xff], LOAD_NAME),
        (&[1, b'n', 0xff], LOAD_ENGINE),
        (&[1, b'n', 1, b'e'], LOAD_DESC_FLAG),
        (&[1, b'n', 1, b'e', 1, 0xff], LOAD_DESC),
        (&[1, b'n', 1, b'e', 0, 0xff], LOAD_BLOB),
    ];
    for (fields, what) in cases {
        let err = read_library(&mut Reader::new(fields), OPCODE_FUNCTION_PRE_GA);
        assert_eq!(err, Err(FunctionsError::Load(what)), "{fields:?}");
    }
}

#[test]
fn a_code_that_is_not_utf8_is_refused() {
    let mut body = vec![OPCODE_FUNCTION2];
    put_string(&mut body, b"#!lua name=x\n-- \xff\xfe");
    assert_eq!(
        parse_dump_payload(&with_footer(&body)),
        Err(FunctionsError::NotUtf8)
    );
}

#[test]
fn a_length_past_the_payload_allocates_nothing_and_fails() {
    // A 32-bit length of 4 GiB, and a 64-bit one of 2^63, with a few bytes after.
    for len in [
        &[0x80, 0xff, 0xff, 0xff, 0xff][..],
        &[0x81, 0x80, 0, 0, 0, 0, 0, 0, 0],
    ] {
        let mut body = vec![OPCODE_FUNCTION2];
        body.extend_from_slice(len);
        body.extend_from_slice(b"#!lua");
        assert_eq!(
            parse_dump_payload(&with_footer(&body)),
            Err(FunctionsError::Load(LOAD_PAYLOAD))
        );
    }
    // An LZF string claiming a huge original length.
    let mut body = vec![OPCODE_FUNCTION2, 0xc3, 3, 0x81];
    body.extend_from_slice(&u64::MAX.to_be_bytes());
    body.extend_from_slice(&[0, b'a', b'b']);
    assert_eq!(
        parse_dump_payload(&with_footer(&body)),
        Err(FunctionsError::Load(LOAD_PAYLOAD))
    );
}

/// xorshift64*, for reproducible random cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random library code: repetitive or not, ASCII or not, short or long.
fn random_code(rng: &mut Rng) -> String {
    let alphabet: Vec<char> = match rng.below(3) {
        0 => "ab".chars().collect(),
        1 => "abcdefghijklmnopqrstuvwxyz0123456789 ()'\n"
            .chars()
            .collect(),
        _ => "aé✓日\u{1f389}\n".chars().collect(),
    };
    let len = match rng.below(4) {
        0 => rng.below(24),
        1 => rng.below(300),
        2 => 16_000 + rng.below(1000),
        _ => rng.below(70_000),
    };
    let mut code = String::from("#!lua name=lib\n");
    for _ in 0..len {
        code.push(alphabet[rng.below(alphabet.len() as u64) as usize]);
    }
    code
}

#[test]
fn random_libraries_round_trip() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200 {
        let codes: Vec<String> = (0..rng.below(5)).map(|_| random_code(&mut rng)).collect();
        let refs: Vec<&str> = codes.iter().map(String::as_str).collect();
        let payload = dump_payload(&refs);
        assert_eq!(parse_dump_payload(&payload), Ok(codes));
    }
}

#[test]
fn every_cut_and_bit_flip_is_an_error_or_a_parse() {
    let mut rng = Rng(14);
    for name in GOLDEN {
        let payload = read(&format!("{name}.dump"));
        for cut in 0..payload.len() {
            assert_eq!(
                parse_dump_payload(&payload[..cut]),
                Err(FunctionsError::VersionOrChecksum),
                "{name} cut at {cut}"
            );
        }
        // Flips in the body, with the footer made right again: the parser sees them.
        let body = &payload[..payload.len() - 10];
        for _ in 0..body.len().min(400) {
            let mut bad = body.to_vec();
            if bad.is_empty() {
                break;
            }
            let at = rng.below(bad.len() as u64) as usize;
            bad[at] ^= 1 << rng.below(8);
            let _ = parse_dump_payload(&with_footer(&bad));
            let cut = rng.below(bad.len() as u64) as usize;
            let _ = parse_dump_payload(&with_footer(&bad[..cut]));
        }
    }
}
