//! Standard base64 (RFC 4648 alphabet, `=` padding) for meta keys sent with the `b` flag.
//!
//! Decoding is strict: the length must be a multiple of four, only the alphabet is allowed,
//! and padding may only end the input. memcached's decoder also skips stray bytes and accepts
//! `YQ=x`; those inputs are refused here with the same `CLIENT_ERROR error decoding key`.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Capacity of a decoded key: the longest binary key larger will store.
pub(crate) const KEY_BUF_LEN: usize = 250;

/// A key decoded from base64, held inline so that parsing a `b` request does not allocate.
#[derive(Clone)]
pub struct KeyBuf {
    len: u8,
    bytes: [u8; KEY_BUF_LEN],
}

impl KeyBuf {
    /// The decoded key.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl PartialEq for KeyBuf {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for KeyBuf {}

impl std::fmt::Debug for KeyBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("KeyBuf").field(&self.as_bytes()).finish()
    }
}

fn sextet(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes `input`; `None` when it is not canonical-length padded base64, decodes to nothing,
/// or decodes to more than [`KEY_BUF_LEN`] bytes.
pub(crate) fn decode_key(input: &[u8]) -> Option<KeyBuf> {
    if input.is_empty() || input.len() % 4 != 0 {
        return None;
    }
    let mut out = KeyBuf {
        len: 0,
        bytes: [0; KEY_BUF_LEN],
    };
    let mut n = 0usize;
    let quads = input.len() / 4;
    for (qi, quad) in input.chunks_exact(4).enumerate() {
        let last = qi + 1 == quads;
        let pad = quad.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut acc: u32 = 0;
        for &b in &quad[..4 - pad] {
            acc = (acc << 6) | u32::from(sextet(b)?);
        }
        acc <<= 6 * pad as u32;
        let produced = 3 - pad;
        if n + produced > KEY_BUF_LEN {
            return None;
        }
        let bytes = acc.to_be_bytes();
        out.bytes[n..n + produced].copy_from_slice(&bytes[1..1 + produced]);
        n += produced;
    }
    out.len = u8::try_from(n).ok()?;
    Some(out)
}

/// Appends the padded base64 encoding of `input`.
pub(crate) fn encode_into(out: &mut Vec<u8>, input: &[u8]) {
    for chunk in input.chunks(3) {
        let mut acc = [0u8; 3];
        acc[..chunk.len()].copy_from_slice(chunk);
        let v = u32::from(acc[0]) << 16 | u32::from(acc[1]) << 8 | u32::from(acc[2]);
        let chars = [
            ALPHABET[(v >> 18) as usize & 63],
            ALPHABET[(v >> 12) as usize & 63],
            ALPHABET[(v >> 6) as usize & 63],
            ALPHABET[v as usize & 63],
        ];
        let keep = chunk.len() + 1;
        out.extend_from_slice(&chars[..keep]);
        out.extend(std::iter::repeat_n(b'=', 4 - keep));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_table() {
        let cases: &[(&[u8], Option<&[u8]>)] = &[
            (b"YWJj", Some(b"abc")),
            (b"YWI=", Some(b"ab")),
            (b"YQ==", Some(b"a")),
            (b"AAAA", Some(&[0, 0, 0])),
            (b"44OG44K544OI", Some("テスト".as_bytes())),
            (b"//+/", Some(&[0xff, 0xff, 0xbf])),
            (b"YWI", None),
            (b"YQ", None),
            (b"Y", None),
            (b"", None),
            (b"YQ=x", None),
            (b"YW=I", None),
            (b"Y===", None),
            (b"YQ==YQ==", None),
            (b"YWJj\x01", None),
            (b"YW J", None),
        ];
        for &(input, want) in cases {
            let got = decode_key(input);
            assert_eq!(
                got.as_ref().map(KeyBuf::as_bytes),
                want,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn decode_limit() {
        // 332 base64 chars decode to 249 bytes; 336 to 252, over the buffer.
        let ok = vec![b'A'; 332];
        assert_eq!(decode_key(&ok).map(|k| k.as_bytes().len()), Some(249));
        let too_long = vec![b'A'; 336];
        assert!(decode_key(&too_long).is_none());
    }

    #[test]
    fn encode_round_trip() {
        let mut out = Vec::new();
        for input in [
            &b""[..],
            b"a",
            b"ab",
            b"abc",
            b"abcd",
            &[0xff, 0, 0x10, 0x80],
        ] {
            out.clear();
            encode_into(&mut out, input);
            assert_eq!(out.len() % 4, 0);
            if !input.is_empty() {
                let back = decode_key(&out).expect("round trip");
                assert_eq!(back.as_bytes(), input);
            }
        }
        out.clear();
        encode_into(&mut out, b"ab");
        assert_eq!(out, b"YWI=");
    }
}
