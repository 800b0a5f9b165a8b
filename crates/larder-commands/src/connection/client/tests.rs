use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use larder_resp::{Frame, Protocol};
use parking_lot::Mutex;

use super::*;
use crate::connection::BAD_CLIENT_NAME;
use crate::exec::{execute, Outcome};
use crate::state::{ClientHandle, ClientNames, Server};
use crate::testing::*;

fn simple(s: &str) -> Frame {
    Frame::Simple(s.into())
}

/// The text of a CLIENT LIST / CLIENT INFO reply in either protocol.
fn list_text(f: Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8(b).expect("ascii"),
        Frame::Verbatim { format, text } => {
            assert_eq!(format, "txt");
            String::from_utf8(text).expect("ascii")
        }
        other => panic!("not a list reply: {other:?}"),
    }
}

/// The `key=value` fields of one CLIENT LIST line, in order.
fn fields(line: &str) -> Vec<(String, String)> {
    line.trim_end_matches('\n')
        .split(' ')
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("key=value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn field(line: &str, key: &str) -> String {
    fields(line)
        .into_iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no field {key} in {line}"))
}

#[test]
fn client_container_errors() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["CLIENT"]),
        err("ERR wrong number of arguments for 'client' command")
    );
    assert_eq!(
        h.run(&["CLIENT", "foo"]),
        err("ERR unknown subcommand 'foo'. Try CLIENT HELP.")
    );
    assert_eq!(
        h.run(&["CLIENT", "ID", "x"]),
        err("ERR wrong number of arguments for 'client|id' command")
    );
    assert_eq!(
        h.run(&["CLIENT", "INFO", "x"]),
        err("ERR wrong number of arguments for 'client|info' command")
    );
    assert_eq!(
        h.run(&["CLIENT", "SETNAME"]),
        err("ERR wrong number of arguments for 'client|setname' command")
    );
    assert_eq!(
        h.run(&["CLIENT", "KILL"]),
        err("ERR wrong number of arguments for 'client|kill' command")
    );
    assert_eq!(
        h.run(&["CLIENT", "SETINFO", "lib-name"]),
        err("ERR wrong number of arguments for 'client|setinfo' command")
    );
}

#[test]
fn client_id_and_names() {
    let mut h = Harness::new();
    let h2 = Harness::connect(Arc::clone(&h.server));
    assert_eq!(h.run(&["CLIENT", "ID"]), int(h.conn.id as i64));
    assert_ne!(h.conn.id, h2.conn.id);
    assert_eq!(h.run(&["CLIENT", "GETNAME"]), Frame::Null);
    assert_eq!(h.run(&["CLIENT", "SETNAME", "abc"]), ok());
    assert_eq!(h.run(&["client", "getname"]), bulk("abc"));
    for bad in [&b"a b"[..], b"a\nb", b"a\x7fb", b"a\x1fb", b"\xc3\xa9"] {
        assert_eq!(
            h.run_bytes(&[b"CLIENT", b"SETNAME", bad]),
            err(BAD_CLIENT_NAME)
        );
    }
    assert_eq!(h.run(&["CLIENT", "GETNAME"]), bulk("abc"));
    assert_eq!(h.run(&["CLIENT", "SETNAME", "!~"]), ok());
    assert_eq!(h.run(&["CLIENT", "GETNAME"]), bulk("!~"));
    assert_eq!(h.run(&["CLIENT", "SETNAME", ""]), ok());
    assert_eq!(h.run(&["CLIENT", "GETNAME"]), Frame::Null);
    h.out.proto = Protocol::Resp3;
    assert_eq!(h.run_raw(&[b"CLIENT", b"GETNAME"]), b"_\r\n");
}

#[test]
fn client_list_line_fields_in_redis_order() {
    let mut h = Harness::new();
    h.run(&["CLIENT", "SETNAME", "me"]);
    h.conn.db = 2;
    let text = list_text(h.run(&["CLIENT", "LIST"]));
    assert!(text.ends_with('\n'));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1);
    let keys: Vec<String> = fields(lines[0]).into_iter().map(|(k, _)| k).collect();
    let expected = "id addr laddr fd name age idle flags db sub psub ssub multi qbuf \
                    qbuf-free argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd \
                    user redir resp lib-name lib-ver";
    assert_eq!(keys, expected.split_whitespace().collect::<Vec<_>>());
    let line = lines[0];
    assert_eq!(field(line, "id"), h.conn.id.to_string());
    assert_eq!(field(line, "addr"), "127.0.0.1:0");
    assert_eq!(field(line, "laddr"), "127.0.0.1:0");
    assert_eq!(field(line, "fd"), "-1");
    assert_eq!(field(line, "name"), "me");
    assert_eq!(field(line, "age"), "0");
    assert_eq!(field(line, "idle"), "0");
    assert_eq!(field(line, "flags"), "N");
    assert_eq!(field(line, "db"), "2");
    assert_eq!(field(line, "multi"), "-1");
    assert_eq!(field(line, "argv-mem"), "10");
    assert_eq!(field(line, "events"), "r");
    assert_eq!(field(line, "cmd"), "client|list");
    assert_eq!(field(line, "user"), "default");
    assert_eq!(field(line, "redir"), "-1");
    assert_eq!(field(line, "resp"), "2");
    assert_eq!(field(line, "lib-name"), "");
    assert_eq!(field(line, "lib-ver"), "");
}

#[test]
fn client_list_filters() {
    let mut h = Harness::new();
    let mut h2 = Harness::connect(Arc::clone(&h.server));
    h2.run(&["PING"]);
    let (id1, id2) = (h.conn.id, h2.conn.id);
    let ids =
        |text: String| -> Vec<String> { text.lines().map(|l| field(l, "id")).collect::<Vec<_>>() };
    let all = ids(list_text(h.run(&["CLIENT", "LIST"])));
    assert_eq!(all, vec![id1.to_string(), id2.to_string()]);
    assert_eq!(
        ids(list_text(h.run(&["CLIENT", "LIST", "TYPE", "NORMAL"]))),
        all
    );
    for t in ["master", "replica", "slave", "pubsub"] {
        assert_eq!(h.run(&["CLIENT", "LIST", "TYPE", t]), bulk(""), "{t}");
    }
    assert_eq!(
        h.run(&["CLIENT", "LIST", "TYPE", "foo"]),
        err("ERR Unknown client type 'foo'")
    );
    assert_eq!(
        ids(list_text(h.run(&[
            "CLIENT",
            "LIST",
            "ID",
            &id2.to_string()
        ]))),
        vec![id2.to_string()]
    );
    assert_eq!(
        ids(list_text(h.run(&[
            "CLIENT",
            "LIST",
            "id",
            &id2.to_string(),
            "999999",
            &id1.to_string(),
            &id2.to_string(),
            "0",
            "-1",
        ]))),
        vec![id2.to_string(), id1.to_string(), id2.to_string()]
    );
    assert_eq!(
        h.run(&["CLIENT", "LIST", "ID", "1", "x"]),
        err("ERR Invalid client ID")
    );
    assert_eq!(
        h.run(&["CLIENT", "LIST", "ID", "1", "TYPE", "normal"]),
        err("ERR Invalid client ID")
    );
    for bad in [
        &["CLIENT", "LIST", "TYPE"][..],
        &["CLIENT", "LIST", "ID"],
        &["CLIENT", "LIST", "foo"],
        &["CLIENT", "LIST", "TYPE", "normal", "ID", "1"],
    ] {
        assert_eq!(h.run(bad), err("ERR syntax error"), "{bad:?}");
    }
    // The other client's line shows its own last command, and no argv memory.
    let text = list_text(h.run(&["CLIENT", "LIST", "ID", &id2.to_string()]));
    assert_eq!(field(&text, "cmd"), "ping");
    assert_eq!(field(&text, "argv-mem"), "0");
}

#[test]
fn client_list_is_verbatim_in_resp3() {
    let mut h = Harness::new();
    h.run(&["HELLO", "3"]);
    match h.run(&["CLIENT", "LIST"]) {
        Frame::Verbatim { format, text } => {
            assert_eq!(format, "txt");
            let text = String::from_utf8(text).expect("ascii");
            assert_eq!(field(&text, "resp"), "3");
        }
        other => panic!("{other:?}"),
    }
    match h.run(&["CLIENT", "INFO"]) {
        Frame::Verbatim { format, text } => {
            assert_eq!(format, "txt");
            assert!(text.ends_with(b"\n"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn client_info_shows_own_state() {
    let mut h = Harness::new();
    let text = list_text(h.run(&["CLIENT", "INFO"]));
    assert!(text.ends_with('\n'));
    assert_eq!(text.lines().count(), 1);
    assert_eq!(field(&text, "cmd"), "client|info");
    assert_eq!(field(&text, "argv-mem"), "10");
    assert_eq!(field(&text, "id"), h.conn.id.to_string());
    h.run(&["CLIENT", "NO-EVICT", "on"]);
    assert_eq!(field(&list_text(h.run(&["CLIENT", "INFO"])), "flags"), "e");
    h.run(&["CLIENT", "NO-TOUCH", "on"]);
    assert_eq!(field(&list_text(h.run(&["CLIENT", "INFO"])), "flags"), "eT");
    h.run(&["CLIENT", "NO-EVICT", "off"]);
    assert_eq!(field(&list_text(h.run(&["CLIENT", "INFO"])), "flags"), "T");
    h.run(&["CLIENT", "SETINFO", "LIB-NAME", "redis-py"]);
    h.run(&["CLIENT", "SETINFO", "lib-ver", "5.0.1"]);
    let text = list_text(h.run(&["CLIENT", "INFO"]));
    assert_eq!(field(&text, "lib-name"), "redis-py");
    assert_eq!(field(&text, "lib-ver"), "5.0.1");
}

#[test]
fn client_list_line_for_other_code() {
    let h = Harness::new();
    let now = larder_engine::now_ms();
    let line = client_list_line(&h.server, &h.conn.handle, now);
    assert!(!line.ends_with('\n'));
    assert_eq!(field(&line, "cmd"), "NULL");
    assert_eq!(field(&line, "flags"), "N");
    let later = client_list_line(&h.server, &h.conn.handle, now + 5_500);
    assert_eq!(field(&later, "age"), "5");
    assert_eq!(field(&later, "idle"), "5");
}

/// A registered client created `age_ms` ago.
fn old_client(server: &Server, age_ms: u64) -> Arc<ClientHandle> {
    let now = larder_engine::now_ms();
    let h = Arc::new(ClientHandle {
        id: server.clients.next_id(),
        addr: "10.0.0.1:5000".into(),
        laddr: "10.0.0.2:6379".into(),
        fd: 9,
        created_ms: now - age_ms,
        last_interaction_ms: AtomicU64::new(now - age_ms),
        db: AtomicUsize::new(0),
        resp: AtomicU8::new(2),
        last_command: AtomicUsize::new(usize::MAX),
        query_buf_bytes: AtomicUsize::new(0),
        output_buf_bytes: AtomicUsize::new(0),
        names: Mutex::new(ClientNames::default()),
        killed: AtomicBool::new(false),
        no_evict: AtomicBool::new(false),
        no_touch: AtomicBool::new(false),
        waker: None,
        mail: crate::mail::Mail::default(),
        tracking: Default::default(),
        user: parking_lot::Mutex::new(std::sync::Arc::from("default")),
    });
    server.clients.register(Arc::clone(&h));
    h
}

#[test]
fn client_kill_new_form() {
    let mut h = Harness::new();
    let h2 = Harness::connect(Arc::clone(&h.server));
    let old = old_client(&h.server, 100_000);
    let id2 = h2.conn.id.to_string();
    assert_eq!(h.run(&["CLIENT", "KILL", "ID", "999999"]), int(0));
    assert_eq!(h.run(&["CLIENT", "KILL", "TYPE", "pubsub"]), int(0));
    assert_eq!(h.run(&["CLIENT", "KILL", "ADDR", "1.2.3.4:5"]), int(0));
    assert_eq!(h.run(&["CLIENT", "KILL", "MAXAGE", "1000"]), int(0));
    // The caller is skipped by default.
    assert_eq!(
        h.run(&["CLIENT", "KILL", "ID", &h.conn.id.to_string()]),
        int(0)
    );
    assert!(!h.conn.close_after_reply);
    assert_eq!(h.run(&["CLIENT", "KILL", "MAXAGE", "50"]), int(1));
    assert!(old.killed.load(Ordering::Relaxed));
    assert_eq!(h.run(&["CLIENT", "KILL", "ID", &id2]), int(1));
    assert!(h2.conn.handle.killed.load(Ordering::Relaxed));
    // Killed clients are gone: not listed, not killed twice.
    assert_eq!(h.run(&["CLIENT", "KILL", "ID", &id2]), int(0));
    let text = list_text(h.run(&["CLIENT", "LIST"]));
    assert_eq!(text.lines().count(), 1);
    assert!(!h.conn.handle.killed.load(Ordering::Relaxed));
}

#[test]
fn client_kill_filters_combine() {
    let mut h = Harness::new();
    let a = old_client(&h.server, 0);
    let b = old_client(&h.server, 0);
    let h2 = Harness::connect(Arc::clone(&h.server));
    // ADDR and LADDR must both match; a's id rules out b.
    assert_eq!(
        h.run(&[
            "CLIENT",
            "KILL",
            "addr",
            "10.0.0.1:5000",
            "laddr",
            "10.0.0.2:6379",
            "id",
            &a.id.to_string(),
        ]),
        int(1)
    );
    assert!(a.killed.load(Ordering::Relaxed));
    assert!(!b.killed.load(Ordering::Relaxed));
    assert_eq!(
        h.run(&[
            "CLIENT",
            "KILL",
            "LADDR",
            "10.0.0.2:6379",
            "USER",
            "default"
        ]),
        int(1)
    );
    assert!(b.killed.load(Ordering::Relaxed));
    assert!(!h2.conn.handle.killed.load(Ordering::Relaxed));
    assert_eq!(
        h.run(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]),
        int(1)
    );
    assert!(h2.conn.handle.killed.load(Ordering::Relaxed));
    assert!(!h.conn.close_after_reply);
    // Killing yourself replies first, then closes.
    assert_eq!(
        h.run(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no"]),
        int(1)
    );
    assert!(h.conn.close_after_reply);
    assert!(!h.conn.handle.killed.load(Ordering::Relaxed));
}

#[test]
fn client_kill_old_form() {
    let mut h = Harness::new();
    let other = old_client(&h.server, 0);
    assert_eq!(
        h.run(&["CLIENT", "KILL", "1.2.3.4:5"]),
        err("ERR No such client")
    );
    // A lone argument is an address, even if it looks like a filter name.
    assert_eq!(h.run(&["CLIENT", "KILL", "id"]), err("ERR No such client"));
    assert_eq!(h.run(&["CLIENT", "KILL", "10.0.0.1:5000"]), ok());
    assert!(other.killed.load(Ordering::Relaxed));
    assert!(!h.conn.close_after_reply);
    // The old form may kill the caller (harness clients share the address 127.0.0.1:0).
    assert_eq!(h.run(&["CLIENT", "KILL", "127.0.0.1:0"]), ok());
    assert!(h.conn.close_after_reply);
}

#[test]
fn client_kill_errors() {
    let mut h = Harness::new();
    let cases: &[(&[&str], &str)] = &[
        (&["ID", "x"], "ERR client-id should be greater than 0"),
        (&["ID", "0"], "ERR client-id should be greater than 0"),
        (&["ID", "-5"], "ERR client-id should be greater than 0"),
        (&["TYPE", "foo"], "ERR Unknown client type 'foo'"),
        (&["USER", "nobody"], "ERR No such user 'nobody'"),
        (&["SKIPME", "maybe"], "ERR syntax error"),
        (&["foo", "bar"], "ERR syntax error"),
        (&["ID", "1", "foo"], "ERR syntax error"),
        (
            &["MAXAGE", "x"],
            "ERR maxage is not an integer or out of range",
        ),
        (&["MAXAGE", "0"], "ERR maxage should be greater than 0"),
        (&["MAXAGE", "-3"], "ERR maxage should be greater than 0"),
        // Filters are checked in order: the bad ID is reported before the bad type.
        (
            &["ID", "0", "TYPE", "foo"],
            "ERR client-id should be greater than 0",
        ),
    ];
    for (args, expected) in cases {
        let mut argv = vec!["CLIENT", "KILL"];
        argv.extend_from_slice(args);
        assert_eq!(h.run(&argv), err(expected), "{args:?}");
    }
    assert!(!h.conn.close_after_reply);
}

#[test]
fn client_setinfo() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["CLIENT", "SETINFO", "lib-name", "jedis"]), ok());
    assert_eq!(h.run(&["CLIENT", "SETINFO", "LIB-VER", "5.0"]), ok());
    {
        let names = h.conn.handle.names.lock();
        assert_eq!(
            (names.lib_name.as_str(), names.lib_ver.as_str()),
            ("jedis", "5.0")
        );
    }
    assert_eq!(
        h.run(&["CLIENT", "SETINFO", "LIB-NAME", "a b"]),
        err("ERR LIB-NAME cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(
        h.run(&["CLIENT", "SETINFO", "lib-ver", "1\n2"]),
        err("ERR lib-ver cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(
        h.run(&["CLIENT", "SETINFO", "foo", "x"]),
        err("ERR Unrecognized option 'foo'")
    );
    assert_eq!(h.run(&["CLIENT", "SETINFO", "lib-name", ""]), ok());
    assert_eq!(h.conn.handle.names.lock().lib_name, "");
    assert_eq!(h.conn.handle.names.lock().lib_ver, "5.0");
}

#[test]
fn client_reply_off_and_on() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["CLIENT", "REPLY", "maybe"]),
        err("ERR syntax error")
    );
    assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"OFF"]).is_empty());
    assert_eq!(h.conn.reply_mode, ReplyMode::Off);
    assert!(h.run_raw(&[b"PING"]).is_empty());
    assert!(h.run_raw(&[b"NOSUCHCOMMAND"]).is_empty());
    // SKIP while replies are off changes nothing.
    assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
    assert_eq!(h.conn.reply_mode, ReplyMode::Off);
    assert_eq!(h.run(&["CLIENT", "REPLY", "on"]), ok());
    assert_eq!(h.run(&["PING"]), simple("PONG"));
    assert!(h.run_raw(&[b"client", b"reply", b"skip"]).is_empty());
}

/// CLIENT REPLY SKIP must drop the reply of the command after it. The executor's
/// `finish_reply` consumes `SkipNext` at the end of the CLIENT REPLY SKIP command itself,
/// so this needs the exec.rs change described in the family report.
#[test]
fn client_reply_skip_skips_next_reply_only() {
    let mut h = Harness::new();
    assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
    assert!(h.run_raw(&[b"PING", b"1"]).is_empty());
    assert_eq!(h.run(&["PING", "2"]), bulk("2"));
    // SKIP twice in a row skips one command after the second.
    assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
    assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
    assert!(h.run_raw(&[b"PING", b"3"]).is_empty());
    assert_eq!(h.run(&["PING", "4"]), bulk("4"));
    // Errors are skipped too.
    assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
    assert!(h.run_raw(&[b"NOSUCHCOMMAND"]).is_empty());
    assert_eq!(h.run(&["PING"]), simple("PONG"));
    // CLIENT REPLY ON cancels a pending skip and replies.
    assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
    assert_eq!(h.run(&["CLIENT", "REPLY", "ON"]), ok());
    assert_eq!(h.run(&["PING"]), simple("PONG"));
    // CLIENT REPLY OFF after SKIP stays off.
    assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"SKIP"]).is_empty());
    assert!(h.run_raw(&[b"CLIENT", b"REPLY", b"OFF"]).is_empty());
    assert!(h.run_raw(&[b"PING"]).is_empty());
    assert!(h.run_raw(&[b"PING"]).is_empty());
}

#[test]
fn client_no_evict_and_no_touch() {
    let mut h = Harness::new();
    for sub in ["NO-EVICT", "NO-TOUCH"] {
        assert_eq!(h.run(&["CLIENT", sub, "ON"]), ok());
        assert_eq!(h.run(&["CLIENT", sub, "maybe"]), err("ERR syntax error"));
        assert_eq!(
            h.run(&["CLIENT", sub]),
            err(&format!(
                "ERR wrong number of arguments for 'client|{}' command",
                sub.to_ascii_lowercase()
            ))
        );
    }
    assert!(h.conn.handle.no_evict.load(Ordering::Relaxed));
    assert!(h.conn.handle.no_touch.load(Ordering::Relaxed));
    assert_eq!(h.run(&["CLIENT", "no-evict", "off"]), ok());
    assert_eq!(h.run(&["CLIENT", "no-touch", "Off"]), ok());
    assert!(!h.conn.handle.no_evict.load(Ordering::Relaxed));
    assert!(!h.conn.handle.no_touch.load(Ordering::Relaxed));
}

#[test]
fn client_pause_and_unpause() {
    let mut h = Harness::new();
    let pause = |h: &Harness| {
        (
            h.server.pause.until_ms.load(Ordering::Relaxed),
            h.server.pause.mode.load(Ordering::Relaxed),
        )
    };
    let before = larder_engine::now_ms();
    assert_eq!(h.run(&["CLIENT", "PAUSE", "100000", "WRITE"]), ok());
    let (until, mode) = pause(&h);
    assert!(until >= before + 100_000 && until <= larder_engine::now_ms() + 100_000);
    assert_eq!(mode, Pause::WRITE);
    // Writes wait; reads run.
    let mut out = larder_resp::ReplyBuf::new(Protocol::Resp2);
    let set: &[&[u8]] = &[b"SET", b"k", b"v"];
    assert_eq!(
        execute(&h.server, &mut h.conn, set, &mut out),
        Outcome::Paused { until_ms: until }
    );
    assert!(out.is_empty());
    assert_eq!(h.run(&["GET", "k"]), Frame::Null);
    // A shorter pause keeps the later end but takes the stricter mode.
    assert_eq!(h.run(&["CLIENT", "PAUSE", "10", "all"]), ok());
    assert_eq!(pause(&h), (until, Pause::ALL));
    // Under ALL, UNPAUSE is held like everything else (as in Redis): only the timeout
    // ends the pause. Simulate the timeout, then UNPAUSE runs.
    let unpause: &[&[u8]] = &[b"CLIENT", b"UNPAUSE"];
    assert_eq!(
        execute(&h.server, &mut h.conn, unpause, &mut out),
        Outcome::Paused { until_ms: until }
    );
    h.server.pause.until_ms.store(0, Ordering::Relaxed);
    assert_eq!(h.run(&["CLIENT", "UNPAUSE"]), ok());
    assert_eq!(pause(&h).0, 0);
    assert_eq!(h.run(&["SET", "k", "v"]), ok());
    // Once a pause is over, a new one replaces it.
    assert_eq!(h.run(&["CLIENT", "PAUSE", "50000", "WRITE"]), ok());
    assert_eq!(pause(&h).1, Pause::WRITE);
    h.run(&["CLIENT", "UNPAUSE"]);
    assert_eq!(h.run(&["CLIENT", "PAUSE", "0"]), ok());
    assert_eq!(pause(&h).0, 0);
    assert_eq!(h.run(&["SET", "k", "v"]), ok());
    assert_eq!(h.run(&["CLIENT", "PAUSE", "9223372036854775807"]), ok());
    let (until, mode) = pause(&h);
    assert!(until > i64::MAX as u64 && mode == Pause::ALL);
    h.server.pause.until_ms.store(0, Ordering::Relaxed);
}

#[test]
fn client_pause_errors() {
    let mut h = Harness::new();
    let cases: &[(&[&str], &str)] = &[
        (&["-1"], "ERR timeout is negative"),
        (&["x"], "ERR timeout is not an integer or out of range"),
        (&["1.5"], "ERR timeout is not an integer or out of range"),
        (&["10", "foo"], "ERR CLIENT PAUSE mode must be WRITE or ALL"),
        // The mode is checked before the timeout.
        (&["x", "foo"], "ERR CLIENT PAUSE mode must be WRITE or ALL"),
    ];
    for (args, expected) in cases {
        let mut argv = vec!["CLIENT", "PAUSE"];
        argv.extend_from_slice(args);
        assert_eq!(h.run(&argv), err(expected), "{args:?}");
    }
    assert_eq!(
        h.run(&["client", "Pause", "10", "write", "x"]),
        err("ERR unknown subcommand or wrong number of arguments for 'Pause'. Try CLIENT HELP.")
    );
    assert_eq!(
        h.run(&["CLIENT", "PAUSE"]),
        err("ERR wrong number of arguments for 'client|pause' command")
    );
    assert_eq!(
        h.run(&["CLIENT", "UNPAUSE", "x"]),
        err("ERR wrong number of arguments for 'client|unpause' command")
    );
    assert_eq!(h.server.pause.until_ms.load(Ordering::Relaxed), 0);
}

#[test]
fn client_help() {
    let mut h = Harness::new();
    let Frame::Array(lines) = h.run(&["CLIENT", "HELP"]) else {
        panic!("help is an array");
    };
    assert_eq!(
        lines.first(),
        Some(&simple(
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
        ))
    );
    assert_eq!(lines.last(), Some(&simple("    Prints this help.")));
    assert!(lines.iter().all(|l| matches!(l, Frame::Simple(_))));
    // Every subcommand is documented.
    for sub in CLIENT_SUBCOMMANDS {
        let upper = sub.name.to_ascii_uppercase();
        assert!(
            lines.iter().any(|l| l
                .as_str()
                .is_some_and(|s| s == upper || s.starts_with(&format!("{upper} ")))),
            "{upper}"
        );
    }
    assert_eq!(
        h.run(&["CLIENT", "HELP", "x"]),
        err("ERR wrong number of arguments for 'client|help' command")
    );
}
