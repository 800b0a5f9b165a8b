use super::*;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, max_len: u64) -> Vec<u8> {
        let len = self.below(max_len + 1);
        // Mostly runs of 0x00 / 0xff so that word skipping is exercised.
        (0..len)
            .map(|_| match self.below(4) {
                0 => 0,
                1 => 0xff,
                _ => self.next() as u8,
            })
            .collect()
    }

    fn index(&mut self, len: usize) -> i64 {
        let span = (len as i64) * 8 + 20;
        self.below(2 * span as u64) as i64 - span
    }
}

fn bit_at(s: &[u8], i: i64) -> bool {
    get_bit(s, i as u64)
}

/// The bit range `[lo, hi]` Redis resolves `start..=end` to, or `None` when empty.
fn bit_range(len: usize, start: i64, end: i64, unit: Unit) -> Option<(i64, i64)> {
    let r = resolve(len, start, end, unit)?;
    let lo = r.start as i64 * 8 + i64::from(r.first_mask.count_ones());
    let hi = r.end as i64 * 8 + 7 - i64::from(r.last_mask.count_ones());
    (lo <= hi).then_some((lo, hi))
}

#[test]
fn popcount_matches_bytes() {
    let mut rng = Rng(7);
    for _ in 0..500 {
        let s = rng.bytes(100);
        let want: u64 = s.iter().map(|b| u64::from(b.count_ones())).sum();
        assert_eq!(popcount(&s), want);
    }
}

#[test]
fn count_range_like_redis_examples() {
    let s = b"foobar";
    assert_eq!(count_range(s, 0, -1, Unit::Byte), 26);
    assert_eq!(count_range(s, 0, 0, Unit::Byte), 4);
    assert_eq!(count_range(s, 1, 1, Unit::Byte), 6);
    assert_eq!(count_range(s, 1, 1, Unit::Bit), 1);
    assert_eq!(count_range(s, 5, 30, Unit::Bit), 17);
    assert_eq!(count_range(s, -1, -2, Unit::Byte), 0);
    assert_eq!(count_range(s, 100, 200, Unit::Byte), 0);
    assert_eq!(count_range(b"", 0, -1, Unit::Byte), 0);
}

#[test]
fn count_range_matches_a_bit_by_bit_count() {
    let mut rng = Rng(11);
    for _ in 0..3000 {
        let s = rng.bytes(40);
        let unit = if rng.below(2) == 0 {
            Unit::Byte
        } else {
            Unit::Bit
        };
        let (start, end) = (rng.index(s.len()), rng.index(s.len()));
        let want = if start < 0 && end < 0 && start > end {
            0
        } else {
            bit_range(s.len(), start, end, unit)
                .map(|(lo, hi)| (lo..=hi).filter(|&i| bit_at(&s, i)).count() as u64)
                .unwrap_or(0)
        };
        assert_eq!(
            count_range(&s, start, end, unit),
            want,
            "{s:?} {start} {end} {unit:?}"
        );
    }
}

#[test]
fn find_bit_like_redis() {
    assert_eq!(find_bit(b"", true), -1);
    assert_eq!(find_bit(b"", false), 0);
    assert_eq!(find_bit(&[0xff, 0xf0, 0x00], false), 12);
    assert_eq!(find_bit(&[0x00, 0x0f], true), 12);
    assert_eq!(find_bit(&[0xff; 20], false), 160);
    assert_eq!(find_bit(&[0; 20], true), -1);
    let mut long = vec![0u8; 37];
    long[33] = 1;
    assert_eq!(find_bit(&long, true), 33 * 8 + 7);
}

#[test]
fn bitpos_like_redis_examples() {
    let s = [0xff, 0xf0, 0x00];
    assert_eq!(bitpos(&s, false, None, None, Unit::Byte), 12);
    let s = [0x00, 0xff, 0xf0];
    assert_eq!(bitpos(&s, true, Some(0), None, Unit::Byte), 8);
    assert_eq!(bitpos(&s, true, Some(2), None, Unit::Byte), 16);
    assert_eq!(bitpos(&s, true, Some(2), Some(-1), Unit::Byte), 16);
    assert_eq!(bitpos(&s, true, Some(7), Some(15), Unit::Bit), 8);
    assert_eq!(bitpos(&s, true, Some(7), Some(-3), Unit::Bit), 8);
    let zeros = [0u8; 3];
    assert_eq!(bitpos(&zeros, true, None, None, Unit::Byte), -1);
    assert_eq!(bitpos(&[0xff; 3], false, None, None, Unit::Byte), 24);
    assert_eq!(bitpos(&[0xff; 3], false, Some(0), Some(-1), Unit::Byte), -1);
    assert_eq!(bitpos(b"", false, None, None, Unit::Byte), -1);
    assert_eq!(bitpos(b"", true, None, None, Unit::Byte), -1);
}

#[test]
fn bitpos_matches_a_bit_by_bit_search() {
    let mut rng = Rng(13);
    for _ in 0..5000 {
        let s = rng.bytes(40);
        let bit = rng.below(2) == 1;
        let unit = if rng.below(3) == 0 {
            Unit::Bit
        } else {
            Unit::Byte
        };
        let start = (rng.below(4) != 0).then(|| rng.index(s.len()));
        let end = start.and_then(|_| (rng.below(3) != 0).then(|| rng.index(s.len())));
        let unit = if end.is_none() { Unit::Byte } else { unit };
        let got = bitpos(&s, bit, start, end, unit);
        let (from, to) = match start {
            None => (0, s.len() as i64 - 1),
            Some(st) => (st, end.unwrap_or(s.len() as i64 - 1)),
        };
        let want = match bit_range(s.len(), from, to, unit) {
            None => -1,
            Some((lo, hi)) => match (lo..=hi).find(|&i| bit_at(&s, i) == bit) {
                Some(i) => i,
                None if !bit && end.is_none() => hi + 1,
                None => -1,
            },
        };
        assert_eq!(got, want, "{s:?} bit={bit} {start:?} {end:?} {unit:?}");
    }
}

#[test]
fn bitop_matches_byte_by_byte() {
    let mut rng = Rng(17);
    for _ in 0..2000 {
        let op = [BitOp::And, BitOp::Or, BitOp::Xor, BitOp::Not][rng.below(4) as usize];
        let n = if op == BitOp::Not {
            1
        } else {
            1 + rng.below(4) as usize
        };
        let srcs: Vec<Vec<u8>> = (0..n).map(|_| rng.bytes(70)).collect();
        let max = srcs.iter().map(Vec::len).max().unwrap_or(0);
        let want: Vec<u8> = (0..max)
            .map(|i| {
                let at = |s: &Vec<u8>| s.get(i).copied().unwrap_or(0);
                let mut out = at(&srcs[0]);
                for s in &srcs[1..] {
                    match op {
                        BitOp::And => out &= at(s),
                        BitOp::Or => out |= at(s),
                        BitOp::Xor => out ^= at(s),
                        BitOp::Not => unreachable!(),
                    }
                }
                if op == BitOp::Not {
                    !out
                } else {
                    out
                }
            })
            .collect();
        let mut acc = BitOpAcc::new(op);
        for s in &srcs {
            acc.add(s);
        }
        assert_eq!(acc.finish(), want, "{op:?} {srcs:?}");
    }
}

#[test]
fn set_and_get_bits() {
    let mut s = Vec::new();
    assert!(!set_bit(&mut s, 7, true));
    assert_eq!(s, [0x01]);
    assert!(!set_bit(&mut s, 17, true));
    assert_eq!(s, [0x01, 0x00, 0x40]);
    assert!(set_bit(&mut s, 17, false));
    assert_eq!(s, [0x01, 0x00, 0x00]);
    assert!(get_bit(&s, 7));
    assert!(!get_bit(&s, 6));
    assert!(!get_bit(&s, 1000));
}

#[test]
fn field_types() {
    let t = |raw: &str| FieldType::parse(raw.as_bytes());
    assert_eq!(
        t("i8"),
        Some(FieldType {
            signed: true,
            bits: 8
        })
    );
    assert_eq!(
        t("u63"),
        Some(FieldType {
            signed: false,
            bits: 63
        })
    );
    assert!(t("i64").is_some());
    for bad in ["u64", "i65", "i0", "u", "x8", "i08", "i-1", "I8", "", "i+8"] {
        assert_eq!(t(bad), None, "{bad}");
    }
}

fn ty(signed: bool, bits: u32) -> FieldType {
    FieldType { signed, bits }
}

#[test]
fn bitfield_examples_from_redis_docs() {
    let base: Vec<u8> = Vec::new();
    let mut v = FieldView::new(&base);
    // BITFIELD k SET u5 7 23 gives 00000001 01110000.
    assert_eq!(
        v.write(ty(false, 5), 7, FieldOp::Set(23), Overflow::Wrap),
        Some((0, true))
    );
    let w = v.into_writes();
    assert_eq!(w.get(&0), Some(&0x01));
    assert_eq!(w.get(&1), Some(&0x70));

    let base = Vec::new();
    let mut v = FieldView::new(&base);
    let u2 = ty(false, 2);
    // OVERFLOW examples: u2 at 102 incremented by 1 four times.
    let wrap: Vec<_> = (0..4)
        .map(|_| v.write(u2, 102, FieldOp::IncrBy(1), Overflow::Wrap))
        .collect();
    assert_eq!(
        wrap,
        [
            Some((1, true)),
            Some((2, true)),
            Some((3, true)),
            Some((0, true))
        ]
    );
    let sat: Vec<_> = (0..4)
        .map(|_| v.write(u2, 100, FieldOp::IncrBy(1), Overflow::Sat))
        .collect();
    assert_eq!(
        sat,
        [
            Some((1, true)),
            Some((2, true)),
            Some((3, true)),
            Some((3, false))
        ]
    );
    assert_eq!(v.write(u2, 100, FieldOp::IncrBy(1), Overflow::Fail), None);
    assert_eq!(v.get(u2, 100), 3);
    assert_eq!(v.get(ty(true, 2), 100), -1);
}

#[test]
fn bitfield_signed_limits() {
    let base = Vec::new();
    let mut v = FieldView::new(&base);
    let i8t = ty(true, 8);
    assert_eq!(
        v.write(i8t, 0, FieldOp::Set(127), Overflow::Wrap),
        Some((0, true))
    );
    assert_eq!(
        v.write(i8t, 0, FieldOp::IncrBy(1), Overflow::Wrap),
        Some((-128, true))
    );
    assert_eq!(
        v.write(i8t, 0, FieldOp::IncrBy(-1), Overflow::Sat),
        Some((-128, false))
    );
    assert_eq!(
        v.write(i8t, 0, FieldOp::IncrBy(1000), Overflow::Sat),
        Some((127, true))
    );
    assert_eq!(
        v.write(i8t, 0, FieldOp::IncrBy(-1000), Overflow::Sat),
        Some((-128, true))
    );
    assert_eq!(v.write(i8t, 0, FieldOp::Set(200), Overflow::Fail), None);
    assert_eq!(
        v.write(i8t, 0, FieldOp::Set(200), Overflow::Wrap),
        Some((-128, true))
    );
    assert_eq!(v.get(i8t, 0), -56);
    let i64t = ty(true, 64);
    assert_eq!(
        v.write(i64t, 8, FieldOp::Set(i64::MAX), Overflow::Wrap),
        Some((0, true))
    );
    assert_eq!(
        v.write(i64t, 8, FieldOp::IncrBy(1), Overflow::Wrap),
        Some((i64::MIN, true))
    );
    assert_eq!(
        v.write(i64t, 8, FieldOp::IncrBy(-1), Overflow::Sat),
        Some((i64::MIN, false))
    );
    assert_eq!(
        v.write(i64t, 8, FieldOp::IncrBy(i64::MAX), Overflow::Fail),
        Some((-1, true))
    );
    // Unsigned SET of a negative value is an overflow (it is taken as a huge unsigned).
    let u8t = ty(false, 8);
    assert_eq!(
        v.write(u8t, 100, FieldOp::Set(-1), Overflow::Sat),
        Some((0, true))
    );
    assert_eq!(v.get(u8t, 100), 255);
    assert_eq!(
        v.write(u8t, 100, FieldOp::Set(-1), Overflow::Wrap),
        Some((255, false))
    );
    assert_eq!(
        v.write(u8t, 100, FieldOp::IncrBy(-256), Overflow::Sat),
        Some((0, true))
    );
}

/// Random reads and writes of every width at every offset against a model that holds one
/// `bool` per bit, in WRAP mode (the model computes the wrapped value by masking).
#[test]
fn bitfield_matches_a_bit_model() {
    let mut rng = Rng(23);
    let mut model = vec![false; 400];
    let base = Vec::new();
    let mut v = FieldView::new(&base);
    for _ in 0..5000 {
        let signed = rng.below(2) == 0;
        let bits = 1 + rng.below(if signed { 64 } else { 63 }) as u32;
        let t = ty(signed, bits);
        let offset = rng.below(300);
        let read_model = |m: &[bool]| {
            let mut raw = 0u64;
            for j in 0..u64::from(bits) {
                raw = (raw << 1) | u64::from(m[(offset + j) as usize]);
            }
            if signed {
                sign_extend(raw, bits)
            } else {
                raw as i64
            }
        };
        let old = read_model(&model);
        assert_eq!(v.get(t, offset), old);
        let value = rng.next() as i64 >> rng.below(64);
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let (op, stored) = if rng.below(2) == 0 {
            (FieldOp::Set(value), value as u64 & mask)
        } else {
            (
                FieldOp::IncrBy(value),
                (old as u64).wrapping_add(value as u64) & mask,
            )
        };
        let got = v.write(t, offset, op, Overflow::Wrap);
        for j in 0..u64::from(bits) {
            model[(offset + j) as usize] = (stored >> (u64::from(bits) - 1 - j)) & 1 == 1;
        }
        let new = read_model(&model);
        let want_reply = match op {
            FieldOp::Set(_) => old,
            _ => new,
        };
        assert_eq!(got, Some((want_reply, old != new)), "{t:?} {offset} {op:?}");
    }
}
