//! `larder cache <build|get|info|verify|bench>`: build, inspect, check and benchmark cache files.
//!
//! Thin over `larder_cache`: this module parses inputs (JSONL, CSV, a Redis-protocol server)
//! into [`Value`]s and prints results; the format, the builder and the reader live in the
//! library. Type mapping (also in docs/cache-format.md):
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

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use larder_cache::{BuildStats, Cache, CacheBuilder, DuplicatePolicy, Value, ValueRef};

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

/// An owned value parsed from an input, inserted by reference.
#[derive(Clone, Debug, PartialEq)]
enum Owned {
    Bytes(Vec<u8>),
    Str(String),
    I64(i64),
    F64(f64),
    Bool(bool),
    F32List(Vec<f32>),
    F64List(Vec<f64>),
    StrList(Vec<String>),
}

fn insert(builder: &mut CacheBuilder, key: &[u8], value: &Owned) -> anyhow::Result<()> {
    let strs: Vec<&str>;
    let value = match value {
        Owned::Bytes(b) => Value::Bytes(b),
        Owned::Str(s) => Value::Str(s),
        Owned::I64(i) => Value::I64(*i),
        Owned::F64(f) => Value::F64(*f),
        Owned::Bool(b) => Value::Bool(*b),
        Owned::F32List(l) => Value::F32List(l),
        Owned::F64List(l) => Value::F64List(l),
        Owned::StrList(l) => {
            strs = l.iter().map(String::as_str).collect();
            Value::StrList(&strs)
        }
    };
    builder.insert(key, value)?;
    Ok(())
}

/// Where `build` reads from.
enum Source {
    File(InputFormat, Box<dyn BufRead>),
    Redis(String),
}

impl Source {
    fn parse(from: &str, format: Option<InputFormat>) -> anyhow::Result<Source> {
        if from.starts_with("redis://") {
            return Ok(Source::Redis(from.to_owned()));
        }
        let lower = from.to_ascii_lowercase();
        let format = match format {
            Some(f) => f,
            None if lower.ends_with(".csv") => InputFormat::Csv,
            None if lower.ends_with(".jsonl") || lower.ends_with(".json") || from == "-" => {
                InputFormat::Jsonl
            }
            None => bail!("cannot tell the format of {from}; pass --format jsonl or --format csv"),
        };
        let reader: Box<dyn BufRead> = if from == "-" {
            Box::new(BufReader::new(std::io::stdin()))
        } else {
            let file = File::open(from).with_context(|| format!("cannot open {from}"))?;
            Box::new(BufReader::with_capacity(1 << 20, file))
        };
        Ok(Source::File(format, reader))
    }
}

/// Progress on stderr for long builds: at most once a second, only after the first second.
struct Progress {
    quiet: bool,
    started: Instant,
    last: Instant,
    keys: u64,
    bytes: u64,
    printed: bool,
}

impl Progress {
    fn new(quiet: bool) -> Progress {
        let now = Instant::now();
        Progress {
            quiet,
            started: now,
            last: now,
            keys: 0,
            bytes: 0,
            printed: false,
        }
    }

    fn tick(&mut self, bytes: usize) {
        self.keys += 1;
        self.bytes += bytes as u64;
        if self.quiet || self.keys % 4096 != 0 {
            return;
        }
        let now = Instant::now();
        if now.duration_since(self.last) >= Duration::from_secs(1) {
            self.last = now;
            self.print(now);
        }
    }

    fn print(&mut self, now: Instant) {
        let secs = now.duration_since(self.started).as_secs_f64().max(1e-9);
        eprint!(
            "\r{} keys, {:.1} MB read, {:.0} keys/s   ",
            self.keys,
            self.bytes as f64 / 1e6,
            self.keys as f64 / secs
        );
        self.printed = true;
    }

    fn done(&mut self) {
        if self.printed {
            self.print(Instant::now());
            eprintln!();
        }
    }
}

/// Reads JSONL: one `{"key": string, "value": ...}` object per line; blank lines are skipped.
fn import_jsonl(
    reader: impl BufRead,
    f32: bool,
    builder: &mut CacheBuilder,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    for (n, line) in reader.split(b'\n').enumerate() {
        let line = line.with_context(|| format!("reading line {}", n + 1))?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let (key, value) = jsonl_record(&line, f32).with_context(|| format!("line {}", n + 1))?;
        insert(builder, key.as_bytes(), &value).with_context(|| format!("line {}", n + 1))?;
        progress.tick(line.len() + 1);
    }
    Ok(())
}

fn jsonl_record(line: &[u8], f32: bool) -> anyhow::Result<(String, Owned)> {
    let mut obj: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(line).context("not a JSON object")?;
    let key = match obj.remove("key") {
        Some(serde_json::Value::String(k)) => k,
        Some(_) => bail!("\"key\" must be a string"),
        None => bail!("missing \"key\""),
    };
    let value = obj
        .remove("value")
        .ok_or_else(|| anyhow!("missing \"value\""))?;
    Ok((key, json_to_owned(&value, f32)?))
}

fn json_to_owned(v: &serde_json::Value, f32: bool) -> anyhow::Result<Owned> {
    use serde_json::Value as J;
    Ok(match v {
        J::String(s) => Owned::Str(s.clone()),
        J::Bool(b) => Owned::Bool(*b),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Owned::I64(i),
            (None, _) if n.is_u64() => bail!("integer {n} does not fit in i64"),
            (None, Some(f)) => Owned::F64(f),
            (None, None) => bail!("number {n} is not representable"),
        },
        J::Array(items) if items.iter().all(J::is_number) => {
            let floats = items.iter().filter_map(J::as_f64);
            if f32 {
                Owned::F32List(floats.map(|x| x as f32).collect())
            } else {
                Owned::F64List(floats.collect())
            }
        }
        J::Array(items) => Owned::StrList(
            items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| anyhow!("arrays must hold only numbers or only strings"))?,
        ),
        J::Null => bail!("null values are not supported"),
        J::Object(_) => bail!("nested objects are not supported; flatten them into keys"),
    })
}

struct CsvOptions {
    key_column: String,
    value_column: String,
    value_type: CellType,
    list_separator: String,
    has_header: bool,
}

/// Reads CSV: one key column and one value column of a declared type.
fn import_csv(
    reader: impl Read,
    opts: &CsvOptions,
    builder: &mut CacheBuilder,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(opts.has_header)
        .from_reader(reader);
    let column = |name: &str, headers: Option<&csv::ByteRecord>| -> anyhow::Result<usize> {
        match headers {
            Some(h) => h
                .iter()
                .position(|c| c == name.as_bytes())
                .ok_or_else(|| anyhow!("no column named {name:?} in the header")),
            None => name
                .parse()
                .map_err(|_| anyhow!("--no-header needs column indexes")),
        }
    };
    let headers = if opts.has_header {
        Some(csv.byte_headers()?.clone())
    } else {
        None
    };
    let key_at = column(&opts.key_column, headers.as_ref())?;
    let value_at = column(&opts.value_column, headers.as_ref())?;
    let mut record = csv::ByteRecord::new();
    while csv.read_byte_record(&mut record)? {
        let row = record.position().map_or(0, csv::Position::line);
        let (Some(key), Some(cell)) = (record.get(key_at), record.get(value_at)) else {
            bail!("line {row}: missing column");
        };
        let value = cell_value(cell, opts.value_type, &opts.list_separator)
            .with_context(|| format!("line {row}"))?;
        insert(builder, key, &value).with_context(|| format!("line {row}"))?;
        progress.tick(record.as_slice().len() + record.len());
    }
    Ok(())
}

fn cell_value(cell: &[u8], ty: CellType, sep: &str) -> anyhow::Result<Owned> {
    if ty == CellType::Bytes {
        return Ok(Owned::Bytes(cell.to_vec()));
    }
    let text = std::str::from_utf8(cell).context("cell is not UTF-8")?;
    let items = || text.split(sep).map(str::trim).filter(|s| !s.is_empty());
    Ok(match ty {
        CellType::Str => Owned::Str(text.to_owned()),
        CellType::Bytes => Owned::Bytes(cell.to_vec()),
        CellType::I64 => Owned::I64(text.trim().parse().with_context(|| format!("{text:?}"))?),
        CellType::F64 => Owned::F64(text.trim().parse().with_context(|| format!("{text:?}"))?),
        CellType::Bool => Owned::Bool(match text.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => true,
            "false" | "0" | "no" => false,
            other => bail!("{other:?} is not a bool"),
        }),
        CellType::F32List => Owned::F32List(
            items()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .context("bad float in list")?,
        ),
        CellType::F64List => Owned::F64List(
            items()
                .map(str::parse)
                .collect::<Result<_, _>>()
                .context("bad float in list")?,
        ),
        CellType::StrList => Owned::StrList(text.split(sep).map(str::to_owned).collect()),
    })
}

struct RedisOptions {
    pattern: Option<String>,
    infer_ints: bool,
    scan_count: u32,
}

/// A minimal blocking RESP client: pipelined commands over one TCP connection.
struct RespConn {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
}

impl RespConn {
    /// Connects to `redis://[:password@]host:port[/db]`.
    fn connect(url: &str) -> anyhow::Result<RespConn> {
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| anyhow!("not a redis:// URL"))?;
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((auth, rest)) => (Some(auth), rest),
            None => (None, rest),
        };
        let (addr, db) = match rest.split_once('/') {
            Some((addr, db)) if !db.is_empty() => (addr, Some(db)),
            Some((addr, _)) => (addr, None),
            None => (rest, None),
        };
        let addr = if addr.contains(':') {
            addr.to_owned()
        } else {
            format!("{addr}:6379")
        };
        let stream =
            TcpStream::connect(&addr).with_context(|| format!("cannot connect to {addr}"))?;
        stream.set_nodelay(true)?;
        let mut conn = RespConn {
            stream,
            buf: Vec::with_capacity(1 << 16),
            start: 0,
        };
        if let Some(auth) = auth {
            let (user, pass) = auth.split_once(':').unwrap_or(("", auth));
            let reply = if user.is_empty() {
                conn.call(&[b"AUTH", pass.as_bytes()])?
            } else {
                conn.call(&[b"AUTH", user.as_bytes(), pass.as_bytes()])?
            };
            check(&reply, "AUTH")?;
        }
        if let Some(db) = db {
            check(&conn.call(&[b"SELECT", db.as_bytes()])?, "SELECT")?;
        }
        Ok(conn)
    }

    fn call(&mut self, args: &[&[u8]]) -> anyhow::Result<larder_resp::Frame> {
        let mut replies = self.pipeline(&[args.iter().map(|a| a.to_vec()).collect()])?;
        replies.pop().ok_or_else(|| anyhow!("no reply"))
    }

    /// Sends all commands, then reads one reply per command.
    fn pipeline(&mut self, cmds: &[Vec<Vec<u8>>]) -> anyhow::Result<Vec<larder_resp::Frame>> {
        let mut out = Vec::new();
        for cmd in cmds {
            let args: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
            larder_resp::encode_command(&args, &mut out);
        }
        self.stream.write_all(&out)?;
        let mut replies = Vec::with_capacity(cmds.len());
        while replies.len() < cmds.len() {
            match larder_resp::decode(&self.buf[self.start..])
                .map_err(|e| anyhow!("malformed reply from server: {e:?}"))?
            {
                Some((frame, used)) => {
                    self.start += used;
                    replies.push(frame);
                }
                None => {
                    if self.start > 0 {
                        self.buf.drain(..self.start);
                        self.start = 0;
                    }
                    let len = self.buf.len();
                    self.buf.resize(len + (1 << 16), 0);
                    let n = self.stream.read(&mut self.buf[len..])?;
                    self.buf.truncate(len + n);
                    if n == 0 {
                        bail!("server closed the connection");
                    }
                }
            }
        }
        Ok(replies)
    }
}

fn check(reply: &larder_resp::Frame, what: &str) -> anyhow::Result<()> {
    match reply {
        larder_resp::Frame::Error(e) => bail!("{what} failed: {e}"),
        _ => Ok(()),
    }
}

fn redis_string(bytes: &[u8], infer_ints: bool) -> Owned {
    match std::str::from_utf8(bytes) {
        Ok(s) if infer_ints => match s.parse::<i64>() {
            // Only canonical integers: "007" or "+1" stay strings, so they read back the same.
            Ok(i) if i.to_string() == s => Owned::I64(i),
            _ => Owned::Str(s.to_owned()),
        },
        Ok(s) => Owned::Str(s.to_owned()),
        Err(_) => Owned::Bytes(bytes.to_vec()),
    }
}

/// Copies keys from a Redis-protocol server with SCAN, TYPE and GET/LRANGE/HGETALL, pipelined
/// per SCAN batch. Returns the counts of skipped keys by type.
fn import_redis(
    url: &str,
    opts: &RedisOptions,
    builder: &mut CacheBuilder,
    progress: &mut Progress,
) -> anyhow::Result<Vec<(String, u64)>> {
    use larder_resp::Frame;
    let mut conn = RespConn::connect(url)?;
    let mut skipped: Vec<(String, u64)> = Vec::new();
    let mut cursor = b"0".to_vec();
    loop {
        let mut scan: Vec<&[u8]> = vec![b"SCAN", &cursor];
        if let Some(p) = &opts.pattern {
            scan.extend([b"MATCH".as_slice(), p.as_bytes()]);
        }
        let count = opts.scan_count.to_string();
        scan.extend([b"COUNT".as_slice(), count.as_bytes()]);
        let reply = conn.call(&scan)?;
        check(&reply, "SCAN")?;
        let Frame::Array(parts) = reply else {
            bail!("unexpected SCAN reply {reply:?}")
        };
        let (Some(next), Some(Frame::Array(keys))) = (parts.first(), parts.get(1)) else {
            bail!("unexpected SCAN reply shape");
        };
        let next = next
            .as_bytes()
            .ok_or_else(|| anyhow!("bad SCAN cursor"))?
            .to_vec();
        let keys: Vec<Vec<u8>> = keys
            .iter()
            .filter_map(|k| k.as_bytes().map(<[u8]>::to_vec))
            .collect();

        let types = conn.pipeline(
            &keys
                .iter()
                .map(|k| vec![b"TYPE".to_vec(), k.clone()])
                .collect::<Vec<_>>(),
        )?;
        let mut fetch = Vec::new();
        let mut fetched_keys = Vec::new();
        for (key, ty) in keys.into_iter().zip(types) {
            let ty = ty.as_str().unwrap_or("none").to_owned();
            let cmd: Vec<Vec<u8>> = match ty.as_str() {
                "string" => vec![b"GET".to_vec(), key.clone()],
                "list" => vec![
                    b"LRANGE".to_vec(),
                    key.clone(),
                    b"0".to_vec(),
                    b"-1".to_vec(),
                ],
                "hash" => vec![b"HGETALL".to_vec(), key.clone()],
                "none" => continue, // deleted since SCAN saw it
                other => {
                    match skipped.iter_mut().find(|(t, _)| t == other) {
                        Some((_, n)) => *n += 1,
                        None => skipped.push((other.to_owned(), 1)),
                    }
                    continue;
                }
            };
            fetch.push(cmd);
            fetched_keys.push((key, ty));
        }
        let values = conn.pipeline(&fetch)?;
        for ((key, ty), value) in fetched_keys.into_iter().zip(values) {
            check(&value, "read")?;
            match (ty.as_str(), value) {
                (_, Frame::Null) => {}
                ("string", v) => {
                    let bytes = v.as_bytes().ok_or_else(|| anyhow!("bad GET reply"))?;
                    insert(builder, &key, &redis_string(bytes, opts.infer_ints))?;
                    progress.tick(key.len() + bytes.len());
                }
                ("list", Frame::Array(items)) => {
                    let items = items
                        .iter()
                        .map(|i| i.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| {
                            anyhow!(
                                "list {:?} holds non-UTF-8 elements",
                                String::from_utf8_lossy(&key)
                            )
                        })?;
                    let size = items.iter().map(String::len).sum::<usize>();
                    insert(builder, &key, &Owned::StrList(items))?;
                    progress.tick(key.len() + size);
                }
                ("hash", Frame::Array(flat)) => {
                    for pair in flat.chunks(2) {
                        let (Some(f), Some(v)) = (
                            pair.first().and_then(Frame::as_bytes),
                            pair.get(1).and_then(Frame::as_bytes),
                        ) else {
                            bail!("bad HGETALL reply");
                        };
                        hash_field(builder, &key, f, v, opts.infer_ints, progress)?;
                    }
                }
                ("hash", Frame::Map(pairs)) => {
                    for (f, v) in &pairs {
                        let (Some(f), Some(v)) = (f.as_bytes(), v.as_bytes()) else {
                            bail!("bad HGETALL reply");
                        };
                        hash_field(builder, &key, f, v, opts.infer_ints, progress)?;
                    }
                }
                (ty, v) => bail!("unexpected reply for a {ty}: {v:?}"),
            }
        }
        cursor = next;
        if cursor == b"0" {
            return Ok(skipped);
        }
    }
}

fn hash_field(
    builder: &mut CacheBuilder,
    key: &[u8],
    field: &[u8],
    value: &[u8],
    infer_ints: bool,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    let mut flat = Vec::with_capacity(key.len() + 1 + field.len());
    flat.extend_from_slice(key);
    flat.push(b'.');
    flat.extend_from_slice(field);
    insert(builder, &flat, &redis_string(value, infer_ints))?;
    progress.tick(flat.len() + value.len());
    Ok(())
}

/// Looks up every key (or the first `limit`) in shuffled order, `runs` times.
fn bench(file: &Path, runs: u32, limit: Option<usize>) -> anyhow::Result<()> {
    let cache = open(file)?;
    let mut keys: Vec<Vec<u8>> = Vec::with_capacity(cache.len() as usize);
    for entry in cache.iter() {
        keys.push(entry?.0.to_vec());
        if limit.is_some_and(|l| keys.len() >= l) {
            break;
        }
    }
    if keys.is_empty() {
        bail!("{} has no keys", file.display());
    }
    // Fixed-seed Fisher-Yates shuffle (xorshift64*).
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..keys.len()).rev() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        keys.swap(
            i,
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) % (i as u64 + 1)) as usize,
        );
    }
    let mut per_run = Vec::new();
    for run in 0..runs.max(1) {
        let started = Instant::now();
        let mut found = 0usize;
        for k in &keys {
            found += usize::from(std::hint::black_box(cache.get(k)?).is_some());
        }
        let ns = started.elapsed().as_nanos() as f64 / keys.len() as f64;
        anyhow::ensure!(
            found == keys.len(),
            "only {found} of {} keys found",
            keys.len()
        );
        println!("run {}: {ns:.1} ns/lookup", run + 1);
        per_run.push(ns);
    }
    let n = per_run.len() as f64;
    let mean = per_run.iter().sum::<f64>() / n;
    let sd = (per_run.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    println!(
        "{}: {} keys, shuffled lookups: {mean:.1} ± {sd:.1} ns/lookup over {} runs",
        file.display(),
        keys.len(),
        per_run.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("larder-cache-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir.join(name)
    }

    fn quiet() -> Progress {
        Progress::new(true)
    }

    #[test]
    fn json_types_map_as_documented() {
        let cases = [
            (r#""s""#, Owned::Str("s".into())),
            ("42", Owned::I64(42)),
            ("-1.5", Owned::F64(-1.5)),
            ("true", Owned::Bool(true)),
            ("[1, 2.5]", Owned::F64List(vec![1.0, 2.5])),
            (
                r#"["a", "b"]"#,
                Owned::StrList(vec!["a".into(), "b".into()]),
            ),
        ];
        for (json, want) in cases {
            let v: serde_json::Value = serde_json::from_str(json).expect("json");
            assert_eq!(json_to_owned(&v, false).ok(), Some(want), "{json}");
        }
        let v: serde_json::Value = serde_json::from_str("[1, 2]").expect("json");
        assert_eq!(
            json_to_owned(&v, true).ok(),
            Some(Owned::F32List(vec![1.0, 2.0]))
        );
        for bad in ["null", r#"{"a": 1}"#, r#"[1, "a"]"#, "18446744073709551615"] {
            let v: serde_json::Value = serde_json::from_str(bad).expect("json");
            assert!(json_to_owned(&v, false).is_err(), "{bad}");
        }
    }

    #[test]
    fn builds_from_jsonl() {
        let out = temp("jsonl.lcache");
        let input = b"{\"key\": \"a\", \"value\": \"x\"}\n\n{\"key\": \"n\", \"value\": 7}\n\
                      {\"key\": \"v\", \"value\": [0.5, 1]}\n{\"key\": \"t\", \"value\": [\"p\", \"q\"]}\n";
        let mut b = CacheBuilder::new(&out).expect("builder");
        import_jsonl(&input[..], false, &mut b, &mut quiet()).expect("import");
        b.finish().expect("finish");
        let c = Cache::open(&out).expect("open");
        assert_eq!(c.get_str("a").ok(), Some(Some("x")));
        assert_eq!(c.get_i64("n").ok(), Some(Some(7)));
        assert_eq!(c.get_f64_list("v").ok(), Some(Some(&[0.5, 1.0][..])));
        let err = jsonl_record(b"{\"value\": 1}", false).expect_err("missing key");
        assert!(err.to_string().contains("missing \"key\""));
    }

    #[test]
    fn builds_from_csv_with_declared_types() {
        let out = temp("csv.lcache");
        let input = "id,score,tags\nu1,0.5,a;b\nu2,1.25,c\n";
        let opts = CsvOptions {
            key_column: "id".into(),
            value_column: "score".into(),
            value_type: CellType::F64,
            list_separator: ";".into(),
            has_header: true,
        };
        let mut b = CacheBuilder::new(&out).expect("builder");
        import_csv(input.as_bytes(), &opts, &mut b, &mut quiet()).expect("import");
        b.finish().expect("finish");
        let c = Cache::open(&out).expect("open");
        assert_eq!(c.get_f64("u2").ok(), Some(Some(1.25)));

        let opts = CsvOptions {
            value_column: "2".into(),
            value_type: CellType::StrList,
            key_column: "0".into(),
            has_header: false,
            ..opts
        };
        let mut b = CacheBuilder::new(&out).expect("builder");
        import_csv("u1,0.5,a;b\n".as_bytes(), &opts, &mut b, &mut quiet()).expect("import");
        b.finish().expect("finish");
        let c = Cache::open(&out).expect("open");
        let list = c.get_str_list("u1").expect("ok").expect("present");
        assert_eq!(list.to_vec().ok(), Some(vec!["a", "b"]));
        assert!(cell_value(b"maybe", CellType::Bool, ";").is_err());
        assert_eq!(
            cell_value(b"1;2", CellType::F32List, ";").ok(),
            Some(Owned::F32List(vec![1.0, 2.0]))
        );
    }

    #[test]
    fn redis_strings_infer_only_canonical_ints() {
        assert_eq!(redis_string(b"42", true), Owned::I64(42));
        assert_eq!(redis_string(b"042", true), Owned::Str("042".into()));
        assert_eq!(redis_string(b"42", false), Owned::Str("42".into()));
        assert_eq!(redis_string(b"\xff", true), Owned::Bytes(vec![0xff]));
    }

    /// A scripted Redis-protocol server for one connection: answers SCAN (two pages), TYPE,
    /// GET, LRANGE and HGETALL from a fixed keyspace.
    fn fake_redis() -> String {
        use larder_resp::Frame;
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            let Ok((mut sock, _)) = listener.accept() else {
                return;
            };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            loop {
                let (argv, used) = match larder_resp::decode(&buf) {
                    Ok(Some((Frame::Array(argv), used))) => (argv, used),
                    Ok(None) => {
                        match sock.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    }
                    _ => return,
                };
                buf.drain(..used);
                let argv: Vec<String> = argv
                    .iter()
                    .map(|a| a.as_str().unwrap_or("").to_owned())
                    .collect();
                let reply: Vec<u8> = match (argv[0].as_str(), argv.get(1).map(String::as_str)) {
                    ("SCAN", Some("0")) => {
                        b"*2\r\n$1\r\n7\r\n*3\r\n$3\r\nstr\r\n$3\r\nnum\r\n$3\r\nset\r\n".to_vec()
                    }
                    ("SCAN", _) => {
                        b"*2\r\n$1\r\n0\r\n*3\r\n$4\r\nlist\r\n$4\r\nhash\r\n$4\r\ngone\r\n"
                            .to_vec()
                    }
                    ("TYPE", Some("str" | "num")) => b"+string\r\n".to_vec(),
                    ("TYPE", Some("set")) => b"+set\r\n".to_vec(),
                    ("TYPE", Some("list")) => b"+list\r\n".to_vec(),
                    ("TYPE", Some("hash")) => b"+hash\r\n".to_vec(),
                    ("TYPE", _) => b"+none\r\n".to_vec(),
                    ("GET", Some("str")) => b"$5\r\nhello\r\n".to_vec(),
                    ("GET", Some("num")) => b"$2\r\n12\r\n".to_vec(),
                    ("LRANGE", _) => b"*2\r\n$1\r\na\r\n$1\r\nb\r\n".to_vec(),
                    ("HGETALL", _) => {
                        b"*4\r\n$1\r\nf\r\n$1\r\n1\r\n$1\r\ng\r\n$2\r\nhi\r\n".to_vec()
                    }
                    _ => b"-ERR unknown\r\n".to_vec(),
                };
                if sock.write_all(&reply).is_err() {
                    return;
                }
            }
        });
        format!("redis://{addr}")
    }

    #[test]
    fn builds_from_a_redis_server() {
        let url = fake_redis();
        let out = temp("redis.lcache");
        let mut b = CacheBuilder::new(&out).expect("builder");
        let opts = RedisOptions {
            pattern: Some("*".into()),
            infer_ints: true,
            scan_count: 10,
        };
        let skipped = import_redis(&url, &opts, &mut b, &mut quiet()).expect("import");
        assert_eq!(skipped, vec![("set".to_owned(), 1)]);
        b.finish().expect("finish");
        let c = Cache::open(&out).expect("open");
        assert_eq!(c.len(), 5);
        assert_eq!(c.get_str("str").ok(), Some(Some("hello")));
        assert_eq!(c.get_i64("num").ok(), Some(Some(12)));
        let list = c.get_str_list("list").expect("ok").expect("present");
        assert_eq!(list.to_vec().ok(), Some(vec!["a", "b"]));
        assert_eq!(c.get_i64("hash.f").ok(), Some(Some(1)));
        assert_eq!(c.get_str("hash.g").ok(), Some(Some("hi")));
    }

    #[test]
    fn subcommands_run_end_to_end() {
        let input = temp("e2e.jsonl");
        std::fs::write(&input, "{\"key\": \"k\", \"value\": [\"x\"]}\n").expect("write");
        let out = temp("e2e.lcache");
        let cli = <Cli as clap::Parser>::try_parse_from([
            "cache",
            "build",
            out.to_str().expect("utf8"),
            "--from",
            input.to_str().expect("utf8"),
            "--name",
            "e2e",
            "--quiet",
        ])
        .expect("parse");
        run(cli.cmd).expect("build");
        for args in [
            vec!["get", "k"],
            vec!["info"],
            vec!["verify"],
            vec!["bench", "--runs", "1"],
        ] {
            let mut argv = vec!["cache", args[0], out.to_str().expect("utf8")];
            argv.extend(&args[1..]);
            let cli = <Cli as clap::Parser>::try_parse_from(argv).expect("parse");
            run(cli.cmd).expect("subcommand");
        }
        let cli = <Cli as clap::Parser>::try_parse_from([
            "cache",
            "get",
            out.to_str().expect("utf8"),
            "nope",
        ])
        .expect("parse");
        assert!(run(cli.cmd).is_err());
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: CacheCommand,
    }
}
