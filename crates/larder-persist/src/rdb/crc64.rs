//! Redis's CRC-64 (Jones polynomial, reflected, initial value 0, no final xor), the checksum
//! at the end of a DUMP payload and of an RDB file.

/// The Jones polynomial 0xad93d23594c935a9, bit-reversed for the reflected algorithm.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const fn table() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        t[i] = crc;
        i += 1;
    }
    t
}

/// Slicing-by-8 tables (as Redis's `crcspeed`): `TABLES[k][b]` is the CRC of byte `b`
/// followed by `k` zero bytes, so eight input bytes take eight lookups and no shifts between.
const fn tables() -> [[u64; 256]; 8] {
    let mut t = [[0u64; 256]; 8];
    t[0] = table();
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = t[0][(prev & 0xff) as usize] ^ (prev >> 8);
            i += 1;
        }
        k += 1;
    }
    t
}

static TABLES: [[u64; 256]; 8] = tables();

/// From this length on, [`crc64`] folds with carry-less multiplication (`crc-fast`, PCLMULQDQ
/// or PMULL where the CPU has them); below it the tables are faster: the SIMD path's setup
/// costs more than it saves on a few dozen bytes.
const SIMD_MIN: usize = 64;

/// `crc64(crc, data)` as Redis computes it: continue the checksum `crc` over `data`
/// (start with 0). The same function whatever path it takes.
pub fn crc64(crc: u64, data: &[u8]) -> u64 {
    if data.len() < SIMD_MIN {
        return crc64_table(crc, data);
    }
    // CRC-64/REDIS is reflected with no final xor, so the state is the checksum itself.
    let mut digest = crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc64Redis, crc);
    digest.update(data);
    digest.finalize()
}

/// Slicing by 8, as Redis's `crcspeed`.
fn crc64_table(mut crc: u64, data: &[u8]) -> u64 {
    let t = &TABLES;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let v = crc ^ u64::from_le_bytes(b);
        crc = t[7][(v & 0xff) as usize]
            ^ t[6][((v >> 8) & 0xff) as usize]
            ^ t[5][((v >> 16) & 0xff) as usize]
            ^ t[4][((v >> 24) & 0xff) as usize]
            ^ t[3][((v >> 32) & 0xff) as usize]
            ^ t[2][((v >> 40) & 0xff) as usize]
            ^ t[1][((v >> 48) & 0xff) as usize]
            ^ t[0][(v >> 56) as usize];
    }
    for &b in words.remainder() {
        crc = t[0][((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::{crc64, crc64_table};

    #[test]
    fn redis_test_vectors() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        // Redis's crc64.c self-test: the text with its C string terminator.
        let li = concat!(
            "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed ",
            "do eiusmod tempor incididunt ut labore et dolore magna ",
            "aliqua. Ut enim ad minim veniam, quis nostrud exercitation ",
            "ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis ",
            "aute irure dolor in reprehenderit in voluptate velit esse ",
            "cillum dolore eu fugiat nulla pariatur. Excepteur sint ",
            "occaecat cupidatat non proident, sunt in culpa qui officia ",
            "deserunt mollit anim id est laborum.\0"
        );
        assert_eq!(crc64(0, li.as_bytes()), 0xc779_4709_e696_83b3);
        assert_eq!(crc64(crc64(0, b"1234"), b"56789"), 0xe9c6_d914_c4b8_d9ca);
    }

    /// Slicing by 8 gives what the byte-at-a-time definition gives, at every length and split.
    #[test]
    fn slicing_matches_bytewise() {
        let crc64 = crc64_table;
        let table = super::table();
        let bytewise = |mut crc: u64, data: &[u8]| {
            for &b in data {
                crc = table[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
            }
            crc
        };
        let data: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in 0..data.len() {
            assert_eq!(crc64(0, &data[..len]), bytewise(0, &data[..len]), "{len}");
            let split = len / 3;
            assert_eq!(
                crc64(crc64(7, &data[..split]), &data[split..len]),
                bytewise(7, &data[..len])
            );
        }
    }

    /// The SIMD path gives what the tables give, on both sides of the threshold, at every
    /// alignment, from any starting state, and chained.
    #[test]
    fn simd_matches_tables() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let data: Vec<u8> = (0..(1 << 17) + 64)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let lens = (0..300).chain([511, 4096, 4097, 65_536, 1 << 17]);
        for len in lens {
            for off in [0, 1, 7] {
                let d = &data[off..off + len];
                for start in [0, 1, u64::MAX, 0xdead_beef_cafe_babe] {
                    assert_eq!(
                        crc64(start, d),
                        crc64_table(start, d),
                        "len {len} off {off}"
                    );
                }
                let split = len / 3;
                assert_eq!(crc64(crc64(0, &d[..split]), &d[split..]), crc64_table(0, d));
            }
        }
    }
}
