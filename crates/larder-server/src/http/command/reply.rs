//! Replies as the Upstash REST protocol shows them: RESP2 shapes in JSON. Simple strings and
//! bulks are JSON strings, integers numbers, nulls `null`, arrays arrays. With
//! `Upstash-Encoding: base64` every string is base64 except the simple string `OK`, as
//! Upstash does it; without it, a bulk that is not UTF-8 cannot be shown and is an error,
//! never a lossy string.

use larder_resp::Frame;
use serde_json::Value;

/// A reply held bytes that are not UTF-8 and base64 was not asked for.
#[derive(Debug, PartialEq, Eq)]
pub struct NotUtf8;

/// `frame` as JSON, strings base64-encoded when `base64`.
pub fn to_json(frame: Frame, base64: bool) -> Result<Value, NotUtf8> {
    let text = |bytes: Vec<u8>| -> Result<Value, NotUtf8> {
        if base64 {
            Ok(Value::String(crate::http::base64_encode(&bytes)))
        } else {
            String::from_utf8(bytes)
                .map(Value::String)
                .map_err(|_| NotUtf8)
        }
    };
    let list = |items: Vec<Frame>| -> Result<Value, NotUtf8> {
        items
            .into_iter()
            .map(|f| to_json(f, base64))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array)
    };
    match frame {
        Frame::Simple(s) if s == "OK" => Ok(Value::String(s)),
        Frame::Simple(s) => text(s.into_bytes()),
        Frame::Bulk(b) => text(b),
        Frame::Integer(n) => Ok(n.into()),
        Frame::Null => Ok(Value::Null),
        // An error inside an array (EXEC's replies are taken apart before this).
        Frame::Error(e) => Ok(serde_json::json!({ "error": e })),
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => list(items),
        // The door asks for RESP2 replies; RESP3's other shapes fold as RESP2 writes them.
        Frame::Map(pairs) => list(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect()),
        Frame::Double(d) => text(d.to_string().into_bytes()),
        Frame::Boolean(b) => Ok(i64::from(b).into()),
        Frame::BigNumber(s) => text(s.into_bytes()),
        Frame::Verbatim { text: t, .. } => text(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replies_as_json() {
        let reply = Frame::Array(vec![
            Frame::Bulk(b"v".to_vec()),
            Frame::Integer(-3),
            Frame::Null,
            Frame::Array(vec![Frame::Simple("PONG".into())]),
        ]);
        assert_eq!(
            to_json(reply.clone(), false),
            Ok(json!(["v", -3, null, ["PONG"]]))
        );
        assert_eq!(
            to_json(reply, true),
            Ok(json!(["dg==", -3, null, ["UE9ORw=="]]))
        );
        // "OK" alone stays as it is; a bulk "OK" is a value like any other.
        assert_eq!(to_json(Frame::Simple("OK".into()), true), Ok(json!("OK")));
        assert_eq!(
            to_json(Frame::Bulk(b"OK".to_vec()), true),
            Ok(json!("T0s="))
        );
    }

    #[test]
    fn binary_needs_base64() {
        let bin = Frame::Array(vec![
            Frame::Bulk(b"ok".to_vec()),
            Frame::Bulk(vec![0xff, 0]),
        ]);
        assert_eq!(to_json(bin.clone(), false), Err(NotUtf8));
        assert_eq!(to_json(bin, true), Ok(json!(["b2s=", "/wA="])));
    }
}
