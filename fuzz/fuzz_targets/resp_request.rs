//! Fuzzes `larder_resp::parse_request` the way a connection drives it: parse requests back to
//! back from one buffer, and feed the same bytes again in pieces, honouring `min_total`, both
//! statelessly and with `parse_request_resume`, checking what `Progress` says about a pending
//! last argument against the request once it is complete.
//!
//! The first input byte picks small limits so the size checks are reachable.

#![no_main]

use std::borrow::Cow;

use larder_resp::{parse_request, parse_request_resume, Limits, Parsed, Progress};
use libfuzzer_sys::fuzz_target;

/// The outcome of parsing one request, with its arguments copied out of the buffer.
type Outcome = Result<(usize, Vec<Vec<u8>>), String>;

/// Parses requests from the front of `data` until it runs out or an error ends the
/// connection. Returns the outcomes and the number of bytes consumed by complete requests.
fn whole(data: &[u8], limits: &Limits) -> (Vec<Outcome>, usize) {
    let mut argv: Vec<Cow<'_, [u8]>> = Vec::new();
    let mut outcomes = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let rest = &data[pos..];
        match parse_request(rest, limits, &mut argv) {
            Ok(Parsed::Complete { consumed }) => {
                assert!(consumed > 0 && consumed <= rest.len());
                // A complete request must not depend on the bytes after it.
                let mut again = Vec::new();
                let same = parse_request(&rest[..consumed], limits, &mut again);
                assert_eq!(same, Ok(Parsed::Complete { consumed }));
                assert_eq!(again, argv);
                outcomes.push(Ok((consumed, argv.iter().map(|a| a.to_vec()).collect())));
                pos += consumed;
            }
            Ok(Parsed::Incomplete { min_total }) => {
                assert!(min_total > rest.len());
                assert!(argv.is_empty());
                break;
            }
            Err(e) => {
                assert!(e.message().starts_with("ERR Protocol error: "));
                outcomes.push(Err(e.message()));
                break;
            }
        }
    }
    (outcomes, pos)
}

/// Feeds `data` in pieces of `step` bytes, re-parsing only once `min_total` bytes are there.
fn piecewise(data: &[u8], limits: &Limits, step: usize) -> (Vec<Outcome>, usize) {
    let mut argv: Vec<Cow<'_, [u8]>> = Vec::new();
    let mut outcomes = Vec::new();
    let mut start = 0;
    let mut end = 0;
    let mut need = 1;
    while end < data.len() {
        end = (end + step).min(data.len());
        while end - start >= need {
            match parse_request(&data[start..end], limits, &mut argv) {
                Ok(Parsed::Complete { consumed }) => {
                    outcomes.push(Ok((consumed, argv.iter().map(|a| a.to_vec()).collect())));
                    start += consumed;
                    need = 1;
                }
                Ok(Parsed::Incomplete { min_total }) => {
                    assert!(min_total > end - start);
                    // min_total is a promise that nothing changes before it: one byte short
                    // of it, the answer must still be "incomplete".
                    if let Some(short) = data.get(start..start + min_total - 1) {
                        let mut scratch = Vec::new();
                        let parsed = parse_request(short, limits, &mut scratch);
                        assert!(
                            matches!(parsed, Ok(Parsed::Incomplete { .. })),
                            "{parsed:?}"
                        );
                    }
                    need = min_total;
                }
                Err(e) => {
                    outcomes.push(Err(e.message()));
                    return (outcomes, start);
                }
            }
        }
    }
    (outcomes, start)
}

/// Like `piecewise`, with `parse_request_resume` and one `Progress` per request. Whenever the
/// request waits for its last argument's data, the arguments parsed so far and where that data
/// starts must be what the complete request then holds.
fn resumed(data: &[u8], limits: &Limits, step: usize) -> (Vec<Outcome>, usize) {
    let mut argv: Vec<Cow<'_, [u8]>> = Vec::new();
    let mut progress = Progress::default();
    let mut outcomes = Vec::new();
    let mut start = 0;
    let mut end = 0;
    // What the last incomplete parse said of the pending last argument.
    let mut pending: Option<(Vec<Vec<u8>>, usize, usize)> = None;
    while end < data.len() {
        end = (end + step).min(data.len());
        let buf = &data[start..end];
        match parse_request_resume(buf, limits, &mut argv, &mut progress) {
            Ok(Parsed::Complete { consumed }) => {
                let args: Vec<Vec<u8>> = argv.iter().map(|a| a.to_vec()).collect();
                if let Some((front, at, len)) = pending.take() {
                    let (last, before) = args.split_last().expect("a pending argument");
                    assert_eq!(before, &front[..]);
                    assert_eq!(&last[..], &buf[at..at + len]);
                    assert_eq!(consumed, at + len + 2);
                }
                outcomes.push(Ok((consumed, args)));
                start += consumed;
                end = start;
            }
            Ok(Parsed::Incomplete { .. }) => {
                pending = progress.pending_last_bulk().map(|(at, len)| {
                    assert!(at <= buf.len() && buf.len() < at + len + 2);
                    let mut front = Vec::new();
                    progress.parsed_args(buf, &mut front);
                    (front.iter().map(|a| a.to_vec()).collect(), at, len)
                });
            }
            Err(e) => {
                outcomes.push(Err(e.message()));
                return (outcomes, start);
            }
        }
    }
    (outcomes, start)
}

fuzz_target!(|input: &[u8]| {
    let Some((&knob, data)) = input.split_first() else {
        return;
    };
    let limits = if knob & 1 == 0 {
        Limits::default()
    } else {
        Limits {
            proto_max_bulk_len: u64::from(knob >> 4) * 16,
            max_multibulk_len: u64::from((knob >> 1) & 7) * 4,
            max_inline_len: usize::from(knob >> 2) + 1,
            unauthenticated: knob & 2 != 0,
        }
    };
    let expected = whole(data, &limits);
    let step = usize::from(knob % 7) + 1;
    assert_eq!(piecewise(data, &limits, step), expected);
    assert_eq!(resumed(data, &limits, step), expected);
});
