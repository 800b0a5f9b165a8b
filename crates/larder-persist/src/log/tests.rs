use super::*;

fn header() -> Header {
    Header {
        start_seq: 41,
        start_offset: 1000,
        created_ms: 1_700_000_000_000,
    }
}

/// A file of `n` groups, each with a command and a version item.
fn file(n: u64) -> Vec<u8> {
    let h = header();
    let mut out = h.encode().to_vec();
    let mut offset = h.start_offset;
    for i in 0..n {
        let key = format!("key:{i}");
        let mut g = GroupWriter::new(&mut out, h.start_seq + 1 + i, offset);
        g.command(i as u32 % 3, &[b"SET".as_slice(), key.as_bytes(), b"value"]);
        g.version(i as u32 % 3, key.as_bytes(), (i + 1) << 20, 7);
        offset += g.finish() as u64;
    }
    out
}

fn read_all(bytes: &[u8]) -> Result<(Vec<Group<'_>>, End), LogError> {
    let mut r = LogReader::new(bytes)?;
    let mut groups = Vec::new();
    while let Some(g) = r.next_group()? {
        groups.push(g);
    }
    Ok((groups, r.end().cloned().expect("end known")))
}

#[test]
fn groups_round_trip() {
    let bytes = file(5);
    let (groups, end) = read_all(&bytes).expect("valid");
    assert_eq!(end, End::Clean);
    assert_eq!(groups.len(), 5);
    assert_eq!(groups[0].seq, 42);
    assert_eq!(groups[0].offset, 1000);
    assert_eq!(
        groups[2].items,
        vec![
            Item::Command {
                db: 2,
                argv: vec![b"SET".as_slice(), b"key:2", b"value"]
            },
            Item::Version {
                db: 2,
                key: b"key:2",
                version: 3 << 20,
                flags: 7
            }
        ]
    );
    // Offsets are byte positions in the log stream.
    assert_eq!(
        groups[1].offset - groups[0].offset,
        groups[2].offset - groups[1].offset
    );
}

#[test]
fn a_discarded_group_leaves_nothing() {
    let mut out = Vec::new();
    let g = GroupWriter::new(&mut out, 1, 0);
    assert!(g.is_empty());
    g.discard();
    assert!(out.is_empty());
}

#[test]
fn every_truncation_is_a_torn_tail_at_the_last_whole_record() {
    let bytes = file(4);
    let (whole, _) = read_all(&bytes).expect("valid");
    let ends: Vec<usize> = whole
        .iter()
        .map(|g| (g.offset - 1000) as usize + HEADER_LEN)
        .skip(1)
        .chain([bytes.len()])
        .collect();
    for cut in HEADER_LEN..bytes.len() {
        let (groups, end) = read_all(&bytes[..cut]).expect("a cut is never corruption");
        let complete = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(groups.len(), complete, "cut at {cut}");
        let valid = if complete == 0 {
            HEADER_LEN
        } else {
            ends[complete - 1]
        };
        if valid == cut {
            assert_eq!(end, End::Clean);
        } else {
            assert_eq!(
                end,
                End::Torn {
                    valid_len: valid as u64,
                    dropped: (cut - valid) as u64
                },
                "cut at {cut}"
            );
        }
    }
}

#[test]
fn zeros_after_the_last_record_are_a_torn_tail() {
    let mut bytes = file(2);
    let valid = bytes.len();
    bytes.extend_from_slice(&[0u8; 4096]);
    let (groups, end) = read_all(&bytes).expect("torn, not corrupt");
    assert_eq!(groups.len(), 2);
    assert_eq!(
        end,
        End::Torn {
            valid_len: valid as u64,
            dropped: 4096
        }
    );
}

#[test]
fn a_flipped_bit_in_the_middle_is_corruption_at_its_offset() {
    let bytes = file(6);
    let (whole, _) = read_all(&bytes).expect("valid");
    let third = (whole[2].offset - 1000) as usize + HEADER_LEN;
    let mut bad = bytes.clone();
    bad[third + RECORD_PREFIX + 20] ^= 0x10;
    let err = read_all(&bad).expect_err("corrupt");
    assert_eq!(err.offset, third as u64);
    assert!(matches!(err.kind, ErrorKind::Corrupt(_)), "{err}");
    assert!(err.to_string().contains(&format!("offset {third}")));
    // The same damage in the last record is a torn tail: a crash mid-write looks like it.
    let last = (whole[5].offset - 1000) as usize + HEADER_LEN;
    let mut tail = bytes.clone();
    tail[last + RECORD_PREFIX + 20] ^= 0x10;
    let (groups, end) = read_all(&tail).expect("torn");
    assert_eq!(groups.len(), 5);
    assert!(matches!(end, End::Torn { valid_len, .. } if valid_len == last as u64));
}

#[test]
fn headers_are_checked() {
    let bytes = file(1);
    assert!(matches!(
        LogReader::new(&bytes[..10]).err().map(|e| e.kind),
        Some(ErrorKind::BadHeader(_))
    ));
    let mut magic = bytes.clone();
    magic[0] = b'X';
    assert!(matches!(
        LogReader::new(&magic).err().map(|e| e.kind),
        Some(ErrorKind::BadHeader(_))
    ));
    let mut version = bytes.clone();
    version[8] = 9;
    // The checksum covers the version: fix it up to reach the version check.
    let crc = crc32fast::hash(&version[..40]);
    version[40..44].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(
        LogReader::new(&version).err().map(|e| e.kind),
        Some(ErrorKind::Version(9))
    );
    assert_eq!(
        LogReader::new(&bytes).map(|r| r.header()).ok(),
        Some(header())
    );
}

#[test]
fn a_gap_in_sequences_is_an_error() {
    let h = header();
    let mut out = h.encode().to_vec();
    let mut g = GroupWriter::new(&mut out, h.start_seq + 2, 0);
    g.command(0, &[b"DEL".as_slice(), b"k"]);
    g.finish();
    let err = read_all(&out).expect_err("gap");
    assert_eq!(
        err.kind,
        ErrorKind::Sequence {
            expected: 42,
            found: 43
        }
    );
}

/// Random damage never panics, and whatever is read back is the real groups, in order.
#[test]
fn mutated_files_never_panic() {
    let bytes = file(8);
    let (whole, _) = read_all(&bytes).expect("valid");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..20_000 {
        let mut m = bytes.clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() as usize) % m.len();
            m[i] = next() as u8;
        }
        if next() % 4 == 0 {
            let cut = (next() as usize) % m.len();
            m.truncate(cut);
        }
        let Ok(mut r) = LogReader::new(&m) else {
            continue;
        };
        let mut i = 0;
        while let Ok(Some(g)) = r.next_group() {
            // A record that passed its checksum is one of the real ones (random damage does
            // not forge a CRC-32).
            assert_eq!(g, whole[i]);
            i += 1;
        }
    }
}

/// The golden files in testdata/log: the writer's output for a fixed input must not change
/// without a new format version, and each damaged copy must give its error. `LARDER_BLESS=1`
/// rewrites them.
#[test]
fn golden_files() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/log");
    let h = Header {
        start_seq: 0,
        start_offset: 0,
        created_ms: 1_764_000_000_000,
    };
    let mut basic = h.encode().to_vec();
    let mut offset = 0;
    let groups: [&[(&str, &[&str])]; 4] = [
        &[("cmd", &["SET", "greeting", "hello"])],
        &[
            ("cmd", &["RPUSH", "list", "a", "b", "c"]),
            ("ver", &["list"]),
        ],
        &[("del", &["expired"])],
        &[
            ("cmd", &["SET", "x", "1"]),
            ("cmd", &["INCR", "n"]),
            ("ver", &["n"]),
        ],
    ];
    for (i, items) in groups.iter().enumerate() {
        let mut g = GroupWriter::new(&mut basic, i as u64 + 1, offset);
        for (kind, words) in items.iter() {
            let argv: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
            match *kind {
                "cmd" => g.command(i as u32 % 2, &argv),
                "del" => g.command(0, &[b"DEL".as_slice(), argv[0]]),
                _ => g.version(0, argv[0], ((i as u64 + 1) << 20) | 5, 42),
            }
        }
        offset += g.finish() as u64;
    }
    let mut torn = basic.clone();
    torn.truncate(basic.len() - 3);
    let mut bitflip = basic.clone();
    bitflip[HEADER_LEN + RECORD_PREFIX + 12] ^= 0x01;
    let files: [(&str, &Vec<u8>); 3] = [
        ("v1-basic.llog", &basic),
        ("v1-torn.llog", &torn),
        ("v1-bitflip.llog", &bitflip),
    ];
    if std::env::var_os("LARDER_BLESS").is_some() {
        std::fs::create_dir_all(&dir).expect("testdata/log");
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).expect("write golden file");
        }
    }
    for (name, bytes) in files {
        let stored = std::fs::read(dir.join(name)).expect("golden file (LARDER_BLESS=1 makes it)");
        assert_eq!(&stored, bytes, "{name} differs from what the writer writes");
    }
    let (groups_read, end) = read_all(&basic).expect("basic");
    assert_eq!((groups_read.len(), end), (4, End::Clean));
    let (groups_read, end) = read_all(&torn).expect("torn");
    assert_eq!(groups_read.len(), 3);
    assert!(matches!(end, End::Torn { dropped, .. } if dropped > 0));
    let err = read_all(&bitflip).expect_err("bit flip in the first record");
    assert_eq!(err.offset, HEADER_LEN as u64);
}

#[test]
fn packed_arguments_encode_as_the_command_does() {
    let long = vec![7u8; 200];
    let args: Vec<&[u8]> = vec![b"SET", b"k", &long, b""];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut g = GroupWriter::new(&mut a, 5, 44);
    g.command(3, &args);
    g.finish();
    let mut g = GroupWriter::new(&mut b, 5, 44);
    g.packed(3, &larder_engine::Argv::new(&args));
    g.finish();
    assert_eq!(a, b);
}

#[test]
fn records_sealed_later_match_records_finished_at_once() {
    let (mut finished, mut unsealed) = (Vec::new(), Vec::new());
    let mut offset = 44;
    for seq in 1..=5u64 {
        let value = vec![seq as u8; 40 * seq as usize];
        let args: Vec<&[u8]> = vec![b"SET", b"k", &value];
        for (out, sealed) in [(&mut finished, true), (&mut unsealed, false)] {
            let mut g = GroupWriter::new(out, seq, offset);
            g.command(0, &args);
            g.version(0, b"k", seq << 20, 7);
            if sealed {
                g.finish();
            } else {
                g.finish_unsealed();
            }
        }
        offset = 44 + unsealed.len() as u64;
    }
    assert_eq!(finished.len(), unsealed.len());
    // Unsealed, the checksums are missing: a reader takes the first record for damage.
    assert_ne!(finished, unsealed);
    assert!(!verify_record(&unsealed[..first_record_len(&unsealed)]));
    seal(&mut unsealed);
    assert_eq!(finished, unsealed);
    assert!(verify_record(&unsealed[..first_record_len(&unsealed)]));
}

fn first_record_len(records: &[u8]) -> usize {
    RECORD_PREFIX + u32::from_le_bytes([records[0], records[1], records[2], records[3]]) as usize
}
