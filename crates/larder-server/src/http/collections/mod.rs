//! Hashes, sets and sorted sets as sub-resources, and the key listing.
//!
//! - `/v1/hash/{key}`, `/v1/set/{key}`, `/v1/zset/{key}`: the whole collection as JSON.
//!   `GET` reads it, `PUT` replaces it (`DEL` and the adding command in one MULTI/EXEC),
//!   `POST` (and `PATCH` for hashes) adds to it, `DELETE` removes the key.
//! - `/v1/hash/{key}/{field}`, `/v1/set/{key}/{member}`, `/v1/zset/{key}/{member}`: one
//!   element, named by one percent-encoded path segment (any bytes).
//!
//! Everything runs as commands through the executor ([`Cx::command`]), so the collections'
//! semantics, keyspace events, statistics and the log are the RESP door's. A key that holds
//! another type is `409` with Redis's WRONGTYPE text; a missing key is `404` (Redis has no
//! empty collection: the last element removed removes the key).
//!
//! JSON strings (fields, values, members, listed keys) are UTF-8 text; bytes that are not
//! UTF-8 make the request fail (`406`, naming `?encoding=base64`) rather than be replaced.
//! With `?encoding=base64` every such string, in the request body and in the reply, is
//! standard base64.
//!
//! Versions: a read carries the key's version as `ETag` when it is certain the reply is that
//! version's (read before and after the command, and equal). Writes take `If-Match` (one or
//! more versions, or `*`) and `If-None-Match: *`: the precondition is checked after `WATCH`
//! and the write runs in MULTI/EXEC, so a write that slipped in between fails it (`412` with
//! the current ETag). A write's reply carries no ETag: the version it made cannot be read
//! in the same step as the write.

use larder_http::{percent_decode, Method, Query};
use larder_resp::Frame;
use serde_json::Value;

use super::{etag, parse_tags, Action, Cx, Tags};

mod hash;
mod set;
mod zset;

/// The HTTP door's keys live in database 0.
const DB: usize = 0;

/// The most keys one `GET /v1/keys` asks SCAN for.
const KEYS_COUNT_MAX: usize = 1000;

/// Serves `/v1/{hash|set|zset}/{key}[/{member}]`; `rest` is the path after the kind.
pub fn serve(cx: &mut Cx<'_, '_>, kind: &str, rest: &[&str]) -> Action {
    let (key, member) = match rest {
        [key] => (*key, None),
        [key, member] => (*key, Some(*member)),
        _ => return cx.error(404, "expected /v1/{hash|set|zset}/{key}[/{member}]"),
    };
    let Some(key) = percent_decode(key, false) else {
        return cx.error(400, "malformed percent-encoding in the key");
    };
    if key.is_empty() {
        return cx.error(400, "empty key");
    }
    let member = match member.map(|m| percent_decode(m, false)) {
        None => None,
        Some(Some(m)) => Some(m),
        Some(None) => return cx.error(400, "malformed percent-encoding in the member"),
    };
    let enc = match Encoding::of(cx) {
        Ok(enc) => enc,
        Err(action) => return action,
    };
    // Every request of this door is on its own: nothing left by another selects a database.
    cx.state.db = DB;
    cx.state
        .handle
        .db
        .store(DB, std::sync::atomic::Ordering::Relaxed);
    let res = match (kind, member) {
        ("hash", None) => hash::whole(cx, &key, enc),
        ("hash", Some(field)) => hash::field(cx, &key, &field),
        ("set", None) => set::whole(cx, &key, enc),
        ("set", Some(member)) => set::member(cx, &key, &member),
        ("zset", None) => zset::whole(cx, &key, enc),
        ("zset", Some(member)) => zset::member(cx, &key, &member),
        _ => Err(cx.error(404, "no such endpoint")),
    };
    res.unwrap_or_else(|action| action)
}

/// What a handler returns: `Err` carries a response already written (an error).
type Answer = Result<Action, Action>;

/// How JSON strings carry bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 text; bytes that are not UTF-8 are refused.
    Utf8,
    /// Standard base64.
    Base64,
}

/// The error for bytes that JSON text cannot carry.
const NOT_UTF8: &str = "the reply holds bytes that are not UTF-8: ask again with ?encoding=base64";

impl Encoding {
    /// The request's `?encoding=` (`utf8`, the default, or `base64`).
    fn of(cx: &mut Cx<'_, '_>) -> Result<Encoding, Action> {
        match Query(cx.req.query).text("encoding").as_deref() {
            None | Some("utf8" | "utf-8") => Ok(Encoding::Utf8),
            Some("base64") => Ok(Encoding::Base64),
            Some(_) => Err(cx.error(400, "encoding must be utf8 or base64")),
        }
    }

    /// `bytes` as a JSON string; `None` when they are not UTF-8 and the encoding is.
    fn encode(self, bytes: &[u8]) -> Option<String> {
        match self {
            Encoding::Utf8 => std::str::from_utf8(bytes).ok().map(str::to_owned),
            Encoding::Base64 => Some(crate::http::base64_encode(bytes)),
        }
    }

    /// The bytes a JSON string of the request carries; `None` when it is not valid base64.
    fn decode(self, s: &str) -> Option<Vec<u8>> {
        match self {
            Encoding::Utf8 => Some(s.as_bytes().to_vec()),
            Encoding::Base64 => crate::http::base64_decode(s),
        }
    }

    /// The error for a request string that does not decode.
    fn bad_string(self) -> &'static str {
        match self {
            Encoding::Utf8 => "expected a string",
            Encoding::Base64 => "expected a base64 string (?encoding=base64)",
        }
    }
}

/// `key`'s version if it is live (0 when missing), read under its shard's lock without
/// expiring anything.
fn live_version(cx: &Cx<'_, '_>, key: &[u8]) -> u64 {
    let (shard, hash) = cx.server.keyspace.db(DB).lock_key(key);
    shard
        .find_raw(key, hash)
        .map(|slot| shard.entry(slot))
        .filter(|e| !e.is_expired(cx.now_ms))
        .map_or(0, |e| e.version())
}

/// Runs a read command on `key`, with the key's version when the reply is certainly that
/// version's (the same version before and after; `None` otherwise or when the key is
/// missing). A command error is answered.
fn read(cx: &mut Cx<'_, '_>, key: &[u8], argv: &[&[u8]]) -> Result<(Frame, Option<u64>), Action> {
    let before = live_version(cx, key);
    let reply = cx.command(argv, false);
    if let Frame::Error(e) = &reply {
        return Err(command_failed(cx, e));
    }
    let after = live_version(cx, key);
    Ok((reply, (before == after && after != 0).then_some(after)))
}

/// Answers a command's error: WRONGTYPE is `409`, OOM `507`, MISCONF and LOADING `503`, a
/// refused permission `403`, anything else (a bad argument) `400`.
fn command_failed(cx: &mut Cx<'_, '_>, message: &str) -> Action {
    let code = message.split(' ').next().unwrap_or("");
    let status = match code {
        "WRONGTYPE" => 409,
        "OOM" => 507,
        "MISCONF" | "LOADING" | "BUSY" | "READONLY" | "MASTERDOWN" => 503,
        "NOAUTH" => 401,
        "NOPERM" => 403,
        _ => 400,
    };
    cx.error(status, message)
}

/// `404` for a missing key.
fn no_such_key(cx: &mut Cx<'_, '_>) -> Action {
    cx.error(404, "no such key")
}

/// A `200` JSON reply, with the ETag of `version` when known.
fn json_reply(cx: &mut Cx<'_, '_>, value: &Value, version: Option<u64>) -> Action {
    let body = value.to_string();
    let mut r = cx.start(200);
    if let Some(v) = version {
        r.header("ETag", &etag(v));
    }
    r.body(Some("application/json"), body.as_bytes());
    cx.done()
}

/// A reply with no body: `201` when the write created the element, else `204`.
fn created_or_not(cx: &mut Cx<'_, '_>, created: bool) -> Action {
    cx.start(if created { 201 } else { 204 }).body(None, b"");
    cx.done()
}

/// A `200` reply `{"added": n}` for an adding write.
fn added(cx: &mut Cx<'_, '_>, reply: &Frame) -> Action {
    let n = match reply {
        Frame::Integer(n) => *n,
        _ => 0,
    };
    cx.json(200, &serde_json::json!({ "added": n }))
}

/// The request body as JSON; `Err` answered `400` when it is not.
fn json_body(cx: &mut Cx<'_, '_>) -> Result<Value, Action> {
    serde_json::from_slice(&cx.req.body)
        .map_err(|e| cx.error(400, &format!("the body is not JSON: {e}")))
}

/// `DELETE` of a whole collection: `204`, or `404` when there was no key. A key of another
/// type (checked just before the `DEL`) is `409`, so that `DELETE /v1/hash/k` cannot
/// remove a string.
fn delete_whole(cx: &mut Cx<'_, '_>, key: &[u8], type_name: &str) -> Answer {
    let kind = match cx.command(&[b"TYPE", key], false) {
        Frame::Simple(t) => t,
        _ => "none".into(),
    };
    if kind != "none" && kind != type_name {
        return Err(command_failed(cx, larder_commands::error::WRONGTYPE));
    }
    let replies = write(cx, key, &[vec![b"DEL".to_vec(), key.to_vec()]])?;
    if matches!(replies.first(), Some(Frame::Integer(1))) {
        cx.start(204).body(None, b"");
        return Ok(cx.done());
    }
    Err(no_such_key(cx))
}

/// Replaces a collection: `DEL` then `add` in one transaction (only `DEL` when `add` is
/// `None`, the collection given empty). `204`.
fn replace(cx: &mut Cx<'_, '_>, key: &[u8], add: Option<Vec<Vec<u8>>>) -> Answer {
    let mut cmds = vec![vec![b"DEL".to_vec(), key.to_vec()]];
    cmds.extend(add);
    write(cx, key, &cmds)?;
    cx.start(204).body(None, b"");
    Ok(cx.done())
}

/// Runs write commands on `key`, after checking the request's `If-Match` / `If-None-Match`.
/// One command with no precondition runs alone; otherwise they run in MULTI/EXEC, after
/// `WATCH key` when there is a precondition. `Ok` holds each command's reply; `Err` a
/// response already written (a failed precondition, a command error).
fn write(cx: &mut Cx<'_, '_>, key: &[u8], cmds: &[Vec<Vec<u8>>]) -> Result<Vec<Frame>, Action> {
    let cond = precondition(cx)?;
    if cond.is_none() {
        if let [argv] = cmds {
            let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
            return match cx.command(&argv, false) {
                Frame::Error(e) => Err(command_failed(cx, &e)),
                reply => Ok(vec![reply]),
            };
        }
    }
    // Nothing another request left behind belongs to this one.
    cx.state.multi = None;
    cx.state.watched.clear();
    if let Some(cond) = cond {
        if let Frame::Error(e) = cx.command(&[b"WATCH", key], false) {
            return Err(command_failed(cx, &e));
        }
        let version = cx.state.watched.first().map_or(0, |w| w.version);
        let holds = match cond {
            Cond::Exists => version != 0,
            Cond::Missing => version == 0,
            Cond::Versions(vs) => version != 0 && vs.contains(&version),
        };
        if !holds {
            cx.state.watched.clear();
            return Err(precondition_failed(cx, version));
        }
    }
    if let Frame::Error(e) = cx.command(&[b"MULTI"], false) {
        cx.state.watched.clear();
        return Err(command_failed(cx, &e));
    }
    let mut queue_error = None;
    for argv in cmds {
        let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        if let Frame::Error(e) = cx.command(&argv, false) {
            queue_error.get_or_insert(e);
        }
    }
    match cx.command(&[b"EXEC"], false) {
        Frame::Array(replies) => {
            if let Some(Frame::Error(e)) = replies.iter().find(|r| matches!(r, Frame::Error(_))) {
                return Err(command_failed(cx, e));
            }
            Ok(replies)
        }
        // A watched key changed between the check and EXEC.
        Frame::Null => {
            let version = live_version(cx, key);
            Err(precondition_failed(cx, version))
        }
        Frame::Error(e) => Err(command_failed(cx, queue_error.as_deref().unwrap_or(&e))),
        _ => Err(cx.error(500, "EXEC gave no reply")),
    }
}

/// A write's precondition.
enum Cond {
    /// `If-Match: *`.
    Exists,
    /// `If-None-Match: *`.
    Missing,
    /// `If-Match` with versions: the key's is one of them.
    Versions(Vec<u64>),
}

/// The request's precondition, if any; `Err` answered `400` when malformed.
fn precondition(cx: &mut Cx<'_, '_>) -> Result<Option<Cond>, Action> {
    let if_match = cx.req.header("if-match").map(parse_tags);
    let if_none = cx.req.header("if-none-match").map(parse_tags);
    match (if_match, if_none) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(cx.error(400, "If-Match and If-None-Match together")),
        (Some(None), _) | (_, Some(None)) => {
            Err(cx.error(400, "malformed If-Match or If-None-Match"))
        }
        (Some(Some(Tags::Any)), None) => Ok(Some(Cond::Exists)),
        (Some(Some(Tags::Versions(v))), None) if v.is_empty() => {
            Err(cx.error(400, "If-Match names no version"))
        }
        (Some(Some(Tags::Versions(v))), None) => Ok(Some(Cond::Versions(v))),
        (None, Some(Some(Tags::Any))) => Ok(Some(Cond::Missing)),
        (None, Some(Some(Tags::Versions(_)))) => {
            Err(cx.error(400, "a write takes only If-None-Match: *"))
        }
    }
}

/// `412` with the key's current ETag (none when it is missing).
fn precondition_failed(cx: &mut Cx<'_, '_>, version: u64) -> Action {
    let current = (version != 0).then_some(version);
    let body = serde_json::json!({ "error": "precondition failed", "version": current });
    let body = body.to_string();
    let mut r = cx.start(412);
    if let Some(v) = current {
        r.header("ETag", &etag(v));
    }
    r.body(Some("application/json"), body.as_bytes());
    cx.done()
}

/// A bulk reply's bytes (`None` for a null or another kind).
fn bulk(frame: Frame) -> Option<Vec<u8>> {
    match frame {
        Frame::Bulk(b) => Some(b),
        Frame::Simple(s) => Some(s.into_bytes()),
        _ => None,
    }
}

/// An array reply's bulk strings.
fn bulks(frame: Frame) -> Vec<Vec<u8>> {
    match frame {
        Frame::Array(items) | Frame::Set(items) => items.into_iter().filter_map(bulk).collect(),
        _ => Vec::new(),
    }
}

/// A raw value reply (`application/octet-stream`) with the ETag of `version` when known.
fn raw_reply(cx: &mut Cx<'_, '_>, value: &[u8], version: Option<u64>) -> Action {
    let mut r = cx.start(200);
    if let Some(v) = version {
        r.header("ETag", &etag(v));
    }
    r.body(Some("application/octet-stream"), value);
    cx.done()
}

/// `GET /v1/keys?prefix=&cursor=&count=&type=&encoding=`: one SCAN step over database 0
/// for keys that start with `prefix`; `{"cursor": "<next>", "keys": [...]}`, cursor `"0"`
/// when the walk is done. A step may return no keys before the walk is done.
pub fn keys(cx: &mut Cx<'_, '_>) -> Action {
    if !matches!(cx.req.method, Method::Get | Method::Head) {
        return super::kv::method_not_allowed(cx, "GET, HEAD");
    }
    let enc = match Encoding::of(cx) {
        Ok(enc) => enc,
        Err(action) => return action,
    };
    let query = Query(cx.req.query);
    let cursor = query.text("cursor").unwrap_or_else(|| "0".into());
    if cursor.is_empty() || !cursor.bytes().all(|b| b.is_ascii_digit()) {
        return cx.error(400, "cursor must be a number from an earlier reply (or 0)");
    }
    let count = match query.text("count") {
        None => 100,
        Some(c) => match c.parse::<usize>() {
            Ok(n) if (1..=KEYS_COUNT_MAX).contains(&n) => n,
            _ => return cx.error(400, "count must be a number from 1 to 1000"),
        },
    };
    let prefix = query
        .get("prefix")
        .map(|p| p.into_owned())
        .unwrap_or_default();
    let kind = query.text("type");
    cx.state.db = DB;
    cx.state
        .handle
        .db
        .store(DB, std::sync::atomic::Ordering::Relaxed);
    let count_text = count.to_string();
    let pattern = glob_prefix(&prefix);
    let mut argv: Vec<&[u8]> = vec![b"SCAN", cursor.as_bytes(), b"COUNT", count_text.as_bytes()];
    if !prefix.is_empty() {
        argv.extend([b"MATCH".as_slice(), &pattern]);
    }
    if let Some(kind) = &kind {
        argv.extend([b"TYPE".as_slice(), kind.as_bytes()]);
    }
    let reply = cx.command(&argv, false);
    let (next, keys) = match reply {
        Frame::Error(e) => return command_failed(cx, &e),
        Frame::Array(mut parts) if parts.len() == 2 => {
            let keys = bulks(parts.pop().unwrap_or(Frame::Null));
            let next = bulk(parts.pop().unwrap_or(Frame::Null)).unwrap_or_default();
            (next, keys)
        }
        _ => return cx.error(500, "SCAN gave no cursor"),
    };
    let mut listed = Vec::with_capacity(keys.len());
    for k in &keys {
        match enc.encode(k) {
            Some(s) => listed.push(Value::String(s)),
            None => return cx.error(406, NOT_UTF8),
        }
    }
    let body = serde_json::json!({
        "cursor": String::from_utf8_lossy(&next),
        "keys": listed,
    });
    cx.json(200, &body)
}

/// A MATCH pattern for keys starting with `prefix`: its glob characters escaped, then `*`.
pub(super) fn glob_prefix(prefix: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(prefix.len() * 2 + 1);
    for &b in prefix {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
            p.push(b'\\');
        }
        p.push(b);
    }
    p.push(b'*');
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_globs_escape_every_special_character() {
        assert_eq!(glob_prefix(b"user:"), b"user:*");
        assert_eq!(glob_prefix(b"a*b?c[d]e\\"), b"a\\*b\\?c\\[d\\]e\\\\*");
        assert_eq!(glob_prefix(b""), b"*");
    }
}
