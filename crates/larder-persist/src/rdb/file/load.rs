//! Loading a whole RDB file into a keyspace (`larder import`, start-up from `dbfilename`).

use std::io::Read;

use larder_engine::{Keyspace, Limits, RestoreValue, Restored};

use super::super::Value;
use super::{ErrorKind, FileError, RdbItem, RdbReader};

/// How often (in bytes read) [`load_rdb`] reports progress.
const PROGRESS_EVERY: u64 = 1 << 20;

/// What [`load_rdb`] read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RdbStats {
    /// The file's RDB version.
    pub version: u16,
    /// The file's AUX fields (name, value), in file order.
    pub aux: Vec<(Vec<u8>, Vec<u8>)>,
    /// The function libraries' codes, in file order (not loaded: the caller's registry
    /// compiles them).
    pub functions: Vec<String>,
    /// Keys inserted.
    pub keys: u64,
    /// Keys whose deadline had passed, not inserted (as a Redis master loads a file).
    pub expired_skipped: u64,
    /// Keys holding an empty collection, not inserted (as Redis does).
    pub empty_skipped: u64,
    /// Bytes read, the checksum included.
    pub bytes: u64,
}

/// Read the RDB file `r` and insert every key into `keyspace`, its values encoded as
/// `limits` say. A key whose deadline is before `now_ms` is skipped, as a Redis master
/// skips it on load. `progress(keys, bytes)` is called about every MiB read and once at the
/// end, with the keys inserted and bytes read so far.
///
/// The keyspace is expected to be empty: a key already present, or present twice in the
/// file, is an error. On any error the keys inserted before it stay; the caller discards the
/// keyspace (Redis refuses to start on a bad file).
pub fn load_rdb<R: Read>(
    r: R,
    keyspace: &Keyspace,
    limits: &Limits,
    now_ms: u64,
    mut progress: impl FnMut(u64, u64),
) -> Result<RdbStats, FileError> {
    let mut reader = RdbReader::new(r, *limits)?;
    let mut stats = RdbStats {
        version: reader.version(),
        ..RdbStats::default()
    };
    let mut reported = 0u64;
    while let Some(item) = reader.next_item()? {
        if item.expire_at_ms.is_some_and(|at| at < now_ms) {
            stats.expired_skipped += 1;
            continue;
        }
        let offset = item.offset;
        load_item(keyspace, item, now_ms).map_err(|kind| FileError { offset, kind })?;
        stats.keys += 1;
        if reader.offset() - reported >= PROGRESS_EVERY {
            reported = reader.offset();
            progress(stats.keys, reported);
        }
    }
    stats.bytes = reader.offset();
    stats.empty_skipped = reader.empty_skipped();
    stats.aux = reader.aux().to_vec();
    stats.functions = reader.functions().to_vec();
    progress(stats.keys, stats.bytes);
    Ok(stats)
}

/// Insert one item into its database in `keyspace`, with its deadline (0 is "none" to the
/// engine, so a deadline of 0 becomes 1 ms, still in the past), and the version and flags
/// its file gave it (a larder master's) or a fresh version.
pub fn load_item(keyspace: &Keyspace, item: RdbItem, now_ms: u64) -> Result<(), ErrorKind> {
    if item.db >= keyspace.db_count() {
        return Err(ErrorKind::DbOutOfRange {
            db: item.db,
            databases: keyspace.db_count(),
        });
    }
    let at = item.expire_at_ms.map_or(0, |at| at.max(1));
    let RdbItem {
        db,
        key,
        value,
        meta,
        ..
    } = item;
    let (version, flags) = meta.unwrap_or((0, 0));
    let restore = |v| keyspace.restore(db, &key, v, at, version, flags, now_ms);
    let restored = match value {
        Value::String(s) => restore(RestoreValue::String(&s)),
        Value::Object(o) => restore(RestoreValue::Object(o)),
    };
    match restored {
        Restored::Exists => Err(ErrorKind::DuplicateKey { db, key }),
        Restored::Inserted(_) | Restored::Expired => Ok(()),
    }
}
