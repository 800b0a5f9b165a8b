//! Slab classes for `stats slabs`, `stats items` and the crawler's `cls=`.
//!
//! larder has no slab allocator: an item is an entry in its shard's slot slab plus one heap
//! block holding key and value. Its *footprint* is what larder accounts for it
//! ([`Entry::memory_bytes`]: the slot, its share of the index, the block), and its class is
//! the class memcached 1.6.18 would pick for an item of that size with its default series
//! (`-n 48 -f 1.25`, 1 MiB pages, 512 KiB largest chunk): 96, 120, 152, ... 524288 bytes,
//! classes 1 to 39. A footprint over the largest chunk is counted in the last class as the
//! number of largest chunks it spans, as memcached chains a large item across chunks.
//!
//! The figures come from a walk over database 0, one shard lock at a time and a bounded
//! number of entries per lock ([`Tally::walk`]): exact, and never holding a shard for
//! long. Keys of other types than strings (RESP collections) are not items and not counted.

use larder_engine::{Entry, SlotId, SHARDS_PER_DB};

use super::Ctx;

/// memcached's default `-n` (minimum item data) and item header size: class 1 is their sum.
const FIRST_CHUNK: u32 = 48 + 48;
/// memcached's default slab page.
pub const PAGE: u32 = 1 << 20;
/// memcached's default largest chunk (`slab_chunk_max`): half a page.
pub const CHUNK_MAX: u32 = PAGE / 2;
/// Number of classes of the default series.
pub const CLASSES: usize = class_count();
/// Entries looked at per shard lock.
pub const WALK_BATCH: usize = 1024;

/// The chunk size of class `i` (1-based) of memcached's series: grow by 1.25 (truncated, as
/// memcached's `unsigned int` product), round up to 8, stop before `CHUNK_MAX / 1.25`; the
/// last class is `CHUNK_MAX`.
const fn series(i: usize) -> Option<u32> {
    let mut size = FIRST_CHUNK;
    let mut n = 1;
    loop {
        // `size >= CHUNK_MAX / 1.25`, in integers.
        if size as u64 * 5 >= CHUNK_MAX as u64 * 4 {
            return if n == i { Some(CHUNK_MAX) } else { None };
        }
        size = size.next_multiple_of(8);
        if n == i {
            return Some(size);
        }
        size = size * 5 / 4;
        n += 1;
    }
}

const fn class_count() -> usize {
    let mut n = 1;
    while series(n + 1).is_some() {
        n += 1;
    }
    n
}

/// The chunk size of class `id` (1 to [`CLASSES`]).
pub fn chunk_size(id: usize) -> u32 {
    series(id).unwrap_or(CHUNK_MAX)
}

/// The class of an item of `footprint` bytes, and the chunks it takes there.
pub fn class_of(footprint: usize) -> (usize, u64) {
    let sizes = sizes();
    match sizes.iter().position(|&s| footprint <= s as usize) {
        Some(i) => (i + 1, 1),
        None => (CLASSES, footprint.div_ceil(CHUNK_MAX as usize) as u64),
    }
}

fn sizes() -> &'static [u32; CLASSES] {
    static SIZES: [u32; CLASSES] = {
        let mut s = [0; CLASSES];
        let mut i = 0;
        while i < CLASSES {
            s[i] = match series(i + 1) {
                Some(v) => v,
                None => CHUNK_MAX,
            };
            i += 1;
        }
        s
    };
    &SIZES
}

/// Whether an entry is a memcached item: a string (RESP collections in database 0 are not).
pub fn is_item(e: &Entry) -> bool {
    e.string().is_some()
}

/// One class's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Class {
    /// Items.
    pub items: u64,
    /// Chunks they take (items, except in the last class).
    pub chunks: u64,
    /// Their footprints, summed.
    pub bytes: u64,
    /// The LRU clock of the least recently used one (`u32::MAX` while empty).
    pub oldest_access: u32,
}

/// Per-class figures of database 0, gathered shard by shard.
#[derive(Clone, Debug)]
pub struct Tally {
    classes: [Class; CLASSES],
    /// Where the walk goes on: shard, then slot.
    shard: usize,
    slot: SlotId,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally {
            classes: [Class {
                oldest_access: u32::MAX,
                ..Class::default()
            }; CLASSES],
            shard: 0,
            slot: 0,
        }
    }
}

impl Tally {
    /// Counts one entry.
    pub fn add(&mut self, e: &Entry) {
        let footprint = e.memory_bytes();
        let (id, chunks) = class_of(footprint);
        let c = &mut self.classes[id - 1];
        c.items += 1;
        c.chunks += chunks;
        c.bytes += footprint as u64;
        c.oldest_access = c.oldest_access.min(e.access());
    }

    /// Walks on for at most `budget` entries, one shard lock per [`WALK_BATCH`]; returns
    /// true once every shard is counted.
    pub fn walk(&mut self, cx: &Ctx<'_>, mut budget: usize) -> bool {
        while self.shard < SHARDS_PER_DB && budget > 0 {
            let take = budget.min(WALK_BATCH);
            let shard = cx.db().lock(self.shard);
            let mut seen = 0;
            let next = shard.scan(self.slot, take, |e| {
                seen += 1;
                if is_item(e) && !e.is_expired(cx.now_ms) {
                    self.add(e);
                }
            });
            drop(shard);
            budget = budget.saturating_sub(seen.max(1));
            match next {
                Some(slot) => self.slot = slot,
                None => {
                    self.shard += 1;
                    self.slot = 0;
                }
            }
        }
        self.shard >= SHARDS_PER_DB
    }

    /// The classes holding items: id and figures.
    pub fn used(&self) -> impl Iterator<Item = (usize, &Class)> {
        self.classes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.items > 0)
            .map(|(i, c)| (i + 1, c))
    }
}

/// `stats slabs`, memcached 1.6.18's fields in its order. larder allocates per item, so a
/// class has no free chunks: `total_chunks` is `used_chunks`, `total_pages` the pages of
/// `chunks_per_page` they would fill, and `total_malloced` the footprints summed. The
/// per-class command counters are not kept (0; `stats` has the totals).
pub fn write_slabs(t: &Tally, emit: &mut dyn FnMut(&str, &[u8])) {
    let mut num = |name: String, v: u64| emit(&name, v.to_string().as_bytes());
    let mut active = 0;
    let mut malloced = 0;
    for (id, c) in t.used() {
        active += 1;
        malloced += c.bytes;
        let size = chunk_size(id);
        let per_page = u64::from(PAGE / size);
        num(format!("{id}:chunk_size"), u64::from(size));
        num(format!("{id}:chunks_per_page"), per_page);
        num(format!("{id}:total_pages"), c.chunks.div_ceil(per_page));
        num(format!("{id}:total_chunks"), c.chunks);
        num(format!("{id}:used_chunks"), c.chunks);
        for field in [
            "free_chunks",
            "free_chunks_end",
            "get_hits",
            "cmd_set",
            "delete_hits",
            "incr_hits",
            "decr_hits",
            "cas_hits",
            "cas_badval",
            "touch_hits",
        ] {
            num(format!("{id}:{field}"), 0);
        }
    }
    num("active_slabs".into(), active);
    num("total_malloced".into(), malloced);
}

/// `stats items`, memcached 1.6.18's fields in its order. larder keeps one LRU, so every
/// item counts as cold; `age` is the seconds since the least recent access of the class
/// (0 under an LFU policy, which keeps no access time); `mem_requested` the footprints;
/// `crawler_reclaimed` what `lru_crawler crawl` removed of the class. Evictions are not
/// counted per class (0; `stats` has the total).
pub fn write_items(
    t: &Tally,
    cx: &Ctx<'_>,
    reclaimed: &dyn Fn(usize) -> u64,
    emit: &mut dyn FnMut(&str, &[u8]),
) {
    let now = larder_engine::lru_clock(cx.now_ms);
    for (id, c) in t.used() {
        let age = if cx.lfu {
            0
        } else {
            now.saturating_sub(c.oldest_access)
        };
        let fields: [(&str, u64); 28] = [
            ("number", c.items),
            ("number_hot", 0),
            ("number_warm", 0),
            ("number_cold", c.items),
            ("age_hot", 0),
            ("age_warm", 0),
            ("age", u64::from(age)),
            ("mem_requested", c.bytes),
            ("evicted", 0),
            ("evicted_nonzero", 0),
            ("evicted_time", 0),
            ("outofmemory", 0),
            ("tailrepairs", 0),
            ("reclaimed", 0),
            ("expired_unfetched", 0),
            ("evicted_unfetched", 0),
            ("evicted_active", 0),
            ("crawler_reclaimed", reclaimed(id)),
            ("crawler_items_checked", 0),
            ("lrutail_reflocked", 0),
            ("moves_to_cold", 0),
            ("moves_to_warm", 0),
            ("moves_within_lru", 0),
            ("direct_reclaims", 0),
            ("hits_to_hot", 0),
            ("hits_to_warm", 0),
            ("hits_to_cold", 0),
            ("hits_to_temp", 0),
        ];
        for (name, v) in fields {
            emit(&format!("items:{id}:{name}"), v.to_string().as_bytes());
        }
    }
}

/// `stats sizes`: memcached 1.6.18 without `-o track_sizes` answers this one line.
pub fn write_sizes(emit: &mut dyn FnMut(&str, &[u8])) {
    emit("sizes_status", b"disabled");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The series `memcached -vv` prints with its defaults.
    #[test]
    fn default_series_is_memcached_s() {
        assert_eq!(CLASSES, 39);
        let want = [96, 120, 152, 192, 240, 304, 384, 480, 600, 752, 944, 1184];
        assert_eq!(&sizes()[..want.len()], &want);
        assert_eq!(chunk_size(37), 315_872);
        assert_eq!(chunk_size(38), 394_840);
        assert_eq!(chunk_size(39), 524_288);
        assert_eq!(PAGE / chunk_size(1), 10_922);
    }

    #[test]
    fn footprints_map_to_the_smallest_class_that_holds_them() {
        assert_eq!(class_of(1), (1, 1));
        assert_eq!(class_of(96), (1, 1));
        assert_eq!(class_of(97), (2, 1));
        assert_eq!(class_of(524_288), (39, 1));
        assert_eq!(class_of(524_289), (39, 2));
        assert_eq!(class_of(3 << 20), (39, 6));
    }
}
