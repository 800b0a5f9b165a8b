//! `/v1/set/{key}` and `/v1/set/{key}/{member}`.

use larder_http::Method;
use larder_resp::Frame;
use serde_json::Value;

use super::{
    added, bulks, created_or_not, delete_whole, etag, json_body, json_reply, no_such_key, read,
    replace, write, Answer, Encoding, NOT_UTF8,
};
use crate::http::kv::method_not_allowed;
use crate::http::{Action, Cx};

/// The whole set as a JSON array of its members (in SMEMBERS's order, which is no order).
pub fn whole(cx: &mut Cx<'_, '_>, key: &[u8], enc: Encoding) -> Answer {
    match cx.req.method {
        Method::Get | Method::Head => {
            let (reply, version) = read(cx, key, &[b"SMEMBERS", key])?;
            let members = bulks(reply);
            if members.is_empty() {
                return Err(no_such_key(cx));
            }
            let mut out = Vec::with_capacity(members.len());
            for m in &members {
                match enc.encode(m) {
                    Some(s) => out.push(Value::String(s)),
                    None => return Err(cx.error(406, NOT_UTF8)),
                }
            }
            Ok(json_reply(cx, &Value::Array(out), version))
        }
        Method::Put => {
            let sadd = sadd_argv(cx, key, enc)?;
            replace(cx, key, sadd)
        }
        Method::Post => {
            let Some(sadd) = sadd_argv(cx, key, enc)? else {
                return Err(cx.error(400, "the array names no member"));
            };
            let replies = write(cx, key, &[sadd])?;
            Ok(added(cx, replies.first().unwrap_or(&Frame::Null)))
        }
        Method::Delete => delete_whole(cx, key, "set"),
        _ => Err(method_not_allowed(cx, "GET, HEAD, PUT, POST, DELETE")),
    }
}

/// `SADD key member ...` from the body's JSON array of strings (`None` when it is empty).
fn sadd_argv(
    cx: &mut Cx<'_, '_>,
    key: &[u8],
    enc: Encoding,
) -> Result<Option<Vec<Vec<u8>>>, Action> {
    let Value::Array(items) = json_body(cx)? else {
        return Err(cx.error(400, "expected a JSON array of members"));
    };
    if items.is_empty() {
        return Ok(None);
    }
    let mut argv = Vec::with_capacity(2 + items.len());
    argv.push(b"SADD".to_vec());
    argv.push(key.to_vec());
    for item in &items {
        let Some(member) = item.as_str().and_then(|s| enc.decode(s)) else {
            return Err(cx.error(400, enc.bad_string()));
        };
        argv.push(member);
    }
    Ok(Some(argv))
}

/// One member: `GET` is `204` when it is in the set, `404` when not.
pub fn member(cx: &mut Cx<'_, '_>, key: &[u8], member: &[u8]) -> Answer {
    match cx.req.method {
        Method::Get | Method::Head => {
            let (reply, version) = read(cx, key, &[b"SISMEMBER", key, member])?;
            if reply != Frame::Integer(1) {
                return Err(cx.error(404, "not a member"));
            }
            let mut r = cx.start(204);
            if let Some(v) = version {
                r.header("ETag", &etag(v));
            }
            r.body(None, b"");
            Ok(cx.done())
        }
        Method::Put => {
            let argv = vec![b"SADD".to_vec(), key.to_vec(), member.to_vec()];
            let replies = write(cx, key, &[argv])?;
            Ok(created_or_not(
                cx,
                matches!(replies.first(), Some(Frame::Integer(1))),
            ))
        }
        Method::Delete => {
            let argv = vec![b"SREM".to_vec(), key.to_vec(), member.to_vec()];
            let replies = write(cx, key, &[argv])?;
            if matches!(replies.first(), Some(Frame::Integer(1))) {
                return Ok(created_or_not(cx, false));
            }
            Err(cx.error(404, "not a member"))
        }
        _ => Err(method_not_allowed(cx, "GET, HEAD, PUT, DELETE")),
    }
}
