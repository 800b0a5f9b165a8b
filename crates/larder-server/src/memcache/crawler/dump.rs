//! A running `lru_crawler metadump` or `mgdump`: database 0 walked shard by shard, a bounded
//! batch of entries per shard lock, its lines written into the connection's output a turn at
//! a time ([`super::super::job`]). Each item is dumped as it is when its batch is read;
//! expired items and keys of other types are skipped.

use std::io::Write;

use base64::Engine;
use larder_engine::{Entry, SlotId, SHARDS_PER_DB};

use super::Claim;
use crate::items::{FETCHED, KEY_BINARY};
use crate::memcache::slabs::{self, WALK_BATCH};
use crate::memcache::Ctx;

/// What a dump writes per item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::memcache) enum Format {
    /// `key=<url-encoded> exp=<-1|unix> la=<unix> cas=<n> fetch=<yes|no> cls=<n> size=<n>`
    /// lines, then `END` (memcached 1.6.18's metadump).
    Meta,
    /// `mg <key>` lines (`mg <base64> b` for binary keys), then `EN` (memcached 1.6.19's
    /// mgdump; 1.6.18 has none).
    Mg,
}

/// A dump in progress.
pub(in crate::memcache) struct Dump {
    format: Format,
    /// Bit `id` set for each class to dump; `None`: all.
    classes: Option<u64>,
    shard: usize,
    slot: SlotId,
    /// The crawler, held until the dump is dropped.
    _claim: Claim,
}

impl Dump {
    pub(super) fn new(format: Format, classes: Option<u64>, claim: Claim) -> Dump {
        Dump {
            format,
            classes,
            shard: 0,
            slot: 0,
            _claim: claim,
        }
    }

    /// Writes the lines of at most `entries` entries onto `out`, stopping early once `out`
    /// reaches `limit` bytes; returns true when the dump is complete (its last line written).
    pub(in crate::memcache) fn step(
        &mut self,
        cx: &Ctx<'_>,
        out: &mut Vec<u8>,
        mut entries: usize,
        limit: usize,
    ) -> bool {
        let now_s = cx.now_ms / 1000;
        let clock = larder_engine::lru_clock(cx.now_ms);
        while self.shard < SHARDS_PER_DB && entries > 0 && out.len() < limit {
            let shard = cx.db().lock(self.shard);
            let mut seen = 0;
            let next = shard.scan(self.slot, WALK_BATCH.min(entries), |e| {
                seen += 1;
                if !slabs::is_item(e) || e.is_expired(cx.now_ms) {
                    return;
                }
                let (cls, _) = slabs::class_of(e.memory_bytes());
                if self.classes.is_some_and(|ids| ids & (1 << cls) == 0) {
                    return;
                }
                match self.format {
                    Format::Meta => {
                        // Under an LFU policy the entry keeps no access time: `la` is now.
                        let idle = if cx.lfu {
                            0
                        } else {
                            clock.saturating_sub(e.access())
                        };
                        meta_line(out, e, now_s.saturating_sub(u64::from(idle)), cls);
                    }
                    Format::Mg => mg_line(out, e),
                }
            });
            drop(shard);
            entries = entries.saturating_sub(seen.max(1));
            match next {
                Some(slot) => self.slot = slot,
                None => {
                    self.shard += 1;
                    self.slot = 0;
                }
            }
        }
        if self.shard < SHARDS_PER_DB {
            return false;
        }
        out.extend_from_slice(match self.format {
            Format::Meta => b"END\r\n",
            Format::Mg => b"EN\r\n",
        });
        true
    }
}

/// One metadump line, as memcached 1.6.18 prints it (ending in `\n` alone). `exp` is the
/// deadline in Unix seconds, rounded up.
fn meta_line(out: &mut Vec<u8>, e: &Entry, last_access_s: u64, cls: usize) {
    out.extend_from_slice(b"key=");
    super::super::uriencode(e.key(), |b| out.push(b));
    let exp = e.expire_at_ms().map_or(-1, |ms| {
        i64::try_from(ms.div_ceil(1000)).unwrap_or(i64::MAX)
    });
    let fetched = if e.mc_state() & FETCHED != 0 {
        "yes"
    } else {
        "no"
    };
    // Writing into a Vec cannot fail.
    let _ = writeln!(
        out,
        " exp={exp} la={last_access_s} cas={} fetch={fetched} cls={cls} size={}",
        e.version(),
        e.memory_bytes(),
    );
}

/// One mgdump line: the key as is, or in base64 with the `b` flag when it was stored as a
/// binary key or holds bytes a text key cannot (space, control characters).
fn mg_line(out: &mut Vec<u8>, e: &Entry) {
    let key = e.key();
    out.extend_from_slice(b"mg ");
    let text_safe = !key.is_empty() && key.iter().all(|&b| b > b' ' && b != 0x7f);
    if e.mc_state() & KEY_BINARY == 0 && text_safe {
        out.extend_from_slice(key);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(
            base64::engine::general_purpose::STANDARD
                .encode(key)
                .as_bytes(),
        );
        out.extend_from_slice(b" b\r\n");
    }
}
