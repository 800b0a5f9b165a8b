//! `/v1/hash/{key}` and `/v1/hash/{key}/{field}`.

use larder_http::Method;
use larder_resp::Frame;
use serde_json::{Map, Value};

use super::{
    added, bulk, bulks, created_or_not, delete_whole, json_body, json_reply, no_such_key,
    raw_reply, read, replace, write, Answer, Encoding, NOT_UTF8,
};
use crate::http::kv::method_not_allowed;
use crate::http::Cx;

/// The whole hash as a JSON object of its fields.
pub fn whole(cx: &mut Cx<'_, '_>, key: &[u8], enc: Encoding) -> Answer {
    match cx.req.method {
        Method::Get | Method::Head => {
            let (reply, version) = read(cx, key, &[b"HGETALL", key])?;
            let flat = bulks(reply);
            if flat.is_empty() {
                return Err(no_such_key(cx));
            }
            let mut obj = Map::with_capacity(flat.len() / 2);
            for pair in flat.chunks_exact(2) {
                match (enc.encode(&pair[0]), enc.encode(&pair[1])) {
                    (Some(f), Some(v)) => obj.insert(f, Value::String(v)),
                    _ => return Err(cx.error(406, NOT_UTF8)),
                };
            }
            Ok(json_reply(cx, &Value::Object(obj), version))
        }
        Method::Put => {
            let hset = hset_argv(cx, key, enc)?;
            replace(cx, key, hset)
        }
        Method::Post => merge(cx, key, enc),
        Method::Other if cx.req.method_name == "PATCH" => merge(cx, key, enc),
        Method::Delete => delete_whole(cx, key, "hash"),
        _ => Err(method_not_allowed(
            cx,
            "GET, HEAD, PUT, POST, PATCH, DELETE",
        )),
    }
}

/// POST or PATCH: adds the body's fields (HSET), `{"added": n}`.
fn merge(cx: &mut Cx<'_, '_>, key: &[u8], enc: Encoding) -> Answer {
    let Some(hset) = hset_argv(cx, key, enc)? else {
        return Err(cx.error(400, "the object names no field"));
    };
    let replies = write(cx, key, &[hset])?;
    Ok(added(cx, replies.first().unwrap_or(&Frame::Null)))
}

/// `HSET key field value ...` from the body's JSON object (`None` when it is empty). Values
/// are strings, or numbers taken as their text.
fn hset_argv(
    cx: &mut Cx<'_, '_>,
    key: &[u8],
    enc: Encoding,
) -> Result<Option<Vec<Vec<u8>>>, crate::http::Action> {
    let Value::Object(obj) = json_body(cx)? else {
        return Err(cx.error(400, "expected a JSON object of fields"));
    };
    if obj.is_empty() {
        return Ok(None);
    }
    let mut argv = Vec::with_capacity(2 + obj.len() * 2);
    argv.push(b"HSET".to_vec());
    argv.push(key.to_vec());
    for (field, value) in &obj {
        let Some(field) = enc.decode(field) else {
            return Err(cx.error(400, enc.bad_string()));
        };
        let value = match value {
            Value::String(s) => enc.decode(s),
            Value::Number(n) => Some(n.to_string().into_bytes()),
            _ => None,
        };
        let Some(value) = value else {
            return Err(cx.error(400, "a field's value must be a string or a number"));
        };
        argv.push(field);
        argv.push(value);
    }
    Ok(Some(argv))
}

/// One field, its value raw.
pub fn field(cx: &mut Cx<'_, '_>, key: &[u8], field: &[u8]) -> Answer {
    match cx.req.method {
        Method::Get | Method::Head => {
            let (reply, version) = read(cx, key, &[b"HGET", key, field])?;
            match bulk(reply) {
                Some(value) => Ok(raw_reply(cx, &value, version)),
                None => Err(cx.error(404, "no such field")),
            }
        }
        Method::Put => {
            let body = cx.req.body.to_vec();
            let argv = vec![b"HSET".to_vec(), key.to_vec(), field.to_vec(), body];
            let replies = write(cx, key, &[argv])?;
            Ok(created_or_not(
                cx,
                matches!(replies.first(), Some(Frame::Integer(1))),
            ))
        }
        Method::Delete => {
            let argv = vec![b"HDEL".to_vec(), key.to_vec(), field.to_vec()];
            let replies = write(cx, key, &[argv])?;
            if matches!(replies.first(), Some(Frame::Integer(1))) {
                return Ok(created_or_not(cx, false));
            }
            Err(cx.error(404, "no such field"))
        }
        _ => Err(method_not_allowed(cx, "GET, HEAD, PUT, DELETE")),
    }
}
