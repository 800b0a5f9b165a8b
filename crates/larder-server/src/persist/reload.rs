//! DEBUG RELOAD and DEBUG LOADAOF: the dataset written out and read back in while the
//! command holds every shard, so no client sees it half loaded and no write slips between.
//!
//! Nothing here is recorded in the feed: the dataset after a reload is the one before it, so
//! the log stays a true description of it.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::sync::Arc;

use anyhow::Context;
use larder_commands::persistence::HeldShards;
use larder_commands::script::Restore;
use larder_commands::Server;
use larder_engine::{Db, RestoreValue, SHARDS_PER_DB};
use larder_persist::rdb::Value;
use larder_persist::snapshot::{SnapshotMeta, SnapshotReader, SnapshotWriter};

use super::dir::DataDir;
use super::log::Log;

/// DEBUG RELOAD: a snapshot of the held shards and the function libraries at the feed's
/// current point (the log restarts there), then every shard emptied and refilled from the
/// file, and the libraries restored from it.
pub fn reload(
    server: &Server,
    dir: &DataDir,
    log: Option<&Arc<Log>>,
    shards: &mut dyn HeldShards,
) -> anyhow::Result<u64> {
    let limits = larder_commands::config::limits(&server.config);
    let seq = server.keyspace.feed().last_seq();
    let tmp = dir.path().join("snapshot-reload.lsnap.tmp");
    let meta = SnapshotMeta {
        created_ms: larder_engine::now_ms(),
        feed_seq: seq,
        databases: server.keyspace.db_count() as u32,
    };
    let file = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let libraries = server.scripts.library_codes();
    let mut writer =
        SnapshotWriter::with_libraries(BufWriter::new(file), &meta, &limits, &libraries)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut error = None;
    for db in 0..server.keyspace.db_count() {
        for s in 0..SHARDS_PER_DB {
            shards.with(db, s, &mut |shard| {
                for e in shard.iter() {
                    if error.is_none() {
                        if let Err(err) = writer.entry_of(db as u32, e) {
                            error = Some(err);
                        }
                    }
                }
            });
        }
    }
    if let Some(e) = error {
        let _ = std::fs::remove_file(&tmp);
        anyhow::bail!("writing {}: {e}", tmp.display());
    }
    let (out, _) = writer.finish().map_err(|e| anyhow::anyhow!("{e}"))?;
    let file = out
        .into_inner()
        .map_err(|e| anyhow::anyhow!("{}", e.error()))?;
    file.sync_all()?;
    let path = dir.snapshot_path(seq);
    std::fs::rename(&tmp, &path)?;
    dir.sync()?;
    if let Some(log) = log {
        log.rotate(seq);
    }
    empty(server, shards);
    let mut reader = SnapshotReader::open(
        BufReader::new(File::open(&path).with_context(|| format!("opening {}", path.display()))?),
        &limits,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let libraries = reader.take_libraries();
    super::snapshot::restore_libraries(server, libraries, Restore::Replace, &path)?;
    let now_ms = larder_engine::now_ms();
    let mut keys = 0;
    for record in reader.by_ref() {
        let r = record.map_err(|e| anyhow::anyhow!("reading {} back: {e}", path.display()))?;
        let (idx, hash) = Db::route(&r.key);
        shards.with(r.db as usize, idx, &mut |shard| {
            let value = match &r.value {
                Value::String(s) => RestoreValue::String(s),
                Value::Object(o) => RestoreValue::Object(o.clone()),
            };
            shard.restore_entry(
                &r.key,
                hash,
                value,
                r.expire_at_ms,
                r.version,
                r.flags,
                now_ms,
            );
        });
        keys += 1;
    }
    Ok(keys)
}

/// DEBUG LOADAOF: the log brought to the file, the data directory loaded into a scratch
/// server (snapshot, then log, as at start), and its contents moved into the held shards;
/// its function libraries replace the server's (Redis empties them with the data).
pub fn loadaof(
    server: &Server,
    dir: &DataDir,
    log: &Arc<Log>,
    shards: &mut dyn HeldShards,
) -> anyhow::Result<u64> {
    if !log.write_now() {
        anyhow::bail!("the append-only log could not be brought to disk");
    }
    let scratch = Arc::new(Server::new(
        larder_commands::config::Config::copy_of(&server.config),
        1,
    ));
    let (snapshots, logs) = dir.list()?;
    let mut after = 0;
    if let Some(&seq) = snapshots.last() {
        let (_, _, at) = super::snapshot::load(&scratch, &dir.snapshot_path(seq), |_, _| {})?;
        after = at;
    }
    super::recover::replay_logs(&scratch, dir, &logs, after, 0, |_, _| {})?;
    let libraries = scratch.scripts.library_codes();
    super::snapshot::restore_libraries(server, libraries, Restore::Flush, dir.path())?;
    empty(server, shards);
    let now_ms = larder_engine::now_ms();
    let mut keys = 0;
    for db in 0..scratch.keyspace.db_count() {
        for s in 0..SHARDS_PER_DB {
            let from = scratch.keyspace.db(db).lock(s);
            shards.with(db, s, &mut |shard| {
                for e in from.iter() {
                    let value = match (e.string(), e.object()) {
                        (Some(s), _) => RestoreValue::String(s),
                        (None, Some(o)) => RestoreValue::Object(o.clone()),
                        (None, None) => continue,
                    };
                    let hash = Db::route(e.key()).1;
                    let at = e.expire_at_ms().unwrap_or(0);
                    shard.restore_entry(e.key(), hash, value, at, e.version(), e.flags(), now_ms);
                    keys += 1;
                }
            });
        }
    }
    Ok(keys)
}

/// Empty every held shard without recording anything.
fn empty(server: &Server, shards: &mut dyn HeldShards) {
    for db in 0..server.keyspace.db_count() {
        for s in 0..SHARDS_PER_DB {
            shards.with(db, s, &mut |shard| drop(shard.clear()));
        }
    }
}
