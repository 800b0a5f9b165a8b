//! RDB lengths and strings: the variable-length length prefix, and a string as a length and
//! bytes, an 8/16/32-bit integer, or an LZF block.
//!
//! Length prefix (first byte's top two bits): `00` a 6-bit length; `01` 14 bits, big-endian
//! with the next byte; `10000000` a 32-bit and `10000001` a 64-bit big-endian length that
//! follows; `11` a special string encoding in the low six bits (0: INT8, 1: INT16, 2: INT32,
//! little-endian; 3: LZF, then compressed and original lengths and the compressed bytes).

use super::{lzf, Error};

const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// Redis compresses strings longer than this (`rdbSaveRawString`).
const COMPRESS_ABOVE: usize = 20;
/// Redis tries the integer encodings on strings up to this length.
const INT_ENCODING_MAX: usize = 11;

/// A cursor over untrusted bytes. Every read checks what remains first.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if n > self.remaining() {
            return Err(Error::BadData);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    /// A length prefix, or `Err` for a special string encoding (Redis's `rdbLoadLen` without
    /// `isencoded`).
    pub fn length(&mut self) -> Result<u64, Error> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(Error::BadData),
        }
    }

    /// A length that counts items of at least one byte each: at most what remains, so a
    /// caller may reserve room for that many.
    pub fn count(&mut self) -> Result<usize, Error> {
        let n = self.length()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.remaining())
            .ok_or(Error::BadData)
    }

    fn len_or_encoding(&mut self) -> Result<Len, Error> {
        let b = self.u8()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(self.u8()?)),
            2 => match b {
                0x80 => Len::Plain(u64::from(u32::from_be_bytes(self.array()?))),
                0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
                _ => return Err(Error::BadData),
            },
            _ => Len::Encoded(b & 0x3f),
        })
    }

    /// A string in any of its encodings (Redis's `rdbGenericLoadStringObject`); integers come
    /// back in decimal.
    pub fn string(&mut self) -> Result<Vec<u8>, Error> {
        match self.len_or_encoding()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| Error::BadData)?;
                Ok(self.take(n)?.to_vec())
            }
            Len::Encoded(ENC_INT8) => Ok(decimal(i64::from(i8::from_le_bytes(self.array()?)))),
            Len::Encoded(ENC_INT16) => Ok(decimal(i64::from(i16::from_le_bytes(self.array()?)))),
            Len::Encoded(ENC_INT32) => Ok(decimal(i64::from(i32::from_le_bytes(self.array()?)))),
            Len::Encoded(ENC_LZF) => {
                let clen = usize::try_from(self.length()?).map_err(|_| Error::BadData)?;
                let len = usize::try_from(self.length()?).map_err(|_| Error::BadData)?;
                let packed = self.take(clen)?;
                if len == 0 {
                    // `lzf_decompress` into no room returns 0, which Redis takes as success.
                    return Ok(Vec::new());
                }
                lzf::decompress(packed, len).ok_or(Error::BadData)
            }
            Len::Encoded(_) => Err(Error::BadData),
        }
    }

    /// A double in the old text form (`rdbLoadDoubleValue`): a length byte (253 NaN, 254
    /// +inf, 255 -inf) and that many bytes of decimal text.
    pub fn text_double(&mut self) -> Result<f64, Error> {
        match self.u8()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let text = self.take(usize::from(n))?;
                std::str::from_utf8(text)
                    .ok()
                    .and_then(|s| s.trim_start().parse::<f64>().ok())
                    .ok_or(Error::BadData)
            }
        }
    }

    /// A little-endian IEEE 754 double (`rdbLoadBinaryDoubleValue`).
    pub fn binary_double(&mut self) -> Result<f64, Error> {
        Ok(f64::from_le_bytes(self.array()?))
    }
}

enum Len {
    Plain(u64),
    Encoded(u8),
}

fn decimal(v: i64) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// Append a length prefix, in the shortest form (`rdbSaveLen`).
pub fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push(n as u8);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

thread_local! {
    /// Whether [`put_string`] tries LZF on this thread (see [`without_compression`]).
    static COMPRESS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Run `f` with LZF off for the strings it writes on this thread (larder's own snapshots,
/// where the CPU LZF costs is worth more than the bytes it saves; DUMP payloads keep it, as
/// Redis's do).
pub fn without_compression<R>(f: impl FnOnce() -> R) -> R {
    let was = COMPRESS.with(|c| c.replace(false));
    let r = f();
    COMPRESS.with(|c| c.set(was));
    r
}

/// Append a string as Redis's `rdbSaveRawString` does: a canonical integer of up to 11
/// bytes that fits 32 bits as INT8/16/32, a string over 20 bytes LZF-compressed when that
/// saves at least four bytes, and anything else as its length and bytes.
pub fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= INT_ENCODING_MAX {
        if let Some(v) = larder_engine::set::canonical_int(s) {
            if let Ok(v) = i8::try_from(v) {
                out.extend_from_slice(&[0xc0 | ENC_INT8, v as u8]);
                return;
            }
            if let Ok(v) = i16::try_from(v) {
                out.push(0xc0 | ENC_INT16);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
            if let Ok(v) = i32::try_from(v) {
                out.push(0xc0 | ENC_INT32);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
        }
    }
    if s.len() > COMPRESS_ABOVE && COMPRESS.with(std::cell::Cell::get) {
        if let Some(packed) = lzf::compress(s, s.len() - 4) {
            out.push(0xc0 | ENC_LZF);
            put_len(out, packed.len() as u64);
            put_len(out, s.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_string(&mut out, s);
        let mut r = Reader::new(&out);
        let back = r.string().expect("valid in this test");
        assert_eq!(r.remaining(), 0);
        assert_eq!(back, s);
        out
    }

    #[test]
    fn strings_take_redis_encodings() {
        assert_eq!(round(b"12"), [0xc0, 0x0c]);
        assert_eq!(round(b"-1000"), [0xc1, 0x18, 0xfc]);
        assert_eq!(round(b"100000"), [0xc2, 0xa0, 0x86, 0x01, 0x00]);
        assert_eq!(round(b"12345678901")[0], 0x0b);
        assert_eq!(round(b"012"), b"\x03012");
        assert_eq!(round(b"-0"), b"\x02-0");
        assert_eq!(round(b""), [0x00]);
        assert_eq!(round(&[b'a'; 100])[..4], [0xc3, 0x09, 0x40, 0x64]);
        round(&[b'x'; 20000]);
        round(
            &(0..20000u32)
                .map(|i| (i * 7919 % 251) as u8)
                .collect::<Vec<_>>(),
        );
    }

    #[test]
    fn lengths_take_every_width() {
        for n in [
            0u64,
            63,
            64,
            16383,
            16384,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_len(&mut out, n);
            assert_eq!(Reader::new(&out).length().expect("valid in this test"), n);
        }
        let mut out = Vec::new();
        put_len(&mut out, 300);
        assert_eq!(out, [0x41, 0x2c]);
    }

    #[test]
    fn bad_strings_are_errors() {
        assert_eq!(Reader::new(&[0x05, b'a']).string(), Err(Error::BadData));
        assert_eq!(Reader::new(&[0xc4]).string(), Err(Error::BadData));
        assert_eq!(Reader::new(&[0x82]).string(), Err(Error::BadData));
        assert_eq!(
            Reader::new(&[0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).string(),
            Err(Error::BadData)
        );
        assert_eq!(
            Reader::new(&[0xc3, 0x01, 0x7f, 0x00]).string(),
            Err(Error::BadData)
        );
    }
}
