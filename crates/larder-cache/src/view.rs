//! The crate's only unsafe code: mapping a file and viewing aligned bytes as numbers.
//!
//! Everything here is small enough to audit in one sitting. The rest of the crate works on the
//! `&[u8]` this module hands out and bounds-checks every access.
#![allow(unsafe_code)]

#[cfg(target_endian = "big")]
compile_error!(
    "larder-cache reads little-endian numbers in place and supports only little-endian targets"
);

use std::fs::File;
use std::mem::{align_of, size_of};

use memmap2::Mmap;

/// A read-only mapping of a whole file.
pub struct Mapping {
    map: Option<Mmap>,
}

impl Mapping {
    /// Maps `file` read-only.
    pub fn map(file: &File) -> std::io::Result<Mapping> {
        if file.metadata()?.len() == 0 {
            // mmap of length 0 fails on Linux; an empty view is the honest answer.
            return Ok(Mapping { map: None });
        }
        // SAFETY: the mapping is read-only, so nothing in this process can write through it.
        // The remaining hazard of any file mapping is another process truncating or rewriting
        // the file in place. Cache files are immutable by contract: the builder writes a
        // temporary file and renames it into place and never touches a published file, and a
        // swap maps a new inode. A process that breaks that contract can cause SIGBUS or changed
        // bytes, as with every mmap reader (LMDB, AxonCache); changed bytes can never cause
        // out-of-bounds access here because every read is bounds-checked against the length
        // captured at map time.
        let map = unsafe { Mmap::map(file)? };
        Ok(Mapping { map: Some(map) })
    }

    /// The mapped bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match &self.map {
            Some(m) => m,
            None => &[],
        }
    }
}

/// Plain number types that every bit pattern is a valid value of.
///
/// # Safety
/// Implementors must have no padding, no invalid bit patterns and no interior mutability.
unsafe trait Pod: Copy {}
// SAFETY: integers and floats of these widths accept every bit pattern and have no padding.
unsafe impl Pod for u32 {}
// SAFETY: as above.
unsafe impl Pod for f32 {}
// SAFETY: as above.
unsafe impl Pod for f64 {}

/// Views `bytes` as a slice of `T`, or `None` if it is misaligned or not a whole number of `T`.
#[inline]
fn cast<T: Pod>(bytes: &[u8]) -> Option<&[T]> {
    if bytes.is_empty() {
        return Some(&[]);
    }
    if bytes.len() % size_of::<T>() != 0 || (bytes.as_ptr() as usize) % align_of::<T>() != 0 {
        return None;
    }
    // SAFETY: the pointer is non-null (it comes from a slice), aligned for T (checked above),
    // and covers exactly `len / size_of::<T>()` initialised elements; T is Pod, so any bytes are
    // a valid T; the returned slice borrows `bytes`, so it cannot outlive the data or alias a
    // mutable borrow.
    Some(unsafe {
        std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size_of::<T>())
    })
}

/// Views aligned little-endian bytes as `u32`s.
#[inline]
pub fn as_u32s(bytes: &[u8]) -> Option<&[u32]> {
    cast(bytes)
}

/// Views aligned little-endian bytes as `f32`s.
#[inline]
pub fn as_f32s(bytes: &[u8]) -> Option<&[f32]> {
    cast(bytes)
}

/// Views aligned little-endian bytes as `f64`s.
#[inline]
pub fn as_f64s(bytes: &[u8]) -> Option<&[f64]> {
    cast(bytes)
}

/// Bit masks of the bytes of `group` equal to `tag` and equal to zero (bit i for byte i).
///
/// On x86_64 this is two SSE2 byte compares; elsewhere a portable loop.
#[inline(always)]
pub fn byte_masks(group: &[u8; 16], tag: u8) -> (u32, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8, _mm_setzero_si128,
        };
        // SAFETY: SSE2 is part of the x86_64 baseline, so the intrinsics are available on every
        // x86_64 CPU; the unaligned load reads exactly the 16 bytes `group` borrows.
        unsafe {
            let v = _mm_loadu_si128(group.as_ptr().cast());
            let hits = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(tag as i8)));
            let empties = _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128()));
            (hits as u32, empties as u32)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut hits = 0u32;
        let mut empties = 0u32;
        for (i, &b) in group.iter().enumerate() {
            hits |= u32::from(b == tag) << i;
            empties |= u32::from(b == 0) << i;
        }
        (hits, empties)
    }
}

/// Views bytes as `&str`, validating UTF-8. Short ASCII strings (the common case for keys and
/// values in caches) are checked with two word loads instead of a call into the general
/// validator, whose branches depend on the pointer's alignment and so mispredict.
#[inline(always)]
pub fn to_str(bytes: &[u8]) -> Option<&str> {
    let n = bytes.len();
    let ascii = if (8..=16).contains(&n) {
        let mut a = [0u8; 8];
        let mut b = [0u8; 8];
        a.copy_from_slice(&bytes[..8]);
        b.copy_from_slice(&bytes[n - 8..]);
        (u64::from_ne_bytes(a) | u64::from_ne_bytes(b)) & 0x8080_8080_8080_8080 == 0
    } else if (4..8).contains(&n) {
        let mut a = [0u8; 4];
        let mut b = [0u8; 4];
        a.copy_from_slice(&bytes[..4]);
        b.copy_from_slice(&bytes[n - 4..]);
        (u32::from_ne_bytes(a) | u32::from_ne_bytes(b)) & 0x8080_8080 == 0
    } else {
        false
    };
    if ascii {
        // SAFETY: every byte was checked to be below 0x80, and ASCII is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
}

/// Views a slice of `f32`s as its bytes (for writing them out).
#[inline]
pub fn f32s_as_bytes(v: &[f32]) -> &[u8] {
    // SAFETY: f32 has no padding, u8 has alignment 1, and the length in bytes is exact; the
    // result borrows `v`.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Views a slice of `f64`s as its bytes (for writing them out).
#[inline]
pub fn f64s_as_bytes(v: &[f64]) -> &[u8] {
    // SAFETY: as for `f32s_as_bytes`.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_check_alignment_and_length() {
        let words = [1.5f64, -2.0, 3.25];
        let bytes = f64s_as_bytes(&words);
        assert_eq!(as_f64s(bytes), Some(&words[..]));
        assert_eq!(as_f64s(&bytes[1..9]), None, "misaligned");
        assert_eq!(as_f64s(&bytes[..7]), None, "partial element");
        assert_eq!(as_f32s(&bytes[..8]).map(<[f32]>::len), Some(2));
        assert_eq!(as_u32s(&[]), Some(&[][..]));
    }

    #[test]
    fn byte_masks_find_tags_and_empties() {
        let mut g = [0u8; 16];
        g[0] = 7;
        g[3] = 9;
        g[15] = 7;
        let (hits, empties) = byte_masks(&g, 7);
        assert_eq!(hits, 1 | 1 << 15);
        assert_eq!(empties, 0xffff & !(1 | 1 << 3 | 1 << 15));
    }

    #[test]
    fn to_str_validates_every_length() {
        for n in 0..40 {
            let ascii = "k".repeat(n);
            assert_eq!(to_str(ascii.as_bytes()), Some(ascii.as_str()));
            let mut bad = ascii.into_bytes();
            if n > 0 {
                bad[n - 1] = 0xff;
                assert_eq!(to_str(&bad), None, "len {n}");
                bad[n - 1] = b'k';
                bad[0] = 0xc3;
                assert_eq!(to_str(&bad), None, "len {n}");
            }
        }
        assert_eq!(to_str("héllo wörld".as_bytes()), Some("héllo wörld"));
    }

    #[test]
    fn maps_empty_file() {
        let path = std::env::temp_dir().join(format!("larder-view-{}", std::process::id()));
        let file = File::create(&path).and_then(|_| File::open(&path));
        let mapping = Mapping::map(&file.expect("temp file")).expect("map");
        assert!(mapping.bytes().is_empty());
        let _ = std::fs::remove_file(&path);
    }
}
