//! Encoding binary-protocol responses. Every response echoes the request's opcode (quiet
//! variants included) and opaque; [`BinaryWriter`] applies the quiet rules, so callers can
//! answer every request the same way and let quiet ones fall silent.

use crate::binary::{BinaryCommand, BinaryHeader, BinaryRequest, Status, RESPONSE_MAGIC};
use crate::error::BinaryError;

/// Appends binary response packets to an output buffer.
#[derive(Debug)]
pub struct BinaryWriter<'o> {
    out: &'o mut Vec<u8>,
}

/// The key of a request, for GETK-style responses.
fn request_key<'a>(req: &BinaryRequest<'a>) -> &'a [u8] {
    match req.command {
        BinaryCommand::Get { key }
        | BinaryCommand::Touch { key, .. }
        | BinaryCommand::GetAndTouch { key, .. }
        | BinaryCommand::Store { key, .. }
        | BinaryCommand::Delete { key, .. }
        | BinaryCommand::Counter { key, .. } => key,
        BinaryCommand::Stat { group } => group,
        _ => b"",
    }
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl<'o> BinaryWriter<'o> {
    /// A writer appending to `out`.
    pub fn new(out: &'o mut Vec<u8>) -> Self {
        Self { out }
    }

    /// A response header. `body_len` counts extras, key and value.
    #[allow(clippy::too_many_arguments)]
    fn header(
        &mut self,
        opcode: u8,
        status: Status,
        key_len: usize,
        extras_len: u8,
        body_len: usize,
        opaque: u32,
        cas: u64,
    ) {
        let h = BinaryHeader {
            magic: RESPONSE_MAGIC,
            opcode,
            key_len: u16::try_from(key_len).unwrap_or(u16::MAX),
            extras_len,
            data_type: 0,
            vbucket_or_status: status.0,
            body_len: len_u32(body_len),
            opaque,
            cas,
        };
        self.out.extend_from_slice(&h.to_bytes());
    }

    /// A get, getk, gat, gatk or touch hit (quiet variants too: hits are always sent):
    /// 4 bytes of client flags as extras, the key for the K variants, the value except for
    /// TOUCH, and the item's CAS.
    pub fn get_hit(&mut self, req: &BinaryRequest<'_>, flags: u32, cas: u64, value: &[u8]) {
        let value = if matches!(req.command, BinaryCommand::Touch { .. }) {
            &b""[..]
        } else {
            value
        };
        self.get_hit_head(req, flags, cas, value.len());
        self.out.extend_from_slice(value);
    }

    /// The header, extras and key of a get hit, for callers that send the `value_len`
    /// bytes of value themselves (pass 0 for TOUCH).
    pub fn get_hit_head(
        &mut self,
        req: &BinaryRequest<'_>,
        flags: u32,
        cas: u64,
        value_len: usize,
    ) {
        let key = if req.opcode.returns_key() {
            request_key(req)
        } else {
            b""
        };
        self.header(
            req.opcode as u8,
            Status::SUCCESS,
            key.len(),
            4,
            4 + key.len() + value_len,
            req.opaque,
            cas,
        );
        self.out.extend_from_slice(&flags.to_be_bytes());
        self.out.extend_from_slice(key);
    }

    /// A get, gat or touch miss: nothing for the quiet variants; for GETK and GATK the key
    /// without a message; otherwise "Not found".
    pub fn get_miss(&mut self, req: &BinaryRequest<'_>) {
        if req.is_quiet() {
            return;
        }
        if req.opcode.returns_key() {
            let key = request_key(req);
            self.header(
                req.opcode as u8,
                Status::KEY_NOT_FOUND,
                key.len(),
                0,
                key.len(),
                req.opaque,
                0,
            );
            self.out.extend_from_slice(key);
        } else {
            self.status(req, Status::KEY_NOT_FOUND);
        }
    }

    /// An empty success response (store, delete, flush, noop, quit) carrying `cas` (the
    /// new CAS after a store, 0 otherwise). Quiet opcodes send nothing.
    pub fn success(&mut self, req: &BinaryRequest<'_>, cas: u64) {
        if req.is_quiet() {
            return;
        }
        self.header(req.opcode as u8, Status::SUCCESS, 0, 0, 0, req.opaque, cas);
    }

    /// An increment/decrement result: the new value as 8 big-endian bytes, with the new
    /// CAS. Quiet opcodes send nothing.
    pub fn counter(&mut self, req: &BinaryRequest<'_>, value: u64, cas: u64) {
        if req.is_quiet() {
            return;
        }
        self.header(req.opcode as u8, Status::SUCCESS, 0, 0, 8, req.opaque, cas);
        self.out.extend_from_slice(&value.to_be_bytes());
    }

    /// The VERSION answer: the version string as the value.
    pub fn version(&mut self, req: &BinaryRequest<'_>, version: &str) {
        self.header(
            req.opcode as u8,
            Status::SUCCESS,
            0,
            0,
            version.len(),
            req.opaque,
            0,
        );
        self.out.extend_from_slice(version.as_bytes());
    }

    /// One STAT answer packet: the name as key, the value as value.
    pub fn stat(&mut self, req: &BinaryRequest<'_>, name: &str, value: &[u8]) {
        self.header(
            req.opcode as u8,
            Status::SUCCESS,
            name.len(),
            0,
            name.len() + value.len(),
            req.opaque,
            0,
        );
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(value);
    }

    /// A response with `status` and `value` as its body, sent for quiet opcodes too: SASL's
    /// answers (the mechanisms, "Authenticated", a continue challenge) and a refusal with a
    /// message of its own (a NOPERM text).
    pub fn with_value(&mut self, req: &BinaryRequest<'_>, status: Status, value: &[u8]) {
        self.header(req.opcode as u8, status, 0, 0, value.len(), req.opaque, 0);
        self.out.extend_from_slice(value);
    }

    /// The empty packet that ends a STAT answer.
    pub fn stat_end(&mut self, req: &BinaryRequest<'_>) {
        self.header(req.opcode as u8, Status::SUCCESS, 0, 0, 0, req.opaque, 0);
    }

    /// An error response for a request: the status and memcached's message for it. Sent
    /// for quiet opcodes too.
    pub fn status(&mut self, req: &BinaryRequest<'_>, status: Status) {
        self.error_packet(req.opcode as u8, req.opaque, status);
    }

    /// The response to a refused packet; nothing when the connection is to be closed
    /// silently (bad magic).
    pub fn error(&mut self, e: &BinaryError) {
        if let Some(status) = e.status() {
            self.error_packet(e.opcode, e.opaque, status);
        }
    }

    fn error_packet(&mut self, opcode: u8, opaque: u32, status: Status) {
        let msg = status.message();
        self.header(opcode, status, 0, 0, msg.len(), opaque, 0);
        self.out.extend_from_slice(msg.as_bytes());
    }
}

/// A response packet split into header, extras, key and value, for tests.
#[cfg(test)]
pub(crate) type Packet = (BinaryHeader, Vec<u8>, Vec<u8>, Vec<u8>);

/// Splits response packets, for tests.
#[cfg(test)]
pub(crate) fn split_responses(mut buf: &[u8]) -> Vec<Packet> {
    use crate::binary::HEADER_LEN;
    let mut out = Vec::new();
    while let Some(head) = buf.first_chunk::<HEADER_LEN>() {
        let h = BinaryHeader::parse(head);
        let body = &buf[HEADER_LEN..HEADER_LEN + h.body_len as usize];
        let (extras, rest) = body.split_at(usize::from(h.extras_len));
        let (key, value) = rest.split_at(usize::from(h.key_len));
        out.push((h, extras.to_vec(), key.to_vec(), value.to_vec()));
        buf = &buf[HEADER_LEN + h.body_len as usize..];
    }
    assert!(buf.is_empty(), "trailing bytes");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::HEADER_LEN;
    use crate::{parse_binary, BinaryErrorKind, Limits, Opcode};

    fn request(op: u8, extras: &[u8], key: &[u8]) -> Vec<u8> {
        let h = BinaryHeader {
            magic: 0x80,
            opcode: op,
            key_len: u16::try_from(key.len()).expect("key"),
            extras_len: u8::try_from(extras.len()).expect("extras"),
            data_type: 0,
            vbucket_or_status: 0,
            body_len: len_u32(extras.len() + key.len()),
            opaque: 0x0102_0304,
            cas: 0,
        };
        let mut v = h.to_bytes().to_vec();
        v.extend_from_slice(extras);
        v.extend_from_slice(key);
        v
    }

    fn with_request(
        bytes: &[u8],
        f: impl FnOnce(&BinaryRequest<'_>, &mut BinaryWriter<'_>),
    ) -> Vec<u8> {
        let (req, _) = parse_binary(bytes, &Limits::default())
            .expect("valid")
            .expect("complete");
        let mut out = Vec::new();
        f(&req, &mut BinaryWriter::new(&mut out));
        out
    }

    #[test]
    fn get_hits_per_opcode() {
        let t4 = 10u32.to_be_bytes();
        // (opcode, extras, with key in response, with value in response)
        let cases: &[(u8, &[u8], bool, bool)] = &[
            (0x00, b"", false, true),
            (0x09, b"", false, true),
            (0x0c, b"", true, true),
            (0x0d, b"", true, true),
            (0x1c, &t4, false, false),
            (0x1d, &t4, false, true),
            (0x1e, &t4, false, true),
            (0x23, &t4, true, true),
            (0x24, &t4, true, true),
        ];
        for &(op, extras, with_key, with_value) in cases {
            let out = with_request(&request(op, extras, b"key"), |req, w| {
                w.get_hit(req, 7, 99, b"hello");
            });
            let r = split_responses(&out);
            assert_eq!(r.len(), 1, "opcode {op:#x}");
            let (h, ext, key, value) = &r[0];
            assert_eq!(h.magic, 0x81);
            assert_eq!(h.opcode, op);
            assert_eq!(h.vbucket_or_status, 0);
            assert_eq!(h.opaque, 0x0102_0304);
            assert_eq!(h.cas, 99);
            assert_eq!(ext, &7u32.to_be_bytes());
            assert_eq!(key.as_slice(), if with_key { &b"key"[..] } else { b"" });
            assert_eq!(
                value.as_slice(),
                if with_value { &b"hello"[..] } else { b"" }
            );
        }
    }

    #[test]
    fn get_misses_per_opcode() {
        let t4 = 10u32.to_be_bytes();
        // (opcode, extras, expected (status, key, value) or silence)
        type Expected = Option<(&'static [u8], &'static [u8])>;
        let cases: &[(u8, &[u8], Expected)] = &[
            (0x00, b"", Some((b"", b"Not found"))),
            (0x09, b"", None),
            (0x0c, b"", Some((b"key", b""))),
            (0x0d, b"", None),
            (0x1c, &t4, Some((b"", b"Not found"))),
            (0x1d, &t4, Some((b"", b"Not found"))),
            (0x1e, &t4, None),
            (0x23, &t4, Some((b"key", b""))),
            (0x24, &t4, None),
        ];
        for &(op, extras, want) in cases {
            let out = with_request(&request(op, extras, b"key"), |req, w| w.get_miss(req));
            let r = split_responses(&out);
            match want {
                None => assert!(r.is_empty(), "opcode {op:#x}"),
                Some((key, value)) => {
                    assert_eq!(r.len(), 1);
                    let (h, ext, k, v) = &r[0];
                    assert_eq!(h.vbucket_or_status, 1);
                    assert_eq!(h.opcode, op);
                    assert!(ext.is_empty());
                    assert_eq!(k.as_slice(), key);
                    assert_eq!(v.as_slice(), value);
                }
            }
        }
    }

    #[test]
    fn quiet_mutations_are_silent_but_errors_are_not() {
        let extras = [0u8; 8];
        let mut set = request(0x11, &extras, b"k");
        set[8..12].copy_from_slice(&10u32.to_be_bytes());
        set.push(b'v');
        let out = with_request(&set, |req, w| {
            w.success(req, 5);
            w.status(req, Status::KEY_EXISTS);
        });
        let r = split_responses(&out);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0.opcode, 0x11);
        assert_eq!(r[0].0.vbucket_or_status, 2);
        assert_eq!(r[0].3, b"Data exists for key.");

        let out = with_request(&request(0x04, b"", b"k"), |req, w| w.success(req, 0));
        assert_eq!(split_responses(&out).len(), 1);
        let out = with_request(&request(0x18, b"", b""), |req, w| w.success(req, 0));
        assert!(out.is_empty());
        let out = with_request(&request(0x0a, b"", b""), |req, w| w.success(req, 0));
        assert_eq!(out.len(), HEADER_LEN);
    }

    #[test]
    fn counter_version_stat() {
        let extras = [0u8; 20];
        let out = with_request(&request(0x05, &extras, b"n"), |req, w| {
            w.counter(req, 15, 84)
        });
        let r = split_responses(&out);
        assert_eq!(r[0].0.cas, 84);
        assert_eq!(r[0].3, 15u64.to_be_bytes());
        let out = with_request(&request(0x15, &extras, b"n"), |req, w| {
            w.counter(req, 15, 84)
        });
        assert!(out.is_empty());

        let out = with_request(&request(0x0b, b"", b""), |req, w| w.version(req, "1.6.18"));
        assert_eq!(split_responses(&out)[0].3, b"1.6.18");

        let out = with_request(&request(0x10, b"", b""), |req, w| {
            w.stat(req, "pid", b"42");
            w.stat_end(req);
        });
        let r = split_responses(&out);
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].2.as_slice(), r[0].3.as_slice()),
            (&b"pid"[..], &b"42"[..])
        );
        assert_eq!(r[1].0.body_len, 0);
    }

    #[test]
    fn refusal_responses() {
        let mut bytes = request(0x50, b"", b"abc");
        let e = parse_binary(&bytes, &Limits::default()).expect_err("unknown");
        let mut out = Vec::new();
        BinaryWriter::new(&mut out).error(&e);
        let r = split_responses(&out);
        assert_eq!(r[0].0.opcode, 0x50);
        assert_eq!(r[0].0.vbucket_or_status, 0x81);
        assert_eq!(r[0].0.opaque, 0x0102_0304);
        assert_eq!(r[0].3, b"Unknown command");

        bytes[0] = 0x81;
        let e = parse_binary(&bytes, &Limits::default()).expect_err("magic");
        assert_eq!(e.kind, BinaryErrorKind::BadMagic);
        out.clear();
        BinaryWriter::new(&mut out).error(&e);
        assert!(out.is_empty());
        assert_eq!(Opcode::from_u8(0x50), None);
    }
}
