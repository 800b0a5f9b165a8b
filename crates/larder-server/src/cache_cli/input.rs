//! What `build` reads: the input source (a file, stdin or a redis:// URL), values as parsed
//! from an input ([`Owned`]), progress on stderr, and the JSONL and CSV readers. The Redis
//! reader is in `redis_input`.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use larder_cache::{CacheBuilder, Value};

use super::{CellType, InputFormat};

/// An owned value parsed from an input, inserted by reference.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Owned {
    Bytes(Vec<u8>),
    Str(String),
    I64(i64),
    F64(f64),
    Bool(bool),
    F32List(Vec<f32>),
    F64List(Vec<f64>),
    StrList(Vec<String>),
}

pub(super) fn insert(builder: &mut CacheBuilder, key: &[u8], value: &Owned) -> anyhow::Result<()> {
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
pub(super) enum Source {
    File(InputFormat, Box<dyn BufRead>),
    Redis(String),
}

impl Source {
    pub(super) fn parse(from: &str, format: Option<InputFormat>) -> anyhow::Result<Source> {
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
pub(super) struct Progress {
    quiet: bool,
    started: Instant,
    last: Instant,
    keys: u64,
    bytes: u64,
    printed: bool,
}

impl Progress {
    pub(super) fn new(quiet: bool) -> Progress {
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

    pub(super) fn tick(&mut self, bytes: usize) {
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

    pub(super) fn done(&mut self) {
        if self.printed {
            self.print(Instant::now());
            eprintln!();
        }
    }
}

/// Reads JSONL: one `{"key": string, "value": ...}` object per line; blank lines are skipped.
pub(super) fn import_jsonl(
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

pub(super) fn jsonl_record(line: &[u8], f32: bool) -> anyhow::Result<(String, Owned)> {
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

pub(super) fn json_to_owned(v: &serde_json::Value, f32: bool) -> anyhow::Result<Owned> {
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

pub(super) struct CsvOptions {
    pub(super) key_column: String,
    pub(super) value_column: String,
    pub(super) value_type: CellType,
    pub(super) list_separator: String,
    pub(super) has_header: bool,
}

/// Reads CSV: one key column and one value column of a declared type.
pub(super) fn import_csv(
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

pub(super) fn cell_value(cell: &[u8], ty: CellType, sep: &str) -> anyhow::Result<Owned> {
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
