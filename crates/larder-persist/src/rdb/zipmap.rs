//! The zipmap, Redis 2.4's small-hash blob (HASH_ZIPMAP, type 9), which Redis 7.0 still
//! loads. Read only.
//!
//! Layout: `[count: u8, 254 = unknown][len][field][len][free: u8][value][free bytes]...[0xff]`,
//! where a `len` is one byte below 254, or 254 and a u32 LE; 255 ends the map.

use super::Error;

const BIGLEN: u8 = 254;
const END: u8 = 0xff;

/// One field and its value, borrowed from the zipmap.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// The (field, value) pairs of zipmap `zm`, validated as Redis's deep
/// `zipmapValidateIntegrity` does: every length, field, value and free space within bounds,
/// the terminator last, at least one pair, and the count when known.
pub fn decode(zm: &[u8]) -> Result<Vec<Pair<'_>>, Error> {
    if zm.len() < 2 || zm[zm.len() - 1] != END {
        return Err(Error::BadData);
    }
    let last = zm.len() - 1;
    let mut p = 1usize;
    let len_at = |p: usize| -> Result<(usize, usize), Error> {
        match zm.get(p) {
            Some(&b) if b < BIGLEN => Ok((usize::from(b), 1)),
            Some(&BIGLEN) => {
                let b = zm.get(p + 1..p + 5).filter(|_| p + 5 <= last);
                let b = b.ok_or(Error::BadData)?;
                Ok((u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 5))
            }
            _ => Err(Error::BadData),
        }
    };
    let span = |from: usize, n: usize| -> Result<&[u8], Error> {
        from.checked_add(n)
            .filter(|&e| e <= last)
            .map(|e| &zm[from..e])
            .ok_or(Error::BadData)
    };
    let mut pairs = Vec::new();
    while zm[p] != END {
        let (flen, s) = len_at(p)?;
        p += s;
        let field = span(p, flen)?;
        p += flen;
        let (vlen, s) = len_at(p)?;
        p += s;
        let free = usize::from(*zm.get(p).filter(|_| p < last).ok_or(Error::BadData)?);
        p += 1;
        let value = span(p, vlen)?;
        span(p, vlen + free)?;
        p += vlen + free;
        pairs.push((field, value));
    }
    if pairs.is_empty() || (zm[0] != BIGLEN && usize::from(zm[0]) != pairs.len()) {
        return Err(Error::BadData);
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_zipmap_example() {
        // zipmap.c's example: "foo" => "bar", "hello" => "world", with one free byte.
        let zm = b"\x02\x03foo\x03\x00bar\x05hello\x05\x01worldX\xff";
        let pairs = decode(zm).expect("valid");
        assert_eq!(
            pairs,
            vec![(&b"foo"[..], &b"bar"[..]), (b"hello", b"world")]
        );
        let mut unknown = zm.to_vec();
        unknown[0] = BIGLEN;
        assert_eq!(decode(&unknown).expect("valid").len(), 2);
        let mut big = vec![1u8, 254];
        big.extend_from_slice(&300u32.to_le_bytes());
        big.extend_from_slice(&[b'f'; 300]);
        big.extend_from_slice(&[1, 0, b'v', END]);
        assert_eq!(decode(&big).expect("valid")[0].0.len(), 300);
        for cut in 0..zm.len() - 1 {
            let mut t = zm[..cut].to_vec();
            t.push(END);
            assert!(decode(&t).is_err(), "cut {cut}");
        }
        assert!(decode(b"\x03\x03foo\x03\x00bar\x05hello\x05\x01worldX\xff").is_err());
        assert!(decode(b"\x00\xff").is_err());
    }
}
