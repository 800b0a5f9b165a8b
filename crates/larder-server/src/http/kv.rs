//! The key API: `GET|HEAD|PUT|DELETE /v1/kv/{key}`, the key one percent-encoded path segment.
//!
//! Values are the keys' string values, raw. Every response about a live key carries its
//! version as a strong ETag (`"<version>"`, the memcached CAS of the same key) and, when it
//! expires, `X-Larder-TTL-Ms`. Writes are conditional on `If-Match` (the key's version is one
//! of those listed; `*`: the key exists) and `If-None-Match: *` (the key does not exist);
//! a failed condition is `412` with the current ETag. `GET` with `If-None-Match` naming the
//! current version is `304`. The operations are the memcached door's ([`crate::items`]), so
//! the two doors share one set of string semantics, keyspace events and log records.

use larder_commands::persistence;
use larder_commands::state::bump;
use larder_http::{parse_duration_ms, percent_decode, Method, Query};
use larder_memcache::StoreMode;

use super::{etag, parse_tags, watch, Action, Cx, Tags};
use crate::items::{self, Access, Deadline, DeleteOutcome, Store, StoreOutcome};

/// The HTTP door's keys live in database 0, as the memcached door's.
const DB: usize = 0;

/// Serves `/v1/kv/{key}`; `rest` is the path after `/v1/kv/`.
pub fn serve(cx: &mut Cx<'_, '_>, rest: &[&str]) -> Action {
    let [segment] = rest else {
        return cx.error(404, "expected /v1/kv/{key}");
    };
    let Some(key) = percent_decode(segment, false) else {
        return cx.error(400, "malformed percent-encoding in the key");
    };
    if key.is_empty() {
        return cx.error(400, "empty key");
    }
    // The RESP equivalent each method is checked as (docs/security.md).
    let equivalent: &[&[u8]] = match cx.req.method {
        Method::Get | Method::Head => &[b"GET", &key],
        Method::Put => &[b"SET", &key, b""],
        Method::Delete => &[b"DEL", &key],
        _ => &[],
    };
    if !equivalent.is_empty() {
        if let Err(e) = cx.check(equivalent) {
            return cx.error(403, e.message());
        }
    }
    match cx.req.method {
        Method::Get | Method::Head => get(cx, &key),
        Method::Put => put(cx, &key),
        Method::Delete => delete(cx, &key),
        _ => method_not_allowed(cx, "GET, HEAD, PUT, DELETE"),
    }
}

/// `405` with the methods allowed.
pub fn method_not_allowed(cx: &mut Cx<'_, '_>, allow: &str) -> Action {
    let body = serde_json::json!({ "error": "method not allowed" }).to_string();
    let mut r = cx.start(405);
    r.header("Allow", allow);
    r.body(Some("application/json"), body.as_bytes());
    cx.done()
}

/// The current version of `key` (its ETag), if it holds a live string.
fn current_version(cx: &Cx<'_, '_>, key: &[u8]) -> Option<u64> {
    let mut version = None;
    items::read(
        cx.server.keyspace.db(DB),
        key,
        cx.now_ms,
        Access::Peek,
        |item| version = Some(item.cas),
    );
    version
}

/// `404`, or `409` when the key holds another type than a string.
fn missing(cx: &mut Cx<'_, '_>, key: &[u8]) -> Action {
    let kind = match cx.command(&[b"TYPE", key], false) {
        larder_resp::Frame::Simple(t) => t,
        _ => "none".into(),
    };
    if kind != "none" {
        let body = serde_json::json!({
            "error": "WRONGTYPE Operation against a key holding the wrong kind of value",
            "type": kind,
        });
        return cx.json(409, &body);
    }
    cx.error(404, "no such key")
}

fn get(cx: &mut Cx<'_, '_>, key: &[u8]) -> Action {
    let query = Query(cx.req.query);
    // Long poll: wait while the key's version is still `wait_ver`.
    if let Some(wait_ver) = query.text("wait_ver") {
        let Ok(wait_ver) = wait_ver.parse::<u64>() else {
            return cx.error(400, "wait_ver must be a version number");
        };
        let wait_ms = match query.text("wait") {
            None => 30_000,
            Some(w) => match parse_duration_ms(&w) {
                Some(ms) => ms.min(MAX_WAIT_MS),
                None => return cx.error(400, "wait must be a duration such as 30s"),
            },
        };
        match watch::long_poll(cx, key, wait_ver, wait_ms) {
            Some(action) => return action,
            None => {
                // Timed out with the version unchanged: 304 with the current ETag.
                let mut r = cx.start(304);
                if wait_ver != 0 {
                    r.header("ETag", &etag(wait_ver));
                }
                r.body(None, b"");
                return cx.done();
            }
        }
    }
    answer(cx, key)
}

/// A GET's answer from the key as it is now (a long poll's too, once the version moved).
pub fn answer(cx: &mut Cx<'_, '_>, key: &[u8]) -> Action {
    let if_none = cx.req.header("if-none-match").and_then(parse_tags);
    let db = cx.server.keyspace.db(DB);
    let (now_ms, keep_alive, head_only) = (cx.now_ms, cx.keep_alive, cx.req.method == Method::Head);
    let mut status = 0u16;
    let worker = cx.state.worker;
    // Written under the shard lock, straight from where the value is stored.
    let read = {
        let origin = cx.origin;
        let out = &mut *cx.out;
        items::read(db, key, now_ms, Access::Fetch, |item| {
            let not_modified = matches!(&if_none, Some(Tags::Any))
                || matches!(&if_none, Some(Tags::Versions(v)) if v.contains(&item.cas));
            status = if not_modified { 304 } else { 200 };
            let mut r = larder_http::Response::start(out, status, keep_alive, head_only);
            if let Some(origin) = origin {
                r.header_bytes("Access-Control-Allow-Origin", origin)
                    .header("Vary", "Origin")
                    .header(
                        "Access-Control-Expose-Headers",
                        super::limits::EXPOSED_HEADERS,
                    );
            }
            r.header("ETag", &etag(item.cas));
            if item.expire_at_ms != 0 {
                r.header_num("X-Larder-TTL-Ms", item.expire_at_ms.saturating_sub(now_ms));
            }
            if not_modified {
                r.body(None, b"");
            } else {
                r.body(Some("application/octet-stream"), item.value);
            }
        })
    };
    let stats = &cx.server.stats.threads[worker];
    if read.hit() {
        bump(&stats.keyspace_hits, 1);
        return cx.done();
    }
    bump(&stats.keyspace_misses, 1);
    missing(cx, key)
}

/// The longest long poll.
const MAX_WAIT_MS: u64 = 5 * 60 * 1000;

/// Refuses a write while the log cannot take it (`-MISCONF`) or memory is full.
fn write_refused(cx: &mut Cx<'_, '_>) -> Option<Action> {
    if cx
        .server
        .gates
        .write_failed
        .load(std::sync::atomic::Ordering::Acquire)
    {
        let msg = match persistence::misconf(cx.server) {
            larder_commands::error::Error::Owned(s) => s,
            _ => "MISCONF Errors writing to the AOF file".to_string(),
        };
        return Some(cx.error(503, &msg));
    }
    if items::out_of_memory(cx.server, cx.now_ms) {
        return Some(cx.error(
            507,
            "OOM command not allowed when used memory > 'maxmemory'.",
        ));
    }
    None
}

fn put(cx: &mut Cx<'_, '_>, key: &[u8]) -> Action {
    let query = Query(cx.req.query);
    let deadline = match query.text("ttl") {
        None => Deadline::Never,
        Some(t) => match parse_duration_ms(&t) {
            Some(0) => Deadline::Never,
            Some(ms) => Deadline::AtMs(cx.now_ms.saturating_add(ms)),
            None => return cx.error(400, "ttl must be a duration such as 30s or 1500ms"),
        },
    };
    let if_match = cx.req.header("if-match").map(parse_tags);
    let if_none = cx.req.header("if-none-match").map(parse_tags);
    let (mode, compare) = match (&if_match, &if_none) {
        (Some(_), Some(_)) => {
            return cx.error(400, "If-Match and If-None-Match together");
        }
        (Some(Some(Tags::Any)), None) => (StoreMode::Replace, None),
        (Some(Some(Tags::Versions(v))), None) => match v.as_slice() {
            [one] => (StoreMode::Cas, Some(*one)),
            _ => return cx.error(400, "If-Match must name exactly one version for a write"),
        },
        (Some(None), _) | (_, Some(None)) => {
            return cx.error(400, "malformed If-Match or If-None-Match")
        }
        (None, Some(Some(Tags::Any))) => (StoreMode::Add, None),
        (None, Some(_)) => return cx.error(400, "a write takes only If-None-Match: *"),
        (None, None) => (StoreMode::Set, None),
    };
    if let Some(action) = write_refused(cx) {
        return action;
    }
    let body = &cx.req.body;
    let req = Store {
        mode,
        data: body,
        flags: 0,
        deadline,
        compare_cas: compare,
        new_cas: None,
        invalidate: false,
        binary_key: false,
        item_size_max: usize::MAX,
    };
    match items::store(cx.server.keyspace.db(DB), key, cx.now_ms, &req) {
        StoreOutcome::Stored { cas } => {
            let mut r = cx.start(204);
            if cas != 0 {
                r.header("ETag", &etag(cas));
            }
            r.body(None, b"");
            cx.done()
        }
        StoreOutcome::NotStored | StoreOutcome::Exists | StoreOutcome::NotFound => {
            precondition_failed(cx, key)
        }
    }
}

/// `412` with the key's current ETag, when it has one.
fn precondition_failed(cx: &mut Cx<'_, '_>, key: &[u8]) -> Action {
    let current = current_version(cx, key);
    let body = serde_json::json!({
        "error": "precondition failed",
        "version": current,
    })
    .to_string();
    let mut r = cx.start(412);
    if let Some(v) = current {
        r.header("ETag", &etag(v));
    }
    r.body(Some("application/json"), body.as_bytes());
    cx.done()
}

fn delete(cx: &mut Cx<'_, '_>, key: &[u8]) -> Action {
    let compare = match cx.req.header("if-match").map(parse_tags) {
        None | Some(Some(Tags::Any)) => None,
        Some(Some(Tags::Versions(v))) => match v.as_slice() {
            [one] => Some(*one),
            _ => return cx.error(400, "If-Match must name exactly one version for a write"),
        },
        Some(None) => return cx.error(400, "malformed If-Match"),
    };
    if cx
        .server
        .gates
        .write_failed
        .load(std::sync::atomic::Ordering::Acquire)
    {
        return cx.error(503, "MISCONF Errors writing to the AOF file");
    }
    let req = items::Delete {
        compare_cas: compare,
        ..items::Delete::default()
    };
    match items::delete(cx.server.keyspace.db(DB), key, cx.now_ms, &req) {
        DeleteOutcome::Deleted => {
            cx.start(204).body(None, b"");
            cx.done()
        }
        DeleteOutcome::NotFound => {
            if cx.req.header("if-match").is_some() {
                return precondition_failed(cx, key);
            }
            missing(cx, key)
        }
        DeleteOutcome::Exists => precondition_failed(cx, key),
    }
}
