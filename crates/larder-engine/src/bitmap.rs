//! Bitmaps: bit-level operations on string values, with Redis 7.0's semantics (`bitops.c`).
//!
//! A bitmap is a plain string: bit 0 is the most significant bit of the first byte. Everything
//! here is a function over byte slices (no keys, no protocol): counting and finding bits over
//! a range given as Redis's BITCOUNT / BITPOS take it, BITOP's combination of strings, and
//! BITFIELD's integers of 1 to 64 bits at any bit offset with WRAP / SAT / FAIL overflow.

use std::collections::BTreeMap;

/// Whether a range counts bytes or bits (BITCOUNT's and BITPOS's `BYTE | BIT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Byte,
    Bit,
}

/// The 8 bytes of `c` (exactly 8) as a word.
#[inline]
fn word(c: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(c);
    u64::from_ne_bytes(w)
}

/// The number of set bits in `s`, a word at a time.
pub fn popcount(s: &[u8]) -> u64 {
    let words = s.chunks_exact(8);
    let rest = words.remainder();
    let mut n: u64 = words.map(|w| u64::from(word(w).count_ones())).sum();
    n += rest.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
    n
}

/// The value of bit `offset` (0 past the end).
pub fn get_bit(s: &[u8], offset: u64) -> bool {
    let byte = offset >> 3;
    usize::try_from(byte)
        .ok()
        .and_then(|b| s.get(b))
        .is_some_and(|&b| b & (0x80 >> (offset & 7)) != 0)
}

/// Set bit `offset` of `s` to `on`, growing `s` with zero bytes to reach it. Returns the bit's
/// previous value.
pub fn set_bit(s: &mut Vec<u8>, offset: u64, on: bool) -> bool {
    let byte = (offset >> 3) as usize;
    if s.len() <= byte {
        s.resize(byte + 1, 0);
    }
    let mask = 0x80u8 >> (offset & 7);
    let old = s[byte] & mask != 0;
    if on {
        s[byte] |= mask;
    } else {
        s[byte] &= !mask;
    }
    old
}

/// A range resolved as Redis does: byte indexes `start..=end` (inside the string), and for a
/// BIT range the masks of the bits of the first and last byte that lie outside it.
struct Resolved {
    start: usize,
    end: usize,
    first_mask: u8,
    last_mask: u8,
}

/// Resolve `start..=end` of a `len`-byte string in `unit`s: negative indexes count from the
/// end, then both are clamped into the string. `None` for an empty range.
fn resolve(len: usize, start: i64, end: i64, unit: Unit) -> Option<Resolved> {
    let mut total = len as i64;
    if unit == Unit::Bit {
        total <<= 3;
    }
    let (mut start, mut end) = (start, end);
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= total {
        end = total - 1;
    }
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    if unit == Unit::Bit && start <= end {
        first_mask = !((1u32 << (8 - (start & 7))) - 1) as u8;
        last_mask = ((1u32 << (7 - (end & 7))) - 1) as u8;
        start >>= 3;
        end >>= 3;
    }
    if start > end {
        return None;
    }
    Some(Resolved {
        start: start as usize,
        end: end as usize,
        first_mask,
        last_mask,
    })
}

/// BITCOUNT over `start..=end` in `unit`s (Redis's index rules; `start` and `end` both
/// negative with `start > end` is an empty range).
pub fn count_range(s: &[u8], start: i64, end: i64, unit: Unit) -> u64 {
    if start < 0 && end < 0 && start > end {
        return 0;
    }
    let Some(r) = resolve(s.len(), start, end, unit) else {
        return 0;
    };
    let mut n = popcount(&s[r.start..=r.end]);
    n -= u64::from((s[r.start] & r.first_mask).count_ones());
    n -= u64::from((s[r.end] & r.last_mask).count_ones());
    n
}

/// The position of the first bit equal to `bit` in `s`, as Redis's `redisBitpos`: when there
/// is none, `-1` for a 1 and `8 * len` for a 0 (the string is taken as zero-padded).
pub fn find_bit(s: &[u8], bit: bool) -> i64 {
    let skip = if bit { 0 } else { u64::MAX };
    let mut i = s.chunks_exact(8).take_while(|w| word(w) == skip).count() * 8;
    while i < s.len() {
        let b = if bit { s[i] } else { !s[i] };
        if b != 0 {
            return (i * 8) as i64 + i64::from(b.leading_zeros());
        }
        i += 1;
    }
    if bit {
        -1
    } else {
        (s.len() * 8) as i64
    }
}

/// BITPOS: the first `bit` in `s`, or in `start..=end` (`end` defaults to the end of the
/// string) in `unit`s, with Redis 7.0's rules: -1 when no such bit, except that looking for a
/// 0 without an explicit end finds the first bit past the string.
pub fn bitpos(s: &[u8], bit: bool, start: Option<i64>, end: Option<i64>, unit: Unit) -> i64 {
    let end_given = end.is_some();
    let (start, end) = match start {
        None => (0, s.len() as i64 - 1),
        Some(start) => {
            let end = end.unwrap_or(match unit {
                Unit::Bit => ((s.len() as i64) << 3) + 7,
                Unit::Byte => s.len() as i64 - 1,
            });
            (start, end)
        }
    };
    let Some(r) = resolve(s.len(), start, end, unit) else {
        return -1;
    };
    let (mut start, end) = (r.start, r.end);
    let mut bytes = end - start + 1;
    // The edge bytes of a BIT range, with the bits outside the range forced to the value not
    // looked for.
    let masked = |b: u8, mask: u8| if bit { b & !mask } else { b | mask };
    let pos = 'found: {
        if r.first_mask != 0 {
            let mut tmp = masked(s[start], r.first_mask);
            if r.last_mask != 0 && bytes == 1 {
                tmp = masked(tmp, r.last_mask);
            }
            let pos = find_bit(&[tmp], bit);
            if bytes == 1 || (pos != -1 && pos != 8) {
                break 'found pos;
            }
            start += 1;
            bytes -= 1;
        }
        let whole = bytes - usize::from(r.last_mask != 0);
        if whole > 0 {
            let pos = find_bit(&s[start..start + whole], bit);
            if bytes == whole || (pos != -1 && pos != (whole as i64) << 3) {
                break 'found pos;
            }
            start += whole;
            bytes -= whole;
        }
        find_bit(&[masked(s[end], r.last_mask)], bit)
    };
    if end_given && !bit && pos == (bytes as i64) << 3 {
        return -1;
    }
    if pos == -1 {
        return -1;
    }
    pos + ((start as i64) << 3)
}

/// BITOP's operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// BITOP, folded one source at a time so that a caller can lend each source briefly: start
/// with [`BitOpAcc::new`], [`BitOpAcc::add`] every source (a missing key is an empty string),
/// then [`BitOpAcc::finish`]. The result is as long as the longest source; shorter ones are
/// zero-padded.
pub struct BitOpAcc {
    op: BitOp,
    res: Vec<u8>,
    seen: usize,
}

impl BitOpAcc {
    pub fn new(op: BitOp) -> BitOpAcc {
        BitOpAcc {
            op,
            res: Vec::new(),
            seen: 0,
        }
    }

    /// Fold in the next source.
    pub fn add(&mut self, src: &[u8]) {
        let first = self.seen == 0;
        self.seen += 1;
        if first {
            self.res.extend_from_slice(src);
            return;
        }
        let common = self.res.len().min(src.len());
        let (head, tail) = (&mut self.res[..common], &src[..common]);
        match self.op {
            BitOp::And => {
                head.iter_mut().zip(tail).for_each(|(r, s)| *r &= s);
                // Past a source's end its bytes are 0.
                self.res[common..].fill(0);
                self.res.resize(self.res.len().max(src.len()), 0);
            }
            BitOp::Or | BitOp::Xor | BitOp::Not => {
                if self.op == BitOp::Or {
                    head.iter_mut().zip(tail).for_each(|(r, s)| *r |= s);
                } else {
                    head.iter_mut().zip(tail).for_each(|(r, s)| *r ^= s);
                }
                if src.len() > common {
                    self.res.extend_from_slice(&src[common..]);
                }
            }
        }
    }

    /// The result (empty when every source was).
    pub fn finish(mut self) -> Vec<u8> {
        if self.op == BitOp::Not {
            self.res.iter_mut().for_each(|b| *b = !*b);
        }
        self.res
    }
}

/// A BITFIELD integer type: `i1`..`i64` or `u1`..`u63`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldType {
    pub signed: bool,
    pub bits: u32,
}

impl FieldType {
    /// Parse `i16`, `u8`, ... as Redis does (`u64` is refused).
    pub fn parse(raw: &[u8]) -> Option<FieldType> {
        let signed = match raw.first()? {
            b'i' => true,
            b'u' => false,
            _ => return None,
        };
        let digits = &raw[1..];
        // Redis's string2ll: no sign, no leading zero, digits only.
        if digits.is_empty() || digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let bits: u32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        let max = if signed { 64 } else { 63 };
        (1..=max)
            .contains(&bits)
            .then_some(FieldType { signed, bits })
    }
}

/// What BITFIELD does when a SET or INCRBY leaves the type's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// A BITFIELD operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOp {
    Get,
    Set(i64),
    IncrBy(i64),
}

/// Read `bits` bits at bit `offset` as an unsigned integer, through `byte` (0 past the end).
fn get_unsigned(byte: impl Fn(u64) -> u8, offset: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    for j in 0..u64::from(bits) {
        let o = offset + j;
        let bit = (byte(o >> 3) >> (7 - (o & 7))) & 1;
        value = (value << 1) | u64::from(bit);
    }
    value
}

fn sign_extend(value: u64, bits: u32) -> i64 {
    if bits < 64 && value & (1u64 << (bits - 1)) != 0 {
        (value | (u64::MAX << bits)) as i64
    } else {
        value as i64
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: `Some(result)` when `value + incr` leaves the
/// range (the wrapped or saturated result; unused for FAIL), `None` when it fits.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> Option<u64> {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = value.wrapping_neg() as i64;
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > max_incr) {
        Some(match ow {
            Overflow::Wrap => wrap(),
            Overflow::Sat | Overflow::Fail => max,
        })
    } else if incr < 0 && incr < min_incr {
        Some(match ow {
            Overflow::Wrap => wrap(),
            Overflow::Sat | Overflow::Fail => 0,
        })
    } else {
        None
    }
}

/// Redis's `checkSignedBitfieldOverflow`, as [`unsigned_overflow`].
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrap = || {
        let c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1u64 << (bits - 1)) != 0 {
                (c | mask) as i64
            } else {
                (c & !mask) as i64
            }
        } else {
            c as i64
        }
    };
    if value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr)
    {
        Some(match ow {
            Overflow::Wrap => wrap(),
            Overflow::Sat | Overflow::Fail => max,
        })
    } else if value < min
        || (bits != 64 && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        Some(match ow {
            Overflow::Wrap => wrap(),
            Overflow::Sat | Overflow::Fail => min,
        })
    } else {
        None
    }
}

/// A string seen through the writes of a BITFIELD call so far: the operations run against
/// this view, and the caller stores the written bytes only if something changed (so a call
/// that changes nothing is no write).
pub struct FieldView<'a> {
    base: &'a [u8],
    written: BTreeMap<u64, u8>,
}

impl<'a> FieldView<'a> {
    pub fn new(base: &'a [u8]) -> FieldView<'a> {
        FieldView {
            base,
            written: BTreeMap::new(),
        }
    }

    fn byte(&self, i: u64) -> u8 {
        match self.written.get(&i) {
            Some(&b) => b,
            None => usize::try_from(i)
                .ok()
                .and_then(|i| self.base.get(i))
                .copied()
                .unwrap_or(0),
        }
    }

    fn get_raw(&self, offset: u64, bits: u32) -> u64 {
        get_unsigned(|i| self.byte(i), offset, bits)
    }

    fn set_raw(&mut self, offset: u64, bits: u32, value: u64) {
        for j in 0..u64::from(bits) {
            let o = offset + j;
            let bit = (value >> (u64::from(bits) - 1 - j)) & 1;
            let shift = 7 - (o & 7);
            let mut b = self.byte(o >> 3);
            b &= !(1u8 << shift);
            b |= (bit as u8) << shift;
            self.written.insert(o >> 3, b);
        }
    }

    /// GET: the integer of type `t` at bit `offset` (bits past the end read as 0).
    pub fn get(&self, t: FieldType, offset: u64) -> i64 {
        let raw = self.get_raw(offset, t.bits);
        if t.signed {
            sign_extend(raw, t.bits)
        } else {
            raw as i64
        }
    }

    /// SET (reply: the old value) or INCRBY (reply: the new value) under `ow`. `None` when
    /// FAIL refused it (nothing written). Otherwise the reply and whether the bits changed.
    pub fn write(
        &mut self,
        t: FieldType,
        offset: u64,
        op: FieldOp,
        ow: Overflow,
    ) -> Option<(i64, bool)> {
        let old_raw = self.get_raw(offset, t.bits);
        let (reply, new_raw, overflowed, changed) = if t.signed {
            let old = sign_extend(old_raw, t.bits);
            let (new, overflowed, reply) = match op {
                FieldOp::IncrBy(incr) => {
                    let o = signed_overflow(old, incr, t.bits, ow);
                    let new = o.unwrap_or(old.wrapping_add(incr));
                    (new, o.is_some(), new)
                }
                FieldOp::Set(v) => {
                    let o = signed_overflow(v, 0, t.bits, ow);
                    (o.unwrap_or(v), o.is_some(), old)
                }
                FieldOp::Get => return Some((old, false)),
            };
            (reply, new as u64, overflowed, old != new)
        } else {
            let old = old_raw;
            let (new, overflowed, reply) = match op {
                FieldOp::IncrBy(incr) => {
                    let o = unsigned_overflow(old, incr, t.bits, ow);
                    let new = o.unwrap_or(old.wrapping_add(incr as u64));
                    (new, o.is_some(), new as i64)
                }
                FieldOp::Set(v) => {
                    let o = unsigned_overflow(v as u64, 0, t.bits, ow);
                    (o.unwrap_or(v as u64), o.is_some(), old as i64)
                }
                FieldOp::Get => return Some((old as i64, false)),
            };
            (reply, new, overflowed, old != new)
        };
        if overflowed && ow == Overflow::Fail {
            return None;
        }
        self.set_raw(offset, t.bits, new_raw);
        Some((reply, changed))
    }

    /// Whether any byte was written.
    pub fn is_written(&self) -> bool {
        !self.written.is_empty()
    }

    /// The bytes written, by index (the caller grows the string to reach them).
    pub fn into_writes(self) -> BTreeMap<u64, u8> {
        self.written
    }
}

#[cfg(test)]
mod tests;
