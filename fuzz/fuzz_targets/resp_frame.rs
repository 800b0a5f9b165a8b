//! Fuzzes `larder_resp::decode`: frames back to back from one buffer; every decoded frame
//! must re-encode to bytes that decode to the same frame, and no prefix of a frame may be
//! mistaken for a whole one.

#![no_main]

use larder_resp::{decode, Frame};
use libfuzzer_sys::fuzz_target;

/// Whether `frame` contains a NaN, which is never equal to itself.
fn has_nan(frame: &Frame) -> bool {
    match frame {
        Frame::Double(v) => v.is_nan(),
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => items.iter().any(has_nan),
        Frame::Map(pairs) => pairs.iter().any(|(k, v)| has_nan(k) || has_nan(v)),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut pos = 0;
    while pos < data.len() {
        let rest = &data[pos..];
        let Ok(Some((frame, used))) = decode(rest) else {
            break;
        };
        assert!(used > 0 && used <= rest.len());
        assert_eq!(decode(&rest[..used - 1]), Ok(None));
        if !has_nan(&frame) {
            let mut wire = Vec::new();
            frame.encode(&mut wire);
            assert_eq!(decode(&wire), Ok(Some((frame, wire.len()))));
        }
        pos += used;
    }
});
