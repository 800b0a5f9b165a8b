//! LZF, the compression Redis applies to RDB strings longer than 20 bytes.
//!
//! [`compress`] is a port of liblzf 3.6's `lzf_compress` with Redis's build settings (HLOG 16,
//! VERY_FAST), so it emits the same bytes Redis does for the same input; [`decompress`] is
//! `lzf_decompress`, bounds-checked for untrusted input.
//!
//! Format: `000LLLLL` + L+1 literal bytes; `LLLooooo oooooooo` a back reference of L+2 bytes
//! at distance o+1; `111ooooo LLLLLLLL oooooooo` one of L+9 bytes.

const HLOG: u32 = 16;
const HSIZE: usize = 1 << HLOG;
const MAX_LIT: usize = 1 << 5;
const MAX_OFF: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);

#[inline]
fn first(input: &[u8], p: usize) -> u32 {
    (u32::from(input[p]) << 8) | u32::from(input[p + 1])
}

#[inline]
fn next(v: u32, input: &[u8], p: usize) -> u32 {
    (v << 8) | u32::from(input[p + 2])
}

/// liblzf's VERY_FAST hash slot.
#[inline]
fn idx(h: u32) -> usize {
    ((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1)
}

/// liblzf's hash table of recent positions. Zeroing 64K slots for every string (as a fresh
/// table would need) cost far more than compressing a short value, so one table per thread
/// is reused: each slot holds the call's generation with the position, and a slot from an
/// earlier call reads as empty, exactly as a zeroed one would.
struct Table {
    slots: Vec<u64>,
    generation: u32,
}

thread_local! {
    static TABLE: std::cell::RefCell<Table> = const {
        std::cell::RefCell::new(Table { slots: Vec::new(), generation: 0 })
    };
}

impl Table {
    /// Start a call: a fresh generation (clearing the slots only when it wraps).
    fn begin(&mut self) {
        if self.slots.is_empty() {
            self.slots = vec![0; HSIZE];
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.fill(0);
            self.generation = 1;
        }
    }

    /// The position stored at `slot` plus one, 0 for none (liblzf's NULL).
    #[inline]
    fn get(&self, slot: usize) -> usize {
        let v = self.slots[slot];
        if (v >> 32) as u32 == self.generation {
            (v & 0xffff_ffff) as usize
        } else {
            0
        }
    }

    #[inline]
    fn set(&mut self, slot: usize, pos_plus_one: usize) {
        self.slots[slot] = (u64::from(self.generation) << 32) | pos_plus_one as u64;
    }
}

/// `input` compressed into at most `out_len` bytes, or `None` when it does not fit (Redis
/// asks for `len - 4` bytes, so that compression saves at least four).
pub fn compress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let in_len = input.len();
    // Positions are kept in 32 bits (an RDB string is at most 512 MiB by default).
    if in_len < 3 || out_len == 0 || in_len >= u32::MAX as usize {
        return None;
    }
    TABLE.with(|t| {
        let mut t = t.borrow_mut();
        t.begin();
        compress_with(&mut t, input, out_len)
    })
}

fn compress_with(htab: &mut Table, input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let in_len = input.len();
    // Slack past `out_len`: liblzf checks its bounds before every write but may reserve the
    // next literal run's length byte just past the end.
    let mut out = vec![0u8; out_len + 8];
    let mut ip = 0usize;
    let mut op = 1usize; // The first literal run's length byte is at 0.
    let mut lit = 0usize;
    let mut hval = first(input, ip);
    while ip < in_len - 2 {
        hval = next(hval, input, ip);
        let slot = idx(hval);
        let found = htab.get(slot);
        htab.set(slot, ip + 1);
        let matched = found > 1 // liblzf's `ref > in_data`: position 0 never matches
            && ip - found < MAX_OFF // off = ip - ref - 1
            && input[found - 1 + 2] == input[ip + 2]
            && input[found - 1] == input[ip]
            && input[found] == input[ip + 1];
        if matched {
            let r = found - 1;
            let off = ip - r - 1;
            let mut len = 2usize;
            let maxlen = (in_len - ip - len).min(MAX_REF);
            if op + 3 + 1 >= out_len && op - usize::from(lit == 0) + 3 + 1 >= out_len {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1);
            op -= usize::from(lit == 0);
            'scan: {
                if maxlen > 16 {
                    for _ in 0..16 {
                        len += 1;
                        if input[r + len] != input[ip + len] {
                            break 'scan;
                        }
                    }
                }
                loop {
                    len += 1;
                    if !(len < maxlen && input[r + len] == input[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2; // now the number of octets minus one
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 1;
            lit = 0;
            op += 1;
            ip += len + 1;
            if ip >= in_len - 2 {
                break;
            }
            ip -= 2;
            hval = first(input, ip);
            hval = next(hval, input, ip);
            htab.set(idx(hval), ip + 1);
            ip += 1;
            hval = next(hval, input, ip);
            htab.set(idx(hval), ip + 1);
            ip += 1;
        } else {
            if op >= out_len {
                return None;
            }
            lit += 1;
            out[op] = input[ip];
            op += 1;
            ip += 1;
            if lit == MAX_LIT {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
    }
    if op + 3 > out_len {
        return None;
    }
    while ip < in_len {
        lit += 1;
        out[op] = input[ip];
        op += 1;
        ip += 1;
        if lit == MAX_LIT {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1);
    op -= usize::from(lit == 0);
    if op > out_len {
        return None;
    }
    out.truncate(op);
    Some(out)
}

/// `input` decompressed to exactly `out_len` bytes, or `None` when it is malformed or does
/// not decompress to that length. Memory grows with the output actually produced, so a
/// forged `out_len` costs nothing.
pub fn decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    // A back reference of 3 input bytes yields at most 264 output bytes.
    let mut out = Vec::with_capacity(out_len.min(input.len().saturating_mul(MAX_REF / 3 + 1)));
    let mut ip = 0usize;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            let len = ctrl + 1;
            let lits = input.get(ip..ip + len)?;
            if out.len() + len > out_len {
                return None;
            }
            out.extend_from_slice(lits);
            ip += len;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(ip)?);
                ip += 1;
            }
            let low = usize::from(*input.get(ip)?);
            ip += 1;
            let back = ((ctrl & 0x1f) << 8) + low + 1;
            len += 2;
            if back > out.len() || out.len() + len > out_len {
                return None;
            }
            let start = out.len() - back;
            for i in 0..len {
                let b = out[start + i];
                out.push(b);
            }
        }
    }
    (out.len() == out_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn redis_bytes_for_a_run() {
        // `SET k <100 a>` then DUMP on Redis 7.0.15: c3 09 40 64 | 01 61 61 e0 57 00 01 61 61.
        let c = compress(&[b'a'; 100], 96).expect("valid in this test");
        assert_eq!(c, [0x01, 0x61, 0x61, 0xe0, 0x57, 0x00, 0x01, 0x61, 0x61]);
        assert_eq!(
            decompress(&c, 100).expect("valid in this test"),
            vec![b'a'; 100]
        );
    }

    #[test]
    fn incompressible_input_does_not_fit() {
        let input: Vec<u8> = (0..=255u8).collect();
        assert_eq!(compress(&input, input.len() - 4), None);
    }

    #[test]
    fn random_round_trips() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..3000 {
            let len = (rng(&mut seed) % 2000) as usize + 3;
            let alphabet = 1 + rng(&mut seed) % (if round % 2 == 0 { 4 } else { 256 });
            let input: Vec<u8> = (0..len)
                .map(|_| (rng(&mut seed) % alphabet) as u8)
                .collect();
            let room = len + len / 16 + 64;
            let c = compress(&input, room).expect("fits with slack");
            assert_eq!(
                decompress(&c, len).as_deref(),
                Some(&input[..]),
                "round {round}"
            );
            if let Some(tight) = compress(&input, len.saturating_sub(4)) {
                assert_eq!(tight, c);
            }
            // Wrong lengths and truncations fail cleanly.
            assert_eq!(decompress(&c, len + 1), None);
            assert_eq!(decompress(&c, len - 1), None);
            let _ = decompress(&c[..c.len() / 2], len);
        }
    }

    #[test]
    fn malformed_input_is_rejected() {
        assert_eq!(decompress(&[0x20, 0x00], 3), None); // back reference before the start
        assert_eq!(decompress(&[0x05, b'a'], 6), None); // literal run past the input
        assert_eq!(decompress(&[0xe0], 10), None); // truncated long reference
        assert_eq!(decompress(&[], 0), Some(vec![]));
    }
}
