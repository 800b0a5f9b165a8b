//! Client-side caching through the command layer: tracking connections whose outboxes
//! collect what the [`Tracking`](super::Tracking) consumer posts (no worker drains them, so a
//! test drains them itself).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use larder_resp::Frame;

use crate::testing::{bulk, err, int, ok, Harness};

fn text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Integer(i) => i.to_string(),
        Frame::Null => "null".into(),
        Frame::Array(items) => items.iter().map(text).collect::<Vec<_>>().join(","),
        other => format!("{other:?}"),
    }
}

/// Everything queued for the connection, one line per message: `push invalidate a,b`,
/// `push invalidate null`, `message __redis__:invalidate a`... (drains the outbox).
fn take(h: &Harness) -> Vec<String> {
    let bytes = h.conn.handle.mail.take();
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let (frame, used) = larder_resp::decode(&bytes[at..])
            .expect("valid RESP")
            .expect("whole frames");
        at += used;
        let (kind, items) = match frame {
            Frame::Push(items) => ("push", items),
            Frame::Array(items) => ("array", items),
            other => panic!("not a message: {other:?}"),
        };
        let words: Vec<String> = items.iter().map(text).collect();
        out.push(format!("{kind} {}", words.join(" ")));
    }
    out
}

/// A writer and a RESP3 tracking client on one server.
fn pair(options: &[&str]) -> (Harness, Harness) {
    let w = Harness::new();
    let mut t = Harness::connect(w.server.clone());
    t.run(&["HELLO", "3"]);
    let mut argv = vec!["CLIENT", "TRACKING", "on"];
    argv.extend_from_slice(options);
    assert_eq!(t.run(&argv), ok());
    (w, t)
}

#[test]
fn default_mode_invalidates_each_read_key_once() {
    let (mut w, mut t) = pair(&[]);
    assert!(w.server.tracking.active());
    w.run(&["SET", "a", "1"]);
    assert!(take(&t).is_empty(), "nothing read yet");
    t.run(&["GET", "a"]);
    t.run(&["MGET", "b", "c"]);
    assert_eq!(w.server.tracking.info(), (1, 3, 3, 0));
    w.run(&["SET", "a", "2"]);
    w.run(&["SET", "a", "3"]);
    w.run(&["MSET", "b", "1", "c", "1", "d", "1"]);
    assert_eq!(
        take(&t),
        [
            "push invalidate a",
            "push invalidate b",
            "push invalidate c"
        ]
    );
    // Keyed by name alone, as in Redis: a write in another database counts.
    t.run(&["STRLEN", "a"]);
    w.run(&["SELECT", "1"]);
    w.run(&["SET", "a", "x"]);
    assert_eq!(take(&t), ["push invalidate a"]);
    // Writes are not reads.
    t.run(&["SET", "x", "1"]);
    w.run(&["SET", "x", "2"]);
    assert!(take(&t).is_empty());
    // Off forgets everything, and the feed goes quiet.
    t.run(&["GET", "y"]);
    assert_eq!(t.run(&["CLIENT", "TRACKING", "off"]), ok());
    assert!(!w.server.tracking.active());
    t.run(&["CLIENT", "TRACKING", "on"]);
    w.run(&["SELECT", "0"]);
    w.run(&["SET", "y", "1"]);
    assert!(take(&t).is_empty());
}

#[test]
fn own_writes_invalidate_unless_noloop() {
    let (_w, mut t) = pair(&[]);
    t.run(&["GET", "k"]);
    t.run(&["SET", "k", "1"]);
    assert_eq!(take(&t), ["push invalidate k"]);
    t.run(&["CLIENT", "TRACKING", "on", "NOLOOP"]);
    t.run(&["GET", "k"]);
    t.run(&["SET", "k", "2"]);
    assert!(take(&t).is_empty());
    assert_eq!(
        t.run(&["CLIENT", "TRACKINGINFO"]),
        Frame::Map(vec![
            (bulk("flags"), Frame::Set(vec![bulk("on"), bulk("noloop")])),
            (bulk("redirect"), int(0)),
            (bulk("prefixes"), Frame::Array(vec![])),
        ])
    );
}

#[test]
fn expiry_and_transactions_invalidate() {
    let (mut w, mut t) = pair(&[]);
    t.run(&["MULTI"]);
    t.run(&["GET", "a"]);
    t.run(&["GET", "b"]);
    t.run(&["EXEC"]);
    w.run(&["MULTI"]);
    w.run(&["SET", "a", "1"]);
    w.run(&["SET", "b", "1", "PX", "1"]);
    w.run(&["EXEC"]);
    assert_eq!(take(&t), ["push invalidate a", "push invalidate b"]);
    t.run(&["GET", "b"]);
    std::thread::sleep(std::time::Duration::from_millis(5));
    // Lazy expiry by another reader.
    w.run(&["GET", "b"]);
    assert_eq!(take(&t), ["push invalidate b"]);
}

#[test]
fn optin_and_optout() {
    let (mut w, mut t) = pair(&["OPTIN"]);
    t.run(&["GET", "a"]);
    assert_eq!(t.run(&["CLIENT", "CACHING", "yes"]), ok());
    t.run(&["GET", "b"]);
    t.run(&["GET", "c"]);
    w.run(&["MSET", "a", "1", "b", "1", "c", "1"]);
    assert_eq!(take(&t), ["push invalidate b"]);
    assert_eq!(
        t.run(&["CLIENT", "CACHING", "no"]),
        err("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    );
    assert_eq!(
        t.run(&["CLIENT", "TRACKING", "on", "OPTOUT"]),
        err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
    );
    t.run(&["CLIENT", "TRACKING", "off"]);
    t.run(&["CLIENT", "TRACKING", "on", "OPTOUT"]);
    t.run(&["CLIENT", "CACHING", "no"]);
    t.run(&["GET", "a"]);
    t.run(&["GET", "b"]);
    w.run(&["MSET", "a", "2", "b", "2"]);
    assert_eq!(take(&t), ["push invalidate b"]);
}

#[test]
fn bcast_sends_a_groups_keys_per_prefix() {
    let (mut w, mut t) = pair(&["BCAST", "PREFIX", "a:", "PREFIX", "b:"]);
    w.run(&["MSET", "b:2", "1", "a:1", "1", "c:1", "1", "a:0", "1"]);
    w.run(&["SET", "c", "1"]);
    assert_eq!(take(&t), ["push invalidate a:0,a:1", "push invalidate b:2"]);
    assert_eq!(w.server.tracking.info(), (1, 0, 0, 2));
    assert_eq!(
        t.run(&["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a:x"]),
        err("ERR Prefix 'a:x' overlaps with an existing prefix 'a:'. Prefixes for a single client must not overlap.")
    );
    assert_eq!(
        t.run(&["CLIENT", "TRACKING", "on"]),
        err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
    );
    // NOLOOP leaves out the keys the client changed itself.
    t.run(&["CLIENT", "TRACKING", "on", "BCAST", "NOLOOP"]);
    t.run(&["MSET", "a:1", "2", "b:1", "2"]);
    assert!(take(&t).is_empty());
    let mut line = String::new();
    if let Frame::Verbatim { text: l, .. } = t.run(&["CLIENT", "INFO"]) {
        line = String::from_utf8_lossy(&l).into_owned();
    }
    assert!(line.contains(" flags=tB "), "{line}");
    t.run(&["CLIENT", "TRACKING", "off"]);
    assert_eq!(w.server.tracking.info(), (0, 0, 0, 0));
}

#[test]
fn flushes_send_one_null_to_every_tracking_client() {
    let (mut w, mut t) = pair(&[]);
    let mut b = Harness::connect(w.server.clone());
    b.run(&["HELLO", "3"]);
    b.run(&["CLIENT", "TRACKING", "on", "BCAST"]);
    t.run(&["GET", "k"]);
    w.run(&["FLUSHALL"]);
    assert_eq!(take(&t), ["push invalidate null"]);
    assert_eq!(take(&b), ["push invalidate null"]);
    assert_eq!(w.server.tracking.info().1, 0);
    w.run(&["SET", "k", "1"]);
    assert!(take(&t).is_empty(), "forgotten by the flush");
    assert_eq!(take(&b), ["push invalidate k"]);
}

#[test]
fn redirect_to_a_resp2_subscriber_and_broken_redirection() {
    let mut w = Harness::new();
    let mut s = Harness::connect(w.server.clone());
    let mut t = Harness::connect(w.server.clone());
    let sid = s.conn.id.to_string();
    assert_eq!(
        t.run(&["CLIENT", "TRACKING", "on", "REDIRECT", "999"]),
        err("ERR The client ID you want redirect to does not exist")
    );
    assert_eq!(
        t.run(&["CLIENT", "TRACKING", "on", "REDIRECT", &sid, "REDIRECT", &sid]),
        err("ERR A client can only redirect to a single other client")
    );
    assert_eq!(t.run(&["CLIENT", "TRACKING", "on", "REDIRECT", &sid]), ok());
    assert_eq!(t.run(&["CLIENT", "GETREDIR"]), int(s.conn.id as i64));
    t.run(&["GET", "k"]);
    w.run(&["SET", "k", "1"]);
    assert!(take(&s).is_empty(), "not subscribed: nothing");
    s.run(&["SUBSCRIBE", "__redis__:invalidate"]);
    s.conn.handle.mail.take();
    t.run(&["GET", "k"]);
    w.run(&["SET", "k", "2"]);
    assert_eq!(take(&s), ["array message __redis__:invalidate k"]);
    w.run(&["FLUSHDB"]);
    assert_eq!(take(&s), ["array message __redis__:invalidate null"]);
    // The target goes away: a RESP3 tracking client hears of it.
    t.run(&["HELLO", "3"]);
    t.run(&["GET", "k"]);
    w.server.client_closed(s.conn.id, Some(&s.conn.subs));
    w.run(&["SET", "k", "3"]);
    assert_eq!(take(&t), [format!("push tracking-redir-broken {sid}")]);
    let Frame::Map(info) = t.run(&["CLIENT", "TRACKINGINFO"]) else {
        panic!("a map");
    };
    assert_eq!(
        text(&Frame::Array(match &info[0].1 {
            Frame::Set(items) => items.clone(),
            other => panic!("{other:?}"),
        })),
        "on,broken_redirect"
    );
    let Frame::Verbatim { text: line, .. } = t.run(&["CLIENT", "INFO"]) else {
        panic!("verbatim");
    };
    let line = String::from_utf8_lossy(&line).into_owned();
    assert!(
        line.contains(" flags=tR ") && line.contains(&format!(" redir={sid} ")),
        "{line}"
    );
    assert_eq!(t.run(&["CLIENT", "TRACKING", "off"]), ok());
    assert_eq!(t.run(&["CLIENT", "GETREDIR"]), int(-1));
}

#[test]
fn option_errors_match_redis() {
    let mut h = Harness::new();
    let cases: &[(&[&str], &str)] = &[
        (&["CLIENT", "TRACKING", "maybe"], "ERR syntax error"),
        (&["CLIENT", "TRACKING", "on", "FOO"], "ERR syntax error"),
        (
            &["CLIENT", "TRACKING", "on", "PREFIX", "a"],
            "ERR PREFIX option requires BCAST mode to be enabled",
        ),
        (
            &["CLIENT", "TRACKING", "on", "BCAST", "OPTIN"],
            "ERR OPTIN and OPTOUT are not compatible with BCAST",
        ),
        (
            &["CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"],
            "ERR You can't specify both OPTIN mode and OPTOUT mode",
        ),
        (
            &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a"],
            "ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap.",
        ),
        (
            &["CLIENT", "TRACKING", "on", "REDIRECT", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["CLIENT", "CACHING", "yes"],
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ),
    ];
    for (argv, want) in cases {
        assert_eq!(h.run(argv), err(want), "{argv:?}");
    }
    assert_eq!(h.run(&["CLIENT", "GETREDIR"]), int(-1));
    assert!(!h.conn.handle.tracking.on());
}

#[test]
fn the_table_is_bounded_and_over_limit_clients_are_closed() {
    let (mut w, mut t) = pair(&[]);
    w.run(&["CONFIG", "SET", "tracking-table-max-keys", "2"]);
    t.run(&["MGET", "a", "b", "c"]);
    let (_, keys, items, _) = w.server.tracking.info();
    assert_eq!((keys, items), (2, 2));
    assert_eq!(take(&t).len(), 1, "one key evicted by invalidation");
    w.run(&["CONFIG", "SET", "tracking-table-max-keys", "0"]);
    w.run(&[
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "normal 100 0 0",
    ]);
    let keys: Vec<String> = (0..20).map(|i| format!("key:{i}")).collect();
    let mut argv = vec!["MGET"];
    argv.extend(keys.iter().map(String::as_str));
    t.run(&argv);
    for k in &keys {
        w.run(&["SET", k, "1"]);
    }
    assert!(t.conn.handle.mail.over_limit());
    assert!(t.conn.handle.killed.load(Ordering::Acquire));
}

#[test]
fn reset_and_disconnect_stop_tracking() {
    let (w, mut t) = pair(&["BCAST"]);
    assert_eq!(w.server.tracking.info().0, 1);
    t.run(&["RESET"]);
    assert!(!t.conn.handle.tracking.on());
    assert_eq!(w.server.tracking.info(), (0, 0, 0, 0));
    t.run(&["CLIENT", "TRACKING", "on"]);
    let id = t.conn.id;
    let subs = std::mem::take(&mut t.conn.subs);
    let server = Arc::clone(&w.server);
    server.client_closed(id, Some(&subs));
    assert_eq!(server.tracking.info().0, 0);
    assert!(!server.tracking.active());
}
