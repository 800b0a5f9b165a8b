//! Fuzzes `larder_memcache::parse_text` the way a connection drives it: requests back to back
//! from one buffer, errors skipping their bytes (also bytes not received yet), and the same
//! stream fed again in pieces, which must give the same steps. Every parsed request and
//! error is also encoded with `TextWriter`, which must not panic and must end its lines.
//!
//! The first input byte picks small limits so the size checks are reachable.

#![no_main]

use larder_memcache::{
    parse_text, Limits, MetaItem, MetaStatus, Recache, TextErrorKind, TextReply, TextRequest,
    TextWriter,
};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq, Eq)]
enum Step {
    Request(usize, String),
    Error(TextErrorKind, usize, bool),
}

/// Encodes a plausible answer to `req`.
fn answer(req: &TextRequest<'_>, out: &mut Vec<u8>) {
    let item = MetaItem {
        client_flags: 1,
        cas: 2,
        size: 3,
        ttl_s: -1,
        last_access_s: 4,
        fetched: true,
        key_binary: false,
    };
    let mut w = TextWriter::new(out);
    match req {
        TextRequest::Get { keys }
        | TextRequest::Gets { keys }
        | TextRequest::Gat { keys, .. }
        | TextRequest::Gats { keys, .. } => {
            for key in *keys {
                assert!(!key.is_empty() && !key.contains(&b' '));
                w.value(key, 0, key, Some(7));
            }
            w.end();
        }
        TextRequest::Store(s) => {
            assert!(!s.key.is_empty());
            w.reply(TextReply::Stored);
        }
        TextRequest::Incr { delta, .. } | TextRequest::Decr { delta, .. } => w.number(*delta),
        TextRequest::Stats { args } => {
            for a in *args {
                w.stat("arg", a);
            }
            w.end();
        }
        TextRequest::Version => w.version("1.6.18"),
        TextRequest::MetaGet(m) => {
            w.meta_get_hit(m, &item, b"abc", Recache::default());
            w.meta_get_miss(m);
        }
        TextRequest::MetaSet(m) => {
            w.meta_set(m, MetaStatus::Success, 9);
            w.meta_set(m, MetaStatus::Exists, 0);
        }
        TextRequest::MetaDelete(m) => w.meta_delete(m, MetaStatus::NotFound),
        TextRequest::MetaArithmetic(m) => {
            w.meta_arithmetic(m, u64::MAX, &item);
            w.meta_arithmetic_failed(m, MetaStatus::NotFound);
        }
        TextRequest::MetaDebug { key } => w.meta_debug(key, &item),
        TextRequest::MetaNoop => w.meta_noop(),
        _ => w.reply(TextReply::Ok),
    }
    assert!(out.is_empty() || out.ends_with(b"\r\n"));
}

fn whole(data: &[u8], limits: &Limits) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < data.len() {
        let rest = &data[pos..];
        match parse_text(rest, limits) {
            Ok(Some((req, used))) => {
                assert!(used > 0 && used <= rest.len());
                // A complete request does not depend on the bytes after it.
                let again = parse_text(&rest[..used], limits);
                assert_eq!(again, Ok(Some((req, used))));
                out.clear();
                answer(&req, &mut out);
                steps.push(Step::Request(used, format!("{req:?}")));
                pos += used;
            }
            Ok(None) => break,
            Err(e) => {
                assert!(e.skip > 0);
                let reply = e.reply();
                assert!(reply.is_empty() || reply.ends_with(b"\r\n"));
                steps.push(Step::Error(e.kind, e.skip, e.noreply));
                if e.closes_connection() {
                    break;
                }
                pos = pos.saturating_add(e.skip);
            }
        }
    }
    steps
}

fn piecewise(data: &[u8], limits: &Limits, step: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut skip = 0usize;
    for chunk in data.chunks(step) {
        let drop = skip.min(chunk.len());
        skip -= drop;
        buf.extend_from_slice(&chunk[drop..]);
        loop {
            match parse_text(&buf, limits) {
                Ok(Some((req, used))) => {
                    steps.push(Step::Request(used, format!("{req:?}")));
                    buf.drain(..used);
                }
                Ok(None) => break,
                Err(e) => {
                    steps.push(Step::Error(e.kind, e.skip, e.noreply));
                    if e.closes_connection() {
                        return steps;
                    }
                    let now = e.skip.min(buf.len());
                    skip = e.skip - now;
                    buf.drain(..now);
                    if skip > 0 {
                        break;
                    }
                }
            }
        }
    }
    steps
}

/// Steps with the skip of closing errors blanked: for a line without its newline it is the
/// buffered length, which depends on how the bytes arrived.
fn normalized(mut steps: Vec<Step>) -> Vec<Step> {
    if let Some(Step::Error(TextErrorKind::LineTooLong, skip, _)) = steps.last_mut() {
        *skip = 0;
    }
    steps
}

fuzz_target!(|input: &[u8]| {
    let Some((&knob, data)) = input.split_first() else {
        return;
    };
    let limits = if knob & 1 == 0 {
        Limits::default()
    } else {
        let small = usize::from(knob >> 1);
        Limits {
            key_len_max: small % 16 + 1,
            item_size_max: small,
            line_len_max: small + 4,
            get_line_len_max: small * 3,
            binary_body_max: small,
        }
    };
    let expected = normalized(whole(data, &limits));
    let step = usize::from(knob % 5) + 1;
    assert_eq!(normalized(piecewise(data, &limits, step)), expected);
});
