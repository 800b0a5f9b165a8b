//! Value events through the command layer: a writer connection, subscriber connections whose
//! outboxes collect what the [`Values`](super::Values) consumer posts (no worker drains them,
//! so a test drains them itself, as a reading client would).

use larder_engine::EvictionPolicy;
use larder_resp::Frame;

use crate::testing::{ok, Harness};

/// One value-event message, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Msg {
    pattern: Option<String>,
    channel: String,
    seq: u64,
    event: String,
    version: u64,
    ty: Option<String>,
    value: Option<Vec<u8>>,
}

impl Msg {
    /// `[pattern ]channel seq event[ type value]`, versions left out.
    fn short(&self) -> String {
        let mut s = String::new();
        if let Some(p) = &self.pattern {
            s.push_str(p);
            s.push(' ');
        }
        s.push_str(&format!("{} {} {}", self.channel, self.seq, self.event));
        if let (Some(ty), Some(v)) = (&self.ty, &self.value) {
            s.push_str(&format!(" {ty} {}", String::from_utf8_lossy(v)));
        }
        if self.event == "dropped" {
            s.push_str(&format!(" {}", self.version));
        }
        s
    }
}

fn bulk_bytes(f: &Frame) -> Vec<u8> {
    match f {
        Frame::Bulk(b) => b.clone(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

fn parse_payload(pattern: Option<String>, channel: String, payload: &[u8]) -> Msg {
    let (head, value) = match payload.iter().position(|&b| b == b'\n') {
        Some(i) => (&payload[..i], Some(payload[i + 1..].to_vec())),
        None => (payload, None),
    };
    let head = String::from_utf8(head.to_vec()).expect("an ASCII first line");
    let words: Vec<&str> = head.split(' ').collect();
    assert!(words.len() == 3 || words.len() == 4, "first line {head:?}");
    assert_eq!(
        words.len() == 4,
        value.is_some(),
        "a type word iff a value: {head:?}"
    );
    Msg {
        pattern,
        channel,
        seq: words[0].parse().expect("seq"),
        event: words[1].to_string(),
        version: words[2].parse().expect("version"),
        ty: words.get(3).map(|t| t.to_string()),
        value,
    }
}

/// Everything queued for the connection, as value-event messages (drains the outbox).
fn take(h: &Harness) -> Vec<Msg> {
    let bytes = h.conn.handle.mail.take();
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let (frame, used) = larder_resp::decode(&bytes[at..])
            .expect("valid RESP")
            .expect("whole frames");
        at += used;
        let items = match frame {
            Frame::Array(items) | Frame::Push(items) => items,
            other => panic!("not a message: {other:?}"),
        };
        let parts: Vec<Vec<u8>> = items.iter().map(bulk_bytes).collect();
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        out.push(match parts[0].as_slice() {
            b"message" => parse_payload(None, s(&parts[1]), &parts[2]),
            b"pmessage" => parse_payload(Some(s(&parts[1])), s(&parts[2]), &parts[3]),
            other => panic!("unexpected {:?}", s(other)),
        });
    }
    out
}

fn shorts(h: &Harness) -> Vec<String> {
    take(h).iter().map(Msg::short).collect()
}

/// A writer and a subscriber on one server.
fn pair() -> (Harness, Harness) {
    let w = Harness::new();
    let s = Harness::connect(w.server.clone());
    (w, s)
}

#[test]
fn writes_and_deletes_carry_values_and_versions() {
    let (mut w, mut s) = pair();
    s.run(&["SUBSCRIBE", "__values@0__:k"]);
    w.run(&["SET", "k", "hello"]);
    w.run(&["SET", "other", "x"]);
    w.run(&["APPEND", "k", " world"]);
    w.run(&["DEL", "k"]);
    let got = take(&s);
    assert_eq!(
        got.iter().map(Msg::short).collect::<Vec<_>>(),
        [
            "__values@0__:k 1 set string hello",
            "__values@0__:k 2 set string hello world",
            "__values@0__:k 3 del string hello world",
        ]
    );
    // Versions identify writes: a new one per write, the removed one on a delete.
    assert!(got[1].version > got[0].version && got[0].version > 0);
    assert_eq!(got[2].version, got[1].version);
    // Exact bytes of one message (RESP2).
    w.run(&["SET", "k", "v"]);
    let raw = s.conn.handle.mail.take();
    let text = String::from_utf8(raw).expect("ascii");
    let head = text.split("\r\n").nth(6).expect("the payload").to_string();
    let version: u64 = head.split(' ').nth(2).expect("v").parse().expect("n");
    let payload = format!("4 set {version} string\nv");
    assert_eq!(
        text,
        format!(
            "*3\r\n$7\r\nmessage\r\n$14\r\n__values@0__:k\r\n${}\r\n{payload}\r\n",
            payload.len()
        )
    );
}

#[test]
fn one_event_per_command_whatever_it_changes() {
    let (mut w, mut s) = pair();
    s.run(&["SUBSCRIBE", "__values@0__:k"]);
    w.run(&["SET", "k", "1", "EX", "100"]);
    w.run(&["INCR", "k"]);
    w.run(&["EXPIRE", "k", "200"]);
    w.run(&["PERSIST", "k"]);
    w.run(&["SET", "k", "x", "NX"]); // no write, no event
    w.run(&["GETDEL", "k"]);
    assert_eq!(
        shorts(&s),
        [
            "__values@0__:k 1 set string 1",
            "__values@0__:k 2 set string 2",
            "__values@0__:k 3 set string 2",
            "__values@0__:k 4 set string 2",
            "__values@0__:k 5 del string 2",
        ]
    );
}

#[test]
fn lists_are_resp2_arrays() {
    let (mut w, mut s) = pair();
    s.run(&["SUBSCRIBE", "__values@0__:l"]);
    w.run(&["RPUSH", "l", "a", "bc"]);
    w.run(&["LPOP", "l"]);
    w.run(&["RPUSH", "l", ""]);
    w.run(&["DEL", "l"]);
    let got = take(&s);
    let values: Vec<(&str, &str, &[u8])> = got
        .iter()
        .map(|m| {
            (
                m.event.as_str(),
                m.ty.as_deref().expect("a type"),
                m.value.as_deref().expect("a value"),
            )
        })
        .collect();
    assert_eq!(
        values,
        [
            ("set", "list", &b"*2\r\n$1\r\na\r\n$2\r\nbc\r\n"[..]),
            ("set", "list", b"*1\r\n$2\r\nbc\r\n"),
            ("set", "list", b"*2\r\n$2\r\nbc\r\n$0\r\n\r\n"),
            ("del", "list", b"*2\r\n$2\r\nbc\r\n$0\r\n\r\n"),
        ]
    );
    // A list emptied by a pop is deleted: one `del` (the write that emptied it and the
    // delete are one command's changes to one key).
    w.run(&["RPUSH", "l", "z"]);
    w.run(&["RPOP", "l"]);
    assert_eq!(
        shorts(&s),
        [
            "__values@0__:l 5 set list *1\r\n$1\r\nz\r\n",
            "__values@0__:l 6 del list *0\r\n",
        ]
    );
    // A string that looks like a list is still a string.
    w.run(&["SET", "l", "*1\r\n$1\r\nz\r\n"]);
    assert_eq!(
        shorts(&s),
        ["__values@0__:l 7 set string *1\r\n$1\r\nz\r\n"]
    );
}

#[test]
fn expiry_and_eviction_carry_the_removed_value() {
    let (mut w, mut s) = pair();
    s.run(&["PSUBSCRIBE", "__values@0__:*"]);
    // Lazy: a reader finds the key past its deadline.
    w.run(&["SET", "lazy", "l", "PX", "1"]);
    std::thread::sleep(std::time::Duration::from_millis(5));
    w.run(&["GET", "lazy"]);
    // Active: the expiry cycle.
    w.run(&["SET", "active", "a", "PX", "1"]);
    let later = larder_engine::now_ms() + 10_000;
    w.server.keyspace.expire_cycle(later, |_, _| {});
    // Eviction (the only key left).
    w.run(&["RPUSH", "ev", "x"]);
    w.server.keyspace.evict(
        EvictionPolicy::AllkeysRandom,
        5,
        larder_engine::now_ms(),
        1,
        1,
        |_, _| {},
    );
    let p = "__values@0__:*";
    assert_eq!(
        shorts(&s),
        [
            format!("{p} __values@0__:lazy 1 set string l"),
            format!("{p} __values@0__:lazy 2 expired string l"),
            format!("{p} __values@0__:active 3 set string a"),
            format!("{p} __values@0__:active 4 expired string a"),
            format!("{p} __values@0__:ev 5 set list *1\r\n$1\r\nx\r\n"),
            format!("{p} __values@0__:ev 6 evicted list *1\r\n$1\r\nx\r\n"),
        ]
    );
}

#[test]
fn flush_and_swap_reach_every_value_subscriber_of_the_database() {
    let w = Harness::new();
    let mut w = w;
    let mut chan = Harness::connect(w.server.clone());
    let mut pat = Harness::connect(w.server.clone());
    let mut other = Harness::connect(w.server.clone());
    let mut plain = Harness::connect(w.server.clone());
    chan.run(&["SUBSCRIBE", "__values@0__:k"]);
    pat.run(&["PSUBSCRIBE", "__values@0__:user:*"]);
    other.run(&["SUBSCRIBE", "__values@1__:k"]);
    plain.run(&["PSUBSCRIBE", "*"]);
    w.run(&["FLUSHDB"]);
    assert_eq!(shorts(&chan), ["__values@0__:k 1 flushdb"]);
    assert_eq!(
        shorts(&pat),
        ["__values@0__:user:* __values@0__: 1 flushdb"]
    );
    assert!(take(&other).is_empty());
    w.run(&["FLUSHALL"]);
    assert_eq!(shorts(&chan), ["__values@0__:k 2 flushdb"]);
    assert_eq!(shorts(&other), ["__values@1__:k 1 flushdb"]);
    w.run(&["SWAPDB", "0", "1"]);
    assert_eq!(shorts(&chan), ["__values@0__:k 3 swapdb"]);
    assert_eq!(shorts(&other), ["__values@1__:k 2 swapdb"]);
    assert_eq!(
        shorts(&pat),
        [
            "__values@0__:user:* __values@0__: 2 flushdb",
            "__values@0__:user:* __values@0__: 3 swapdb",
        ]
    );
    // A flush carries no value and version 0.
    w.run(&["FLUSHDB"]);
    let m = take(&chan).pop().expect("one");
    assert_eq!((m.version, m.ty, m.value), (0, None, None));
    // An ordinary pattern gets no value events at all.
    w.run(&["SET", "k", "v"]);
    assert!(plain.conn.handle.mail.take().is_empty());
}

#[test]
fn patterns_and_sequences_per_subscription() {
    let (mut w, mut s) = pair();
    s.run(&["PSUBSCRIBE", "__values@0__:user:*"]);
    s.run(&["SUBSCRIBE", "__values@0__:user:1"]);
    let mut s2 = Harness::connect(w.server.clone());
    s2.run(&["PSUBSCRIBE", "__values@*__:user:1"]);
    w.run(&["SET", "user:1", "a"]);
    w.run(&["SET", "user:2", "b"]);
    w.run(&["SET", "session:1", "c"]);
    w.run(&["SELECT", "1"]);
    w.run(&["SET", "user:1", "d"]);
    assert_eq!(
        shorts(&s),
        [
            "__values@0__:user:1 1 set string a",
            "__values@0__:user:* __values@0__:user:1 1 set string a",
            "__values@0__:user:* __values@0__:user:2 2 set string b",
        ]
    );
    assert_eq!(
        shorts(&s2),
        [
            "__values@*__:user:1 __values@0__:user:1 1 set string a",
            "__values@*__:user:1 __values@1__:user:1 2 set string d",
        ]
    );
    // Unsubscribing and subscribing again starts the count again.
    s.run(&["UNSUBSCRIBE", "__values@0__:user:1"]);
    s.run(&["SUBSCRIBE", "__values@0__:user:1"]);
    w.run(&["SELECT", "0"]);
    w.run(&["DEL", "user:1"]);
    assert_eq!(
        shorts(&s),
        [
            "__values@0__:user:1 1 del string a",
            "__values@0__:user:* __values@0__:user:1 3 del string a",
        ]
    );
}

#[test]
fn a_transaction_goes_out_together_in_order() {
    let (mut w, mut s) = pair();
    s.run(&["PSUBSCRIBE", "__values@0__:*"]);
    w.run(&["MULTI"]);
    w.run(&["SET", "a", "1"]);
    w.run(&["RPUSH", "l", "x"]);
    w.run(&["DEL", "a"]);
    w.run(&["MSET", "b", "2", "c", "3"]);
    assert!(take(&s).is_empty());
    w.run(&["EXEC"]);
    let got: Vec<String> = take(&s)
        .iter()
        .map(|m| format!("{} {} {}", m.seq, m.event, m.channel))
        .collect();
    assert_eq!(
        got,
        [
            "1 set __values@0__:a",
            "2 set __values@0__:l",
            "3 del __values@0__:a",
            "4 set __values@0__:b",
            "5 set __values@0__:c",
        ]
    );
}

#[test]
fn resp3_gets_push_frames_and_binary_keys_work() {
    let (mut w, mut s) = pair();
    s.run(&["HELLO", "3"]);
    s.run_bytes(&[b"SUBSCRIBE", b"__values@0__:\x00k\r\n"]);
    w.run_bytes(&[b"SET", b"\x00k\r\n", b"v\x00\n"]);
    let raw = s.conn.handle.mail.take();
    assert!(raw.starts_with(b">3\r\n$7\r\nmessage\r\n$17\r\n__values@0__:\x00k\r\n\r\n"));
    s.conn
        .handle
        .mail
        .post_within(0, 0, 0, |o| o.extend_from_slice(&raw))
        .expect("requeued");
    let m = take(&s).pop().expect("one message");
    assert_eq!(m.value.as_deref(), Some(&b"v\x00\n"[..]));
}

#[test]
fn over_budget_events_are_dropped_then_announced() {
    let (mut w, mut s) = pair();
    assert_eq!(
        w.run(&["CONFIG", "SET", "value-events-buffer-limit", "300"]),
        ok()
    );
    s.run(&["SUBSCRIBE", "__values@0__:k"]);
    let value = "x".repeat(100);
    // One message is ~170 bytes: the first fits, the next three do not.
    for _ in 0..4 {
        w.run(&["SET", "k", &value]);
    }
    assert!(s.conn.handle.mail.queued() <= 300);
    let got = take(&s);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].seq, 1);
    // The client read its output: the next event is preceded by the count of those skipped.
    w.run(&["SET", "k", "small"]);
    assert_eq!(
        shorts(&s),
        [
            "__values@0__:k 2 dropped 3",
            "__values@0__:k 3 set string small"
        ]
    );
    // Unsent output counts too, and the client is never closed for value events.
    s.conn
        .handle
        .output_buf_bytes
        .store(1000, std::sync::atomic::Ordering::Relaxed);
    w.run(&["SET", "k", "a"]);
    w.run(&["SET", "k", "b"]);
    assert!(take(&s).is_empty());
    assert!(!s
        .conn
        .handle
        .killed
        .load(std::sync::atomic::Ordering::Relaxed));
    assert!(!s.conn.handle.mail.over_limit());
    s.conn
        .handle
        .output_buf_bytes
        .store(0, std::sync::atomic::Ordering::Relaxed);
    w.run(&["DEL", "k"]);
    assert_eq!(
        shorts(&s),
        [
            "__values@0__:k 4 dropped 2",
            "__values@0__:k 5 del string b"
        ]
    );
    let (sent, dropped) = w.server.pubsub.values().counts();
    assert_eq!((sent, dropped), (3, 5));
    // 0: no budget.
    w.run(&["CONFIG", "SET", "value-events-buffer-limit", "0"]);
    for _ in 0..10 {
        w.run(&["SET", "k", &value]);
    }
    assert_eq!(take(&s).len(), 10);
    assert_eq!(
        w.run(&["CONFIG", "GET", "value-events-buffer-limit"]),
        Frame::Array(vec![
            Frame::Bulk(b"value-events-buffer-limit".to_vec()),
            Frame::Bulk(b"0".to_vec())
        ])
    );
    w.run(&["CONFIG", "SET", "value-events-buffer-limit", "1mb"]);
    assert_eq!(
        w.run(&["CONFIG", "GET", "value-events-buffer-limit"]),
        Frame::Array(vec![
            Frame::Bulk(b"value-events-buffer-limit".to_vec()),
            Frame::Bulk(b"1048576".to_vec())
        ])
    );
}

#[test]
fn values_are_recorded_only_while_someone_subscribes() {
    let (mut w, mut s) = pair();
    let feed = w.server.keyspace.feed().clone();
    let values = w.server.pubsub.values().clone();
    assert!(!feed.records_values() && !values.active());
    s.run(&["SUBSCRIBE", "plain"]);
    s.run(&["PSUBSCRIBE", "*"]);
    assert!(!feed.records_values());
    s.run(&["SUBSCRIBE", "__values@0__:k"]);
    assert!(feed.records_values() && values.active());
    let mut s2 = Harness::connect(w.server.clone());
    s2.run(&["PSUBSCRIBE", "__values@0__:*"]);
    s.run_raw(&[b"UNSUBSCRIBE"]);
    assert!(feed.records_values(), "a pattern is left");
    s2.run(&["PUNSUBSCRIBE", "__values@0__:*"]);
    assert!(!feed.records_values());
    // RESET drops value subscriptions as any other.
    s.run(&["SUBSCRIBE", "__values@0__:k"]);
    assert!(feed.records_values());
    s.run(&["RESET"]);
    assert!(!feed.records_values());
    // So does a disconnect.
    s.run(&["PSUBSCRIBE", "__values@3__:*"]);
    assert!(feed.records_values());
    let subs = std::mem::take(&mut s.conn.subs);
    w.server.client_closed(s.conn.id, Some(&subs));
    assert!(!feed.records_values());
    // Nothing is delivered to the gone client.
    w.run(&["SELECT", "3"]);
    w.run(&["SET", "k", "v"]);
    assert!(s.conn.handle.mail.take().is_empty());
    // The keyspace notifier's interest is its own.
    w.run(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    assert!(feed.records_changes() && !feed.records_values());
}

#[test]
fn value_channels_are_ordinary_channels_otherwise() {
    let (mut w, mut s) = pair();
    s.run(&["SUBSCRIBE", "__values@0__:k"]);
    s.run(&["PSUBSCRIBE", "__values@0__:*"]);
    assert_eq!(
        w.run(&["PUBSUB", "CHANNELS", "__values@*"]),
        Frame::Array(vec![Frame::Bulk(b"__values@0__:k".to_vec())])
    );
    assert_eq!(w.run(&["PUBSUB", "NUMPAT"]), Frame::Integer(1));
    assert_eq!(
        w.run(&["PUBSUB", "NUMSUB", "__values@0__:k"]),
        Frame::Array(vec![
            Frame::Bulk(b"__values@0__:k".to_vec()),
            Frame::Integer(1)
        ])
    );
}

#[test]
fn database_parts_of_names() {
    use super::{channel_db, pattern_covers_db};
    assert_eq!(channel_db(b"__values@0__:k"), Some(0));
    assert_eq!(channel_db(b"__values@12__:"), Some(12));
    assert_eq!(channel_db(b"__values@012__:k"), None);
    assert_eq!(channel_db(b"__values@x__:k"), None);
    assert_eq!(channel_db(b"__values@0"), None);
    assert!(pattern_covers_db(b"__values@0__:user:*", 0));
    assert!(!pattern_covers_db(b"__values@0__:user:*", 1));
    assert!(pattern_covers_db(b"__values@*__:user:*", 7));
    assert!(pattern_covers_db(b"__values@[12]__:*", 2));
    assert!(pattern_covers_db(b"__values@*", 3));
    assert!(!pattern_covers_db(b"__values@1", 1));
    assert!(!pattern_covers_db(b"__keyspace@0__:*", 0));
}
