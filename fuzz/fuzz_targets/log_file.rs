//! Fuzzes `larder_persist::log`'s reader: the input is a whole log file, read as it is and
//! again with every record's checksum recomputed (so mutations reach the payload parser).
//! Nothing may panic; every group that reads must encode to a record that reads back equal.

#![no_main]

use larder_persist::log::{GroupWriter, Header, Item, LogReader, HEADER_LEN, RECORD_PREFIX};
use libfuzzer_sys::fuzz_target;

/// Read every group of `bytes`; each one must encode to a record that reads back equal.
fn read(bytes: &[u8]) {
    let Ok(mut reader) = LogReader::new(bytes) else {
        return;
    };
    loop {
        let Ok(Some(group)) = reader.next_group() else {
            return;
        };
        let header = Header {
            start_seq: group.seq - 1,
            start_offset: group.offset,
            created_ms: 0,
        };
        let mut out = header.encode().to_vec();
        let mut g = GroupWriter::new(&mut out, group.seq, group.offset);
        for item in &group.items {
            match item {
                Item::Command { db, argv } => g.command(*db, argv),
                Item::Version { db, key, version, flags } => g.version(*db, key, *version, *flags),
            }
        }
        g.finish();
        let mut again = LogReader::new(&out).expect("a header we wrote");
        assert_eq!(again.next_group().ok().flatten().as_ref(), Some(&group));
    }
}

/// `bytes` with each record's length trusted and its checksum recomputed.
fn fix_checksums(bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    let mut pos = HEADER_LEN;
    while pos + RECORD_PREFIX <= b.len() {
        let len = u32::from_le_bytes([b[pos], b[pos + 1], b[pos + 2], b[pos + 3]]) as usize;
        let Some(end) = (pos + RECORD_PREFIX).checked_add(len).filter(|&e| e <= b.len()) else {
            break;
        };
        let crc = crc32fast::hash(&b[pos + RECORD_PREFIX..end]);
        b[pos + 4..pos + 8].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
    b
}

fuzz_target!(|data: &[u8]| {
    read(data);
    read(&fix_checksums(data));
});
