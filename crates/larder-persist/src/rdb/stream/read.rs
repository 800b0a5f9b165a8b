//! Reading a stream value, validated throughout as Redis's deep sanitization
//! (`streamValidateListpackIntegrity` and the checks of `rdbLoadObject`) and more: master
//! entries and entry flags consistent with the node's counts, IDs strictly increasing across
//! nodes and not above the last ID, the length equal to the live entries, group and consumer
//! names unique, and every pending entry owned by exactly one consumer of its group.

use std::collections::BTreeMap;

use super::super::length::Reader;
use super::super::{listpack, Elem, Error};
use super::{
    ConsumerDump, EntryDump, GroupDump, Id, NodeDump, PendingDump, StreamDump, FLAG_DELETED,
    FLAG_SAMEFIELDS, TYPE_STREAM_LISTPACKS, TYPE_STREAM_LISTPACKS_2,
};

fn id(r: &mut Reader<'_>) -> Result<Id, Error> {
    Ok(Id::new(r.length()?, r.length()?))
}

fn raw_id(r: &mut Reader<'_>) -> Result<Id, Error> {
    let mut b = [0u8; 16];
    b.copy_from_slice(r.take(16)?);
    Ok(Id::from_be_bytes(b))
}

fn millis(r: &mut Reader<'_>) -> Result<i64, Error> {
    let mut b = [0u8; 8];
    b.copy_from_slice(r.take(8)?);
    Ok(i64::from_le_bytes(b))
}

/// Read a stream of type `kind` (15 or 19; the type byte already read).
pub fn read(r: &mut Reader<'_>, kind: u8) -> Result<StreamDump, Error> {
    if kind != TYPE_STREAM_LISTPACKS && kind != TYPE_STREAM_LISTPACKS_2 {
        return Err(Error::BadData);
    }
    // Each node takes at least two bytes, so the count bounds the reservation.
    let n = r.count()?;
    let mut nodes: Vec<NodeDump> = Vec::with_capacity(n);
    let mut top: Option<Id> = None;
    let mut live = 0u64;
    for _ in 0..n {
        let key = r.string()?;
        let key: [u8; 16] = key.as_slice().try_into().map_err(|_| Error::BadData)?;
        let master_id = Id::from_be_bytes(key);
        let node = decode_node(master_id, &r.string()?)?;
        if top.is_some_and(|t| master_id <= t) {
            return Err(Error::BadData);
        }
        top = Some(node.entries.last().map_or(master_id, |e| e.id));
        live += node.entries.iter().filter(|e| !e.deleted).count() as u64;
        nodes.push(node);
    }
    let length = r.length()?;
    let last_id = id(r)?;
    let newest = nodes.iter().flat_map(|n| n.entries.last()).next_back();
    if length != live || newest.is_some_and(|e| e.id > last_id) {
        return Err(Error::BadData);
    }
    let mut s = if kind == TYPE_STREAM_LISTPACKS_2 {
        StreamDump {
            nodes,
            length,
            last_id,
            first_id: id(r)?,
            max_deleted_id: id(r)?,
            entries_added: r.length()?,
            groups: Vec::new(),
        }
    } else {
        // As Redis 7.0 loads a 6.x stream: no tombstones known, every entry counted once,
        // the first live entry's ID (the greatest ID when there is none).
        let first_id = nodes
            .iter()
            .flat_map(|n| &n.entries)
            .find(|e| !e.deleted)
            .map_or(Id::MAX, |e| e.id);
        StreamDump {
            nodes,
            length,
            last_id,
            first_id,
            max_deleted_id: Id::default(),
            entries_added: length,
            groups: Vec::new(),
        }
    };
    let groups = r.count()?;
    let mut by_name: BTreeMap<Vec<u8>, GroupDump> = BTreeMap::new();
    for _ in 0..groups {
        let name = r.string()?;
        let last_id = id(r)?;
        let entries_read = if kind == TYPE_STREAM_LISTPACKS_2 {
            Some(r.length()?).filter(|&v| v != u64::MAX)
        } else {
            estimate_entries_read(&s, last_id)
        };
        let group = read_group(r, name.clone(), last_id, entries_read)?;
        if by_name.insert(name, group).is_some() {
            return Err(Error::BadData);
        }
    }
    s.groups = by_name.into_values().collect();
    Ok(s)
}

/// A group's PEL and consumers. Every pending entry must belong to exactly one consumer.
fn read_group(
    r: &mut Reader<'_>,
    name: Vec<u8>,
    last_id: Id,
    entries_read: Option<u64>,
) -> Result<GroupDump, Error> {
    let n = r.count()?;
    // ID -> (entry, owned yet).
    let mut pel: BTreeMap<Id, (PendingDump, bool)> = BTreeMap::new();
    for _ in 0..n {
        let id = raw_id(r)?;
        let p = PendingDump {
            id,
            delivery_time_ms: millis(r)?,
            delivery_count: r.length()?,
        };
        if pel.insert(id, (p, false)).is_some() {
            return Err(Error::BadData);
        }
    }
    let n = r.count()?;
    let mut consumers: BTreeMap<Vec<u8>, ConsumerDump> = BTreeMap::new();
    for _ in 0..n {
        let name = r.string()?;
        let seen_time_ms = millis(r)?;
        let owned = r.count()?;
        let mut ids = Vec::with_capacity(owned);
        for _ in 0..owned {
            let id = raw_id(r)?;
            match pel.get_mut(&id) {
                Some((_, taken @ false)) => *taken = true,
                _ => return Err(Error::BadData),
            }
            ids.push(id);
        }
        ids.sort_unstable();
        let c = ConsumerDump {
            name: name.clone(),
            seen_time_ms,
            pel: ids,
        };
        if consumers.insert(name, c).is_some() {
            return Err(Error::BadData);
        }
    }
    if pel.values().any(|(_, owned)| !owned) {
        return Err(Error::BadData);
    }
    Ok(GroupDump {
        name,
        last_id,
        entries_read,
        pel: pel.into_values().map(|(p, _)| p).collect(),
        consumers: consumers.into_values().collect(),
    })
}

/// Redis's `streamEstimateDistanceFromFirstEverEntry` for a stream just loaded from a 6.x
/// payload (no tombstones known, every entry added counted): a group's entries read.
fn estimate_entries_read(s: &StreamDump, id: Id) -> Option<u64> {
    if s.entries_added == 0 {
        return Some(0);
    }
    if id == s.last_id {
        return Some(s.entries_added);
    }
    if id > s.last_id {
        return None;
    }
    match id.cmp(&s.first_id) {
        std::cmp::Ordering::Less => Some(s.entries_added - s.length),
        std::cmp::Ordering::Equal => Some(s.entries_added - s.length + 1),
        std::cmp::Ordering::Greater => None,
    }
}

/// An integer element: an integer entry, or a string that reads as one (as
/// `lpGetIntegerIfValid` accepts).
fn as_int(e: Option<&Elem<'_>>) -> Result<i64, Error> {
    match e {
        Some(Elem::Int(v)) => Ok(*v),
        Some(Elem::Str(s)) => larder_engine::set::canonical_int(s).ok_or(Error::BadData),
        None => Err(Error::BadData),
    }
}

fn as_count(e: Option<&Elem<'_>>) -> Result<usize, Error> {
    usize::try_from(as_int(e)?).map_err(|_| Error::BadData)
}

/// A node's listpack, keyed by `master_id`.
fn decode_node(master_id: Id, lp: &[u8]) -> Result<NodeDump, Error> {
    let elems = listpack::decode(lp)?;
    let mut it = elems.iter();
    let count = as_count(it.next())?;
    let deleted = as_count(it.next())?;
    let nfields = as_count(it.next())?;
    if nfields > it.len() {
        return Err(Error::BadData);
    }
    let master_fields: Vec<Vec<u8>> = it.by_ref().take(nfields).map(Elem::to_vec).collect();
    if as_int(it.next())? != 0 {
        return Err(Error::BadData);
    }
    let total = count.checked_add(deleted).ok_or(Error::BadData)?;
    // An entry takes at least four elements.
    if total > it.len() / 4 {
        return Err(Error::BadData);
    }
    let mut entries = Vec::with_capacity(total);
    let mut prev: Option<Id> = None;
    let mut tombstones = 0usize;
    for _ in 0..total {
        let flags = as_int(it.next())?;
        if flags & !(FLAG_DELETED | FLAG_SAMEFIELDS) != 0 {
            return Err(Error::BadData);
        }
        let id = Id::new(
            master_id.ms.wrapping_add(as_int(it.next())? as u64),
            master_id.seq.wrapping_add(as_int(it.next())? as u64),
        );
        if id < master_id || prev.is_some_and(|p| id <= p) {
            return Err(Error::BadData);
        }
        prev = Some(id);
        let same = flags & FLAG_SAMEFIELDS != 0;
        let (fields, values) = if same {
            if nfields > it.len() {
                return Err(Error::BadData);
            }
            let values: Vec<Vec<u8>> = it.by_ref().take(nfields).map(Elem::to_vec).collect();
            (None, values)
        } else {
            let n = as_count(it.next())?;
            if n.checked_mul(2).is_none_or(|n2| n2 > it.len()) {
                return Err(Error::BadData);
            }
            let mut names = Vec::with_capacity(n);
            let mut values = Vec::with_capacity(n);
            for _ in 0..n {
                names.push(it.next().ok_or(Error::BadData)?.to_vec());
                values.push(it.next().ok_or(Error::BadData)?.to_vec());
            }
            (Some(names), values)
        };
        let n = values.len() as i64;
        let want = if same { 3 + n } else { 4 + 2 * n };
        if as_int(it.next())? != want {
            return Err(Error::BadData);
        }
        let deleted = flags & FLAG_DELETED != 0;
        tombstones += usize::from(deleted);
        entries.push(EntryDump {
            id,
            deleted,
            fields,
            values,
        });
    }
    if it.next().is_some() || tombstones != deleted {
        return Err(Error::BadData);
    }
    Ok(NodeDump {
        master_id,
        master_fields,
        entries,
    })
}
