//! Between the engine's stream ([`larder_engine::stream::Stream`]) and [`StreamDump`].
//!
//! To the dump: the live entries cut into nodes as XADD cuts them ([`cut_into_nodes`],
//! Redis's default node limits), the metadata, and the groups with their PELs and consumers.
//! From the dump: every entry appended in order, deleted ones too, then deleted again, so the
//! engine's nodes and tombstones follow Redis's; then the metadata as recorded, and each
//! group's pending entries claimed for their owners with their delivery times and counts.
//! Times are Unix ms; the RDB form's signed times convert bit for bit.

use larder_engine::stream::group::{Claim, ClaimCount, Groups};
use larder_engine::stream::{self as engine, StreamId};

use super::{cut_into_nodes, ConsumerDump, GroupDump, Id, NodeLimits, PendingDump, StreamDump};
use crate::rdb::Error;

fn to_engine(id: Id) -> StreamId {
    StreamId::new(id.ms, id.seq)
}

fn from_engine(id: StreamId) -> Id {
    Id::new(id.ms, id.seq)
}

/// The RDB form of `s`.
pub fn to_dump(s: &engine::Stream, limits: NodeLimits) -> StreamDump {
    let entries = s
        .range(StreamId::MIN, StreamId::MAX, false)
        .map(|(id, fields)| (from_engine(id), fields));
    let groups = s
        .groups
        .iter()
        .flat_map(|g| g.iter())
        .map(|(name, g)| GroupDump {
            name: name.to_vec(),
            last_id: from_engine(g.last_id()),
            entries_read: g.entries_read(),
            pel: g
                .pending_range(StreamId::MIN, StreamId::MAX)
                .map(|(id, n)| PendingDump {
                    id: from_engine(id),
                    delivery_time_ms: n.delivery_time_ms as i64,
                    delivery_count: n.delivery_count,
                })
                .collect(),
            consumers: g
                .consumers()
                .map(|(name, c)| ConsumerDump {
                    name: name.to_vec(),
                    seen_time_ms: c.seen_time_ms as i64,
                    pel: c.pending_from(StreamId::MIN).map(from_engine).collect(),
                })
                .collect(),
        })
        .collect();
    StreamDump {
        nodes: cut_into_nodes(entries, limits),
        length: s.len(),
        last_id: from_engine(s.last_id()),
        first_id: from_engine(s.first_id()),
        max_deleted_id: from_engine(s.max_deleted_id()),
        entries_added: s.entries_added(),
        groups,
    }
}

/// The engine's stream for `d`, as [`super::read`] returns it (group PELs sorted, every
/// consumer's ID in its group's PEL). An entry without fields, or with ID 0-0, which no XADD
/// makes, is bad data.
pub fn from_dump(d: &StreamDump, limits: NodeLimits) -> Result<engine::Stream, Error> {
    let mut s = engine::Stream::new();
    let mut flat: Vec<&[u8]> = Vec::new();
    for node in &d.nodes {
        for e in &node.entries {
            let names = node.names(e);
            if names.is_empty() {
                return Err(Error::BadData);
            }
            flat.clear();
            for (f, v) in names.iter().zip(&e.values) {
                flat.push(f);
                flat.push(v);
            }
            s.append(to_engine(e.id), &flat, limits)
                .map_err(|_| Error::BadData)?;
        }
    }
    for node in &d.nodes {
        for e in node.entries.iter().filter(|e| e.deleted) {
            s.delete(to_engine(e.id));
        }
    }
    s.set_last_id(to_engine(d.last_id));
    s.set_entries_added(d.entries_added);
    s.set_max_deleted_id(to_engine(d.max_deleted_id));
    if !d.groups.is_empty() {
        let mut groups = Groups::new();
        for g in &d.groups {
            if !groups.create(&g.name, to_engine(g.last_id), g.entries_read) {
                return Err(Error::BadData);
            }
            let restored = groups.update(&g.name, |group| {
                for c in &g.consumers {
                    let seen = c.seen_time_ms as u64;
                    group.create_consumer(&c.name, seen);
                    for id in &c.pel {
                        let at = g
                            .pel
                            .binary_search_by_key(id, |p| p.id)
                            .map_err(|_| Error::BadData)?;
                        let p = &g.pel[at];
                        let claim = Claim {
                            consumer: &c.name,
                            min_idle_ms: 0,
                            delivery_time_ms: p.delivery_time_ms as u64,
                            count: ClaimCount::Set(p.delivery_count),
                            force: true,
                            now_ms: seen,
                        };
                        group.claim(to_engine(*id), &claim, true, &mut false);
                    }
                }
                Ok(())
            });
            restored.unwrap_or(Err(Error::BadData))?;
        }
        s.groups = Some(Box::new(groups));
    }
    Ok(s)
}
