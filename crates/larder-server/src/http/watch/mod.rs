//! Server-Sent Events from the change feed (`GET /v1/watch`) and from pub/sub (`GET
//! /v1/subscribe`), and the key API's long polls (`GET /v1/kv/{key}?wait_ver=N&wait=30s`).
//!
//! A stream's response head goes out like any response (`text/event-stream`, `Cache-Control:
//! no-cache`, `X-Accel-Buffering: no`, `Connection: close`: the body ends with the
//! connection); its events then reach the connection's outbox from whichever thread made
//! them, as pub/sub messages reach a RESP subscriber.
//!
//! - Watches: the [`registry`] is a lossy feed consumer. Each change becomes one event (`set`,
//!   `del`, `expired`, `evicted`, `flush`, `swap`) with a global id, posted to every matching
//!   watcher within `http-sse-buffer-limit`; a watcher over it misses events and is sent
//!   `resync` before the next one that fits. `Last-Event-ID` replays the kept history.
//! - Subscriptions: the connection is subscribed in the pub/sub registry that PUBLISH posts
//!   to, as a subscriber whose messages are written as SSE events ([`sse::pubsub_message`]);
//!   like a RESP subscriber, it is closed if it passes the `pubsub` output limit.
//! - Long polls: the client waits on the key in the registry and the worker holds the
//!   request ([`Action::Wait`]); a change to the key wakes it (`Mail::unblock`), and the
//!   request runs again: it answers once the version differs, or `304` at the deadline.
//! - Every stream gets a `: ping` comment every 15 s (`heartbeat=` chooses, 1 s to 5 min);
//!   `http-sse-max-watchers` caps the open streams (`503` beyond).

mod registry;
mod sse;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use larder_commands::config::Param;
use larder_commands::Server;
use larder_http::{parse_duration_ms, Method, Query};

use super::{Action, Cx};
use crate::items::{self, Access};
use registry::{Filter, Inner, Kind, Resume};

/// The heartbeat interval unless `heartbeat=` says otherwise.
const HEARTBEAT_MS: u64 = 15_000;
/// The shortest and longest `heartbeat=`.
const HEARTBEAT_RANGE: (u64, u64) = (1_000, 300_000);
/// The most `key=`, `prefix=`, `channel=` and `pattern=` values one stream may name.
const MAX_NAMES: usize = 1_000;

/// Watches, subscriptions over SSE and long polls.
#[derive(Default)]
pub struct Registry {
    inner: Arc<Inner>,
}

impl Registry {
    /// The registry of `server`'s HTTP door: a feed consumer (asking for nothing until a
    /// watcher or long poll comes) and the heartbeat thread.
    pub fn new(server: &Arc<Server>) -> Registry {
        larder_commands::pubsub::set_event_encoder(sse::pubsub_message);
        Registry {
            inner: Inner::install(server),
        }
    }

    /// The client's long poll was answered.
    pub fn end_poll(&self, id: u64) {
        self.inner.remove_poll(id);
    }

    /// A client that streamed or waited is gone: it leaves every list.
    pub fn leave(&self, id: u64) {
        self.inner.leave(id);
    }
}

/// `GET /v1/watch?key=..&prefix=..&events=..&values=1&db=..&heartbeat=..`.
pub fn watch(cx: &mut Cx<'_, '_>) -> Action {
    if cx.req.method != Method::Get {
        return super::kv::method_not_allowed(cx, "GET");
    }
    let query = Query(cx.req.query);
    let keys: Vec<Vec<u8>> = query.all("key").map(|k| k.into_owned()).collect();
    let prefixes: Vec<Vec<u8>> = query.all("prefix").map(|p| p.into_owned()).collect();
    if keys.len() + prefixes.len() > MAX_NAMES {
        return cx.error(400, "too many key= and prefix= values");
    }
    let kinds = match query.text("events") {
        None => Kind::ALL,
        Some(words) => {
            let mut bits = 0;
            for w in words.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                match Kind::parse(w) {
                    Some(k) => bits |= k.bit(),
                    None => {
                        let msg = format!(
                            "unknown event '{w}' (set, del, expired, evicted, flush, swap)"
                        );
                        return cx.error(400, &msg);
                    }
                }
            }
            bits
        }
    };
    let values = match query.text("values").as_deref() {
        None | Some("0") | Some("false") => false,
        Some("1") | Some("true") | Some("") => true,
        Some(_) => return cx.error(400, "values must be 1 or 0"),
    };
    let db = match query.text("db") {
        None => 0,
        Some(d) => match d.parse::<u32>() {
            Ok(db) if i64::from(db) < cx.server.config.num(Param::Databases) => db,
            _ => return cx.error(400, "ERR DB index is out of range"),
        },
    };
    let resume = match cx.req.header_str("last-event-id").map(str::trim) {
        None | Some("") => Resume::Fresh,
        Some(id) => id.parse().map_or(Resume::Unknown, Resume::After),
    };
    let Some(every_ms) = heartbeat(cx) else {
        return cx.error(400, "heartbeat must be a duration from 1s to 5m");
    };
    if let Err(e) = check_watch(cx, db, &keys, &prefixes, values) {
        return cx.error(403, e.message());
    }
    let filter = Filter {
        db,
        keys,
        prefixes,
        kinds,
        values,
    };
    let Some(action) = open(cx, every_ms) else {
        return too_many(cx);
    };
    let handle = Arc::clone(&cx.state.handle);
    cx.shared.watch.inner.join(&handle, filter, resume, cx.out);
    action
}

/// A watch is checked as subscribing to the keyspace notifications of what it watches:
/// SUBSCRIBE `__keyspace@<db>__:<key>` per key, PSUBSCRIBE `__keyspace@<db>__:<prefix>*` per
/// prefix (`__keyspace@<db>__:*` when it names neither). With `values=1` it also reads: GET
/// per key, and `allkeys` for a watch by prefix or of everything.
fn check_watch(
    cx: &Cx<'_, '_>,
    db: u32,
    keys: &[Vec<u8>],
    prefixes: &[Vec<u8>],
    values: bool,
) -> Result<(), larder_commands::error::Error> {
    if cx.state.user.unrestricted() {
        return Ok(());
    }
    let channel = |name: &[u8]| {
        let mut c = format!("__keyspace@{db}__:").into_bytes();
        c.extend_from_slice(name);
        c
    };
    let channels: Vec<Vec<u8>> = keys.iter().map(|k| channel(k)).collect();
    let mut patterns: Vec<Vec<u8>> = prefixes
        .iter()
        .map(|p| channel(&super::collections::glob_prefix(p)))
        .collect();
    if keys.is_empty() && prefixes.is_empty() {
        patterns.push(channel(b"*"));
    }
    for (command, names) in [(&b"SUBSCRIBE"[..], &channels), (b"PSUBSCRIBE", &patterns)] {
        if !names.is_empty() {
            let mut argv: Vec<&[u8]> = vec![command];
            argv.extend(names.iter().map(Vec::as_slice));
            cx.check(&argv)?;
        }
    }
    if values {
        if patterns.is_empty() {
            for k in keys {
                cx.check(&[b"GET", k])?;
            }
        } else {
            crate::acl_door::check_all_keys(cx.server, cx.state, &[b"GET", b"*"])?;
        }
    }
    Ok(())
}

/// `GET /v1/subscribe?channel=..&pattern=..&heartbeat=..`.
pub fn subscribe(cx: &mut Cx<'_, '_>) -> Action {
    if cx.req.method != Method::Get {
        return super::kv::method_not_allowed(cx, "GET");
    }
    let query = Query(cx.req.query);
    let channels: Vec<Vec<u8>> = query.all("channel").map(|c| c.into_owned()).collect();
    let patterns: Vec<Vec<u8>> = query.all("pattern").map(|p| p.into_owned()).collect();
    if channels.is_empty() && patterns.is_empty() {
        return cx.error(400, "name at least one channel= or pattern=");
    }
    if channels.len() + patterns.len() > MAX_NAMES {
        return cx.error(400, "too many channel= and pattern= values");
    }
    let values = larder_commands::values::is_value_name;
    if channels.iter().chain(&patterns).any(|n| values(n)) {
        return cx.error(
            400,
            "value events (__values@) are watched with /v1/watch?values=1",
        );
    }
    let Some(every_ms) = heartbeat(cx) else {
        return cx.error(400, "heartbeat must be a duration from 1s to 5m");
    };
    for (command, names) in [(&b"SUBSCRIBE"[..], &channels), (b"PSUBSCRIBE", &patterns)] {
        if names.is_empty() {
            continue;
        }
        let mut argv: Vec<&[u8]> = vec![command];
        argv.extend(names.iter().map(Vec::as_slice));
        if let Err(e) = cx.check(&argv) {
            return cx.error(403, e.message());
        }
    }
    let Some(action) = open(cx, every_ms) else {
        return too_many(cx);
    };
    // Messages are written as events from here on: set before the first subscription.
    let handle = Arc::clone(&cx.state.handle);
    handle.resp.store(
        larder_commands::pubsub::PROTO_EVENTS,
        std::sync::atomic::Ordering::Relaxed,
    );
    let pubsub = &cx.server.pubsub;
    for c in channels {
        pubsub.subscribe_client(false, &c, &handle);
        cx.state.subs.channels.insert(c);
    }
    for p in patterns {
        pubsub.subscribe_client(true, &p, &handle);
        cx.state.subs.patterns.insert(p);
    }
    action
}

/// `heartbeat=`, in ms: `None` when malformed or out of range.
pub(super) fn heartbeat(cx: &Cx<'_, '_>) -> Option<u64> {
    match Query(cx.req.query).text("heartbeat") {
        None => Some(HEARTBEAT_MS),
        Some(h) => {
            parse_duration_ms(&h).filter(|ms| (HEARTBEAT_RANGE.0..=HEARTBEAT_RANGE.1).contains(ms))
        }
    }
}

/// Opens a stream under the cap and writes its response head; `None` at the cap.
pub(super) fn open(cx: &mut Cx<'_, '_>, every_ms: u64) -> Option<Action> {
    let cap = cx.server.config.num(Param::HttpSseMaxWatchers).max(0) as usize;
    let inner = &cx.shared.watch.inner;
    inner.refresh_budget(cx.server);
    if !inner.open_stream(&cx.state.handle, every_ms, cap) {
        return None;
    }
    // The body ends with the connection (no length, no chunks).
    cx.keep_alive = false;
    let mut r = cx.start(200);
    r.header("Cache-Control", "no-cache")
        .header("X-Accel-Buffering", "no");
    r.stream("text/event-stream");
    Some(Action::Stream)
}

pub(super) fn too_many(cx: &mut Cx<'_, '_>) -> Action {
    let body = serde_json::json!({ "error": "too many event streams (http-sse-max-watchers)" });
    let body = body.to_string();
    let mut r = cx.start(503);
    r.header("Retry-After", "5");
    r.body(Some("application/json"), body.as_bytes());
    cx.done()
}

/// The key API's database.
const DB: usize = 0;

/// A long poll on `key` while its version is `version` (0: while it is missing): `Some`
/// when the request is answered or waits, `None` when the wait ran out (the caller answers
/// `304`). The deadline is fixed by the first run and kept on the connection across the
/// runs that wake-ups cause.
pub fn long_poll(cx: &mut Cx<'_, '_>, key: &[u8], version: u64, wait_ms: u64) -> Option<Action> {
    let until = *cx
        .wait_until
        .get_or_insert(cx.now_ms.saturating_add(wait_ms));
    let inner = &cx.shared.watch.inner;
    let id = cx.state.handle.id;
    // Registered before the look: a write after the look wakes the request.
    inner.add_poll(&cx.state.handle, DB as u32, key);
    let mut current = 0;
    items::read(
        cx.server.keyspace.db(DB),
        key,
        cx.now_ms,
        Access::Peek,
        |item| current = item.cas,
    );
    if current != version {
        inner.remove_poll(id);
        *cx.wait_until = None;
        return Some(super::kv::answer(cx, key));
    }
    if cx.now_ms >= until {
        inner.remove_poll(id);
        *cx.wait_until = None;
        return None;
    }
    Some(Action::Wait { until_ms: until })
}
