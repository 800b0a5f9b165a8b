//! `/v1/zset/{key}` and `/v1/zset/{key}/{member}`.
//!
//! Scores are JSON numbers; the infinities, which JSON has no number for, are the strings
//! `"inf"` and `"-inf"` both ways.

use larder_http::{Method, Query};
use larder_resp::Frame;
use serde_json::{json, Value};

use super::{
    added, bulk, bulks, created_or_not, delete_whole, json_body, json_reply, live_version,
    no_such_key, read, replace, write, Answer, Encoding, NOT_UTF8,
};
use crate::http::kv::method_not_allowed;
use crate::http::{Action, Cx};

/// The whole sorted set, or a range of it, as `[{"member": .., "score": ..}, ...]` in order.
pub fn whole(cx: &mut Cx<'_, '_>, key: &[u8], enc: Encoding) -> Answer {
    match cx.req.method {
        Method::Get | Method::Head => {
            let range = range_argv(cx, key)?;
            let argv: Vec<&[u8]> = range.iter().map(Vec::as_slice).collect();
            let (reply, version) = read(cx, key, &argv)?;
            let flat = bulks(reply);
            if flat.is_empty() && live_version(cx, key) == 0 {
                return Err(no_such_key(cx));
            }
            let mut out = Vec::with_capacity(flat.len() / 2);
            for pair in flat.chunks_exact(2) {
                let Some(member) = enc.encode(&pair[0]) else {
                    return Err(cx.error(406, NOT_UTF8));
                };
                out.push(json!({ "member": member, "score": score_json(&pair[1]) }));
            }
            Ok(json_reply(cx, &Value::Array(out), version))
        }
        Method::Put => {
            let zadd = zadd_argv(cx, key, enc)?;
            replace(cx, key, zadd)
        }
        Method::Post => {
            let Some(zadd) = zadd_argv(cx, key, enc)? else {
                return Err(cx.error(400, "the object names no member"));
            };
            let replies = write(cx, key, &[zadd])?;
            Ok(added(cx, replies.first().unwrap_or(&Frame::Null)))
        }
        Method::Delete => delete_whole(cx, key, "zset"),
        _ => Err(method_not_allowed(cx, "GET, HEAD, PUT, POST, DELETE")),
    }
}

/// The ZRANGE for the request's range: by rank (`start`, `stop`; all by default) or by score
/// (`min`, `max`, with `offset` and `limit`), reversed with `rev`.
fn range_argv(cx: &mut Cx<'_, '_>, key: &[u8]) -> Result<Vec<Vec<u8>>, Action> {
    let q = Query(cx.req.query);
    let rev = match q.text("rev").as_deref() {
        None | Some("0" | "false") => false,
        Some("" | "1" | "true") => true,
        Some(_) => return Err(cx.error(400, "rev must be true or false")),
    };
    let (start, stop) = (q.get("start"), q.get("stop"));
    let (min, max) = (q.get("min"), q.get("max"));
    let (offset, limit) = (q.get("offset"), q.get("limit"));
    let by_score = min.is_some() || max.is_some();
    if by_score && (start.is_some() || stop.is_some()) {
        return Err(cx.error(
            400,
            "a range is by rank (start, stop) or by score (min, max)",
        ));
    }
    if !by_score && (offset.is_some() || limit.is_some()) {
        return Err(cx.error(400, "offset and limit go with a score range (min, max)"));
    }
    let mut argv = vec![b"ZRANGE".to_vec(), key.to_vec()];
    if by_score {
        let min = min.map_or_else(|| b"-inf".to_vec(), |m| m.into_owned());
        let max = max.map_or_else(|| b"+inf".to_vec(), |m| m.into_owned());
        // ZRANGE ... BYSCORE REV takes the high end first.
        if rev {
            argv.extend([max, min]);
        } else {
            argv.extend([min, max]);
        }
        argv.push(b"BYSCORE".to_vec());
    } else {
        argv.push(start.map_or_else(|| b"0".to_vec(), |s| s.into_owned()));
        argv.push(stop.map_or_else(|| b"-1".to_vec(), |s| s.into_owned()));
    }
    if rev {
        argv.push(b"REV".to_vec());
    }
    if offset.is_some() || limit.is_some() {
        argv.push(b"LIMIT".to_vec());
        argv.push(offset.map_or_else(|| b"0".to_vec(), |o| o.into_owned()));
        argv.push(limit.map_or_else(|| b"-1".to_vec(), |l| l.into_owned()));
    }
    argv.push(b"WITHSCORES".to_vec());
    Ok(argv)
}

/// `ZADD key score member ...` from the body's JSON object `{member: score}` (`None` when it
/// is empty). Every score is checked first, so that a replace never stops after its `DEL`.
fn zadd_argv(
    cx: &mut Cx<'_, '_>,
    key: &[u8],
    enc: Encoding,
) -> Result<Option<Vec<Vec<u8>>>, Action> {
    let Value::Object(obj) = json_body(cx)? else {
        return Err(cx.error(400, "expected a JSON object of members and their scores"));
    };
    if obj.is_empty() {
        return Ok(None);
    }
    let mut argv = Vec::with_capacity(2 + obj.len() * 2);
    argv.push(b"ZADD".to_vec());
    argv.push(key.to_vec());
    for (member, score) in &obj {
        let Some(member) = enc.decode(member) else {
            return Err(cx.error(400, enc.bad_string()));
        };
        let score = match score {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => parse_score(s),
            _ => None,
        };
        let Some(score) = score else {
            return Err(cx.error(400, "a score must be a number, \"inf\" or \"-inf\""));
        };
        argv.push(score_text(score).into_bytes());
        argv.push(member);
    }
    Ok(Some(argv))
}

/// A score written as text (a body, a JSON string): a number or an infinity, never NaN.
fn parse_score(s: &str) -> Option<f64> {
    let s = s.trim();
    match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ if s
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
        {
            s.parse::<f64>().ok().filter(|f| f.is_finite())
        }
        _ => None,
    }
}

/// A score as ZADD reads it.
fn score_text(score: f64) -> String {
    if score == f64::INFINITY {
        "+inf".into()
    } else if score == f64::NEG_INFINITY {
        "-inf".into()
    } else {
        score.to_string()
    }
}

/// A score from a reply as JSON: a number, or `"inf"` / `"-inf"`.
fn score_json(text: &[u8]) -> Value {
    let score = std::str::from_utf8(text)
        .ok()
        .and_then(parse_score)
        .unwrap_or(f64::NAN);
    match serde_json::Number::from_f64(score) {
        Some(n) => Value::Number(n),
        None if score > 0.0 => Value::String("inf".into()),
        None => Value::String("-inf".into()),
    }
}

/// One member: `GET` answers its score as JSON, `PUT` sets it from the body (a number as
/// text), `DELETE` removes the member.
pub fn member(cx: &mut Cx<'_, '_>, key: &[u8], member: &[u8]) -> Answer {
    match cx.req.method {
        Method::Get | Method::Head => {
            let (reply, version) = read(cx, key, &[b"ZSCORE", key, member])?;
            match bulk(reply) {
                Some(score) => Ok(json_reply(cx, &score_json(&score), version)),
                None => Err(cx.error(404, "not a member")),
            }
        }
        Method::Put => {
            let score = std::str::from_utf8(&cx.req.body).ok().and_then(parse_score);
            let Some(score) = score else {
                return Err(cx.error(400, "the body must be a score: a number, inf or -inf"));
            };
            let argv = vec![
                b"ZADD".to_vec(),
                key.to_vec(),
                score_text(score).into_bytes(),
                member.to_vec(),
            ];
            let replies = write(cx, key, &[argv])?;
            Ok(created_or_not(
                cx,
                matches!(replies.first(), Some(Frame::Integer(1))),
            ))
        }
        Method::Delete => {
            let argv = vec![b"ZREM".to_vec(), key.to_vec(), member.to_vec()];
            let replies = write(cx, key, &[argv])?;
            if matches!(replies.first(), Some(Frame::Integer(1))) {
                return Ok(created_or_not(cx, false));
            }
            Err(cx.error(404, "not a member"))
        }
        _ => Err(method_not_allowed(cx, "GET, HEAD, PUT, DELETE")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores() {
        assert_eq!(parse_score(" 1.5 "), Some(1.5));
        assert_eq!(parse_score("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score("+Inf"), Some(f64::INFINITY));
        assert_eq!(parse_score("1e3"), Some(1000.0));
        for bad in ["", "nan", "NaN", "1,5", "x", "1e999"] {
            assert_eq!(parse_score(bad), None, "{bad}");
        }
        assert_eq!(score_text(f64::INFINITY), "+inf");
        assert_eq!(score_text(0.1), "0.1");
        assert_eq!(score_json(b"inf"), Value::String("inf".into()));
        assert_eq!(score_json(b"-inf"), Value::String("-inf".into()));
        assert_eq!(score_json(b"2.5"), json!(2.5));
    }
}
