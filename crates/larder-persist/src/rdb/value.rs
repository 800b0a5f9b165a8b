//! One value in RDB form: the object type byte, then the type's own layout.
//!
//! Written as Redis 7.0 writes them: STRING (0); LIST_QUICKLIST_2 (18) with listpack nodes
//! cut where Redis's quicklist would cut a list built by appending, and plain nodes for
//! elements of 1 GiB or more; HASH_LISTPACK (16) or HASH (4); SET_INTSET (11) or SET (2);
//! ZSET_LISTPACK (17) or ZSET_2 (5) (see [`zset`]), following the value's current encoding;
//! STREAM_LISTPACKS_2 (19) (see [`stream`]).
//!
//! Read: all of those, plus what a 7.0 server still loads: LIST (1), HASH_ZIPMAP (9),
//! LIST_ZIPLIST (10), LIST_QUICKLIST (14) of ziplists, HASH_ZIPLIST (13), STREAM_LISTPACKS
//! (15). The loaded value's encoding follows `limits` as Redis's `rdbLoadObject` decides it:
//! a listpack hash converts only when it has too many fields, a hash read field by field also
//! when a field or value is too long.

use larder_engine::list::End;
use larder_engine::set::Member;
use larder_engine::{Hash, Limits, List, Object, Set};

use super::length::{put_len, put_string, Reader};
use super::{intset, listpack, stream, ziplist, zipmap, zset, Elem, Error, Value, ValueRef};

pub const TYPE_STRING: u8 = 0;
pub const TYPE_LIST: u8 = 1;
pub const TYPE_SET: u8 = 2;
pub const TYPE_HASH: u8 = 4;
pub const TYPE_HASH_ZIPMAP: u8 = 9;
pub const TYPE_LIST_ZIPLIST: u8 = 10;
pub const TYPE_SET_INTSET: u8 = 11;
pub const TYPE_HASH_ZIPLIST: u8 = 13;
pub const TYPE_LIST_QUICKLIST: u8 = 14;
pub const TYPE_HASH_LISTPACK: u8 = 16;
pub const TYPE_LIST_QUICKLIST_2: u8 = 18;

/// Quicklist node containers (LIST_QUICKLIST_2).
const CONTAINER_PLAIN: u64 = 1;
const CONTAINER_PACKED: u64 = 2;

/// Redis's `packed_threshold`: an element this large gets a plain node of its own.
const PLAIN_THRESHOLD: usize = 1 << 30;
/// quicklist.c's `optimization_level`, `SIZE_SAFETY_LIMIT` and `SIZE_ESTIMATE_OVERHEAD`.
const OPTIMIZATION_LEVEL: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
const SIZE_SAFETY_LIMIT: usize = 8192;
const SIZE_ESTIMATE_OVERHEAD: usize = 8;
/// An empty listpack: header and terminator.
const LISTPACK_EMPTY: usize = 7;

/// Append `value`'s type byte and serialization to `out`.
pub fn write_value(out: &mut Vec<u8>, value: ValueRef<'_>, limits: &Limits) -> Result<(), Error> {
    let object = match value {
        ValueRef::String(s) => {
            out.push(TYPE_STRING);
            put_string(out, s);
            return Ok(());
        }
        ValueRef::Object(o) => o,
    };
    match object {
        Object::Str(s) => write_value(out, ValueRef::String(s), limits),
        Object::Shared(s) => write_value(out, ValueRef::String(s), limits),
        Object::List(l) => {
            write_list(out, l, limits);
            Ok(())
        }
        Object::Hash(h) => {
            write_hash(out, h);
            Ok(())
        }
        Object::Set(s) => {
            write_set(out, s);
            Ok(())
        }
        Object::ZSet(z) => {
            let encoding = if z.encoding() == "listpack" {
                zset::Encoding::Compact
            } else {
                zset::Encoding::Full
            };
            zset::write(out, z.scored(), encoding);
            Ok(())
        }
        Object::Stream(s) => {
            stream::write(out, &stream::to_dump(s, limits.stream_node));
            Ok(())
        }
    }
}

/// Whether a quicklist node of `node_bytes` listpack bytes and `count` elements takes one
/// more element of `len` bytes (`_quicklistNodeAllowInsert`).
fn node_takes(node_bytes: usize, count: usize, len: usize, fill: i64) -> bool {
    let new_sz = node_bytes + len + SIZE_ESTIMATE_OVERHEAD;
    if fill < 0 {
        let level = usize::try_from(-fill - 1).unwrap_or(usize::MAX);
        if OPTIMIZATION_LEVEL
            .get(level)
            .is_some_and(|&max| new_sz <= max)
        {
            return true;
        }
    }
    new_sz <= SIZE_SAFETY_LIMIT && i64::try_from(count).is_ok_and(|c| c < fill)
}

fn write_list(out: &mut Vec<u8>, list: &List, limits: &Limits) {
    // Redis clamps the fill to -5..=32767 (`quicklistSetFill`).
    let fill = limits.list_max_listpack_size.clamp(-5, (1 << 15) - 1);
    enum Node<'a> {
        Packed(Vec<&'a [u8]>),
        Plain(&'a [u8]),
    }
    let mut nodes: Vec<Node<'_>> = Vec::new();
    let mut bytes = 0usize;
    for e in list.iter() {
        if e.len() >= PLAIN_THRESHOLD {
            nodes.push(Node::Plain(e));
            continue;
        }
        match nodes.last_mut() {
            Some(Node::Packed(elems)) if node_takes(bytes, elems.len(), e.len(), fill) => {
                elems.push(e);
                bytes += listpack::entry_size(e);
            }
            _ => {
                nodes.push(Node::Packed(vec![e]));
                bytes = LISTPACK_EMPTY + listpack::entry_size(e);
            }
        }
    }
    out.push(TYPE_LIST_QUICKLIST_2);
    put_len(out, nodes.len() as u64);
    for node in nodes {
        match node {
            Node::Plain(e) => {
                put_len(out, CONTAINER_PLAIN);
                put_string(out, e);
            }
            Node::Packed(elems) => {
                put_len(out, CONTAINER_PACKED);
                put_string(out, &listpack::encode(elems));
            }
        }
    }
}

fn write_hash(out: &mut Vec<u8>, hash: &Hash) {
    if hash.encoding() == "listpack" {
        out.push(TYPE_HASH_LISTPACK);
        put_string(
            out,
            &listpack::encode(hash.pairs().flat_map(|(f, v)| [f, v])),
        );
    } else {
        out.push(TYPE_HASH);
        put_len(out, hash.len() as u64);
        for (f, v) in hash.pairs() {
            put_string(out, f);
            put_string(out, v);
        }
    }
}

fn write_set(out: &mut Vec<u8>, set: &Set) {
    if set.encoding() == "intset" {
        let mut values: Vec<i64> = set
            .iter()
            .filter_map(|m| match m {
                Member::Int(v) => Some(v),
                Member::Bytes(b) => larder_engine::set::canonical_int(b),
            })
            .collect();
        values.sort_unstable();
        out.push(TYPE_SET_INTSET);
        put_string(out, &intset::encode(&values));
    } else {
        out.push(TYPE_SET);
        put_len(out, set.len() as u64);
        for m in set.iter() {
            m.with_bytes(|b| put_string(out, b));
        }
    }
}

/// Read one value (type byte and serialization) from `r`, encoded under `limits`.
pub fn read_value(r: &mut Reader<'_>, limits: &Limits) -> Result<Value, Error> {
    let kind = r.u8()?;
    let object = match kind {
        TYPE_STRING => return Ok(Value::String(r.string()?)),
        TYPE_LIST => {
            let n = r.count()?;
            let mut list = List::new();
            for _ in 0..n {
                list.push(End::Tail, &[r.string()?], limits);
            }
            Object::List(list)
        }
        TYPE_SET => {
            let n = r.count()?;
            let mut set = Set::new();
            for _ in 0..n {
                if !set.insert(&r.string()?, limits) {
                    return Err(Error::BadData);
                }
            }
            Object::Set(set)
        }
        TYPE_HASH => {
            let n = r.count()?;
            let mut hash = Hash::new();
            for _ in 0..n {
                let field = r.string()?;
                let value = r.string()?;
                if !hash.insert(&field, &value, limits) {
                    return Err(Error::BadData);
                }
            }
            Object::Hash(hash)
        }
        TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
            Object::List(read_quicklist(r, kind, limits)?)
        }
        TYPE_LIST_ZIPLIST => {
            let blob = r.string()?;
            let mut list = List::new();
            push_elems(&mut list, &ziplist::decode(&blob)?, limits);
            Object::List(list)
        }
        TYPE_SET_INTSET => {
            let blob = r.string()?;
            let mut set = Set::new();
            for v in intset::decode(&blob)? {
                set.insert_member(Member::Int(v), limits);
            }
            Object::Set(set)
        }
        TYPE_HASH_ZIPMAP => {
            // Converted as Redis does: to a hash table when it has too many fields or a
            // field or value is too long.
            let blob = r.string()?;
            let mut hash = Hash::new();
            for (f, v) in zipmap::decode(&blob)? {
                if !hash.insert(f, v, limits) {
                    return Err(Error::BadData);
                }
            }
            Object::Hash(hash)
        }
        TYPE_HASH_ZIPLIST | TYPE_HASH_LISTPACK => {
            let blob = r.string()?;
            let elems = if kind == TYPE_HASH_ZIPLIST {
                ziplist::decode(&blob)?
            } else {
                listpack::decode(&blob)?
            };
            Object::Hash(hash_of_pairs(&elems, limits)?)
        }
        zset::TYPE_ZSET
        | zset::TYPE_ZSET_2
        | zset::TYPE_ZSET_ZIPLIST
        | zset::TYPE_ZSET_LISTPACK => {
            let loaded = zset::read(
                r,
                kind,
                limits.zset_max_listpack_entries,
                limits.zset_max_listpack_value,
            )?;
            // The encoding follows the limits in force, as Redis converts on load.
            Object::ZSet(larder_engine::ZSet::from_pairs(
                loaded.members.iter().map(|(m, s)| (&m[..], *s)),
                limits,
            ))
        }
        stream::TYPE_STREAM_LISTPACKS | stream::TYPE_STREAM_LISTPACKS_2 => {
            Object::Stream(Box::new(stream::from_dump(
                &stream::read(r, kind)?,
                limits.stream_node,
            )?))
        }
        _ => return Err(Error::BadData),
    };
    if collection_len(&object) == 0 {
        // Redis refuses empty collections ("empty keys skipped").
        return Err(Error::BadData);
    }
    Ok(Value::Object(object))
}

fn collection_len(o: &Object) -> usize {
    match o {
        Object::List(l) => l.len(),
        Object::Hash(h) => h.len(),
        Object::Set(s) => s.len(),
        Object::ZSet(z) => z.len(),
        Object::Str(_) | Object::Shared(_) | Object::Stream(_) => 1,
    }
}

fn push_elems(list: &mut List, elems: &[Elem<'_>], limits: &Limits) {
    let owned: Vec<Vec<u8>> = elems.iter().map(Elem::to_vec).collect();
    list.push(End::Tail, &owned, limits);
}

fn read_quicklist(r: &mut Reader<'_>, kind: u8, limits: &Limits) -> Result<List, Error> {
    let nodes = r.count()?;
    let mut list = List::new();
    for _ in 0..nodes {
        let container = if kind == TYPE_LIST_QUICKLIST_2 {
            r.length()?
        } else {
            CONTAINER_PACKED
        };
        if container != CONTAINER_PACKED && container != CONTAINER_PLAIN {
            return Err(Error::BadData);
        }
        let blob = r.string()?;
        if blob.is_empty() {
            return Err(Error::BadData);
        }
        if container == CONTAINER_PLAIN {
            list.push(End::Tail, &[blob], limits);
            continue;
        }
        let elems = if kind == TYPE_LIST_QUICKLIST_2 {
            listpack::decode(&blob)?
        } else {
            ziplist::decode(&blob)?
        };
        // Empty nodes are skipped, as Redis does; an empty list fails below.
        push_elems(&mut list, &elems, limits);
    }
    Ok(list)
}

/// A hash of alternating fields and values from a listpack or ziplist, as Redis loads one:
/// compact unless it has more than `hash_max_listpack_entries` fields, whatever their
/// lengths. A repeated field or a field without a value is bad data.
fn hash_of_pairs(elems: &[Elem<'_>], limits: &Limits) -> Result<Hash, Error> {
    if elems.len() % 2 != 0 {
        return Err(Error::BadData);
    }
    let load_limits = Limits {
        hash_max_listpack_value: usize::MAX,
        ..*limits
    };
    let mut hash = Hash::new();
    for pair in elems.chunks_exact(2) {
        if !hash.insert(&pair[0].to_vec(), &pair[1].to_vec(), &load_limits) {
            return Err(Error::BadData);
        }
    }
    Ok(hash)
}
