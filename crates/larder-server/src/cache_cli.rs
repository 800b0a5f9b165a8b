//! `larder cache <build|get|info|verify|bench>`: build, inspect, check and benchmark cache files.
//!
//! Thin over `larder_cache`: this module parses inputs (JSONL, CSV, a Redis-protocol server)
//! into [`Value`](larder_cache::Value)s and prints results; the format, the builder and the
//! reader live in the library. This file holds the command line and [`run`]; the build inputs
//! are in `input` (source, JSONL, CSV) and `redis_input`, the lookup benchmark in `bench`.
//! Type mapping (also in docs/cache-format.md):
//!
//! | input | cache type |
//! |---|---|
//! | JSON string | str |
//! | JSON integer | i64 |
//! | JSON float | f64 |
//! | JSON bool | bool |
//! | JSON array of numbers | list<f64> (list<f32> with `--f32`) |
//! | JSON array of strings | list<str> |
//! | CSV cell | `--type` (default str) |
//! | Redis string | str (bytes if not UTF-8; i64 with `--infer-ints` when it parses) |
//! | Redis list | list<str> |
//! | Redis hash | one key per field, `key.field`, typed like strings |
//! | Redis set, zset, stream | skipped and counted |

mod bench;
mod input;
mod redis_input;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context};
use larder_cache::{BuildStats, Cache, CacheBuilder, DuplicatePolicy, ValueRef};

use bench::bench;
use input::{import_csv, import_jsonl, CsvOptions, Progress, Source};
use redis_input::{import_redis, RedisOptions};

/// `larder cache` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum CacheCommand {
    /// Build a cache file from JSONL, CSV, or a Redis-protocol server.
    Build {
        /// The cache file to write (replaced atomically when the build succeeds).
        output: PathBuf,
        /// Input: a .jsonl/.json or .csv file, `-` for standard input, or redis://host:port.
        #[arg(long)]
        from: String,
        /// Input format, when the file name does not say.
        #[arg(long, value_enum)]
        format: Option<InputFormat>,
        /// Name stored in the file header.
        #[arg(long, default_value = "")]
        name: String,
        /// Store repeated values once.
        #[arg(long)]
        dedup: bool,
        /// Fail on a repeated key instead of keeping the last value.
        #[arg(long)]
        reject_duplicates: bool,
        /// JSONL: store arrays of numbers as list<f32> instead of list<f64>.
        #[arg(long)]
        f32: bool,
        /// CSV: the key column (name, or 0-based index with --no-header).
        #[arg(long, default_value = "key")]
        key_column: String,
        /// CSV: the value column (name, or 0-based index with --no-header).
        #[arg(long, default_value = "value")]
        value_column: String,
        /// CSV: the type of the value column.
        #[arg(long = "type", value_enum, default_value_t = CellType::Str)]
        value_type: CellType,
        /// CSV: separator between list elements inside a cell.
        #[arg(long, default_value = ";")]
        list_separator: String,
        /// CSV: the file has no header row; columns are 0-based indexes.
        #[arg(long)]
        no_header: bool,
        /// Redis: only keys matching this glob pattern (SCAN MATCH).
        #[arg(long = "match")]
        pattern: Option<String>,
        /// Redis: store strings that parse as integers as i64.
        #[arg(long)]
        infer_ints: bool,
        /// Redis: SCAN COUNT hint.
        #[arg(long, default_value_t = 1000)]
        scan_count: u32,
        /// No progress output.
        #[arg(long)]
        quiet: bool,
    },
    /// Print the value of one key.
    Get {
        /// The cache file.
        file: PathBuf,
        /// The key.
        key: String,
        /// Print `{"key", "type", "value"}` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a cache file's header facts.
    Info {
        /// The cache file.
        file: PathBuf,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check every checksum and every record of a cache file.
    Verify {
        /// The cache file.
        file: PathBuf,
    },
    /// AxonCache's lookup benchmark on a file: every key, shuffled, several runs.
    Bench {
        /// The cache file.
        file: PathBuf,
        /// Number of runs.
        #[arg(long, default_value_t = 3)]
        runs: u32,
        /// Look up at most this many keys (default: all).
        #[arg(long)]
        keys: Option<usize>,
    },
}

/// Input formats for `build`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// One JSON object per line: {"key": ..., "value": ...}.
    Jsonl,
    /// Comma-separated values.
    Csv,
}

/// Value types a CSV cell can be declared as.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellType {
    /// UTF-8 text.
    Str,
    /// Raw bytes of the cell.
    Bytes,
    /// Signed 64-bit integer.
    I64,
    /// 64-bit float.
    F64,
    /// true/false (also 1/0, yes/no).
    Bool,
    /// Separated list of 32-bit floats.
    F32List,
    /// Separated list of 64-bit floats.
    F64List,
    /// Separated list of strings.
    StrList,
}

/// Runs one `larder cache` subcommand.
pub fn run(cmd: CacheCommand) -> anyhow::Result<()> {
    match cmd {
        CacheCommand::Build {
            output,
            from,
            format,
            name,
            dedup,
            reject_duplicates,
            f32,
            key_column,
            value_column,
            value_type,
            list_separator,
            no_header,
            pattern,
            infer_ints,
            scan_count,
            quiet,
        } => {
            let mut builder = CacheBuilder::new(&output)
                .with_context(|| format!("cannot create {}", output.display()))?
                .name(name)
                .dedup(dedup);
            if reject_duplicates {
                builder = builder.duplicates(DuplicatePolicy::Error);
            }
            let mut progress = Progress::new(quiet);
            let source = Source::parse(&from, format)?;
            match source {
                Source::Redis(url) => {
                    let opts = RedisOptions {
                        pattern,
                        infer_ints,
                        scan_count,
                    };
                    let skipped = import_redis(&url, &opts, &mut builder, &mut progress)?;
                    for (ty, n) in skipped {
                        eprintln!("skipped {n} keys of unsupported type {ty}");
                    }
                }
                Source::File(format, reader) => match format {
                    InputFormat::Jsonl => import_jsonl(reader, f32, &mut builder, &mut progress)?,
                    InputFormat::Csv => {
                        let opts = CsvOptions {
                            key_column,
                            value_column,
                            value_type,
                            list_separator,
                            has_header: !no_header,
                        };
                        import_csv(reader, &opts, &mut builder, &mut progress)?
                    }
                },
            }
            let stats = builder.finish().context("finishing the cache file")?;
            progress.done();
            print_build_stats(&output, &stats);
            Ok(())
        }
        CacheCommand::Get { file, key, json } => {
            let cache = open(&file)?;
            let value = cache
                .get(&key)?
                .ok_or_else(|| anyhow!("key {key:?} not found"))?;
            if json {
                let out = serde_json::json!({
                    "key": key,
                    "type": value.value_type().name(),
                    "value": value_json(value)?,
                });
                println!("{out}");
            } else {
                match value {
                    ValueRef::Str(s) => println!("{s}"),
                    ValueRef::Bytes(b) => println!("{}", b.escape_ascii()),
                    other => println!("{}", value_json(other)?),
                }
            }
            Ok(())
        }
        CacheCommand::Info { file, json } => {
            let cache = open(&file)?;
            let i = cache.info();
            let fields: Vec<(&str, serde_json::Value)> = vec![
                ("file", file.display().to_string().into()),
                ("name", i.name.into()),
                ("format_version", i.format_version.into()),
                ("created_unix_ms", i.created_unix_ms.into()),
                ("key_count", i.key_count.into()),
                ("value_count", i.value_count.into()),
                ("dedup", i.dedup.into()),
                ("file_bytes", i.file_bytes.into()),
                ("data_bytes", i.data_bytes.into()),
                ("index_bytes", i.index_bytes.into()),
                ("bucket_count", i.bucket_count.into()),
                ("displaced_keys", i.displaced_keys.into()),
                ("raw_key_bytes", i.raw_key_bytes.into()),
                ("raw_value_bytes", i.raw_value_bytes.into()),
                ("dedup_saved_bytes", i.dedup_saved_bytes.into()),
            ];
            if json {
                let map: serde_json::Map<String, serde_json::Value> =
                    fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
                println!("{}", serde_json::Value::Object(map));
            } else {
                for (k, v) in fields {
                    println!(
                        "{k:<18} {}",
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                    );
                }
            }
            Ok(())
        }
        CacheCommand::Verify { file } => {
            let cache = open(&file)?;
            let started = Instant::now();
            cache
                .verify()
                .with_context(|| format!("{} failed verification", file.display()))?;
            println!(
                "{}: ok ({} keys, {} bytes, checksums and records verified in {} ms)",
                file.display(),
                cache.len(),
                cache.info().file_bytes,
                started.elapsed().as_millis()
            );
            Ok(())
        }
        CacheCommand::Bench { file, runs, keys } => bench(&file, runs, keys),
    }
}

fn open(file: &Path) -> anyhow::Result<Cache> {
    Cache::open(file).with_context(|| format!("cannot open cache file {}", file.display()))
}

fn print_build_stats(output: &Path, s: &BuildStats) {
    let raw = s.raw_key_bytes + s.raw_value_bytes;
    eprintln!(
        "wrote {}: {} keys, {} bytes ({:.2}x the {} raw key+value bytes) in {} ms",
        output.display(),
        s.key_count,
        s.file_bytes,
        s.file_bytes as f64 / raw.max(1) as f64,
        raw,
        s.build_ms
    );
    if s.duplicate_keys > 0 {
        eprintln!(
            "{} repeated keys: the last value of each was kept",
            s.duplicate_keys
        );
    }
    if s.deduped_values > 0 {
        eprintln!(
            "dedup: {} values stored once for {} keys, saving {} bytes",
            s.value_count, s.key_count, s.dedup_saved_bytes
        );
    }
}

/// A JSON rendering of a value (bytes as an array of numbers).
fn value_json(v: ValueRef<'_>) -> anyhow::Result<serde_json::Value> {
    Ok(match v {
        ValueRef::Bytes(b) => b.to_vec().into(),
        ValueRef::Str(s) => s.into(),
        ValueRef::I64(i) => i.into(),
        ValueRef::F64(f) => f.into(),
        ValueRef::Bool(b) => b.into(),
        ValueRef::F32List(l) => l.to_vec().into(),
        ValueRef::F64List(l) => l.to_vec().into(),
        ValueRef::StrList(l) => l.to_vec()?.into(),
        _ => bail!("value type not supported by this version of the CLI"),
    })
}

#[cfg(test)]
mod tests;
