//! Migration from Redis: a Redis 7.0 RDB file read into the keyspace, at start-up (the data
//! directory holds no larder data yet and `dir/dbfilename` exists) or by `larder import FILE
//! --dir DIR`, which writes it as the directory's first snapshot.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use larder_commands::config::Config;
use larder_commands::script::Restore;
use larder_commands::Server;
use larder_persist::rdb::file::{load_rdb, RdbStats};

use super::dir::DataDir;
use super::recover::Progress;

/// Load the RDB file at `path` into `server`'s (empty) keyspace and its function libraries
/// into the registry, with progress lines.
pub fn load(server: &Server, path: &Path) -> anyhow::Result<RdbStats> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let total = file.metadata().map_or(0, |m| m.len());
    let limits = larder_commands::config::limits(&server.config);
    let mut progress = Progress::new("RDB file", total);
    let stats = load_rdb(
        BufReader::with_capacity(1 << 20, file),
        &server.keyspace,
        &limits,
        larder_engine::now_ms(),
        |keys, bytes| {
            progress.tick(bytes, keys);
        },
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let libraries = stats.functions.clone();
    super::snapshot::restore_libraries(server, libraries, Restore::Replace, path)?;
    tracing::info!(
        file = %path.display(),
        keys = stats.keys,
        libraries = stats.functions.len(),
        expired_skipped = stats.expired_skipped,
        rdb_version = stats.version,
        "Redis RDB file loaded"
    );
    Ok(stats)
}

/// `larder import FILE --dir DIR`: the RDB file becomes the first snapshot of `dir`, which
/// must hold no larder data yet. Returns the keys imported.
pub fn run(file: &Path, dir: &Path, config: Config) -> anyhow::Result<u64> {
    let dir = DataDir::open(dir)?;
    let (snapshots, logs) = dir.list()?;
    let holds_data = !snapshots.is_empty()
        || logs.iter().any(|&s| {
            std::fs::metadata(dir.log_path(s))
                .is_ok_and(|m| m.len() > larder_persist::log::HEADER_LEN as u64)
        });
    if holds_data {
        anyhow::bail!(
            "{} already holds larder data; import into a new directory",
            dir.path().display()
        );
    }
    let server = Arc::new(Server::new(config, 1));
    let stats = load(&server, file)?;
    let snap = super::snapshot::take(&server, &dir, None, |_| {})?;
    tracing::info!(
        keys = stats.keys,
        snapshot_bytes = snap.bytes,
        dir = %dir.path().display(),
        "imported: start larder with --dir on this directory"
    );
    Ok(stats.keys)
}
