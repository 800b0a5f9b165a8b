//! The ziplist, listpack's predecessor, which Redis 7.0 still loads (LIST_QUICKLIST nodes,
//! LIST_ZIPLIST, HASH_ZIPLIST, ZSET_ZIPLIST). Read only: larder never writes one.
//!
//! Layout: `[total bytes: u32 LE][tail offset: u32 LE][count: u16 LE, 65535 = unknown]
//! [entries][0xff]`. An entry is the previous entry's size (one byte below 254, else 0xfe and
//! a u32 LE), an encoding, and its data:
//!
//! | encoding      | entry                                       |
//! |---------------|---------------------------------------------|
//! | `00pppppp`    | string, 6-bit length                        |
//! | `01pppppp q`  | string, 14-bit big-endian length            |
//! | `10000000` + 4 | string, 32-bit big-endian length           |
//! | `0xc0` `0xd0` `0xe0` | 16, 32, 64-bit LE signed integer     |
//! | `0xf0` `0xfe` | 24-bit, 8-bit LE signed integer             |
//! | `0xf1..=0xfd` | integer 0..=12 in the low four bits, minus 1 |

use super::Error;
use crate::rdb::Elem;

const HEADER: usize = 10;
const EOF: u8 = 0xff;

fn int_le(b: &[u8]) -> i64 {
    let mut v: i64 = if b.last().is_some_and(|&x| x & 0x80 != 0) {
        -1
    } else {
        0
    };
    for &x in b.iter().rev() {
        v = (v << 8) | i64::from(x);
    }
    v
}

/// The elements of ziplist `zl`, fully validated (Redis's deep `ziplistValidateIntegrity`):
/// header sizes, each entry within bounds with a correct previous-entry size, the tail
/// offset, the count when known, and the terminator.
pub fn decode(zl: &[u8]) -> Result<Vec<Elem<'_>>, Error> {
    if zl.len() < HEADER + 1 {
        return Err(Error::BadData);
    }
    let total = u32::from_le_bytes([zl[0], zl[1], zl[2], zl[3]]) as usize;
    let tail = u32::from_le_bytes([zl[4], zl[5], zl[6], zl[7]]) as usize;
    let count = u16::from_le_bytes([zl[8], zl[9]]);
    if total != zl.len() || zl[zl.len() - 1] != EOF {
        return Err(Error::BadData);
    }
    let end = zl.len() - 1;
    let get = |from: usize, n: usize| -> Result<&[u8], Error> {
        from.checked_add(n)
            .filter(|&e| e <= end)
            .map(|e| &zl[from..e])
            .ok_or(Error::BadData)
    };
    let mut pos = HEADER;
    let mut prev_size = 0usize;
    let mut last_start = HEADER;
    let mut elems = Vec::new();
    while pos < end {
        let start = pos;
        let first = get(pos, 1)?[0];
        let prevlen = if first < 0xfe {
            pos += 1;
            usize::from(first)
        } else if first == 0xfe {
            let b = get(pos + 1, 4)?;
            pos += 5;
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
        } else {
            return Err(Error::BadData);
        };
        if prevlen != prev_size {
            return Err(Error::BadData);
        }
        let enc = get(pos, 1)?[0];
        let elem = match enc >> 6 {
            0 => {
                let n = usize::from(enc & 0x3f);
                pos += 1;
                let s = get(pos, n)?;
                pos += n;
                Elem::Str(s)
            }
            1 => {
                let lo = get(pos + 1, 1)?[0];
                let n = (usize::from(enc & 0x3f) << 8) | usize::from(lo);
                pos += 2;
                let s = get(pos, n)?;
                pos += n;
                Elem::Str(s)
            }
            2 if enc == 0x80 => {
                let b = get(pos + 1, 4)?;
                let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
                pos += 5;
                let s = get(pos, n)?;
                pos += n;
                Elem::Str(s)
            }
            2 => return Err(Error::BadData),
            _ => {
                let width = match enc {
                    0xc0 => 2,
                    0xd0 => 4,
                    0xe0 => 8,
                    0xf0 => 3,
                    0xfe => 1,
                    0xf1..=0xfd => 0,
                    _ => return Err(Error::BadData),
                };
                let b = get(pos + 1, width)?;
                pos += 1 + width;
                Elem::Int(if width == 0 {
                    i64::from(enc & 0x0f) - 1
                } else {
                    int_le(b)
                })
            }
        };
        prev_size = pos - start;
        last_start = start;
        elems.push(elem);
    }
    if tail != last_start {
        return Err(Error::BadData);
    }
    if count != u16::MAX && usize::from(count) != elems.len() {
        return Err(Error::BadData);
    }
    Ok(elems)
}

/// A ziplist of `elems` (strings only, as Redis would store non-integers), for tests of the
/// reader.
#[cfg(test)]
pub fn encode_strings(elems: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![0u8; HEADER];
    let mut prev = 0usize;
    let mut last = HEADER;
    for e in elems {
        let start = out.len();
        last = start;
        if prev < 254 {
            out.push(prev as u8);
        } else {
            out.push(0xfe);
            out.extend_from_slice(&(prev as u32).to_le_bytes());
        }
        let n = e.len();
        if n < 64 {
            out.push(n as u8);
        } else if n < 16384 {
            out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
        } else {
            out.push(0x80);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        out.extend_from_slice(e);
        prev = out.len() - start;
    }
    out.push(EOF);
    let total = out.len() as u32;
    out[..4].copy_from_slice(&total.to_le_bytes());
    out[4..8].copy_from_slice(&(last as u32).to_le_bytes());
    out[8..10].copy_from_slice(&(elems.len() as u16).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("valid in this test"))
            .collect()
    }

    #[test]
    fn redis_6_ziplist_with_every_integer_form() {
        // A Redis 6.2 list ziplist node holding: "a", 1, -1, 300, 70000, 5000000000, 12,
        // "hello world" (written by hand from ziplist.c's encodings).
        let mut zl = vec![0u8; HEADER];
        let entries: [&[u8]; 8] = [
            &[0x01, b'a'],
            &[0xf2],
            &[0xfe, 0xff],
            &[0xc0, 0x2c, 0x01],
            &[0xf0, 0x70, 0x11, 0x01],
            &[0xe0, 0x00, 0xf2, 0x05, 0x2a, 0x01, 0x00, 0x00, 0x00],
            &[0xfd],
            b"\x0bhello world",
        ];
        let mut prev = 0u8;
        let mut last = 0;
        for e in entries {
            last = zl.len();
            zl.push(prev);
            zl.extend_from_slice(e);
            prev = (e.len() + 1) as u8;
        }
        zl.push(EOF);
        let total = zl.len() as u32;
        zl[..4].copy_from_slice(&total.to_le_bytes());
        zl[4..8].copy_from_slice(&(last as u32).to_le_bytes());
        zl[8..10].copy_from_slice(&8u16.to_le_bytes());
        let got: Vec<Vec<u8>> = decode(&zl)
            .expect("valid in this test")
            .iter()
            .map(Elem::to_vec)
            .collect();
        let want: Vec<&[u8]> = vec![
            b"a",
            b"1",
            b"-1",
            b"300",
            b"70000",
            b"5000000000",
            b"12",
            b"hello world",
        ];
        assert_eq!(got, want);
        assert!(decode(&unhex("0b000000ffffffff0000ff")).is_err());
    }

    #[test]
    fn long_strings_and_damage() {
        let long = vec![b'z'; 300];
        let big = vec![b'q'; 20000];
        let zl = encode_strings(&[b"x", &long, &big, b"y"]);
        let got: Vec<Vec<u8>> = decode(&zl)
            .expect("valid in this test")
            .iter()
            .map(Elem::to_vec)
            .collect();
        assert_eq!(got, vec![b"x".to_vec(), long, big, b"y".to_vec()]);
        let small = encode_strings(&[b"ab", b"cd"]);
        for cut in 0..small.len() {
            assert!(decode(&small[..cut]).is_err());
        }
        let mut bad_prev = small.clone();
        bad_prev[HEADER + 4] = 7;
        assert!(decode(&bad_prev).is_err());
    }
}
