//! Socket-free tests of the watch registry and the SSE text.

use std::sync::Arc;

use larder_commands::state::ClientHandle;
use larder_commands::testing::{detached_handle, Harness};
use larder_engine::feed::Value;

use super::registry::{Filter, Inner, Kind, Resume, LINGER_MS};
use super::sse;

/// The events in SSE text: `(id, event, data)` per event, comments skipped.
fn events(text: &[u8]) -> Vec<(Option<u64>, String, serde_json::Value)> {
    let text = String::from_utf8(text.to_vec()).expect("SSE text is UTF-8");
    let mut out = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.is_empty()) {
        let (mut id, mut name, mut data) = (None, String::new(), serde_json::Value::Null);
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.parse().expect("numeric id"));
            } else if let Some(v) = line.strip_prefix("event: ") {
                name = v.into();
            } else if let Some(v) = line.strip_prefix("data: ") {
                data = serde_json::from_str(v).expect("JSON data");
            }
        }
        if !name.is_empty() {
            out.push((id, name, data));
        }
    }
    out
}

fn all_keys(values: bool) -> Filter {
    Filter {
        db: 0,
        keys: Vec::new(),
        prefixes: Vec::new(),
        kinds: Kind::ALL,
        values,
    }
}

fn watcher(h: &Harness, inner: &Inner, filter: Filter, resume: Resume) -> Arc<ClientHandle> {
    let handle = detached_handle(&h.server);
    let mut head = Vec::new();
    inner.join(&handle, filter, resume, &mut head);
    if !head.is_empty() {
        handle
            .mail
            .post_within(handle.id, 0, 0, |o| o.extend_from_slice(&head))
            .expect("posted");
    }
    handle
}

#[test]
fn base64_and_binary_fields() {
    assert_eq!(crate::http::base64_encode(b""), "");
    assert_eq!(crate::http::base64_encode(b"f"), "Zg==");
    assert_eq!(crate::http::base64_encode(b"fo"), "Zm8=");
    assert_eq!(crate::http::base64_encode(b"foo"), "Zm9v");
    assert_eq!(
        crate::http::base64_encode(&[0xff, 0x00, 0xfe, 0x01]),
        "/wD+AQ=="
    );
    let value = Value::String(vec![0xff, b'a']);
    let (plain, valued) = sse::change(7, "set", 0, &[0xc3, 0x28], 3, Some(&value));
    let ev = events(&plain);
    assert_eq!(ev[0].0, Some(7));
    assert_eq!(ev[0].2["key"], "wyg=");
    assert_eq!(ev[0].2["key_encoding"], "base64");
    assert!(ev[0].2.get("value").is_none());
    let ev = events(&valued.expect("a value"));
    assert_eq!(ev[0].2["value"], "/2E=");
    assert_eq!(ev[0].2["encoding"], "base64");
    assert_eq!(ev[0].2["type"], "string");
    let hash = Value::Hash(vec![(b"f".to_vec(), b"v".to_vec())]);
    let (_, valued) = sse::change(8, "set", 0, b"h", 1, Some(&hash));
    let ev = events(&valued.expect("a value"));
    assert_eq!(ev[0].2["value"], serde_json::json!([["f", "v"]]));
    assert_eq!(ev[0].2["type"], "hash");
    let mut out = Vec::new();
    sse::pubsub_message(&[b"pmessage", b"n*", b"news", b"hi\nthere"], &mut out);
    assert_eq!(
        String::from_utf8(out).expect("UTF-8"),
        "event: message\ndata: {\"channel\":\"news\",\"message\":\"hi\\nthere\",\"pattern\":\"n*\"}\n\n"
    );
}

#[test]
fn changes_become_events_in_order_with_one_id_sequence() {
    let mut h = Harness::new();
    let inner = Inner::install(&h.server);
    assert!(!inner.recording(), "nothing asked for before a watcher");
    let a = watcher(&h, &inner, all_keys(true), Resume::Fresh);
    let only_b = Filter {
        keys: vec![b"b".to_vec()],
        kinds: Kind::Set.bit() | Kind::Del.bit(),
        ..all_keys(false)
    };
    let b = watcher(&h, &inner, only_b, Resume::Fresh);
    h.run(&["SET", "a", "1"]);
    h.run(&["SET", "b", "2"]);
    h.run(&["DEL", "a", "b"]);
    h.run(&["FLUSHDB"]);
    let ea = events(&a.mail.take());
    let names: Vec<&str> = ea.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(names, ["set", "set", "del", "del", "flush"]);
    let ids: Vec<u64> = ea.iter().filter_map(|e| e.0).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    assert_eq!(ea[0].2["value"], "1");
    let eb = events(&b.mail.take());
    let got: Vec<(Option<u64>, &str)> = eb.iter().map(|e| (e.0, e.1.as_str())).collect();
    assert_eq!(got, [(ea[1].0, "set"), (ea[3].0, "del")]);
    assert!(eb[0].2.get("value").is_none());
}

#[test]
fn resume_replays_exactly_what_followed_and_resyncs_otherwise() {
    let mut h = Harness::new();
    let inner = Inner::install(&h.server);
    let a = watcher(&h, &inner, all_keys(false), Resume::Fresh);
    for i in 0..5 {
        h.run(&["SET", &format!("k{i}"), "v"]);
    }
    let seen = events(&a.mail.take());
    inner.leave(a.id);
    // Still recording during the linger: changes made while nobody watches are kept.
    assert!(inner.recording());
    h.run(&["SET", "k5", "v"]);
    let after = seen[2].0.expect("an id");
    let b = watcher(&h, &inner, all_keys(false), Resume::After(after));
    h.run(&["SET", "k6", "v"]);
    let got = events(&b.mail.take());
    let keys: Vec<&str> = got
        .iter()
        .map(|e| e.2["key"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(keys, ["k3", "k4", "k5", "k6"]);
    assert_eq!(got[0].0, Some(after + 1));
    // An id from before this stretch, or beyond the last one, or no id at all: resync.
    for resume in [Resume::After(1), Resume::After(u64::MAX), Resume::Unknown] {
        let c = watcher(&h, &inner, all_keys(false), resume);
        let got = events(&c.mail.take());
        assert_eq!(got[0].1, "resync", "{resume:?}");
        assert_eq!(got[0].2["reason"], "history");
        assert_eq!(got.len(), 1);
    }
}

#[test]
fn a_watcher_over_its_budget_misses_events_then_gets_resync() {
    let mut h = Harness::new();
    h.run(&["CONFIG", "SET", "http-sse-buffer-limit", "1024"]);
    let inner = Inner::install(&h.server);
    let a = watcher(&h, &inner, all_keys(false), Resume::Fresh);
    for i in 0..100 {
        h.run(&["SET", &format!("key{i:03}"), "v"]);
    }
    let first = events(&a.mail.take());
    assert!(first.len() < 100 && !first.is_empty());
    assert!(first.iter().all(|e| e.1 == "set"));
    h.run(&["SET", "last", "v"]);
    let next = events(&a.mail.take());
    assert_eq!(next[0].1, "resync");
    assert_eq!(next[0].2["reason"], "behind");
    assert_eq!(next[0].2["missed"], 100 - first.len());
    assert_eq!(next[1].2["key"], "last");
    assert_eq!(next[1].0, Some(first[0].0.expect("id") + 100));
}

#[test]
fn interest_follows_watchers_and_polls_and_lingers() {
    let mut h = Harness::new();
    let inner = Inner::install(&h.server);
    let feed = Arc::clone(h.server.keyspace.feed());
    let p = detached_handle(&h.server);
    inner.add_poll(&p, 0, b"k");
    assert!(inner.recording() && feed.records_changes() && !feed.records_values());
    inner.remove_poll(p.id);
    let w = watcher(&h, &inner, all_keys(true), Resume::Fresh);
    assert!(feed.records_values());
    inner.leave(w.id);
    assert!(
        !feed.records_values(),
        "values only while a watcher wants them"
    );
    assert!(feed.records_changes(), "changes during the linger");
    h.run(&["SET", "x", "1"]);
    assert!(inner.recording());
    // After the linger: nothing is asked for and nothing numbered.
    inner.tick(larder_engine::now_ms() + LINGER_MS + 1);
    assert!(!inner.recording() && !feed.records_changes());
}
