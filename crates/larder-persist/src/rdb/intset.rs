//! Redis's intset blob (SET_INTSET): `[width: u32 LE, 2/4/8][count: u32 LE][values]`, the
//! values signed little-endian of that width, strictly ascending.

use super::Error;

/// An intset of `values` (ascending, distinct) at the narrowest width that holds them all.
pub fn encode(values: &[i64]) -> Vec<u8> {
    let width: usize = if values.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if values.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * values.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(values.len() as u32).to_le_bytes());
    for &v in values {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

/// The values of intset `blob`, validated as Redis's deep `intsetValidateIntegrity` does: a
/// known width, a size that matches the count, and strictly ascending values.
pub fn decode(blob: &[u8]) -> Result<Vec<i64>, Error> {
    if blob.len() < 8 {
        return Err(Error::BadData);
    }
    let width = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    let count = u32::from_le_bytes([blob[4], blob[5], blob[6], blob[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) || count.checked_mul(width) != Some(blob.len() - 8) {
        return Err(Error::BadData);
    }
    let mut out = Vec::with_capacity(count);
    for chunk in blob[8..].chunks_exact(width) {
        let mut b = [0u8; 8];
        b[..width].copy_from_slice(chunk);
        if chunk[width - 1] & 0x80 != 0 {
            b[width..].fill(0xff);
        }
        let v = i64::from_le_bytes(b);
        if out.last().is_some_and(|&last| last >= v) {
            return Err(Error::BadData);
        }
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_round_trip() {
        for values in [
            vec![-5i64, 1, 2, 3],
            vec![-40000, 70000],
            vec![i64::MIN, 0, i64::MAX],
        ] {
            let blob = encode(&values);
            assert_eq!(decode(&blob).expect("valid in this test"), values);
        }
        assert_eq!(encode(&[1, 2])[..4], [2, 0, 0, 0]);
    }

    #[test]
    fn bad_intsets_are_errors() {
        assert!(decode(&[2, 0, 0, 0, 2, 0, 0, 0, 1, 0]).is_err()); // short
        assert!(decode(&[3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0]).is_err()); // width 3
        assert!(decode(&[2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 1, 0]).is_err()); // descending
        assert!(decode(&[2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 1, 0]).is_err()); // repeated
        assert!(decode(&[8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).is_err()); // absurd count
    }
}
