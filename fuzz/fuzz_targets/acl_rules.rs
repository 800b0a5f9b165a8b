//! Fuzzes the ACL rule parser: arbitrary rule words go to `ACL SETUSER` on a socket-free
//! server (`larder_commands::testing::Harness`), then `ACL GETUSER`, `ACL LIST` and a DRYRUN
//! of a few commands run for the user. Nothing may panic, and the user's `ACL LIST` rules,
//! given to a new user of the same name, must give the same `ACL LIST` line (the round trip
//! that ACL SAVE and LOAD rely on).
//!
//! Input: rule words separated by spaces (at most 64). A word of one byte below 0x20 picks a
//! rule from `DICTIONARY`, so every kind of rule is reachable without spelling it.

#![no_main]

use std::sync::{Mutex, OnceLock};

use larder_commands::testing::Harness;
use larder_resp::Frame;
use libfuzzer_sys::fuzz_target;

const DICTIONARY: &[&[u8]] = &[
    b"on",
    b"off",
    b"nopass",
    b">pw",
    b"<pw",
    b"#8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92",
    b"!8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92",
    b"resetpass",
    b"+@all",
    b"-@all",
    b"allcommands",
    b"nocommands",
    b"+get",
    b"-get",
    b"+client|id",
    b"-client|kill",
    b"+select|0",
    b"+@read",
    b"-@dangerous",
    b"+@pubsub",
    b"~*",
    b"~a:*",
    b"%R~r:*",
    b"%W~w:*",
    b"%RW~x?y",
    b"allkeys",
    b"resetkeys",
    b"&*",
    b"&ch*",
    b"allchannels",
    b"resetchannels",
    b"(+set ~w:*)",
    b"(%R~r:* &c)",
    b"clearselectors",
    b"reset",
    b"sanitize-payload",
    b"skip-sanitize-payload",
];

const DRYRUNS: &[&[&[u8]]] = &[
    &[b"get", b"a:1"],
    &[b"set", b"w:1", b"v", b"get"],
    &[b"lmove", b"r:1", b"w:1", b"left", b"right"],
    &[b"publish", b"ch1", b"m"],
    &[b"psubscribe", b"ch*"],
    &[b"eval", b"x", b"1", b"x"],
    &[b"client", b"id"],
];

/// One server for the whole run, in a static so that it is never dropped (the command table
/// leaks its names on purpose).
static HARNESS: OnceLock<Mutex<Harness>> = OnceLock::new();

/// The user's rules in its `ACL LIST` line, selectors kept whole.
fn list_line(h: &mut Harness) -> Option<Vec<u8>> {
    match h.run_bytes(&[b"ACL", b"LIST"]) {
        Frame::Array(lines) => lines.into_iter().find_map(|l| match l {
            Frame::Bulk(b) => b.strip_prefix(b"user fz ").map(<[u8]>::to_vec),
            _ => None,
        }),
        other => panic!("ACL LIST answered {other:?}"),
    }
}

fn rules(line: &[u8]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut open = false;
    for word in line.split(|&b| b == b' ') {
        if open {
            let last = out.last_mut().expect("an open selector");
            last.push(b' ');
            last.extend_from_slice(word);
        } else {
            out.push(word.to_vec());
        }
        open = out
            .last()
            .is_some_and(|r| r.starts_with(b"(") && !r.ends_with(b")"));
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut h = HARNESS
        .get_or_init(|| Mutex::new(Harness::new()))
        .lock()
        .expect("no earlier panic");
    h.run_bytes(&[b"ACL", b"DELUSER", b"fz"]);
    let mut argv: Vec<&[u8]> = vec![b"ACL", b"SETUSER", b"fz"];
    for word in data.split(|&b| b == b' ').take(64) {
        argv.push(match word {
            [b] if *b < 0x20 => DICTIONARY[usize::from(*b) % DICTIONARY.len()],
            _ => &word[..word.len().min(512)],
        });
    }
    let set = h.run_bytes(&argv);
    h.run_bytes(&[b"ACL", b"GETUSER", b"fz"]);
    for cmd in DRYRUNS {
        let mut dry: Vec<&[u8]> = vec![b"ACL", b"DRYRUN", b"fz"];
        dry.extend_from_slice(cmd);
        h.run_bytes(&dry);
    }
    let Some(line) = list_line(&mut h) else {
        // SETUSER refused the rules: it is all or nothing, so there is no user.
        assert!(
            matches!(set, Frame::Error(_)),
            "SETUSER {set:?} but no user"
        );
        return;
    };
    // A key or channel pattern with a ')' inside a selector makes the line ambiguous: ACL
    // LOAD would end the selector there, in Redis too.
    let ambiguous = {
        // Words ending with ')' since the last one starting with '(': more than one, or a
        // pattern with a ')' before its end.
        let mut closes = 0;
        let mut bad = false;
        for w in line.split(|&b| b == b' ') {
            if w.starts_with(b"(") {
                closes = 0;
            }
            let pat = w.strip_prefix(b"(").unwrap_or(w);
            if matches!(pat.first(), Some(b'~' | b'%' | b'&'))
                && pat[..pat.len() - 1].contains(&b')')
            {
                bad = true;
            }
            if w.ends_with(b")") {
                closes += 1;
                bad |= closes > 1;
            }
        }
        bad
    };
    if ambiguous {
        return;
    }
    // A new user from the rules, as ACL LOAD makes it (`reset` would add sanitize-payload,
    // in Redis too).
    h.run_bytes(&[b"ACL", b"DELUSER", b"fz"]);
    let again = rules(&line);
    let mut argv: Vec<&[u8]> = vec![b"ACL", b"SETUSER", b"fz"];
    argv.extend(again.iter().map(Vec::as_slice));
    let reply = h.run_bytes(&argv);
    assert_eq!(reply, Frame::Simple("OK".into()), "re-applying {line:?}");
    assert_eq!(
        list_line(&mut h).as_deref(),
        Some(&line[..]),
        "round trip of {}",
        String::from_utf8_lossy(&line)
    );
});
