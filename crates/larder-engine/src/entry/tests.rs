//! Tests of `entry.rs`.

use super::*;

fn list(items: &[&[u8]]) -> Object {
    Object::List(items.iter().map(|i| Box::from(*i)).collect())
}

#[test]
fn entry_is_compact() {
    assert_eq!(std::mem::size_of::<Entry>(), 40);
}

/// Every key with a collection pays for the largest variant in its object block: a
/// type that needs more keeps it behind a pointer of its own. Each collection is one
/// 16-byte pointer (its compact encoding a `Box<[u8]>` carrying its own header, its full
/// encoding boxed), which lets `Object` share `Str`'s 24 bytes.
#[test]
fn object_is_compact() {
    use std::mem::size_of;
    let sizes = [
        ("Object", size_of::<Object>(), 24),
        ("List", size_of::<crate::List>(), 16),
        ("Hash", size_of::<crate::Hash>(), 16),
        ("Set", size_of::<crate::Set>(), 16),
        ("ZSet", size_of::<crate::ZSet>(), 16),
    ];
    let over: Vec<String> = sizes
        .iter()
        .filter(|(_, size, max)| size > max)
        .map(|(name, size, max)| format!("size_of::<{name}>() is {size}, over {max}"))
        .collect();
    assert!(over.is_empty(), "{over:?}");
}

#[test]
fn entry_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Entry>();
}

#[test]
fn inline_and_grown_strings() {
    let mut e = Entry::new_string(b"key", b"value");
    assert_eq!(e.key(), b"key");
    assert_eq!(e.string(), Some(&b"value"[..]));
    e.set_string(b"VALUE");
    assert_eq!(e.string(), Some(&b"VALUE"[..]));
    if let Some(v) = e.string_mut() {
        v.extend_from_slice(b"!!");
    }
    assert!(e.is_grown_string());
    assert_eq!(e.key(), b"key");
    assert_eq!(e.string(), Some(&b"VALUE!!"[..]));
    e.set_string(b"x");
    assert!(!e.is_grown_string());
    assert_eq!(e.string(), Some(&b"x"[..]));
    let c = e.clone_with_key(b"other");
    assert_eq!(c.key(), b"other");
    assert_eq!(c.string(), Some(&b"x"[..]));
}

#[test]
fn every_key_and_value_length_round_trips() {
    // Lengths around the header and alignment boundaries, through every transition.
    for key_len in 0..=20usize {
        for value_len in [
            0usize, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 255, 256,
        ] {
            let key: Vec<u8> = (0..key_len).map(|i| b'a' + (i % 26) as u8).collect();
            let value: Vec<u8> = (0..value_len).map(|i| (i * 7) as u8).collect();
            let mut e = Entry::new_string(&key, &value);
            assert_eq!(e.key(), &key[..]);
            assert_eq!(e.string(), Some(&value[..]));
            assert_eq!(e.kind(), ObjectKind::String);
            assert!(e.object().is_none());
            // Same length: rewritten in place.
            let same: Vec<u8> = value.iter().map(|b| b.wrapping_add(1)).collect();
            e.set_string(&same);
            assert_eq!(e.string(), Some(&same[..]));
            // Other length: a new block.
            e.set_string(&value[..value_len / 2]);
            assert_eq!(e.key(), &key[..]);
            assert_eq!(e.string(), Some(&value[..value_len / 2]));
            // Inline -> grown -> inline.
            e.string_mut().expect("a string").extend_from_slice(b"+");
            assert!(e.is_grown_string());
            assert_eq!(e.key(), &key[..]);
            let mut grown = value[..value_len / 2].to_vec();
            grown.push(b'+');
            assert_eq!(e.string(), Some(&grown[..]));
            let c = e.clone_with_key(&value);
            assert_eq!(c.key(), &value[..]);
            assert_eq!(c.string(), Some(&grown[..]));
            e.set_string(&value);
            assert!(!e.is_grown_string());
            assert_eq!(e.string(), Some(&value[..]));
            // Inline -> list -> inline.
            e.set_object(list(&[&key, b"x"]));
            assert_eq!(e.kind(), ObjectKind::List);
            assert_eq!(e.key(), &key[..]);
            assert_eq!(e.string(), None);
            assert!(e.string_mut().is_none());
            e.set_string(&value);
            assert_eq!(e.kind(), ObjectKind::String);
            assert_eq!(e.string(), Some(&value[..]));
            let c = e.clone_with_key(&key);
            assert_eq!((c.key(), c.string()), (e.key(), e.string()));
        }
    }
}

#[test]
fn list_object() {
    let e = Entry::new_object(b"k", list(&[b"a", b"bb"]));
    assert_eq!(e.kind(), ObjectKind::List);
    assert_eq!(e.string(), None);
    assert!(!e.is_grown_string());
    assert!(e.memory_bytes() > std::mem::size_of::<Entry>() + 16);
    let c = e.clone_with_key(b"c");
    assert_eq!(c.object(), e.object());
    assert_eq!(c.key(), b"c");
}

#[test]
fn set_object_replaces_an_object_in_place() {
    let mut e = Entry::new_object(b"key", list(&[b"a"]));
    e.set_object(list(&[b"b", b"c"]));
    assert_eq!(e.object(), Some(&list(&[b"b", b"c"])));
    e.set_object(Object::Str(b"s".to_vec()));
    assert!(e.is_grown_string());
    assert_eq!(e.string(), Some(&b"s"[..]));
    if let Some(Object::Str(v)) = e.object_mut() {
        v.push(b'!');
    }
    assert_eq!(e.string(), Some(&b"s!"[..]));
    assert_eq!(e.key(), b"key");
}

#[test]
fn empty_key_and_empty_value() {
    let mut e = Entry::new_string(b"", b"");
    assert_eq!(e.key(), b"");
    assert_eq!(e.string(), Some(&b""[..]));
    assert!(e.block.is_none());
    e.set_string(b"v");
    assert_eq!((e.key(), e.string()), (&b""[..], Some(&b"v"[..])));
    e.set_string(b"");
    assert!(e.block.is_none());
    e.string_mut().expect("a string").push(b'g');
    assert_eq!((e.key(), e.string()), (&b""[..], Some(&b"g"[..])));
    e.set_string(b"");
    assert!(e.block.is_none());
    e.set_object(list(&[b""]));
    assert_eq!(e.key(), b"");
    let c = e.clone_with_key(b"");
    assert_eq!(c.object(), e.object());
    let k = Entry::new_string(b"k", b"");
    assert_eq!((k.key(), k.string()), (&b"k"[..], Some(&b""[..])));
    let o = Entry::new_object(b"", Object::Str(Vec::new()));
    assert_eq!((o.key(), o.string()), (&b""[..], Some(&b""[..])));
}

#[test]
fn large_values() {
    let big = vec![0xabu8; 1 << 20];
    let mut e = Entry::new_string(b"big", &big);
    assert_eq!(e.string(), Some(&big[..]));
    assert!(e.memory_bytes() >= big.len());
    e.string_mut().expect("a string").extend_from_slice(&big);
    assert_eq!(e.string().map(<[u8]>::len), Some(2 << 20));
    e.set_string(&big[..1000]);
    assert_eq!(e.string(), Some(&big[..1000]));
    let long_key = vec![b'k'; 70_000];
    let c = e.clone_with_key(&long_key);
    assert_eq!(c.key(), &long_key[..]);
    assert_eq!(c.string(), Some(&big[..1000]));
}

#[test]
fn vacant_and_metadata() {
    let v = Entry::vacant();
    assert!(v.is_vacant());
    assert_eq!(v.key(), b"");
    drop(v);
    let mut e = Entry::new_string(b"k", b"v");
    e.version = 7 << 20;
    e.expire_at_ms = 99;
    e.flags = 5;
    e.access = 3;
    e.set_mc_state(0x21);
    let c = e.clone_with_key(b"c");
    assert_eq!((c.expire_at_ms(), c.flags(), c.access()), (Some(99), 5, 3));
    assert_eq!(e.mc_state(), 0x21);
    e.set_string(b"w");
    assert_eq!(e.mc_state(), 0x21, "only a version change clears the state");
    assert!(format!("{e:?}").contains("key: \"k\""));
    let slot = std::mem::replace(&mut e, Entry::vacant());
    assert_eq!(slot.string(), Some(&b"w"[..]));
}

#[test]
fn memory_bytes_counts_the_block() {
    let slot = std::mem::size_of::<Entry>() + 8;
    assert_eq!(Entry::new_string(b"", b"").memory_bytes(), slot);
    // 8-byte header + 16-byte key + 256-byte value.
    let e = Entry::new_string(&[b'k'; 16], &[b'v'; 256]);
    assert_eq!(e.memory_bytes(), slot + 280);
    // Object, key length, 3-byte key (rounded to 8), string capacity.
    let o = Entry::new_object(b"key", Object::Str(Vec::with_capacity(10)));
    assert_eq!(
        o.memory_bytes(),
        slot + (OBJECT_KEY_OFFSET + 3).next_multiple_of(8) + 10
    );
}

/// A shared string reads like any string, COPY shares it, and changing it in place
/// unshares it first: the other holders never see the change.
#[test]
fn shared_string_is_copied_before_it_changes() {
    let buf = std::sync::Arc::new(b"abc".to_vec());
    let mut e = Entry::new_object(b"k", Object::Shared(std::sync::Arc::clone(&buf)));
    assert_eq!(e.string(), Some(&b"abc"[..]));
    assert_eq!(e.kind(), ObjectKind::String);
    assert!(!e.is_grown_string());
    let copy = e.clone_with_key(b"c");
    assert_eq!(std::sync::Arc::strong_count(&buf), 3);
    e.string_mut().expect("a string").push(b'd');
    assert_eq!(e.string(), Some(&b"abcd"[..]));
    assert!(e.is_grown_string());
    assert_eq!(copy.string(), Some(&b"abc"[..]));
    assert_eq!(*buf, b"abc");
    assert_eq!(std::sync::Arc::strong_count(&buf), 2);
    drop(copy);
    // The last holder: unshared without a copy.
    let mut e = Entry::new_object(b"k", Object::Shared(buf));
    let before = e.string().map(<[u8]>::as_ptr);
    e.string_mut().expect("a string").truncate(1);
    assert_eq!(e.string().map(<[u8]>::as_ptr), before);
    assert_eq!(e.string(), Some(&b"a"[..]));
}

#[test]
fn empty_key_is_not_vacant() {
    let e = Entry::new_string(b"", b"");
    assert_eq!(e.key(), b"");
    assert!(Entry::vacant().is_vacant());
}
