//! Fuzzes `larder_http::parse_request` the way the HTTP door drives it: requests back to back
//! from one buffer, and the same bytes again in pieces, honouring `min_total`; every request's
//! target through `path_segments`, `percent_decode` and `Query`, and its headers through the
//! accessors the door uses.
//!
//! The first input byte picks small limits so the size checks are reachable.

#![no_main]

use larder_http::{parse_request, path_segments, percent_decode, Limits, Parsed, Query};
use libfuzzer_sys::fuzz_target;

/// What one request came to: its bytes consumed, method, target and body; or the status it
/// was refused with.
type Outcome = Result<(usize, String, String, Vec<u8>), u16>;

fn look_at(req: &larder_http::Request<'_>) {
    for seg in path_segments(req.path) {
        if let Some(d) = percent_decode(seg, false) {
            assert!(d.len() <= seg.len());
        }
    }
    let q = Query(req.query);
    for (n, v) in q.pairs() {
        assert!(n.len() + v.len() <= req.query.len());
    }
    let _ = q.get("_token");
    let _ = q.text("ttl");
    let _ = q.all("key").count();
    let _ = req.keep_alive();
    let _ = req.header_str("content-type");
    let _ = larder_http::parse_duration_ms(&q.text("wait").unwrap_or_default());
}

fn whole(data: &[u8], limits: &Limits) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let rest = &data[pos..];
        match parse_request(rest, limits) {
            Ok(Parsed::Complete { request, consumed }) => {
                assert!(consumed > 0 && consumed <= rest.len());
                assert!(request.body.len() <= limits.max_body);
                look_at(&request);
                // A complete request does not depend on the bytes after it.
                match parse_request(&rest[..consumed], limits) {
                    Ok(Parsed::Complete { request: again, consumed: c }) => {
                        assert_eq!(c, consumed);
                        assert_eq!(again, request);
                    }
                    other => panic!("not complete alone: {other:?}"),
                }
                outcomes.push(Ok((
                    consumed,
                    request.method_name.to_string(),
                    format!("{}?{}", request.path, request.query),
                    request.body.to_vec(),
                )));
                pos += consumed;
            }
            Ok(Parsed::Incomplete { min_total, .. }) => {
                assert!(min_total == 0 || min_total > rest.len());
                break;
            }
            Err(e) => {
                assert!(matches!(e.status, 400 | 413 | 431 | 501 | 505), "{e:?}");
                if let Some(skip) = e.skip {
                    assert_eq!(e.status, 413);
                    assert!(skip > limits.max_body as u64);
                }
                outcomes.push(Err(e.status));
                break;
            }
        }
    }
    outcomes
}

/// Feeds `data` in pieces of `step` bytes, re-parsing only once `min_total` bytes are there.
fn piecewise(data: &[u8], limits: &Limits, step: usize) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    let mut start = 0;
    let mut end = 0;
    let mut need = 1;
    while end < data.len() {
        end = (end + step).min(data.len());
        while end - start >= need.max(1) {
            match parse_request(&data[start..end], limits) {
                Ok(Parsed::Complete { request, consumed }) => {
                    outcomes.push(Ok((
                        consumed,
                        request.method_name.to_string(),
                        format!("{}?{}", request.path, request.query),
                        request.body.to_vec(),
                    )));
                    start += consumed;
                    need = 1;
                }
                Ok(Parsed::Incomplete { min_total, .. }) => {
                    // min_total promises that nothing changes before it.
                    if min_total > 0 {
                        if let Some(short) = data.get(start..start + min_total - 1) {
                            let parsed = parse_request(short, limits);
                            assert!(
                                matches!(parsed, Ok(Parsed::Incomplete { .. })),
                                "{parsed:?}"
                            );
                        }
                    }
                    need = min_total.max(end - start + 1);
                }
                Err(e) => {
                    outcomes.push(Err(e.status));
                    return outcomes;
                }
            }
        }
    }
    outcomes
}

fuzz_target!(|input: &[u8]| {
    let Some((&knob, data)) = input.split_first() else {
        return;
    };
    let limits = if knob & 1 == 0 {
        Limits::default()
    } else {
        Limits {
            max_head: usize::from(knob >> 1) * 8 + 16,
            max_body: usize::from(knob >> 4) * 4,
        }
    };
    let expected = whole(data, &limits);
    let step = usize::from(knob % 13) + 1;
    assert_eq!(piecewise(data, &limits, step), expected);
});
