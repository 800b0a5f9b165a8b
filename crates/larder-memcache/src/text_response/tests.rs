//! Reply encoding tests. The expected bytes of the meta cases are memcached 1.6.18's
//! answers to the same requests.

use super::*;
use crate::{parse_text, Limits, TextRequest};

fn request(bytes: &[u8]) -> TextRequest<'_> {
    match parse_text(bytes, &Limits::default()) {
        Ok(Some((req, _))) => req,
        other => panic!("{other:?}"),
    }
}

fn write(f: impl FnOnce(&mut TextWriter<'_>)) -> Vec<u8> {
    let mut out = Vec::new();
    f(&mut TextWriter::new(&mut out));
    out
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn classic_lines() {
    let cases: &[(TextReply, &[u8])] = &[
        (TextReply::Stored, b"STORED\r\n"),
        (TextReply::NotStored, b"NOT_STORED\r\n"),
        (TextReply::Exists, b"EXISTS\r\n"),
        (TextReply::NotFound, b"NOT_FOUND\r\n"),
        (TextReply::Deleted, b"DELETED\r\n"),
        (TextReply::Touched, b"TOUCHED\r\n"),
        (TextReply::Ok, b"OK\r\n"),
        (TextReply::End, b"END\r\n"),
        (TextReply::Reset, b"RESET\r\n"),
        (TextReply::Error, b"ERROR\r\n"),
    ];
    for &(reply, want) in cases {
        assert_eq!(write(|w| w.reply(reply)), want);
    }
}

#[test]
fn values_and_misc() {
    let out = write(|w| {
        w.value(b"a", 0, b"x", None);
        w.value(b"key", u32::MAX, b"a\r\nb", Some(54));
        w.value_head(b"z", 5, 3, None);
        w.end();
    });
    assert_eq!(
        lossy(&out),
        "VALUE a 0 1\r\nx\r\nVALUE key 4294967295 4 54\r\na\r\nb\r\nVALUE z 5 3\r\nEND\r\n"
    );
    let out = write(|w| {
        w.number(18_446_744_073_709_551_615);
        w.number(0);
        w.version("1.6.18");
        w.stat("pid", b"42");
        w.stat_u64("curr_items", 7);
        w.end();
    });
    assert_eq!(
        lossy(&out),
        "18446744073709551615\r\n0\r\nVERSION 1.6.18\r\nSTAT pid 42\r\nSTAT curr_items 7\r\nEND\r\n"
    );
    let out = write(|w| {
        w.error_kind(TextErrorKind::NonNumericValue);
        w.client_error("bad data chunk");
        w.server_error("out of memory storing object");
    });
    assert_eq!(
        lossy(&out),
        "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n\
         CLIENT_ERROR bad data chunk\r\nSERVER_ERROR out of memory storing object\r\n"
    );
}

fn mg_hit(line: &[u8], item: &MetaItem, value: &[u8], recache: Recache) -> String {
    let TextRequest::MetaGet(req) = request(line) else {
        panic!("not mg");
    };
    lossy(&write(|w| w.meta_get_hit(&req, item, value, recache)))
}

fn mg_miss(line: &[u8]) -> String {
    let TextRequest::MetaGet(req) = request(line) else {
        panic!("not mg");
    };
    lossy(&write(|w| w.meta_get_miss(&req)))
}

#[test]
fn meta_get_answers() {
    let item = MetaItem {
        client_flags: 0,
        cas: 43,
        size: 1,
        ttl_s: 3,
        last_access_s: 0,
        fetched: true,
        key_binary: false,
    };
    assert_eq!(
        mg_hit(
            b"mg a s t c f h l k O1 v\r\n",
            &item,
            b"5",
            Recache::default()
        ),
        "VA 1 s1 t3 c43 f0 h1 l0 ka O1\r\n5\r\n"
    );
    let never = MetaItem { ttl_s: -1, ..item };
    assert_eq!(
        mg_hit(
            b"mg a h k s c t f l v u q P L O C1 D1 J1\r\n",
            &never,
            b"x",
            Recache::default()
        ),
        "VA 1 h1 ka s1 c43 t-1 f0 l0 O\r\nx\r\n"
    );
    // No v: HD, and the value is not sent. q does not silence a hit.
    assert_eq!(
        mg_hit(b"mg a q s\r\n", &item, b"5", Recache::default()),
        "HD s1\r\n"
    );
    assert_eq!(
        mg_hit(b"mg a O\r\n", &item, b"5", Recache::default()),
        "HD O\r\n"
    );
    // Base64 keys come back encoded, with a b flag; so does a binary item's key.
    let two = MetaItem {
        cas: 44,
        size: 2,
        ttl_s: -1,
        fetched: false,
        key_binary: true,
        ..item
    };
    assert_eq!(
        mg_hit(
            b"mg YWJj b k v c f t s\r\n",
            &two,
            b"hi",
            Recache::default()
        ),
        "VA 2 kYWJj b c44 f0 t-1 s2\r\nhi\r\n"
    );
    assert_eq!(
        mg_hit(b"mg abc k v\r\n", &two, b"hi", Recache::default()),
        "VA 2 kYWJj b\r\nhi\r\n"
    );
    // Recache flags come last, in the order Z X W.
    let all = Recache {
        won: true,
        stale: true,
        win_sent: true,
    };
    assert_eq!(
        mg_hit(b"mg foo c v\r\n", &MetaItem { cas: 2, ..item }, b"", all),
        "VA 0 c2 Z X W\r\n\r\n"
    );
    let won = Recache {
        won: true,
        ..Recache::default()
    };
    assert_eq!(
        mg_hit(
            b"mg foo f c v N30\r\n",
            &MetaItem { cas: 2, ..item },
            b"",
            won
        ),
        "VA 0 f0 c2 W\r\n\r\n"
    );
    // The head alone, for callers sending the value themselves.
    let TextRequest::MetaGet(req) = request(b"mg a v s\r\n") else {
        panic!("not mg");
    };
    let head = write(|w| w.meta_get_hit_head(&req, &MetaItem { size: 5, ..item }, won));
    assert_eq!(lossy(&head), "VA 5 s5 W\r\n");

    assert_eq!(mg_miss(b"mg missing k Oabc\r\n"), "EN kmissing Oabc\r\n");
    assert_eq!(mg_miss(b"mg missing k Oabc q\r\n"), "");
    assert_eq!(mg_miss(b"mg YWJj b k v\r\n"), "EN kYWJj b\r\n");
    assert_eq!(mg_miss(b"mg a v s t\r\n"), "EN\r\n");
}

#[test]
fn meta_set_answers() {
    let cases: &[(&[u8], MetaStatus, u64, &str)] = &[
        (b"ms n 1\r\n5\r\n", MetaStatus::Success, 9, "HD\r\n"),
        (b"ms n 1 q\r\n5\r\n", MetaStatus::Success, 9, ""),
        (b"ms n 1 q ME\r\n5\r\n", MetaStatus::NotStored, 0, "NS\r\n"),
        (
            b"ms n 1 ME O1 k c\r\n5\r\n",
            MetaStatus::NotStored,
            0,
            "NS O1 kn c0\r\n",
        ),
        (b"ms nn 1 q C5\r\n5\r\n", MetaStatus::NotFound, 0, "NF\r\n"),
        (b"ms n 1 q C1\r\n5\r\n", MetaStatus::Exists, 0, "EX\r\n"),
        (
            b"ms YWJj 2 b k\r\nhi\r\n",
            MetaStatus::Success,
            1,
            "HD kYWJj b\r\n",
        ),
        (
            b"ms a 1 c s T0\r\nx\r\n",
            MetaStatus::Success,
            77,
            "HD c77\r\n",
        ),
        (
            b"ms a 1 h k s c t f l v u q P L O C1 D1 J1\r\nx\r\n",
            MetaStatus::NotFound,
            0,
            "NF ka c0 O\r\n",
        ),
    ];
    for &(line, status, cas, want) in cases {
        let TextRequest::MetaSet(req) = request(line) else {
            panic!("not ms");
        };
        assert_eq!(
            lossy(&write(|w| w.meta_set(&req, status, cas))),
            want,
            "{}",
            lossy(line)
        );
    }
}

#[test]
fn meta_delete_answers() {
    let cases: &[(&[u8], MetaStatus, &str)] = &[
        (b"md a\r\n", MetaStatus::Success, "HD\r\n"),
        (b"md a q\r\n", MetaStatus::Success, ""),
        (b"md missing q\r\n", MetaStatus::NotFound, "NF\r\n"),
        (b"md a C5 q\r\n", MetaStatus::Exists, "EX\r\n"),
        (
            b"md a h k s c t f l v u q P L O C1 D1 J1 I\r\n",
            MetaStatus::NotFound,
            "NF ka O\r\n",
        ),
        (
            b"md YWJj b k O9\r\n",
            MetaStatus::Success,
            "HD kYWJj b O9\r\n",
        ),
    ];
    for &(line, status, want) in cases {
        let TextRequest::MetaDelete(req) = request(line) else {
            panic!("not md");
        };
        assert_eq!(
            lossy(&write(|w| w.meta_delete(&req, status))),
            want,
            "{}",
            lossy(line)
        );
    }
}

#[test]
fn meta_arithmetic_answers() {
    let item = MetaItem {
        cas: 42,
        ttl_s: -1,
        ..MetaItem::default()
    };
    let ok: &[(&[u8], u64, &str)] = &[
        (b"ma zz N0 J5 v\r\n", 5, "VA 1\r\n5\r\n"),
        (b"ma zz D5 MD v t c\r\n", 0, "VA 1 t-1 c42\r\n0\r\n"),
        (b"ma zz\r\n", 15, "HD\r\n"),
        (b"ma zz k O1 c\r\n", 15, "HD kzz O1 c42\r\n"),
        (b"ma zz q\r\n", 15, ""),
        (b"ma zz q v\r\n", 15, ""),
        (
            b"ma zz v\r\n",
            u64::MAX,
            "VA 20\r\n18446744073709551615\r\n",
        ),
    ];
    for &(line, value, want) in ok {
        let TextRequest::MetaArithmetic(req) = request(line) else {
            panic!("not ma");
        };
        assert_eq!(
            lossy(&write(|w| w.meta_arithmetic(&req, value, &item))),
            want,
            "{}",
            lossy(line)
        );
    }
    let failed: &[(&[u8], MetaStatus, &str)] = &[
        (b"ma missing\r\n", MetaStatus::NotFound, "NF\r\n"),
        (b"ma missing q\r\n", MetaStatus::NotFound, "NF\r\n"),
        (b"ma a C1 k O5\r\n", MetaStatus::Exists, "EX ka O5\r\n"),
        (b"ma a N0\r\n", MetaStatus::NotStored, "NS\r\n"),
    ];
    for &(line, status, want) in failed {
        let TextRequest::MetaArithmetic(req) = request(line) else {
            panic!("not ma");
        };
        assert_eq!(
            lossy(&write(|w| w.meta_arithmetic_failed(&req, status))),
            want
        );
    }
}

#[test]
fn meta_noop_and_debug() {
    assert_eq!(write(|w| w.meta_noop()), b"MN\r\n");
    assert_eq!(write(|w| w.meta_debug_miss()), b"EN\r\n");
    let TextRequest::MetaDebug { key } = request(b"me a\r\n") else {
        panic!("not me");
    };
    let item = MetaItem {
        cas: 112,
        size: 1,
        ttl_s: 100,
        ..MetaItem::default()
    };
    assert_eq!(
        lossy(&write(|w| w.meta_debug(&key, &item, 3, 150))),
        "ME a exp=-100 la=0 cas=112 fetch=no cls=3 size=150\r\n"
    );
    let forever = MetaItem {
        ttl_s: -1,
        fetched: true,
        ..item
    };
    assert_eq!(
        lossy(&write(|w| w.meta_debug(&key, &forever, 1, 1))),
        "ME a exp=-1 la=0 cas=112 fetch=yes cls=1 size=1\r\n"
    );
    let TextRequest::MetaDebug { key } = request(b"me YWJj b\r\n") else {
        panic!("not me");
    };
    let binary = MetaItem {
        key_binary: true,
        ..forever
    };
    assert_eq!(
        lossy(&write(|w| w.meta_debug(&key, &binary, 1, 1))),
        "ME YWJj exp=-1 la=0 cas=112 fetch=yes cls=1 size=1\r\n"
    );
}

#[test]
fn parse_errors_are_written_unless_silenced() {
    for (bytes, want) in [
        (&b"set k 0 0 1 noreply\r\nxy\r\n"[..], &b""[..]),
        (b"bogus\r\n", b"ERROR\r\n"),
        (b"mg a zz q\r\n", b"CLIENT_ERROR invalid flag\r\n"),
    ] {
        let e = parse_text(bytes, &Limits::default()).expect_err("error");
        assert_eq!(write(|w| w.error(&e)), want);
    }
}
