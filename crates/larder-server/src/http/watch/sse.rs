//! Server-Sent Events text: change events, pub/sub messages, resync markers and heartbeats.
//!
//! Every event's data is one line of JSON (serde_json escapes newlines). Bytes go into JSON as
//! UTF-8 strings when they are UTF-8; otherwise as standard base64, flagged by a sibling
//! field: `"key_encoding":"base64"` for a key, `"encoding":"base64"` for a value or a
//! message, `"channel_encoding"` / `"pattern_encoding"` for pub/sub names.

use larder_engine::feed::Value;
use serde_json::{Map, Value as Json};

/// A heartbeat: an SSE comment, which clients ignore and proxies see as traffic.
pub const PING: &[u8] = b": ping\n\n";

/// Puts `bytes` under `name`: a string when UTF-8, else base64 with `flag` set to `"base64"`.
pub fn put_bytes(map: &mut Map<String, Json>, name: &str, flag: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => {
            map.insert(name.into(), Json::String(s.into()));
        }
        Err(_) => {
            map.insert(name.into(), Json::String(crate::http::base64_encode(bytes)));
            map.insert(flag.into(), Json::String("base64".into()));
        }
    }
}

/// A value's type word and its JSON: a string as a string; a list or a set as an array of
/// strings; a hash as an array of `[field, value]`; a sorted set as an array of `[member,
/// score]`, lowest score first. When any of its byte strings is not UTF-8, every one of them
/// is base64 and the second element of the answer is true.
fn value_json(value: &Value) -> (&'static str, Json, bool) {
    fn all_utf8<'a>(mut it: impl Iterator<Item = &'a [u8]>) -> bool {
        it.all(|b| std::str::from_utf8(b).is_ok())
    }
    let (ty, utf8) = match value {
        Value::String(s) => ("string", std::str::from_utf8(s).is_ok()),
        Value::List(v) => ("list", all_utf8(v.iter().map(|b| &b[..]))),
        Value::Set(v) => ("set", all_utf8(v.iter().map(|b| &b[..]))),
        Value::Hash(p) => (
            "hash",
            all_utf8(p.iter().flat_map(|(f, v)| [&f[..], &v[..]])),
        ),
        Value::ZSet(p) => ("zset", all_utf8(p.iter().map(|(m, _)| &m[..]))),
    };
    let text = |b: &[u8]| {
        Json::String(if utf8 {
            String::from_utf8_lossy(b).into_owned()
        } else {
            crate::http::base64_encode(b)
        })
    };
    let json = match value {
        Value::String(s) => text(s),
        Value::List(v) | Value::Set(v) => Json::Array(v.iter().map(|b| text(b)).collect()),
        Value::Hash(p) => Json::Array(
            p.iter()
                .map(|(f, v)| Json::Array(vec![text(f), text(v)]))
                .collect(),
        ),
        Value::ZSet(p) => Json::Array(
            p.iter()
                .map(|(m, bits)| {
                    let score = serde_json::Number::from_f64(f64::from_bits(*bits)).map_or_else(
                        || Json::String(f64::from_bits(*bits).to_string()),
                        Json::Number,
                    );
                    Json::Array(vec![text(m), score])
                })
                .collect(),
        ),
    };
    (ty, json, !utf8)
}

/// Appends one event: `id:` (when given), `event:`, one `data:` line, a blank line.
pub fn event(out: &mut Vec<u8>, id: Option<u64>, name: &str, data: &Json) {
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.to_string().as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    out.extend_from_slice(data.to_string().as_bytes());
    out.extend_from_slice(b"\n\n");
}

/// A key change's event, without and (for a written key whose value was recorded) with its
/// value.
pub fn change(
    id: u64,
    name: &str,
    db: u32,
    key: &[u8],
    version: u64,
    value: Option<&Value>,
) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut map = Map::new();
    put_bytes(&mut map, "key", "key_encoding", key);
    map.insert("db".into(), Json::from(db));
    map.insert("version".into(), Json::from(version));
    let mut plain = Vec::new();
    event(&mut plain, Some(id), name, &Json::Object(map.clone()));
    let valued = value.map(|v| {
        let (ty, json, b64) = value_json(v);
        map.insert("type".into(), Json::String(ty.into()));
        map.insert("value".into(), json);
        if b64 {
            map.insert("encoding".into(), Json::String("base64".into()));
        }
        let mut out = Vec::new();
        event(&mut out, Some(id), name, &Json::Object(map));
        out
    });
    (plain, valued)
}

/// A whole-database event: `flush` (`{"db":n}`) or `swap` (`{"db":a,"other":b}`).
pub fn db_change(id: u64, name: &str, db: u32, other: Option<u32>) -> Vec<u8> {
    let mut map = Map::new();
    map.insert("db".into(), Json::from(db));
    if let Some(other) = other {
        map.insert("other".into(), Json::from(other));
    }
    let mut out = Vec::new();
    event(&mut out, Some(id), name, &Json::Object(map));
    out
}

/// Why a stream is told to re-read what it watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resync {
    /// It fell behind: `missed` events were not sent.
    Behind { missed: u64 },
    /// `Last-Event-ID` is older than the history kept, or unknown.
    History,
}

/// Appends a `resync` event (no `id:`, so a reconnecting client still names the last event
/// it was sent).
pub fn resync(out: &mut Vec<u8>, why: Resync) {
    let data = match why {
        Resync::Behind { missed } => serde_json::json!({ "reason": "behind", "missed": missed }),
        Resync::History => serde_json::json!({ "reason": "history" }),
    };
    event(out, None, "resync", &data);
}

/// The pub/sub encoder for SSE subscribers: `[message, channel, payload]` or `[pmessage,
/// pattern, channel, payload]` as an `event: message` whose data holds `channel`, `pattern`
/// (for a pattern's message) and `message`.
pub fn pubsub_message(parts: &[&[u8]], out: &mut Vec<u8>) {
    let (pattern, channel, message) = match parts {
        [_, channel, message] => (None, *channel, *message),
        [_, pattern, channel, message] => (Some(*pattern), *channel, *message),
        _ => return,
    };
    // A work queue's publish window has events of its own (`http/queue.rs`).
    if pattern.is_none() && crate::http::queue::window_event(channel, message, out) {
        return;
    }
    let mut map = Map::new();
    put_bytes(&mut map, "channel", "channel_encoding", channel);
    if let Some(p) = pattern {
        put_bytes(&mut map, "pattern", "pattern_encoding", p);
    }
    put_bytes(&mut map, "message", "encoding", message);
    event(out, None, "message", &Json::Object(map));
}
