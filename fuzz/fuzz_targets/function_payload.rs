//! Fuzzes `larder_persist::rdb::functions`: the input is a FUNCTION RESTORE payload body
//! (its footer is added, so the parser is reached), and then the raw input as a whole
//! payload. Libraries that read must dump and read back equal.

#![no_main]

use larder_persist::rdb::crc64::crc64;
use larder_persist::rdb::functions::{dump_payload, parse_dump_payload};
use larder_persist::rdb::RDB_VERSION;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut payload = data.to_vec();
    payload.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    if let Ok(codes) = parse_dump_payload(&payload) {
        let refs: Vec<&str> = codes.iter().map(String::as_str).collect();
        assert_eq!(parse_dump_payload(&dump_payload(&refs)), Ok(codes));
    }
    let _ = parse_dump_payload(data);
});
