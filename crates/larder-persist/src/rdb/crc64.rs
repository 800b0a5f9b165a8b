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

static TABLE: [u64; 256] = table();

/// `crc64(crc, data)` as Redis computes it: continue the checksum `crc` over `data`
/// (start with 0).
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    for &b in data {
        crc = TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::crc64;

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
}
