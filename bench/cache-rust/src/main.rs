//! AxonCache's benchmark, side by side: insert N keys `key_<i>` -> `val_<i>`, then look every
//! key up in shuffled order; repeat R times and report mean and standard deviation of ns per
//! insert and per lookup, plus file size and build time, as a markdown table.
//!
//! Usage: `cargo run --release -- [--keys N] [--runs R] [--dir DIR] [--only NAME,...]`
//!
//! Method notes:
//! - Keys and values are generated before timing; shuffled lookup order is a fixed-seed
//!   permutation, the same for every store. Lookup loops use no `black_box` per key (it acts
//!   as a full memory clobber and would add reloads to every store's loop); the checked sum of
//!   the values keeps the lookups from being optimised away.
//! - Each lookup reads the value's bytes (its length and last byte are folded into a checked
//!   sum), as a caller would; a lookup that never touches the value would flatter the hash maps,
//!   whose buckets hold the value's length but not its bytes.
//! - "insert" for a file store is the whole build: create, insert all, finish (index, header,
//!   fsync, rename for larder; commit for LMDB; finish for CDB).
//! - Files are written to `--dir` (default: a directory under the system temp dir) and are
//!   in the page cache when looked up, as in a warm service.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// CPU time of the calling thread. The benchmark machine is shared, so wall time includes time
/// spent descheduled; thread CPU time does not.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    #[allow(unsafe_code)]
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A stopwatch reading both clocks.
struct Clock {
    wall: Instant,
    cpu: Duration,
}

impl Clock {
    fn start() -> Clock {
        Clock { wall: Instant::now(), cpu: thread_cpu() }
    }
    /// (wall, cpu) elapsed.
    fn stop(&self) -> (Duration, Duration) {
        (self.wall.elapsed(), thread_cpu().saturating_sub(self.cpu))
    }
}

struct Args {
    keys: usize,
    runs: usize,
    dir: PathBuf,
    only: Option<Vec<String>>,
    /// Extra lookup passes per run, reported on stderr (warm-mapping diagnostics).
    extra_passes: usize,
}

fn parse_args() -> Args {
    let mut args = Args {
        keys: 1_000_000,
        runs: 3,
        dir: std::env::temp_dir().join("larder-cache-bench"),
        only: None,
        extra_passes: 0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--keys" => args.keys = val().parse().expect("--keys N"),
            "--runs" => args.runs = val().parse().expect("--runs R"),
            "--dir" => args.dir = PathBuf::from(val()),
            "--extra-passes" => args.extra_passes = val().parse().expect("--extra-passes P"),
            "--only" => args.only = Some(val().split(',').map(str::to_owned).collect()),
            other => panic!("unknown argument {other}"),
        }
    }
    args
}

/// One run's measurements; `*_ns` are per key, from thread CPU time, `*_wall_ns` from wall time.
#[derive(Default, Clone, Copy)]
struct Run {
    insert_ns: f64,
    insert_wall_ns: f64,
    lookup_ns: f64,
    lookup_wall_ns: f64,
    build_ms: f64,
    file_bytes: u64,
}

trait Store {
    const NAME: &'static str;
    /// Inserts all pairs (timed by the caller) and returns bytes on disk (0 for in-memory).
    fn build(dir: &Path, keys: &[String], vals: &[String]) -> (Self, u64)
    where
        Self: Sized;
    /// Looks every key up in `order` and returns the summed value length.
    fn lookup_all(&self, keys: &[String], order: &[u32]) -> usize;
}

struct Larder(larder_cache::Cache);

impl Store for Larder {
    const NAME: &'static str = "larder cache file";
    fn build(dir: &Path, keys: &[String], vals: &[String]) -> (Self, u64) {
        let path = dir.join("bench.lcache");
        let mut b = larder_cache::CacheBuilder::new(&path).expect("builder").name("bench");
        for (k, v) in keys.iter().zip(vals) {
            b.insert(k, larder_cache::Value::Str(v)).expect("insert");
        }
        let stats = b.finish().expect("finish");
        (Larder(larder_cache::Cache::open(&path).expect("open")), stats.file_bytes)
    }
    fn lookup_all(&self, keys: &[String], order: &[u32]) -> usize {
        let mut total = 0;
        for &i in order {
            let v = self.0.get_str(&keys[i as usize]).ok().flatten();
            total += v.map_or(0, |v| use_value(v.as_bytes()));
        }
        total
    }
}

struct Hashbrown(hashbrown::HashMap<String, String>);

impl Store for Hashbrown {
    const NAME: &'static str = "hashbrown HashMap<String,String>";
    fn build(_: &Path, keys: &[String], vals: &[String]) -> (Self, u64) {
        let mut m = hashbrown::HashMap::new();
        for (k, v) in keys.iter().zip(vals) {
            m.insert(k.clone(), v.clone());
        }
        (Hashbrown(m), 0)
    }
    fn lookup_all(&self, keys: &[String], order: &[u32]) -> usize {
        let mut total = 0;
        for &i in order {
            let v = self.0.get(keys[i as usize].as_str());
            total += v.map_or(0, |v| use_value(v.as_bytes()));
        }
        total
    }
}

struct StdMap(HashMap<String, String>);

impl Store for StdMap {
    const NAME: &'static str = "std HashMap<String,String>";
    fn build(_: &Path, keys: &[String], vals: &[String]) -> (Self, u64) {
        let mut m = HashMap::new();
        for (k, v) in keys.iter().zip(vals) {
            m.insert(k.clone(), v.clone());
        }
        (StdMap(m), 0)
    }
    fn lookup_all(&self, keys: &[String], order: &[u32]) -> usize {
        let mut total = 0;
        for &i in order {
            let v = self.0.get(keys[i as usize].as_str());
            total += v.map_or(0, |v| use_value(v.as_bytes()));
        }
        total
    }
}

struct Lmdb {
    env: heed::Env,
    db: heed::Database<heed::types::Bytes, heed::types::Bytes>,
}

impl Store for Lmdb {
    const NAME: &'static str = "LMDB (heed 0.22)";
    fn build(dir: &Path, keys: &[String], vals: &[String]) -> (Self, u64) {
        let path = dir.join("lmdb");
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("mkdir");
        // SAFETY (heed's contract): the environment is opened once in this process.
        #[allow(unsafe_code)]
        let env = unsafe {
            heed::EnvOpenOptions::new().map_size(1 << 30).max_dbs(1).open(&path).expect("env")
        };
        let mut wtxn = env.write_txn().expect("txn");
        let db: heed::Database<heed::types::Bytes, heed::types::Bytes> =
            env.create_database(&mut wtxn, None).expect("db");
        for (k, v) in keys.iter().zip(vals) {
            db.put(&mut wtxn, k.as_bytes(), v.as_bytes()).expect("put");
        }
        wtxn.commit().expect("commit");
        let size = std::fs::metadata(path.join("data.mdb")).map(|m| m.len()).unwrap_or(0);
        (Lmdb { env, db }, size)
    }
    fn lookup_all(&self, keys: &[String], order: &[u32]) -> usize {
        let rtxn = self.env.read_txn().expect("rtxn");
        let mut total = 0;
        for &i in order {
            let v = self.db.get(&rtxn, keys[i as usize].as_bytes()).expect("get");
            total += v.map_or(0, use_value);
        }
        total
    }
}

struct Cdb(cdb::CDB);

impl Store for Cdb {
    const NAME: &'static str = "CDB (cdb 0.6)";
    fn build(dir: &Path, keys: &[String], vals: &[String]) -> (Self, u64) {
        let path = dir.join("bench.cdb");
        let mut w = cdb::CDBWriter::create(path.to_string_lossy().into_owned()).expect("cdb create");
        for (k, v) in keys.iter().zip(vals) {
            w.add(k.as_bytes(), v.as_bytes()).expect("add");
        }
        w.finish().expect("finish");
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        (Cdb(cdb::CDB::open(&path).expect("open")), size)
    }
    fn lookup_all(&self, keys: &[String], order: &[u32]) -> usize {
        let mut total = 0;
        for &i in order {
            if let Some(Ok(v)) = self.0.find(keys[i as usize].as_bytes()).next() {
                total += use_value(&v);
            }
        }
        total
    }
}

/// What every store does with a value it found: read its bytes, as a caller would. Returns
/// the length, so the sum can be checked; the last byte is folded in so that it is read.
#[inline(always)]
fn use_value(v: &[u8]) -> usize {
    v.len() + usize::from(v.last().copied().unwrap_or(0) == 0xff)
}

/// One run of one store: build, then one timed lookup pass (plus untimed-in-table extra passes).
fn run_store<S: Store>(args: &Args, keys: &[String], vals: &[String], order: &[u32]) -> Run {
    let expected: usize = vals.iter().map(String::len).sum();
    let n = keys.len() as f64;
    let clock = Clock::start();
    let (store, file_bytes) = S::build(&args.dir, keys, vals);
    let (build_wall, build_cpu) = clock.stop();
    let clock = Clock::start();
    let total = store.lookup_all(keys, order);
    let (lookup_wall, lookup_cpu) = clock.stop();
    assert_eq!(total, expected, "{} returned wrong values", S::NAME);
    for pass in 0..args.extra_passes {
        let clock = Clock::start();
        black_box(store.lookup_all(keys, order));
        let (wall, cpu) = clock.stop();
        eprintln!(
            "  {} extra pass {pass}: {:.1} ns cpu, {:.1} ns wall",
            S::NAME,
            cpu.as_nanos() as f64 / n,
            wall.as_nanos() as f64 / n
        );
    }
    drop(store);
    Run {
        insert_ns: build_cpu.as_nanos() as f64 / n,
        insert_wall_ns: build_wall.as_nanos() as f64 / n,
        lookup_ns: lookup_cpu.as_nanos() as f64 / n,
        lookup_wall_ns: lookup_wall.as_nanos() as f64 / n,
        build_ms: build_wall.as_secs_f64() * 1e3,
        file_bytes,
    }
}

fn mean_sd(xs: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = xs.clone().count() as f64;
    let mean = xs.clone().sum::<f64>() / n;
    let var = xs.map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// A fixed-seed Fisher-Yates shuffle (xorshift64*), so every store sees the same order.
fn shuffled(n: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..n).rev() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        let j = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

fn main() {
    let args = parse_args();
    std::fs::create_dir_all(&args.dir).expect("bench dir");
    let keys: Vec<String> = (0..args.keys).map(|i| format!("key_{i}")).collect();
    let vals: Vec<String> = (0..args.keys).map(|i| format!("val_{i}")).collect();
    let raw: u64 = keys.iter().chain(&vals).map(|s| s.len() as u64).sum();
    let order = shuffled(args.keys);
    let wanted = |name: &str| {
        args.only.as_ref().is_none_or(|o| o.iter().any(|w| name.to_lowercase().contains(w)))
    };
    // Runs are interleaved (run 1 of every store, then run 2, ...) so that a noisy neighbour
    // on the shared machine slows every store alike instead of one store's whole series.
    type Runner = fn(&Args, &[String], &[String], &[u32]) -> Run;
    let stores: [(&str, Runner); 5] = [
        (Larder::NAME, run_store::<Larder>),
        (Hashbrown::NAME, run_store::<Hashbrown>),
        (StdMap::NAME, run_store::<StdMap>),
        (Lmdb::NAME, run_store::<Lmdb>),
        (Cdb::NAME, run_store::<Cdb>),
    ];
    let mut rows: Vec<(&str, Runner, Vec<Run>)> =
        stores.into_iter().filter(|(name, _)| wanted(name)).map(|(n, r)| (n, r, vec![])).collect();
    for run in 0..args.runs {
        for (name, runner, runs) in &mut rows {
            eprintln!("run {}: {name} ...", run + 1);
            // Consolidate the previous store's freed memory now, untimed: glibc otherwise does
            // it inside the next store's first large allocation (malloc_consolidate over
            // millions of freed strings), charging one store's cleanup to another's clock.
            #[allow(unsafe_code)]
            // SAFETY: malloc_trim only reorganises the allocator's free lists.
            unsafe {
                libc::malloc_trim(0);
            }
            let r = runner(&args, &keys, &vals, &order);
            eprintln!(
                "  insert {:.1} ns cpu ({:.1} wall), lookup {:.1} ns cpu",
                r.insert_ns, r.insert_wall_ns, r.lookup_ns
            );
            runs.push(r);
        }
    }
    let hashbrown_ns = rows
        .iter()
        .find(|(name, ..)| *name == Hashbrown::NAME)
        .map(|(_, _, runs)| mean_sd(runs.iter().map(|r| r.lookup_ns)).0);

    println!(
        "{} keys `key_<i>` -> `val_<i>` ({} raw key+value bytes), {} runs, shuffled lookups; \
         ns per key from thread CPU time (wall time in the last columns)\n",
        args.keys, raw, args.runs
    );
    println!(
        "| store | lookup ns (mean ± sd) | insert ns (mean ± sd) | build ms (wall) | file bytes \
         | file / raw | lookup / hashbrown | lookup wall ns | insert wall ns |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, _, runs) in &rows {
        let (l, ls) = mean_sd(runs.iter().map(|r| r.lookup_ns));
        let (i, is) = mean_sd(runs.iter().map(|r| r.insert_ns));
        let (lw, lws) = mean_sd(runs.iter().map(|r| r.lookup_wall_ns));
        let (iw, iws) = mean_sd(runs.iter().map(|r| r.insert_wall_ns));
        let (b, _) = mean_sd(runs.iter().map(|r| r.build_ms));
        let vs = hashbrown_ns.map_or("-".to_owned(), |h| format!("{:.2}x", l / h));
        let size = runs.last().map_or(0, |r| r.file_bytes);
        let ratio =
            if size == 0 { "-".to_owned() } else { format!("{:.2}", size as f64 / raw as f64) };
        let size = if size == 0 { "in memory".to_owned() } else { size.to_string() };
        println!(
            "| {name} | {l:.1} ± {ls:.1} | {i:.1} ± {is:.1} | {b:.0} | {size} | {ratio} | {vs} \
             | {lw:.1} ± {lws:.1} | {iw:.1} ± {iws:.1} |"
        );
    }
}
