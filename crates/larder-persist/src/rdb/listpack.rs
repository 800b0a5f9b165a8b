//! Redis 7.0's listpack, the blob inside LIST_QUICKLIST_2, HASH_LISTPACK and ZSET_LISTPACK
//! values.
//!
//! Layout: `[total bytes: u32 LE][count: u16 LE, 65535 = unknown][entries][0xff]`. An entry
//! is an encoding byte with its data, then a *backlen*, the entry's own size (encoding and
//! data) in 1 to 5 bytes of 7 bits read right to left:
//!
//! | first byte  | entry                                    |
//! |-------------|------------------------------------------|
//! | `0xxxxxxx`  | integer 0..=127                          |
//! | `10xxxxxx`  | string, 6-bit length                     |
//! | `110xxxxx`  | 13-bit signed integer (next byte low)    |
//! | `1110xxxx`  | string, 12-bit length (next byte low)    |
//! | `11110000`  | string, 32-bit LE length                 |
//! | `11110001..4` | 16, 24, 32, 64-bit LE signed integer   |

use super::Error;
use crate::rdb::Elem;

const HEADER: usize = 6;
const EOF: u8 = 0xff;
const COUNT_UNKNOWN: u16 = u16::MAX;

/// Bytes of the backlen for an entry of `l` bytes (`lpEncodeBacklen`).
fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

fn put_backlen(out: &mut Vec<u8>, l: usize) {
    let n = backlen_size(l);
    // Most significant group first; every byte but the first has its top bit set.
    for i in (0..n).rev() {
        let group = ((l >> (7 * i)) & 0x7f) as u8;
        out.push(if i == n - 1 { group } else { group | 0x80 });
    }
}

/// Append one element, as `lpAppend` encodes it: a canonical decimal integer as the
/// smallest integer form, anything else as a string.
fn put_entry(out: &mut Vec<u8>, e: &[u8]) {
    let start = out.len();
    match larder_engine::set::canonical_int(e) {
        Some(v @ 0..=127) => out.push(v as u8),
        Some(v @ -4096..=4095) => {
            let u = (v as u16) & 0x1fff;
            out.extend_from_slice(&[0xc0 | (u >> 8) as u8, u as u8]);
        }
        Some(v) if i16::try_from(v).is_ok() => {
            out.push(0xf1);
            out.extend_from_slice(&(v as i16).to_le_bytes());
        }
        Some(v @ -8_388_608..=8_388_607) => {
            out.push(0xf2);
            out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
        }
        Some(v) if i32::try_from(v).is_ok() => {
            out.push(0xf3);
            out.extend_from_slice(&(v as i32).to_le_bytes());
        }
        Some(v) => {
            out.push(0xf4);
            out.extend_from_slice(&v.to_le_bytes());
        }
        None => {
            let n = e.len();
            if n < 64 {
                out.push(0x80 | n as u8);
            } else if n < 4096 {
                out.extend_from_slice(&[0xe0 | (n >> 8) as u8, n as u8]);
            } else {
                out.push(0xf0);
                out.extend_from_slice(&(n as u32).to_le_bytes());
            }
            out.extend_from_slice(e);
        }
    }
    let l = out.len() - start;
    put_backlen(out, l);
}

/// The bytes one element adds to a listpack.
pub fn entry_size(e: &[u8]) -> usize {
    let mut v = Vec::new();
    put_entry(&mut v, e);
    v.len()
}

/// A listpack of `elems`, in order.
pub fn encode<'a>(elems: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = vec![0u8; HEADER];
    let mut count = 0usize;
    for e in elems {
        put_entry(&mut out, e);
        count += 1;
    }
    out.push(EOF);
    let total = out.len() as u32;
    out[..4].copy_from_slice(&total.to_le_bytes());
    let count = u16::try_from(count).unwrap_or(COUNT_UNKNOWN);
    out[4..6].copy_from_slice(&count.to_le_bytes());
    out
}

fn int_le(b: &[u8]) -> i64 {
    // Sign-extend from the top byte.
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

/// The elements of listpack `lp`, fully validated (Redis's deep `lpValidateIntegrity`): the
/// header's size, every entry and its backlen within bounds, the count when known, and the
/// terminator last.
pub fn decode(lp: &[u8]) -> Result<Vec<Elem<'_>>, Error> {
    if lp.len() < HEADER + 1 {
        return Err(Error::BadData);
    }
    let total = u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]) as usize;
    let count = u16::from_le_bytes([lp[4], lp[5]]);
    if total != lp.len() || lp[lp.len() - 1] != EOF {
        return Err(Error::BadData);
    }
    let end = lp.len() - 1;
    let mut pos = HEADER;
    let mut elems = Vec::new();
    while pos < end {
        let b = lp[pos];
        let need = |n: usize| -> Result<&[u8], Error> {
            lp.get(pos + 1..pos + 1 + n)
                .filter(|_| pos + 1 + n <= end)
                .ok_or(Error::BadData)
        };
        let (elem, size) = match b {
            0x00..=0x7f => (Elem::Int(i64::from(b)), 1),
            0x80..=0xbf => {
                let n = usize::from(b & 0x3f);
                (Elem::Str(need(n)?), 1 + n)
            }
            0xc0..=0xdf => {
                let lo = need(1)?[0];
                let u = (i64::from(b & 0x1f) << 8) | i64::from(lo);
                (Elem::Int(if u >= 4096 { u - 8192 } else { u }), 2)
            }
            0xe0..=0xef => {
                let lo = need(1)?[0];
                let n = (usize::from(b & 0x0f) << 8) | usize::from(lo);
                let s = lp.get(pos + 2..pos + 2 + n).filter(|_| pos + 2 + n <= end);
                (Elem::Str(s.ok_or(Error::BadData)?), 2 + n)
            }
            0xf0 => {
                let l = need(4)?;
                let n = u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize;
                let s = pos
                    .checked_add(5 + n)
                    .filter(|&e| e <= end)
                    .map(|e| &lp[pos + 5..e]);
                (Elem::Str(s.ok_or(Error::BadData)?), 5 + n)
            }
            0xf1 => (Elem::Int(int_le(need(2)?)), 3),
            0xf2 => (Elem::Int(int_le(need(3)?)), 4),
            0xf3 => (Elem::Int(int_le(need(4)?)), 5),
            0xf4 => (Elem::Int(int_le(need(8)?)), 9),
            _ => return Err(Error::BadData),
        };
        let bl = backlen_size(size);
        let stored = lp
            .get(pos + size..pos + size + bl)
            .filter(|_| pos + size + bl <= end)
            .ok_or(Error::BadData)?;
        let mut expect = Vec::with_capacity(5);
        put_backlen(&mut expect, size);
        if stored != expect.as_slice() {
            return Err(Error::BadData);
        }
        pos += size + bl;
        elems.push(elem);
    }
    if count != COUNT_UNKNOWN && usize::from(count) != elems.len() {
        return Err(Error::BadData);
    }
    Ok(elems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_listpack_bytes() {
        // The listpack inside `HSET h_small f1 v1 f2 2 n -123456` dumped by Redis 7.0.15.
        let golden = "1d00000006008266310382763103826632030201816e02f2c01dfe04ff";
        let elems: [&[u8]; 6] = [b"f1", b"v1", b"f2", b"2", b"n", b"-123456"];
        let lp = encode(elems);
        assert_eq!(hex(&lp), golden);
        let back: Vec<Vec<u8>> = decode(&lp)
            .expect("valid in this test")
            .iter()
            .map(Elem::to_vec)
            .collect();
        assert_eq!(back, elems.map(<[u8]>::to_vec));
    }

    #[test]
    fn every_entry_form_round_trips() {
        let long = vec![b'x'; 70_000];
        let mid = vec![b'y'; 300];
        let elems: Vec<Vec<u8>> = [
            "0",
            "127",
            "128",
            "-1",
            "-4096",
            "4095",
            "4096",
            "-32768",
            "32767",
            "32768",
            "-8388608",
            "8388607",
            "8388608",
            "2147483647",
            "-2147483648",
            "2147483648",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "",
            "a",
            "01",
            "-0",
            "+1",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .chain([long, mid])
        .collect();
        let lp = encode(elems.iter().map(Vec::as_slice));
        let back: Vec<Vec<u8>> = decode(&lp)
            .expect("valid in this test")
            .iter()
            .map(Elem::to_vec)
            .collect();
        assert_eq!(back, elems);
        for e in &elems {
            let one = encode([e.as_slice()]);
            assert_eq!(one.len(), HEADER + 1 + entry_size(e));
        }
    }

    #[test]
    fn damaged_listpacks_are_errors() {
        let lp = encode([&b"hello"[..], b"12", b"world"]);
        for cut in 0..lp.len() {
            assert!(decode(&lp[..cut]).is_err(), "cut {cut}");
        }
        let mut wrong_count = lp.clone();
        wrong_count[4] = 2;
        assert!(decode(&wrong_count).is_err());
        let mut unknown_count = lp.clone();
        unknown_count[4..6].copy_from_slice(&[0xff, 0xff]);
        assert_eq!(decode(&unknown_count).expect("valid in this test").len(), 3);
        let mut bad_backlen = lp.clone();
        bad_backlen[HEADER + 6] = 9;
        assert!(decode(&bad_backlen).is_err());
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
}
