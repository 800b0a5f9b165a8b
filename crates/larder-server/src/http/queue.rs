//! The work queue on the HTTP door: `/v1/queue/{name}[/{op}]`, each hustmq operation as
//! one request that runs the queue's command (QPUT, QGET, ...) through the executor, in
//! database 0. `docs/queue.md` lists the endpoints.
//!
//! A get with `wait=` is a long poll: QGET runs with BLOCK and, when nothing is there,
//! blocks in the blocked-clients registry like a RESP client's; the worker holds the
//! request ([`Action::Wait`]) and runs it again when a put wakes it or at its deadline.
//!
//! `sub` with `Accept: text/event-stream` is an event stream of the publish window: the
//! retained messages, then the live ones through pub/sub ([`stream_window`]).

use larder_commands::{execute, Outcome};
use larder_http::{parse_duration_ms, percent_decode, Method, Query};
use larder_resp::{Frame, Protocol, ReplyBuf};
use serde_json::{json, Map, Value};

use super::{Action, Cx};

/// The HTTP door's queues live in database 0.
const DB: usize = 0;
/// The longest long poll.
const MAX_WAIT_MS: u64 = 300_000;

/// Serves `/v1/queue/{name}[/{op}]`; `rest` is the path after `queue`.
pub fn serve(cx: &mut Cx<'_, '_>, rest: &[&str]) -> Action {
    let (name, op) = match rest {
        [name] => (*name, ""),
        [name, op] => (*name, *op),
        _ => return cx.error(404, "expected /v1/queue/{name}[/{operation}]"),
    };
    let Some(name) = percent_decode(name, false).map(|n| n.into_owned()) else {
        return cx.error(400, "malformed percent-encoding in the queue name");
    };
    if name.is_empty() {
        return cx.error(400, "empty queue name");
    }
    cx.state.db = DB;
    cx.state
        .handle
        .db
        .store(DB, std::sync::atomic::Ordering::Relaxed);
    let method = cx.req.method;
    match (op, method) {
        ("", Method::Post | Method::Put) => put(cx, &name),
        ("", Method::Get) => get(cx, &name),
        ("", Method::Delete) => purge(cx, &name),
        ("", _) => super::kv::method_not_allowed(cx, "GET, POST, PUT, DELETE"),
        ("ack", Method::Post | Method::Put | Method::Delete) => ack(cx, &name),
        ("lock", Method::Post | Method::Put) => setting(cx, &name, b"QLOCK", "on"),
        ("max", Method::Post | Method::Put) => setting(cx, &name, b"QMAXLEN", "num"),
        ("timeout", Method::Post | Method::Put) => timeout(cx, &name),
        ("stats", Method::Get) => stats(cx, &name),
        ("workers", Method::Get) => workers(cx, &name),
        ("pub", Method::Post | Method::Put) => publish(cx, &name),
        ("sub", Method::Get) => subscribe(cx, &name),
        ("ack" | "lock" | "max" | "timeout" | "pub", _) => {
            super::kv::method_not_allowed(cx, "POST, PUT")
        }
        ("stats" | "workers" | "sub", _) => super::kv::method_not_allowed(cx, "GET"),
        _ => cx.error(404, "no such queue operation"),
    }
}

/// Answers a command's error: a full or locked queue is `412` (as hustmq answers), OOM
/// `507`, MISCONF and LOADING `503`, a refused permission `403`, anything else `400`.
fn failed(cx: &mut Cx<'_, '_>, message: &str) -> Action {
    let status = match message.split(' ').next().unwrap_or("") {
        "FULL" | "LOCKED" => 412,
        "OOM" => 507,
        "MISCONF" | "LOADING" | "BUSY" | "READONLY" => 503,
        "NOPERM" => 403,
        _ => 400,
    };
    cx.error(status, message)
}

/// A query parameter's value; `Err` answered `400` when it is there but malformed.
fn number(cx: &mut Cx<'_, '_>, name: &str) -> Result<Option<u64>, Action> {
    match Query(cx.req.query).text(name) {
        None => Ok(None),
        Some(v) => match v.parse::<u64>() {
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(cx.error(400, &format!("{name} must be a whole number"))),
        },
    }
}

/// A duration parameter in ms (`30s`, `1500ms`, or seconds).
fn duration(cx: &mut Cx<'_, '_>, name: &str) -> Result<Option<u64>, Action> {
    match Query(cx.req.query).text(name) {
        None => Ok(None),
        Some(v) => match parse_duration_ms(&v) {
            Some(ms) => Ok(Some(ms)),
            None => Err(cx.error(400, &format!("{name} must be a duration such as 30s"))),
        },
    }
}

/// The text of a bulk reply, lossily (tokens and names are ASCII).
fn text(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Simple(s) => s.clone(),
        _ => String::new(),
    }
}

/// `POST /v1/queue/{name}?priority=&ttl=` with the message as the body: `201
/// {"token": ...}`; `412` when the queue is full or locked.
fn put(cx: &mut Cx<'_, '_>, name: &[u8]) -> Action {
    let priority = match number(cx, "priority") {
        Ok(p) => p.unwrap_or(0).to_string(),
        Err(a) => return a,
    };
    let ttl = match duration(cx, "ttl") {
        Ok(t) => t.map(|t| t.max(1).to_string()),
        Err(a) => return a,
    };
    let body = cx.req.body.to_vec();
    let mut argv: Vec<&[u8]> = vec![b"QPUT", name, b"PRIORITY", priority.as_bytes()];
    if let Some(ttl) = &ttl {
        argv.extend([&b"TTL"[..], ttl.as_bytes()]);
    }
    argv.push(&body);
    match cx.command(&argv, false) {
        Frame::Error(e) => failed(cx, &e),
        token => cx.json(201, &json!({ "token": text(&token) })),
    }
}

/// `GET /v1/queue/{name}?worker=w[&ack=auto][&wait=30s]`: `200` with the message as the
/// body and its token, priority and delivery count in headers; `204` when there is none
/// (at once, or when the wait ends).
fn get(cx: &mut Cx<'_, '_>, name: &[u8]) -> Action {
    let query = Query(cx.req.query);
    let Some(worker) = query.get("worker").map(|w| w.into_owned()) else {
        return cx.error(400, "worker= names the worker that takes the message");
    };
    let auto = match query.text("ack").as_deref() {
        None | Some("token") => false,
        Some("auto") => true,
        Some(_) => return cx.error(400, "ack must be auto or token"),
    };
    let wait = match duration(cx, "wait") {
        Ok(w) => w.map(|w| w.clamp(1, MAX_WAIT_MS).to_string()),
        Err(a) => return a,
    };
    let mut argv: Vec<&[u8]> = vec![b"QGET", name, &worker];
    if auto {
        argv.push(b"AUTOACK");
    }
    if let Some(ms) = &wait {
        argv.extend([&b"BLOCK"[..], ms.as_bytes()]);
    }
    let reply = match run_may_block(cx, &argv) {
        Ok(reply) => reply,
        Err(until_ms) => {
            // Marks the runs that wake-ups cause as the same request, as the key API's long
            // polls are: the rate limit counted it once (`limits::screen`).
            *cx.wait_until = Some(until_ms);
            return Action::Wait { until_ms };
        }
    };
    match reply {
        Frame::Array(m) => match m.as_slice() {
            [token, Frame::Bulk(payload), Frame::Integer(p), Frame::Integer(n)] => {
                let token = text(token);
                let mut r = cx.start(200);
                r.header("X-Queue-Token", &token)
                    .header("X-Queue-Priority", &p.to_string())
                    .header("X-Queue-Deliveries", &n.to_string());
                r.body(Some("application/octet-stream"), payload);
                cx.done()
            }
            _ => cx.error(500, "QGET gave an unexpected reply"),
        },
        Frame::Error(e) => failed(cx, &e),
        _ => {
            cx.start(204).body(None, b"");
            cx.done()
        }
    }
}

/// Runs a command that may block: its reply, or `Err(deadline)` when the client now waits
/// (the worker runs the request again when it is woken or at the deadline).
fn run_may_block(cx: &mut Cx<'_, '_>, argv: &[&[u8]]) -> Result<Frame, u64> {
    cx.state
        .handle
        .resp
        .store(2, std::sync::atomic::Ordering::Relaxed);
    let mut reply = ReplyBuf::new(Protocol::Resp2);
    cx.state.in_exec = false;
    let outcome = execute(cx.server, cx.state, argv, &mut reply);
    match outcome {
        Outcome::Blocked { until_ms } => Err(until_ms),
        Outcome::Paused { .. } => Ok(Frame::Error(
            "ERR the server is paused (CLIENT PAUSE)".into(),
        )),
        Outcome::Continue => Ok(match larder_resp::decode(&reply.buf) {
            Ok(Some((frame, _))) => frame,
            _ => Frame::Error("ERR the command gave no reply".into()),
        }),
    }
}

/// `POST /v1/queue/{name}/ack?token=T`: `204`; `404` when the message was not waiting for
/// an acknowledgement (acknowledged already, purged, or never delivered).
fn ack(cx: &mut Cx<'_, '_>, name: &[u8]) -> Action {
    let Some(token) = Query(cx.req.query).get("token").map(|t| t.into_owned()) else {
        return cx.error(400, "token= is the token the get gave");
    };
    match cx.command(&[b"QACK", name, &token], false) {
        Frame::Integer(1) => {
            cx.start(204).body(None, b"");
            cx.done()
        }
        Frame::Error(e) => failed(cx, &e),
        _ => cx.error(404, "no such message waiting for an acknowledgement"),
    }
}

/// `PUT /v1/queue/{name}/lock?on=1|0` and `/max?num=N`: `204`.
fn setting(cx: &mut Cx<'_, '_>, name: &[u8], command: &[u8], param: &str) -> Action {
    let v = match number(cx, param) {
        Ok(Some(v)) => v.to_string(),
        Ok(None) => return cx.error(400, &format!("{param}= is required")),
        Err(a) => return a,
    };
    match cx.command(&[command, name, v.as_bytes()], false) {
        Frame::Error(e) => failed(cx, &e),
        _ => {
            cx.start(204).body(None, b"");
            cx.done()
        }
    }
}

/// `PUT /v1/queue/{name}/timeout?timeout=30s`: the visibility timeout, `204`.
fn timeout(cx: &mut Cx<'_, '_>, name: &[u8]) -> Action {
    let ms = match duration(cx, "timeout") {
        Ok(Some(ms)) => ms.max(1).to_string(),
        Ok(None) => return cx.error(400, "timeout= is required (such as 30s)"),
        Err(a) => return a,
    };
    match cx.command(&[b"QTIMEOUT", name, ms.as_bytes()], false) {
        Frame::Error(e) => failed(cx, &e),
        _ => {
            cx.start(204).body(None, b"");
            cx.done()
        }
    }
}

/// `DELETE /v1/queue/{name}[?priority=p]`: `200 {"purged": n}`.
fn purge(cx: &mut Cx<'_, '_>, name: &[u8]) -> Action {
    let level = match number(cx, "priority") {
        Ok(p) => p.map(|p| p.to_string()),
        Err(a) => return a,
    };
    let mut argv: Vec<&[u8]> = vec![b"QPURGE", name];
    if let Some(p) = &level {
        argv.extend([&b"PRIORITY"[..], p.as_bytes()]);
    }
    match cx.command(&argv, false) {
        Frame::Integer(n) => cx.json(200, &json!({ "purged": n })),
        Frame::Error(e) => failed(cx, &e),
        _ => cx.error(500, "QPURGE gave an unexpected reply"),
    }
}

/// `GET /v1/queue/{name}/stats`: a JSON object of counts and settings.
fn stats(cx: &mut Cx<'_, '_>, name: &[u8]) -> Action {
    match cx.command(&[b"QSTATS", name], false) {
        Frame::Array(pairs) => {
            let mut obj = Map::new();
            obj.insert("queue".into(), json!(String::from_utf8_lossy(name)));
            for kv in pairs.chunks_exact(2) {
                if let Frame::Integer(n) = kv[1] {
                    obj.insert(text(&kv[0]), json!(n));
                }
            }
            cx.json(200, &Value::Object(obj))
        }
        Frame::Error(e) => failed(cx, &e),
        _ => cx.error(500, "QSTATS gave an unexpected reply"),
    }
}

/// `GET /v1/queue/{name}/workers`: `[{"worker", "last_seen_ms", "unacked"}]`.
fn workers(cx: &mut Cx<'_, '_>, name: &[u8]) -> Action {
    match cx.command(&[b"QWORKERS", name], false) {
        Frame::Array(ws) => {
            let list: Vec<Value> = ws
                .iter()
                .filter_map(|w| match w {
                    Frame::Array(f) => match f.as_slice() {
                        [n, Frame::Integer(seen), Frame::Integer(unacked)] => Some(json!({
                            "worker": text(n),
                            "last_seen_ms": seen,
                            "unacked": unacked,
                        })),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            cx.json(200, &Value::Array(list))
        }
        Frame::Error(e) => failed(cx, &e),
        _ => cx.error(500, "QWORKERS gave an unexpected reply"),
    }
}

/// `POST /v1/queue/{name}/pub[?window=N]` with the message as the body: `200 {"idx": n}`.
fn publish(cx: &mut Cx<'_, '_>, name: &[u8]) -> Action {
    let window = match number(cx, "window") {
        Ok(w) => w.map(|w| w.max(1).to_string()),
        Err(a) => return a,
    };
    let body = cx.req.body.to_vec();
    let mut argv: Vec<&[u8]> = vec![b"QPUB", name];
    if let Some(w) = &window {
        argv.extend([&b"WINDOW"[..], w.as_bytes()]);
    }
    argv.push(&body);
    match cx.command(&argv, false) {
        Frame::Integer(idx) => cx.json(200, &json!({ "idx": idx })),
        Frame::Error(e) => failed(cx, &e),
        _ => cx.error(500, "QPUB gave an unexpected reply"),
    }
}

/// `GET /v1/queue/{name}/sub?idx=N[&count=n]`: the retained messages from index `N` on,
/// `[{"idx": n, "payload": "..."}]` (payloads that are not UTF-8 as base64, flagged
/// `"encoding": "base64"`). With `Accept: text/event-stream`, an event stream of them
/// ([`stream_window`]).
fn subscribe(cx: &mut Cx<'_, '_>, name: &[u8]) -> Action {
    let from = match number(cx, "idx") {
        Ok(i) => i.unwrap_or(1),
        Err(a) => return a,
    };
    let sse = cx
        .req
        .header_str("accept")
        .is_some_and(|a| a.contains("text/event-stream"));
    if sse {
        return stream_window(cx, name, from);
    }
    let idx = from.to_string();
    let count = match number(cx, "count") {
        Ok(c) => c.unwrap_or(100).clamp(1, 10_000).to_string(),
        Err(a) => return a,
    };
    match cx.command(
        &[b"QSUB", name, idx.as_bytes(), b"COUNT", count.as_bytes()],
        false,
    ) {
        Frame::Array(msgs) => {
            let list: Vec<Value> = msgs
                .iter()
                .filter_map(|m| match m {
                    Frame::Array(f) => match f.as_slice() {
                        [Frame::Integer(i), Frame::Bulk(p)] => Some(match std::str::from_utf8(p) {
                            Ok(s) => json!({ "idx": i, "payload": s }),
                            Err(_) => json!({
                                "idx": i,
                                "payload": super::base64_encode(p),
                                "encoding": "base64",
                            }),
                        }),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            cx.json(200, &Value::Array(list))
        }
        Frame::Error(e) => failed(cx, &e),
        _ => cx.error(500, "QSUB gave an unexpected reply"),
    }
}

/// `GET /v1/queue/{name}/sub?idx=N` with `Accept: text/event-stream`: the retained messages
/// from index `N` on (from the one after `Last-Event-ID` when a client reconnects with it),
/// then each message as it is published, as events ([`window_event`]), with the door's
/// heartbeats (`heartbeat=`) and cap on open streams.
///
/// The retained messages are read and the connection subscribed to the window's channel
/// under the window key's shard lock; QPUB adds to the window and publishes in one
/// transaction, under that lock: each message comes once, either read or published.
fn stream_window(cx: &mut Cx<'_, '_>, name: &[u8], from: u64) -> Action {
    let from = match cx.req.header_str("last-event-id").map(str::trim) {
        Some(id) if !id.is_empty() => match id.parse::<u64>() {
            Ok(last) => last.saturating_add(1),
            Err(_) => return cx.error(400, "Last-Event-ID must be a window index"),
        },
        _ => from.max(1),
    };
    let Some(every_ms) = super::watch::heartbeat(cx) else {
        return cx.error(400, "heartbeat must be a duration from 1s to 5m");
    };
    let Some(action) = super::watch::open(cx, every_ms) else {
        return super::watch::too_many(cx);
    };
    let handle = std::sync::Arc::clone(&cx.state.handle);
    // Messages are written as events from here on: set before the subscription.
    handle.resp.store(
        larder_commands::pubsub::PROTO_EVENTS,
        std::sync::atomic::Ordering::Relaxed,
    );
    let key = larder_commands::queue::pub_key(name);
    let (shard, hash) = cx.server.keyspace.db(DB).lock_key(&key);
    let window = shard
        .find_raw(&key, hash)
        .map(|slot| shard.entry(slot))
        .filter(|e| !e.is_expired(cx.now_ms))
        .and_then(|e| match e.object() {
            Some(larder_engine::Object::Stream(s)) => Some(s),
            _ => None,
        });
    if let Some(stream) = window {
        let start = larder_engine::stream::StreamId { ms: from, seq: 0 };
        for (id, mut fields) in stream.range(start, larder_engine::stream::StreamId::MAX, false) {
            let payload = fields.find(|(f, _)| *f == larder_commands::queue::ops::PAYLOAD);
            write_event(cx.out, id.ms, payload.map_or(&b""[..], |(_, v)| v));
        }
    }
    cx.server.pubsub.subscribe_client(false, &key, &handle);
    drop(shard);
    cx.state.subs.channels.insert(key);
    action
}

/// A message of a queue's publish window for an event-stream subscriber: on a channel named
/// `queue:{name}:pub`, QPUB publishes `<index> <payload>`, written as `id: <index>`,
/// `event: message`, `data: {"idx": n, "payload": "..."}` (a payload that is not UTF-8 as
/// base64, with `"encoding": "base64"`). False, writing nothing, for anything else.
pub fn window_event(channel: &[u8], message: &[u8], out: &mut Vec<u8>) -> bool {
    let is_window = channel.starts_with(b"queue:{") && channel.ends_with(b"}:pub");
    let Some(space) = message.iter().position(|&b| b == b' ') else {
        return false;
    };
    let (idx, payload) = (&message[..space], &message[space + 1..]);
    let idx = std::str::from_utf8(idx)
        .ok()
        .and_then(|i| i.parse::<u64>().ok());
    match idx {
        Some(idx) if is_window => {
            write_event(out, idx, payload);
            true
        }
        _ => false,
    }
}

fn write_event(out: &mut Vec<u8>, idx: u64, payload: &[u8]) {
    let data = match std::str::from_utf8(payload) {
        Ok(p) => json!({ "idx": idx, "payload": p }),
        Err(_) => json!({
            "idx": idx,
            "payload": super::base64_encode(payload),
            "encoding": "base64",
        }),
    };
    out.extend_from_slice(format!("id: {idx}\nevent: message\ndata: {data}\n\n").as_bytes());
}

#[cfg(test)]
mod tests {
    use super::window_event;

    #[test]
    fn window_events_only_for_window_channels_and_indexed_messages() {
        let mut out = Vec::new();
        assert!(window_event(
            b"queue:{news}:pub",
            b"7 hello world",
            &mut out
        ));
        assert_eq!(
            out,
            b"id: 7\nevent: message\ndata: {\"idx\":7,\"payload\":\"hello world\"}\n\n"
        );
        out.clear();
        assert!(window_event(b"queue:{n}:pub", b"1 \xff", &mut out));
        assert!(out.ends_with(b"{\"encoding\":\"base64\",\"idx\":1,\"payload\":\"/w==\"}\n\n"));
        for (channel, message) in [
            (&b"news"[..], &b"7 hello"[..]),
            (b"queue:{news}:meta", b"7 hello"),
            (b"queue:{news}:pub", b"hello"),
            (b"queue:{news}:pub", b"x7 hello"),
        ] {
            out.clear();
            assert!(!window_event(channel, message, &mut out));
            assert!(out.is_empty());
        }
    }
}
