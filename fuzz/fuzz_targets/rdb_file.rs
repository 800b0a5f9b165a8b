//! Fuzzes `larder_persist::rdb::file`: the input is a whole RDB file (seed the corpus with
//! `testdata/rdb/*.rdb`). It is read item by item under the default limits and under tiny
//! ones: whatever the bytes, reading ends in items or an error whose offset lies within the
//! input. A file that reads to its end also loads into a keyspace, inserting exactly the
//! items read, unless a key repeats or names a database the keyspace lacks.

#![no_main]

use larder_engine::{Keyspace, Limits};
use larder_persist::rdb::file::{load_rdb, ErrorKind, RdbReader};
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
        let mut items = Vec::new();
        let read = RdbReader::new(data, limits).and_then(|mut r| {
            while let Some(item) = r.next_item()? {
                assert!(item.offset < r.offset());
                items.push(item);
            }
            Ok(r.offset())
        });
        match read {
            Ok(end) => {
                assert!(end <= data.len() as u64);
                let keyspace = Keyspace::new(16);
                match load_rdb(data, &keyspace, &limits, 0, |_, _| {}) {
                    Ok(stats) => assert_eq!(stats.keys as usize, items.len()),
                    Err(e) => assert!(
                        matches!(
                            e.kind,
                            ErrorKind::DuplicateKey { .. } | ErrorKind::DbOutOfRange { .. }
                        ),
                        "{e}"
                    ),
                }
            }
            Err(e) => assert!(e.offset <= data.len() as u64, "{e}"),
        }
    }
});
