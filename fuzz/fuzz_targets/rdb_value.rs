//! Fuzzes `larder_persist::rdb`'s reader: the input is one RDB value (type byte and body, no
//! footer), read under the default limits and under tiny ones. A value that reads must dump
//! and read back equal; the full RESTORE path (footer and checksum) runs too.

#![no_main]

use larder_engine::Limits;
use larder_persist::rdb::{self, Reader, Value, ValueRef};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let tiny = Limits {
        hash_max_listpack_entries: 2,
        hash_max_listpack_value: 4,
        set_max_intset_entries: 2,
        zset_max_listpack_entries: 2,
        zset_max_listpack_value: 4,
        list_max_listpack_size: 2,
        ..Limits::default()
    };
    for limits in [Limits::default(), tiny] {
        let Ok(value) = rdb::read_value(&mut Reader::new(data), &limits) else {
            continue;
        };
        let as_ref = match &value {
            Value::String(s) => ValueRef::String(s),
            Value::Object(o) => ValueRef::Object(o),
        };
        if let Ok(payload) = rdb::dump(as_ref, &limits) {
            assert_eq!(rdb::restore(&payload, &limits), Ok(value));
        }
    }
    let _ = rdb::restore(data, &Limits::default());
});
