//! HyperLogLog, byte-compatible with Redis 7.0 (`hyperloglog.c`).
//!
//! A HyperLogLog is a string: a 16-byte header (`"HYLL"`, the encoding byte, three zero bytes,
//! the cached cardinality as 8 little-endian bytes whose top bit marks it stale), then the
//! registers, 16384 of 6 bits each, either *dense* (12288 bytes, packed from each byte's low
//! bit up) or *sparse* (run-length opcodes ZERO `00xxxxxx`, XZERO `01xxxxxx yyyyyyyy` and VAL
//! `1vvvvvxx`). Elements are hashed with MurmurHash64A (seed `0xadc83b19`); the cardinality is
//! Ertl's improved estimator over the register histogram. Every function takes and edits the
//! string's bytes exactly as Redis does, so a value written here reads the same in Redis (and
//! back) and the same elements give the same bytes.

/// The header's length.
pub const HDR: usize = 16;
/// log2 of the number of registers.
const P: u32 = 14;
/// The hash bits left after the register index.
const Q: usize = 64 - P as usize;
/// The number of registers.
pub const REGISTERS: usize = 1 << P;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// The length of a dense HyperLogLog.
pub const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
const SEED: u64 = 0xadc8_3b19;

/// A HyperLogLog whose sparse registers do not add up (Redis's "INVALIDOBJ Corrupted HLL
/// object detected").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

/// MurmurHash2, 64-bit version, endian-neutral as Redis has it.
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let words = key.chunks_exact(8);
    let tail = words.remainder();
    for w in words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let mut k = u64::from_le_bytes(b);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate().rev() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register `ele` maps to and the length of its hash's `0..01` run (1 to Q + 1).
pub fn pattern(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Whether `s` is a HyperLogLog as Redis checks it: long enough for the header, the magic, a
/// known encoding, and a dense one of the exact length.
pub fn is_valid(s: &[u8]) -> bool {
    s.len() >= HDR
        && &s[..4] == b"HYLL"
        && s[4] <= SPARSE
        && (s[4] != DENSE || s.len() == DENSE_SIZE)
}

/// Where in `s`, if it is a dense HyperLogLog, the register `ele` maps to starts: the byte
/// a PFADD of `ele` reads first. Judged by the length alone, without reading `s`'s bytes (a
/// prefetch asks this before they have arrived): a string of a dense HyperLogLog's length
/// that is none gets a register's offset too.
#[inline]
pub fn dense_register_byte(s: &[u8], ele: &[u8]) -> Option<usize> {
    (s.len() == DENSE_SIZE).then(|| HDR + pattern(ele).0 * BITS / 8)
}

/// Whether the (valid) HyperLogLog is dense.
pub fn is_dense(s: &[u8]) -> bool {
    s[4] == DENSE
}

/// A new, empty HyperLogLog: sparse, all registers in XZERO runs, cached cardinality 0.
pub fn new_sparse() -> Vec<u8> {
    let mut s = vec![0u8; HDR];
    s[..4].copy_from_slice(b"HYLL");
    s[4] = SPARSE;
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(SPARSE_XZERO_MAX_LEN);
        s.extend_from_slice(&xzero(run));
        left -= run;
    }
    s
}

/// The cached cardinality, when it is valid.
pub fn cached(s: &[u8]) -> Option<u64> {
    let mut card = [0u8; 8];
    card.copy_from_slice(&s[8..16]);
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

/// Store `card` as the cached cardinality.
pub fn set_cached(s: &mut [u8], card: u64) {
    s[8..16].copy_from_slice(&card.to_le_bytes());
}

/// Mark the cached cardinality stale.
pub fn invalidate(s: &mut [u8]) {
    s[15] |= 0x80;
}

// --- dense registers ---------------------------------------------------------------------------

/// Register `i` of the dense registers `r` (the byte after `r`, read for the last register,
/// is Redis's string terminator: 0).
#[inline]
fn dense_get(r: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u32::from(r[byte]);
    let b1 = u32::from(r.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & u32::from(REGISTER_MAX)) as u8
}

#[inline]
fn dense_put(r: &mut [u8], i: usize, v: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let fb8 = 8 - fb;
    let v = u32::from(v);
    let max = u32::from(REGISTER_MAX);
    r[byte] &= !((max << fb) as u8);
    r[byte] |= (v << fb) as u8;
    if let Some(b) = r.get_mut(byte + 1) {
        *b &= !((max >> fb8) as u8);
        *b |= (v >> fb8) as u8;
    }
}

/// Raise register `i` to `count` if it is lower; whether it changed.
fn dense_set(r: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(r, i) {
        dense_put(r, i, count);
        true
    } else {
        false
    }
}

// --- sparse opcodes ----------------------------------------------------------------------------

#[inline]
fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

#[inline]
fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}

#[inline]
fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}

#[inline]
fn zero_len(b: u8) -> usize {
    usize::from(b & 0x3f) + 1
}

/// The run of the XZERO opcode at `p` (a missing second byte reads as 0, like Redis's
/// terminator).
#[inline]
fn xzero_len(s: &[u8], p: usize) -> usize {
    ((usize::from(s[p] & 0x3f) << 8) | usize::from(s.get(p + 1).copied().unwrap_or(0))) + 1
}

#[inline]
fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

#[inline]
fn val_len(b: u8) -> usize {
    usize::from(b & 0x3) + 1
}

#[inline]
fn val(value: u8, len: usize) -> u8 {
    ((value - 1) << 2) | (len - 1) as u8 | 0x80
}

#[inline]
fn zero(len: usize) -> u8 {
    (len - 1) as u8
}

#[inline]
fn xzero(len: usize) -> [u8; 2] {
    let l = len - 1;
    [(l >> 8) as u8 | 0x40, (l & 0xff) as u8]
}

/// Visit the runs of the sparse registers `ops`: `(first register, run length, value)`, in
/// order. Stops early (Redis's overflow check) at a VAL run that would pass the last register.
/// Returns the number of registers covered.
fn sparse_runs(ops: &[u8], check_overflow: bool, mut visit: impl FnMut(usize, usize, u8)) -> usize {
    let mut idx = 0;
    let mut p = 0;
    while p < ops.len() {
        let b = ops[p];
        if is_zero(b) {
            let run = zero_len(b);
            visit(idx, run, 0);
            idx += run;
            p += 1;
        } else if is_xzero(b) {
            let run = xzero_len(ops, p);
            visit(idx, run, 0);
            idx += run;
            p += 2;
        } else {
            let run = val_len(b);
            if check_overflow && run + idx > REGISTERS {
                break;
            }
            visit(idx, run, val_value(b));
            idx += run;
            p += 1;
        }
    }
    idx
}

/// Turn a sparse HyperLogLog dense (nothing to do for a dense one). The header, cached
/// cardinality included, is kept.
pub fn to_dense(s: &mut Vec<u8>) -> Result<(), Corrupt> {
    if s[4] == DENSE {
        return Ok(());
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR].copy_from_slice(&s[..HDR]);
    dense[4] = DENSE;
    let (_, regs) = dense.split_at_mut(HDR);
    let covered = sparse_runs(&s[HDR..], true, |first, run, v| {
        if v > 0 {
            for i in first..first + run {
                dense_put(regs, i, v);
            }
        }
    });
    if covered != REGISTERS {
        return Err(Corrupt);
    }
    *s = dense;
    Ok(())
}

/// Raise register `index` of a sparse HyperLogLog to `count`, editing the opcodes in place as
/// Redis's `hllSparseSet` does (same splits, same merges of neighbouring VAL runs), or turning
/// it dense when `count` does not fit a VAL opcode or the string would pass `sparse_max`
/// bytes. Whether the register changed.
fn sparse_set(
    s: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Result<bool, Corrupt> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(s, index, count);
    }
    // Step 1: find the opcode that covers `index`.
    let end = s.len();
    let mut p = HDR;
    let mut first = 0usize;
    let mut prev: Option<usize> = None;
    let mut span = 0usize;
    while p < end {
        let b = s[p];
        let mut oplen = 1;
        span = if is_zero(b) {
            zero_len(b)
        } else if is_val(b) {
            val_len(b)
        } else {
            oplen = 2;
            xzero_len(s, p)
        };
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(Corrupt);
    }
    let b = s[p];
    let (zero_op, xzero_op) = (is_zero(b), is_xzero(b));
    let runlen = if zero_op {
        zero_len(b)
    } else if xzero_op {
        xzero_len(s, p)
    } else {
        val_len(b)
    };
    // Step 2: the trivial updates in place.
    let mut done = false;
    if !zero_op && !xzero_op {
        if val_value(b) >= count {
            return Ok(false);
        }
        if runlen == 1 {
            s[p] = val(count, 1);
            done = true;
        }
    }
    if !done && zero_op && runlen == 1 {
        s[p] = val(count, 1);
        done = true;
    }
    if !done {
        // The general case: split the opcode into up to three.
        let mut seq: Vec<u8> = Vec::with_capacity(5);
        let last = first + span - 1;
        let push_zeros = |seq: &mut Vec<u8>, len: usize| {
            if len > SPARSE_ZERO_MAX_LEN {
                seq.extend_from_slice(&xzero(len));
            } else {
                seq.push(zero(len));
            }
        };
        if zero_op || xzero_op {
            if index != first {
                push_zeros(&mut seq, index - first);
            }
            seq.push(val(count, 1));
            if index != last {
                push_zeros(&mut seq, last - index);
            }
        } else {
            let cur = val_value(b);
            if index != first {
                seq.push(val(cur, index - first));
            }
            seq.push(val(count, 1));
            if index != last {
                seq.push(val(cur, last - index));
            }
        }
        // Step 3: put the new sequence in place of the old opcode.
        let oldlen = if xzero_op { 2 } else { 1 };
        if seq.len() > oldlen && s.len() + (seq.len() - oldlen) > sparse_max {
            return promote(s, index, count);
        }
        let stop = (p + oldlen).min(s.len());
        s.splice(p..stop, seq);
    }
    // Step 4: merge neighbouring VAL opcodes of one value, scanning up to five opcodes from
    // the one before the change.
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < s.len() && scan > 0 {
        scan -= 1;
        let b = s[p];
        if is_xzero(b) {
            p += 2;
            continue;
        } else if is_zero(b) {
            p += 1;
            continue;
        }
        if p + 1 < s.len() && is_val(s[p + 1]) {
            let (v1, v2) = (val_value(b), val_value(s[p + 1]));
            if v1 == v2 {
                let len = val_len(b) + val_len(s[p + 1]);
                if len <= SPARSE_VAL_MAX_LEN {
                    s[p + 1] = val(v1, len);
                    s.remove(p);
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate(s);
    Ok(true)
}

/// Turn the HyperLogLog dense and then raise register `index` to `count`.
fn promote(s: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(s)?;
    Ok(dense_set(&mut s[HDR..], index, count))
}

/// Raise register `index` to `count` whatever the encoding; whether it changed.
fn set_register(
    s: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Result<bool, Corrupt> {
    match s[4] {
        DENSE => Ok(dense_set(&mut s[HDR..], index, count)),
        SPARSE => sparse_set(s, index, count, sparse_max),
        _ => Err(Corrupt),
    }
}

/// PFADD of one element to the (valid) HyperLogLog `s`: whether a register changed. A sparse
/// one turns dense past `sparse_max` bytes (`hll-sparse-max-bytes`). The caller invalidates
/// the cached cardinality when anything changed.
pub fn add(s: &mut Vec<u8>, ele: &[u8], sparse_max: usize) -> Result<bool, Corrupt> {
    add_pattern(s, pattern(ele), sparse_max)
}

/// [`add`] of an element whose [`pattern`] the caller has computed.
pub fn add_pattern(
    s: &mut Vec<u8>,
    (index, count): (usize, u8),
    sparse_max: usize,
) -> Result<bool, Corrupt> {
    set_register(s, index, count, sparse_max)
}

/// Whether adding `ele` would change a register, without changing anything (so that a PFADD
/// that changes nothing is no write). `Err` where [`add`] would fail.
pub fn would_change(s: &[u8], ele: &[u8]) -> Result<bool, Corrupt> {
    would_change_pattern(s, pattern(ele))
}

/// [`would_change`] for an element whose [`pattern`] the caller has computed.
pub fn would_change_pattern(s: &[u8], (index, count): (usize, u8)) -> Result<bool, Corrupt> {
    if s[4] == DENSE {
        return Ok(count > dense_get(&s[HDR..], index));
    }
    if count > SPARSE_VAL_MAX_VALUE {
        return Ok(true);
    }
    let mut current = None;
    let mut p = HDR;
    let mut first = 0;
    while p < s.len() {
        let b = s[p];
        let (span, oplen, v) = if is_zero(b) {
            (zero_len(b), 1, 0)
        } else if is_val(b) {
            (val_len(b), 1, val_value(b))
        } else {
            (xzero_len(s, p), 2, 0)
        };
        if index < first + span {
            current = Some(v);
            break;
        }
        p += oplen;
        first += span;
    }
    current.map(|v| count > v).ok_or(Corrupt)
}

/// Fold the registers of the (valid) HyperLogLog `s` into `max` (one byte per register), as
/// PFCOUNT of several keys and PFMERGE do.
pub fn merge_into(max: &mut [u8; REGISTERS], s: &[u8]) -> Result<(), Corrupt> {
    if s[4] == DENSE {
        let r = &s[HDR..];
        for (i, m) in max.iter_mut().enumerate() {
            let v = dense_get(r, i);
            if v > *m {
                *m = v;
            }
        }
        return Ok(());
    }
    let covered = sparse_runs(&s[HDR..], true, |first, run, v| {
        if v == 0 {
            return;
        }
        for m in &mut max[first..first + run] {
            if v > *m {
                *m = v;
            }
        }
    });
    if covered != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

/// PFMERGE's write: raise the registers of the (valid) HyperLogLog `s` to `max`, dense first
/// when `use_dense` (one of the sources was), and invalidate its cached cardinality.
pub fn merge_store(
    s: &mut Vec<u8>,
    max: &[u8; REGISTERS],
    use_dense: bool,
    sparse_max: usize,
) -> Result<(), Corrupt> {
    if use_dense {
        to_dense(s)?;
    }
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            // Redis ignores the result here: the sources were checked while merging.
            let _ = set_register(s, i, m, sparse_max);
        }
    }
    invalidate(s);
    Ok(())
}

/// The registers of the (valid) HyperLogLog `s`, one per byte (PFDEBUG GETREG).
pub fn registers(s: &[u8]) -> Result<Box<[u8; REGISTERS]>, Corrupt> {
    let mut regs = Box::new([0u8; REGISTERS]);
    merge_into(&mut regs, s)?;
    Ok(regs)
}

/// The opcodes of a sparse HyperLogLog as PFDEBUG DECODE shows them: `Z:<run>` (XZERO),
/// `z:<run>` (ZERO), `v:<value>,<run>` (VAL), space-separated.
pub fn decode_sparse(s: &[u8]) -> String {
    let mut out = Vec::new();
    let ops = &s[HDR..];
    let mut p = 0;
    while p < ops.len() {
        let b = ops[p];
        if is_zero(b) {
            out.push(format!("z:{}", zero_len(b)));
            p += 1;
        } else if is_xzero(b) {
            out.push(format!("Z:{}", xzero_len(ops, p)));
            p += 2;
        } else {
            out.push(format!("v:{},{}", val_value(b), val_len(b)));
            p += 1;
        }
    }
    out.join(" ")
}

/// PFSELFTEST: every dense register holds what is stored in it without disturbing its
/// neighbours, and the estimate of a growing set stays within Redis's bounds in both
/// encodings (up to a million elements; Redis goes to ten). `Err` says what failed.
pub fn self_test() -> Result<(), String> {
    let mut next = crate::xorshift::xorshift(0x5eed);
    let mut r = vec![0u8; DENSE_SIZE - HDR];
    let mut want = vec![0u8; REGISTERS];
    for _ in 0..1000 {
        for (i, w) in want.iter_mut().enumerate() {
            *w = (next() & u64::from(REGISTER_MAX)) as u8;
            dense_put(&mut r, i, *w);
        }
        if let Some(i) = (0..REGISTERS).find(|&i| dense_get(&r, i) != want[i]) {
            return Err(format!(
                "TESTFAILED Register error at index {i}: expected {}, found {}",
                want[i],
                dense_get(&r, i)
            ));
        }
    }
    let mut sparse = new_sparse();
    let mut dense = new_sparse();
    to_dense(&mut dense).map_err(|_| "TESTFAILED dense conversion".to_string())?;
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint = 1u64;
    for j in 1..=1_000_000u64 {
        let ele = next().to_le_bytes();
        let _ = add(&mut sparse, &ele, 3000);
        let _ = add(&mut dense, &ele, 3000);
        if j != checkpoint {
            continue;
        }
        let a = count(&sparse).map_err(|_| "TESTFAILED corrupt".to_string())?;
        let b = count(&dense).map_err(|_| "TESTFAILED corrupt".to_string())?;
        if a != b {
            return Err(format!("TESTFAILED dense/sparse disagree: {b} != {a}"));
        }
        let mut maxerr = relerr * 6.0;
        if j == 10 {
            maxerr = 1.0;
        }
        let abserr = (a as f64 - j as f64).abs();
        if abserr > maxerr * j as f64 {
            return Err(format!(
                "TESTFAILED Too big error. card:{j} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

/// Ertl's sigma.
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let z_prime = z;
        z += x * y;
        y += y;
        if z_prime == z {
            return z;
        }
    }
}

/// Ertl's tau.
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = x.sqrt();
        let z_prime = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if z_prime == z {
            return z / 3.0;
        }
    }
}

/// The cardinality estimate from a register histogram (Redis's `hllCount`).
fn estimate(histo: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(histo[Q + 1])) / m);
    for j in (1..=Q).rev() {
        z += f64::from(histo[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histo[0]) / m);
    (ALPHA_INF * m * m / z).round() as u64
}

/// The estimated cardinality of the (valid) HyperLogLog `s`, computed from its registers (the
/// cache is neither read nor written).
pub fn count(s: &[u8]) -> Result<u64, Corrupt> {
    let mut histo = [0u32; 64];
    if s[4] == DENSE {
        // Sixteen registers per twelve bytes.
        for group in s[HDR..].chunks_exact(12) {
            let mut r = [0u32; 12];
            for (r, &b) in r.iter_mut().zip(group) {
                *r = u32::from(b);
            }
            let regs = [
                r[0],
                r[0] >> 6 | r[1] << 2,
                r[1] >> 4 | r[2] << 4,
                r[2] >> 2,
                r[3],
                r[3] >> 6 | r[4] << 2,
                r[4] >> 4 | r[5] << 4,
                r[5] >> 2,
                r[6],
                r[6] >> 6 | r[7] << 2,
                r[7] >> 4 | r[8] << 4,
                r[8] >> 2,
                r[9],
                r[9] >> 6 | r[10] << 2,
                r[10] >> 4 | r[11] << 4,
                r[11] >> 2,
            ];
            for v in regs {
                histo[(v & 63) as usize] += 1;
            }
        }
    } else {
        let covered = sparse_runs(&s[HDR..], false, |_, run, v| {
            // A corrupt run may be huge: it is refused below, after the walk.
            histo[usize::from(v)] = histo[usize::from(v)].wrapping_add(run as u32);
        });
        if covered != REGISTERS {
            return Err(Corrupt);
        }
    }
    Ok(estimate(&histo))
}

/// The estimated cardinality of registers held one per byte (PFCOUNT of several keys).
pub fn count_registers(max: &[u8; REGISTERS]) -> u64 {
    let mut histo = [0u32; 64];
    for &v in max {
        histo[usize::from(v & 63)] += 1;
    }
    estimate(&histo)
}

#[cfg(test)]
mod tests;
