//! Fuzzes `larder_persist::snapshot`'s reader: the input is a whole snapshot file, read
//! under the default limits and under tiny ones, as it is and with its checksums recomputed
//! (so that mutations get past them to the record parser). Reading never panics; a file that
//! reads to its end is written again from its records and must read back the same.

#![no_main]

use larder_engine::Limits;
use larder_persist::rdb::crc64::crc64;
use larder_persist::rdb::{Value, ValueRef};
use larder_persist::snapshot::{Record, SnapshotReader, SnapshotWriter};
use libfuzzer_sys::fuzz_target;

/// Recompute the header checksum, the library section's and each block's checksum and the
/// trailer's digest, as far as the structure can be followed.
fn fix_checksums(f: &mut [u8]) {
    let le = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    if f.len() < 40 {
        return;
    }
    let h = crc64(0, &f[..32]);
    f[32..40].copy_from_slice(&h.to_le_bytes());
    let mut digest = crc64(0, &h.to_le_bytes());
    let mut at = 40;
    while at < f.len() {
        match f[at] {
            b'F' if at == 40 && at + 17 <= f.len() => {
                let end = usize::try_from(le(&f[at + 1..at + 9]))
                    .ok()
                    .and_then(|len| (at + 17).checked_add(len))
                    .filter(|&end| end <= f.len());
                let Some(end) = end else {
                    return;
                };
                let crc = crc64(crc64(0, &f[at..at + 9]), &f[at + 17..end]);
                f[at + 9..at + 17].copy_from_slice(&crc.to_le_bytes());
                digest = crc64(digest, &crc.to_le_bytes());
                at = end;
            }
            b'B' if at + 21 <= f.len() => {
                let end = usize::try_from(le(&f[at + 5..at + 13]))
                    .ok()
                    .and_then(|len| (at + 21).checked_add(len))
                    .filter(|&end| end <= f.len());
                let Some(end) = end else {
                    return;
                };
                let crc = crc64(crc64(0, &f[at..at + 13]), &f[at + 21..end]);
                f[at + 13..at + 21].copy_from_slice(&crc.to_le_bytes());
                digest = crc64(digest, &crc.to_le_bytes());
                at = end;
            }
            b'T' if at + 25 <= f.len() => {
                let d = crc64(digest, &f[at..at + 17]);
                f[at + 17..at + 25].copy_from_slice(&d.to_le_bytes());
                return;
            }
            _ => return,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    let mut fixed = data.to_vec();
    fix_checksums(&mut fixed);
    if fixed != data {
        check(&fixed);
    }
});

fn check(data: &[u8]) {
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
        let Ok(mut reader) = SnapshotReader::open(data, &limits) else {
            continue;
        };
        let meta = *reader.meta();
        let libraries = reader.take_libraries();
        let Ok(records) = reader.collect::<Result<Vec<Record>, _>>() else {
            continue;
        };
        let Ok(mut w) = SnapshotWriter::with_libraries(Vec::new(), &meta, &limits, &libraries)
        else {
            continue;
        };
        let mut written = true;
        for r in &records {
            let value = match &r.value {
                Value::String(s) => ValueRef::String(s),
                Value::Object(o) => ValueRef::Object(o),
            };
            if w.entry(r.db, &r.key, value, r.expire_at_ms, r.version, r.flags)
                .is_err()
            {
                written = false;
                break;
            }
        }
        if !written {
            continue;
        }
        let Ok((file, _)) = w.finish() else {
            continue;
        };
        let again = SnapshotReader::open(&file[..], &limits).and_then(|mut r| {
            let libs = r.take_libraries();
            r.collect::<Result<Vec<Record>, _>>().map(|recs| (libs, recs))
        });
        assert!(matches!(again, Ok((ref l, ref a)) if *a == records && *l == libraries));
    }
}
