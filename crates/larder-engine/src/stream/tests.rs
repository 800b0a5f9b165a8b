//! Tests of the stream structure against a `BTreeMap` model.

use super::*;

#[test]
fn append_get_range() {
    let mut s = Stream::new();
    let limits = NodeLimits::default();
    for i in 1..=250u64 {
        let v = i.to_string();
        s.append(StreamId::new(i, 0), &[b"f", v.as_bytes()], limits)
            .unwrap();
    }
    assert_eq!(s.len(), 250);
    assert_eq!(s.node_count(), 3);
    let got: Vec<(&[u8], &[u8])> = s.get(StreamId::new(7, 0)).unwrap().collect();
    assert_eq!(got, [(&b"f"[..], &b"7"[..])]);
    assert!(s.get(StreamId::new(7, 1)).is_none());
    let ids: Vec<u64> = s
        .range(StreamId::new(99, 0), StreamId::new(102, 0), true)
        .map(|(id, _)| id.ms)
        .collect();
    assert_eq!(ids, [102, 101, 100, 99]);
}
