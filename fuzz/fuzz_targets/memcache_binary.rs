//! Fuzzes `larder_memcache::parse_binary` the way a connection drives it: packets back to back
//! from one buffer, refusals skipping their bytes (also bytes not received yet), and the same
//! stream fed again in pieces, which must give the same steps. Every parsed request and
//! refusal is answered with `BinaryWriter`, whose packets must be well formed.
//!
//! The first input byte picks small limits so the size checks are reachable.

#![no_main]

use larder_memcache::{
    parse_binary, BinaryCommand, BinaryErrorKind, BinaryHeader, BinaryRequest, BinaryWriter,
    Limits, Status, HEADER_LEN, RESPONSE_MAGIC,
};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq, Eq)]
enum Step {
    Request(usize, String),
    Error(BinaryErrorKind, usize),
}

/// Checks that `out` is a sequence of well-formed response packets.
fn check_packets(mut out: &[u8]) {
    while !out.is_empty() {
        let head = out.first_chunk::<HEADER_LEN>().expect("short header");
        let h = BinaryHeader::parse(head);
        assert_eq!(h.magic, RESPONSE_MAGIC);
        let body = h.body_len as usize;
        assert!(usize::from(h.key_len) + usize::from(h.extras_len) <= body);
        out = &out[HEADER_LEN + body..];
    }
}

/// Encodes plausible answers to `req`.
fn answer(req: &BinaryRequest<'_>, out: &mut Vec<u8>) {
    let mut w = BinaryWriter::new(out);
    match req.command {
        BinaryCommand::Get { .. }
        | BinaryCommand::Touch { .. }
        | BinaryCommand::GetAndTouch { .. } => {
            w.get_hit(req, 1, 2, b"value");
            w.get_miss(req);
        }
        BinaryCommand::Counter { delta, .. } => w.counter(req, delta, 3),
        BinaryCommand::Version => w.version(req, "1.6.18"),
        BinaryCommand::Stat { group } => {
            w.stat(req, "group", group);
            w.stat_end(req);
        }
        _ => w.success(req, 4),
    }
    w.status(req, Status::KEY_EXISTS);
    check_packets(out);
}

fn whole(data: &[u8], limits: &Limits) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < data.len() {
        let rest = &data[pos..];
        match parse_binary(rest, limits) {
            Ok(Some((req, used))) => {
                assert!(used >= HEADER_LEN && used <= rest.len());
                assert_eq!(parse_binary(&rest[..used], limits), Ok(Some((req, used))));
                out.clear();
                answer(&req, &mut out);
                steps.push(Step::Request(used, format!("{req:?}")));
                pos += used;
            }
            Ok(None) => break,
            Err(e) => {
                assert!(e.skip > 0);
                out.clear();
                BinaryWriter::new(&mut out).error(&e);
                check_packets(&out);
                steps.push(Step::Error(e.kind, e.skip));
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
            match parse_binary(&buf, limits) {
                Ok(Some((req, used))) => {
                    steps.push(Step::Request(used, format!("{req:?}")));
                    buf.drain(..used);
                }
                Ok(None) => break,
                Err(e) => {
                    // Bad magic is seen from the first byte, before a whole header: compare
                    // only the kind.
                    steps.push(Step::Error(e.kind, e.skip));
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

/// Steps with the skip of closing errors blanked: it is the buffered length, which depends
/// on how the bytes arrived.
fn normalized(mut steps: Vec<Step>) -> Vec<Step> {
    if let Some(Step::Error(kind, skip)) = steps.last_mut() {
        if matches!(
            kind,
            BinaryErrorKind::BadMagic
                | BinaryErrorKind::BadLengths
                | BinaryErrorKind::InvalidArguments
        ) {
            *skip = 0;
        }
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
            key_len_max: small % 32 + 1,
            item_size_max: small,
            binary_body_max: small * 2,
            ..Limits::default()
        }
    };
    let expected = normalized(whole(data, &limits));
    let step = usize::from(knob % 7) + 1;
    assert_eq!(normalized(piecewise(data, &limits, step)), expected);
});
