//! Streams of the engine through DUMP and RESTORE: Redis's golden payloads restore to what
//! the server reported, those built by appends alone dump back to Redis's bytes, damaged
//! ones fail cleanly, and streams built by engine operations round-trip equal.

use larder_engine::stream::group::Groups;
use larder_engine::stream::{NodeLimits as EngineLimits, Stream, StreamId, Trim};
use larder_engine::{Limits, Object};

use super::super::{dump, restore, Value, ValueRef};
use super::tests::{as_reported, goldens, hex, read_body, with_footer, Rng};
use super::to_dump;

fn restored(payload: &[u8]) -> Stream {
    match restore(payload, &Limits::default()) {
        Ok(Value::Object(Object::Stream(s))) => *s,
        other => panic!("not a stream: {other:?}"),
    }
}

fn dumped(s: &Stream) -> Vec<u8> {
    dump(
        ValueRef::Object(&Object::Stream(Box::new(s.clone()))),
        &Limits::default(),
    )
    .expect("a stream dumps")
}

#[test]
fn golden_payloads_restore_to_what_redis_reported() {
    for (key, body, want) in goldens() {
        let s = restored(&with_footer(body));
        assert_eq!(
            as_reported(&to_dump(&s, EngineLimits::default())),
            want,
            "{key}"
        );
        assert_eq!(
            Object::Stream(Box::new(s.clone())).encoding(),
            Some("stream")
        );
        assert_eq!(restored(&dumped(&s)), s, "{key}");
    }
}

/// Streams Redis built by appends alone (no tombstones) dump back to Redis's bytes.
#[test]
fn appended_streams_dump_to_redis_bytes() {
    let appended = [
        "st_one",
        "st_many",
        "st_fields",
        "st_bytes",
        "st_trim_approx",
        "st_setid",
        "st_empty_group",
        "st_empty_deleted",
    ];
    for (key, body, _) in goldens() {
        if appended.contains(&key) {
            let payload = with_footer(body);
            assert_eq!(hex(&dumped(&restored(&payload))), hex(&payload), "{key}");
        }
    }
}

/// Tombstones in Redis's payload stay tombstones in the engine: the restored stream's nodes
/// are Redis's, so an approximate trim removes the same whole nodes Redis's would.
#[test]
fn restored_nodes_follow_redis() {
    for (key, body, _) in goldens() {
        let s = restored(&with_footer(body.clone()));
        let d = read_body(&body).expect("valid in this test");
        assert_eq!(s.node_count(), d.nodes.len(), "{key}");
    }
}

/// Damaged golden payloads through RESTORE: an error or a stream, never a panic, and a
/// stream that loads dumps and restores equal.
#[test]
fn damaged_payloads_restore_cleanly() {
    let mut rng = Rng(0xd1b5_4a32_d192_ed03);
    let bodies: Vec<Vec<u8>> = goldens()
        .into_iter()
        .filter(|(_, b, _)| b.len() < 4000)
        .map(|g| g.1)
        .collect();
    let mut loaded = 0;
    for round in 0..10_000 {
        let mut body = bodies[round % bodies.len()].clone();
        for _ in 0..1 + rng.below(3) {
            if body.is_empty() {
                break;
            }
            let at = rng.below(body.len() as u64) as usize;
            match rng.below(4) {
                0 => body.truncate(at),
                1 => body[at] ^= 1 << rng.below(8),
                2 => body[at] = rng.next() as u8,
                _ => body.insert(at, rng.next() as u8),
            }
        }
        if let Ok(Value::Object(Object::Stream(s))) =
            restore(&with_footer(body), &Limits::default())
        {
            loaded += 1;
            assert_eq!(restored(&dumped(&s)), *s);
        }
    }
    assert!(loaded > 50, "{loaded}");
}

/// Streams built by the engine's own operations (appends, deletes, trims, groups reading,
/// acknowledging and claiming) restore equal to what was dumped.
#[test]
fn engine_streams_round_trip() {
    let mut rng = Rng(0x94d0_49bb_1331_11eb);
    let limits = EngineLimits::default();
    for round in 0..300 {
        let mut s = Stream::new();
        let mut ms = rng.below(1 << 45);
        for _ in 0..rng.below(if round % 10 == 0 { 600 } else { 40 }) {
            ms += rng.below(3);
            let Ok(id) = s.next_id(larder_engine::stream::IdSpec::AutoSeq(ms), ms) else {
                continue;
            };
            let v = rng.below(100_000).to_string();
            let big = "x".repeat(rng.below(400) as usize);
            let fields: Vec<&[u8]> = match rng.below(3) {
                0 => vec![b"a", v.as_bytes(), b"b", b"1"],
                1 => vec![b"a", v.as_bytes()],
                _ => vec![b"other", big.as_bytes(), b"a", v.as_bytes()],
            };
            s.append(id, &fields, limits).expect("a greater ID");
        }
        let ids: Vec<StreamId> = s
            .range(StreamId::MIN, StreamId::MAX, false)
            .map(|e| e.0)
            .collect();
        for id in &ids {
            if rng.below(6) == 0 {
                s.delete(*id);
            }
        }
        if rng.below(3) == 0 {
            s.trim(Trim::MaxLen(rng.below(300)), rng.below(2) == 0, 0);
        }
        if rng.below(2) == 0 {
            let mut groups = Groups::new();
            for g in 0..1 + rng.below(3) {
                let name = format!("g{g}").into_bytes();
                groups.create(&name, StreamId::MIN, Some(0));
                groups.update(&name, |group| {
                    for id in &ids {
                        if rng.below(3) == 0 {
                            let c = format!("c{}", rng.below(3)).into_bytes();
                            group.touch_consumer(&c, 1000 + rng.below(1000));
                            group.deliver(*id, &c, 1000 + rng.below(1000));
                            group.raise_last_id(*id);
                            if rng.below(3) == 0 {
                                group.redeliver(*id, 5000);
                            }
                            if rng.below(4) == 0 {
                                group.ack(*id);
                            }
                        }
                    }
                    if rng.below(2) == 0 {
                        group.create_consumer(b"idle", 7);
                    }
                });
            }
            s.groups = Some(Box::new(groups));
        }
        let back = restored(&dumped(&s));
        assert_eq!(back, s, "round {round}");
        assert_eq!(dumped(&back), dumped(&s), "round {round}");
    }
}

/// An RDB file (as `larder import` and DEBUG RELOAD read them) holding every golden stream,
/// with a string key after each: each stream loads as RESTORE loads it, and the file reader
/// walks the stream layout to its last byte.
#[test]
fn golden_streams_load_from_an_rdb_file() {
    let mut file = b"REDIS0010".to_vec();
    file.extend_from_slice(&[0xfe, 0]);
    let goldens = goldens();
    for (key, body, _) in &goldens {
        file.push(body[0]);
        super::super::length::put_string(&mut file, key.as_bytes());
        file.extend_from_slice(&body[1..]);
        file.push(0);
        super::super::length::put_string(&mut file, b"after");
        super::super::length::put_string(&mut file, key.as_bytes());
    }
    file.push(0xff);
    let crc = super::super::crc64::crc64(0, &file);
    file.extend_from_slice(&crc.to_le_bytes());
    let reader = super::super::file::RdbReader::new(&file[..], Limits::default()).expect("header");
    let items: Vec<_> = reader.collect::<Result<_, _>>().expect("the file reads");
    assert_eq!(items.len(), 2 * goldens.len());
    for ((key, body, _), pair) in goldens.iter().zip(items.chunks(2)) {
        assert_eq!(pair[0].key, key.as_bytes());
        let want = restored(&with_footer(body.clone()));
        assert_eq!(pair[0].value, Value::Object(Object::Stream(Box::new(want))));
        assert_eq!(pair[1].value, Value::String(key.as_bytes().to_vec()));
    }
}
