//! `lru_crawler`: `metadump` and `mgdump` (streamed by [`dump::Dump`]), `crawl` (a pass that
//! reclaims the expired items of database 0), and the crawler's settings (`enable`,
//! `disable`, `sleep`, `tocrawl`), answered as memcached 1.6.18 answers them. larder's crawl
//! is one pass over every item without pauses: `sleep 0` and `tocrawl 0` (no limit) answer
//! `OK`, other values a `CLIENT_ERROR` that says so.
//!
//! As memcached has one crawler, one dump runs at a time, server-wide: another `metadump`,
//! `mgdump` or `crawl` meanwhile answers `BUSY currently processing crawler request`.

mod dump;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use larder_memcache::{parse_u32, TextReply, TextWriter, Tokens};

pub(super) use dump::Dump;
use dump::Format;

use super::job::Job;
use super::slabs::{self, CLASSES};
use super::{Ctx, Flow};

/// The crawler's state and counters (part of [`super::McShared`]).
pub struct Crawler {
    /// `lru_crawler enable|disable` (memcached starts with it enabled).
    enabled: AtomicBool,
    /// Set while a dump runs; its [`Claim`] clears it.
    busy: Arc<AtomicBool>,
    /// Dumps and crawls started (`lru_crawler_starts`).
    starts: AtomicU64,
    /// Items removed by crawls (`crawler_reclaimed`).
    reclaimed: AtomicU64,
    /// Items crawls went over (`crawler_items_checked`).
    checked: AtomicU64,
    /// `crawler_reclaimed` of each class.
    class_reclaimed: [AtomicU64; CLASSES],
}

impl Default for Crawler {
    fn default() -> Crawler {
        Crawler {
            enabled: AtomicBool::new(true),
            busy: Arc::default(),
            starts: AtomicU64::new(0),
            reclaimed: AtomicU64::new(0),
            checked: AtomicU64::new(0),
            class_reclaimed: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl Crawler {
    /// Whether the crawler is enabled (`stats settings`' `lru_crawler`).
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Whether a dump is running (`lru_crawler_running`).
    pub fn running(&self) -> bool {
        self.busy.load(Ordering::Relaxed)
    }

    /// Dumps and crawls started.
    pub fn starts(&self) -> u64 {
        self.starts.load(Ordering::Relaxed)
    }

    /// Items removed by crawls.
    pub fn reclaimed(&self) -> u64 {
        self.reclaimed.load(Ordering::Relaxed)
    }

    /// Items crawls went over.
    pub fn checked(&self) -> u64 {
        self.checked.load(Ordering::Relaxed)
    }

    /// Items of class `id` removed by crawls.
    pub fn class_reclaimed(&self, id: usize) -> u64 {
        self.class_reclaimed
            .get(id.wrapping_sub(1))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Takes the crawler for a dump, unless one runs.
    fn claim(&self) -> Option<Claim> {
        self.busy
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .ok()
            .map(|_| Claim(Arc::clone(&self.busy)))
    }
}

/// The crawler taken by a running dump; dropped when the dump ends or its connection goes.
pub(super) struct Claim(Arc<AtomicBool>);

impl Drop for Claim {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

const BUSY: &[u8] = b"BUSY currently processing crawler request\r\n";
const BADCLASS: &[u8] = b"BADCLASS invalid class id\r\n";
/// A class list that names no class (`,`).
const NOTSTARTED: &[u8] = b"NOTSTARTED no items to crawl\r\n";
const DISABLED: &str = "lru crawler disabled";
const BAD_FORMAT: &str = "bad command line format";

/// `lru_crawler <subcommand> ...`. memcached matches on the number of tokens first: a
/// subcommand with the wrong number of arguments is `ERROR`.
pub(super) fn command(cx: &Ctx<'_>, args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    let words: Vec<&[u8]> = args.take(3).collect();
    let c = &cx.mc.crawler;
    match words.as_slice() {
        [b"crawl", classes] => crawl(cx, classes, w),
        [sub @ (b"metadump" | b"mgdump"), classes] => {
            let format = if *sub == b"metadump" {
                Format::Meta
            } else {
                Format::Mg
            };
            start_dump(cx, format, classes, w);
        }
        [b"tocrawl", n] => match parse_u32(n) {
            Some(0) => w.reply(TextReply::Ok),
            Some(_) => w.client_error(
                "tocrawl not supported: larder's crawl checks every item (tocrawl 0)",
            ),
            None => w.client_error(BAD_FORMAT),
        },
        [b"sleep", n] => match parse_u32(n) {
            Some(n) if n > 1_000_000 => w.client_error("sleep must be one second or less"),
            Some(0) => w.reply(TextReply::Ok),
            Some(_) => w.client_error(
                "sleep not supported: larder's crawl makes one pass without pauses (sleep 0)",
            ),
            None => w.client_error(BAD_FORMAT),
        },
        [b"enable"] => {
            if c.enabled.swap(true, Ordering::Relaxed) {
                w.raw(b"ERROR failed to start lru crawler thread\r\n");
            } else {
                w.reply(TextReply::Ok);
            }
        }
        [b"disable"] => {
            c.enabled.store(false, Ordering::Relaxed);
            w.reply(TextReply::Ok);
        }
        _ => w.reply(TextReply::Error),
    }
    Flow::Continue
}

/// Which classes a crawler request names: `all`, `hash` (a dump in hash order; larder's
/// shard order is its hash order), or ids `1,2,...` from 1 to 63 as memcached reads them
/// (`strtok` on commas: empty items are skipped). `Err` is memcached's BADCLASS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Classes {
    All,
    Hash,
    /// Bit `id` set for each class named.
    Ids(u64),
}

fn classes(word: &[u8]) -> Result<Classes, ()> {
    match word {
        b"all" => Ok(Classes::All),
        b"hash" => Ok(Classes::Hash),
        _ => {
            let mut ids = 0u64;
            for item in word.split(|&b| b == b',').filter(|s| !s.is_empty()) {
                match parse_u32(item) {
                    Some(id @ 1..=63) => ids |= 1 << id,
                    _ => return Err(()),
                }
            }
            Ok(Classes::Ids(ids))
        }
    }
}

/// `lru_crawler metadump|mgdump <classes>`: starts the dump, which the connection streams
/// out before it reads its next request.
fn start_dump(cx: &Ctx<'_>, format: Format, word: &[u8], w: &mut TextWriter<'_>) {
    let c = &cx.mc.crawler;
    if !c.enabled() {
        return w.client_error(DISABLED);
    }
    let filter = match classes(word) {
        Ok(Classes::Ids(0)) => return w.raw(NOTSTARTED),
        Ok(Classes::Ids(ids)) => Some(ids),
        Ok(_) => None,
        Err(()) => return w.raw(BADCLASS),
    };
    let Some(claim) = c.claim() else {
        return w.raw(BUSY);
    };
    c.starts.fetch_add(1, Ordering::Relaxed);
    cx.start_job(Job::Dump(Dump::new(format, filter, claim)));
}

/// `lru_crawler crawl <classes>`: removes the expired items of database 0 now, shard by
/// shard, and answers `OK`. larder's expiry already removes items at their deadline, so this
/// pass finds the few whose deadline passed since; it takes every class, whichever are named.
fn crawl(cx: &Ctx<'_>, word: &[u8], w: &mut TextWriter<'_>) {
    let c = &cx.mc.crawler;
    if !c.enabled() {
        return w.client_error(DISABLED);
    }
    match classes(word) {
        Err(()) => return w.raw(BADCLASS),
        // memcached walks its hash table only for dumps.
        Ok(Classes::Hash) => return w.raw(b"ERROR an unknown error happened\r\n"),
        Ok(Classes::Ids(0)) => return w.raw(NOTSTARTED),
        Ok(_) => {}
    }
    if c.running() {
        return w.raw(BUSY);
    }
    c.starts.fetch_add(1, Ordering::Relaxed);
    let db = cx.db();
    let (mut checked, mut removed) = (0, 0);
    for i in 0..larder_engine::SHARDS_PER_DB {
        let mut shard = db.lock(i);
        checked += shard.len() as u64;
        loop {
            let n = shard.expire_due(cx.now_ms, slabs::WALK_BATCH, |e| {
                if slabs::is_item(e) {
                    let (id, _) = slabs::class_of(e.memory_bytes());
                    c.class_reclaimed[id - 1].fetch_add(1, Ordering::Relaxed);
                }
            });
            removed += n as u64;
            if n < slabs::WALK_BATCH {
                break;
            }
            // Let others at the shard between batches.
            drop(shard);
            shard = db.lock(i);
        }
    }
    cx.server.keyspace.note_expired(removed);
    c.checked.fetch_add(checked, Ordering::Relaxed);
    c.reclaimed.fetch_add(removed, Ordering::Relaxed);
    w.reply(TextReply::Ok);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_lists_read_as_memcached_reads_them() {
        assert_eq!(classes(b"all"), Ok(Classes::All));
        assert_eq!(classes(b"hash"), Ok(Classes::Hash));
        assert_eq!(classes(b"1,,2"), Ok(Classes::Ids(0b110)));
        assert_eq!(classes(b"63"), Ok(Classes::Ids(1 << 63)));
        for bad in [&b"0"[..], b"64", b"x", b"-1", b"1,x"] {
            assert_eq!(classes(bad), Err(()), "{bad:?}");
        }
    }
}
