//! One key and everything stored with it.
//!
//! The entry's key and value share one heap block behind a tagged thin pointer; this module is
//! the engine's only `unsafe` code (that, and the [`prefetch`] hint), and every block of it
//! states why it is sound. The value types it holds, [`Object`] and [`ObjectKind`], are in
//! `object.rs`.
#![allow(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::alloc::Layout;
use std::ptr::NonNull;

mod object;
pub use object::{Object, ObjectKind};

/// Asks the CPU to start loading the cache line at `p` into its caches: a hint, which does
/// nothing on targets without one.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` reads nothing the program can observe and never faults, whatever
    // the address (an invalid or stale one is ignored); SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// One key with its metadata and value.
///
/// Layout is chosen for memory: 40 bytes plus one heap block that holds the key and the value
/// together, reached through one thin pointer. The pointer's low bit says which kind of block
/// it is:
///
/// - an *inline block*, `[key_len: u32][value_len: u32][key][value]` (4-aligned), for a string
///   value set as a whole (SET and friends): one allocation per key;
/// - an *object block*, `[Object][key_len: u32][key]` (8-aligned, tag bit set), for a string
///   grown in place (APPEND, SETRANGE) or a collection.
///
/// The lengths live in the block, beside the key they describe (a lookup reads that cache
/// line anyway), which leaves room in the entry for 32 bits of the key's hash: the shard index
/// holds only slot ids and rebuilds its hashes from the slab when it resizes. An empty key
/// with an empty string value owns no block, and neither does a vacant slab slot. The
/// metadata a later issue needs (per-key version for compare-and-set, memcached client flags,
/// access time for LRU/LFU) lives in fixed fields.
///
/// Invariants:
/// - `version == 0` marks a vacant slab slot; live entries have `version >= 1`.
/// - `block` is `None` (empty key, empty inline string), or the untagged start of an inline
///   block allocated with `inline_layout(key_len, value_len)` whose header holds those two
///   lengths and whose bytes are all initialised, or the start plus [`OBJECT_TAG`] of an object
///   block allocated with `object_layout(key_len)` that holds an initialised `Object`, then
///   `key_len`, then the key. The entry owns its block alone, as a `Box` owns its value.
/// - The lengths in a block never change; a value of another length gets a new block.
pub struct Entry {
    /// The key and value block; see the invariants above.
    block: Option<NonNull<u8>>,
    /// Unique, increasing per write; 0 = vacant slot.
    pub(crate) version: u64,
    /// Absolute deadline in Unix milliseconds; 0 = no expiry.
    pub(crate) expire_at_ms: u64,
    /// 32 bits of the key's hash, for the shard index (see `shard::IndexEntry`); set when
    /// the entry is inserted.
    pub(crate) hash_tag: u32,
    /// memcached client flags.
    pub(crate) flags: u32,
    /// LRU clock (seconds) of the last access.
    pub(crate) access: u32,
    /// memcached item state bits (low 8 bits) tagged with bits 20..44 of the version they
    /// were set at (high 24 bits). See [`Entry::mc_state`].
    pub(crate) mc_state: u32,
}

// SAFETY: an `Entry` owns its block exclusively, like a `Box`: no other pointer to the block
// exists, `&Entry` only reads it and every write goes through `&mut Entry`. The block holds
// plain bytes and an `Object`, which is `Send + Sync` (checked below), so moving an entry to
// another thread or sharing `&Entry` between threads is as sound as it is for
// `Box<(Object, [u8])>`.
unsafe impl Send for Entry {}
// SAFETY: see `Send` above; `Entry` has no interior mutability.
unsafe impl Sync for Entry {}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Object>();
};

// The layout rules the tagged pointer and the block offsets rely on.
const _: () = assert!(
    std::mem::align_of::<Object>() >= std::mem::align_of::<u32>()
        && std::mem::size_of::<Object>() % std::mem::align_of::<u32>() == 0
        && OBJECT_TAG < std::mem::align_of::<u32>()
);

/// Low pointer bit that marks an object block. Blocks are at least 4-aligned, so the bit is
/// free in an untagged pointer.
const OBJECT_TAG: usize = 1;
/// Bytes before the key in an inline block: the key length and the value length.
const INLINE_HEADER: usize = 2 * std::mem::size_of::<u32>();
/// Offset of the key length in an object block: right after the `Object`, whose size is a
/// multiple of its alignment (so the `u32` is aligned).
const OBJECT_KEY_LEN_OFFSET: usize = std::mem::size_of::<Object>();
/// Offset of the key in an object block.
const OBJECT_KEY_OFFSET: usize = OBJECT_KEY_LEN_OFFSET + std::mem::size_of::<u32>();

/// The entry's block, decoded from the tagged pointer.
#[derive(Clone, Copy)]
enum Block {
    /// No block: empty key, empty inline string.
    Empty,
    /// Start of an inline block.
    Inline(NonNull<u8>),
    /// Start of an object block (tag removed).
    Object(NonNull<u8>),
}

/// The layout of an inline block for `key_len` key bytes and `value_len` value bytes.
fn inline_layout(key_len: usize, value_len: usize) -> Layout {
    let size = INLINE_HEADER
        .checked_add(key_len)
        .and_then(|n| n.checked_add(value_len));
    match size.map(|n| Layout::from_size_align(n, std::mem::align_of::<u32>())) {
        Some(Ok(layout)) => layout,
        _ => panic!("entry block size overflows"),
    }
}

/// The layout of an object block for `key_len` key bytes.
fn object_layout(key_len: usize) -> Layout {
    let tail = Layout::array::<u8>(OBJECT_KEY_OFFSET - OBJECT_KEY_LEN_OFFSET + key_len);
    match Layout::new::<Object>().extend(tail.unwrap_or_else(|_| {
        panic!("entry block size overflows");
    })) {
        Ok((layout, offset)) => {
            debug_assert_eq!(offset, OBJECT_KEY_LEN_OFFSET);
            layout.pad_to_align()
        }
        Err(_) => panic!("entry block size overflows"),
    }
}

/// Allocate a block; a failed allocation ends the process as `Box` does.
fn allocate(layout: Layout) -> NonNull<u8> {
    // SAFETY: every block layout has a non-zero size: an inline block has its header, an
    // object block its `Object`.
    let p = unsafe { std::alloc::alloc(layout) };
    NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

/// A key length as stored in a block header. Keys are bulk strings bounded by `proto-max-bulk-len`
/// (512 MiB by default); one of 4 GiB or more breaks the engine's size invariant.
fn key_len_u32(key: &[u8]) -> u32 {
    match u32::try_from(key.len()) {
        Ok(n) => n,
        Err(_) => panic!("key of {} bytes exceeds the 4 GiB key limit", key.len()),
    }
}

/// A new inline block holding `key` and `value`, or `None` when both are empty.
/// `value` must be shorter than 4 GiB.
fn new_inline_block(key: &[u8], value: &[u8]) -> Option<NonNull<u8>> {
    if key.is_empty() && value.is_empty() {
        return None;
    }
    let key_len = key_len_u32(key);
    // Callers send values of 4 GiB or more to the grown-string path.
    let value_len = u32::try_from(value.len()).expect("inline value shorter than 4 GiB");
    let p = allocate(inline_layout(key.len(), value.len()));
    // SAFETY: `p` is a fresh allocation of `INLINE_HEADER + key.len() + value.len()` bytes,
    // aligned for `u32`; the two header words and the two ranges written are inside it and do
    // not overlap each other or the source slices, which are borrowed from elsewhere.
    unsafe {
        p.as_ptr().cast::<u32>().write(key_len);
        p.as_ptr().cast::<u32>().add(1).write(value_len);
        std::ptr::copy_nonoverlapping(key.as_ptr(), p.as_ptr().add(INLINE_HEADER), key.len());
        std::ptr::copy_nonoverlapping(
            value.as_ptr(),
            p.as_ptr().add(INLINE_HEADER + key.len()),
            value.len(),
        );
    }
    Some(p)
}

/// A new object block holding `object` and `key`, returned tagged.
fn new_object_block(key: &[u8], object: Object) -> NonNull<u8> {
    let key_len = key_len_u32(key);
    let p = allocate(object_layout(key.len()));
    // SAFETY: `p` is a fresh allocation laid out by `object_layout`: room for an `Object` at
    // offset 0, aligned for it, an aligned `u32` at `OBJECT_KEY_LEN_OFFSET`, and `key.len()`
    // bytes at `OBJECT_KEY_OFFSET`. The key is borrowed from elsewhere, so the copy does not
    // overlap. Adding `OBJECT_TAG` (1) stays inside the block, whose size is at least
    // `size_of::<Object>()`.
    unsafe {
        p.as_ptr().cast::<Object>().write(object);
        p.as_ptr()
            .add(OBJECT_KEY_LEN_OFFSET)
            .cast::<u32>()
            .write(key_len);
        std::ptr::copy_nonoverlapping(key.as_ptr(), p.as_ptr().add(OBJECT_KEY_OFFSET), key.len());
        p.add(OBJECT_TAG)
    }
}

/// A header word of a live block: `p` is a block's start (callers decode it from an entry) and
/// `offset` one of `0` or `4` (inline block) or `OBJECT_KEY_LEN_OFFSET` (object block).
#[inline]
fn header_u32(p: NonNull<u8>, offset: usize) -> usize {
    // SAFETY: at those offsets every block of that kind holds an initialised `u32`, aligned
    // because blocks are at least 4-aligned and the offsets are multiples of 4.
    unsafe { p.add(offset).cast::<u32>().read() as usize }
}

/// The value length in an inline block's header.
#[inline]
fn inline_value_len(p: NonNull<u8>) -> usize {
    header_u32(p, 4)
}

impl Entry {
    pub(crate) fn vacant() -> Entry {
        Entry {
            block: None,
            version: 0,
            expire_at_ms: 0,
            hash_tag: 0,
            flags: 0,
            access: 0,
            mc_state: 0,
        }
    }

    fn with_block(block: Option<NonNull<u8>>) -> Entry {
        Entry {
            block,
            version: 0,
            expire_at_ms: 0,
            hash_tag: 0,
            flags: 0,
            access: 0,
            mc_state: 0,
        }
    }

    pub(crate) fn new_string(key: &[u8], value: &[u8]) -> Entry {
        if u32::try_from(value.len()).is_err() {
            // The inline header holds a u32 length; a longer value lives as a grown string.
            return Entry::new_object(key, Object::Str(value.to_vec()));
        }
        Entry::with_block(new_inline_block(key, value))
    }

    pub(crate) fn new_object(key: &[u8], object: Object) -> Entry {
        Entry::with_block(Some(new_object_block(key, object)))
    }

    /// Asks the CPU to start loading the first two cache lines of the key and value block
    /// (where the key, and the start of an inline value, are).
    #[inline]
    pub(crate) fn prefetch_block(&self) {
        if let Some(p) = self.block {
            let p = p.as_ptr().cast_const();
            prefetch(p);
            prefetch(p.wrapping_add(64));
        }
    }

    /// Asks the CPU to start loading the rest of an inline value (past the two lines that
    /// [`Entry::prefetch_block`] asked for), up to 1 KiB, or the first line of an object's
    /// own bytes (a collection's buffer, where its search starts). Reads the block's header
    /// or the object, so call it once that has had time to arrive.
    #[inline]
    pub(crate) fn prefetch_value(&self) {
        match self.block() {
            Block::Inline(p) => {
                let end = (INLINE_HEADER + header_u32(p, 0) + inline_value_len(p)).min(1024);
                let p = p.as_ptr().cast_const();
                for line in (128..end).step_by(64) {
                    prefetch(p.wrapping_add(line));
                }
            }
            Block::Object(p) => prefetch(self.object_at(p).heap_head()),
            Block::Empty => {}
        }
    }

    /// Asks the CPU to start loading the line of an object's bytes that a lookup of `member`
    /// reads (`Object::prefetch_member`). Reads the object (not its bytes), so call it once
    /// [`Entry::prefetch_block`]'s lines have had time to arrive.
    #[inline]
    pub(crate) fn prefetch_member(&self, member: &[u8]) {
        if let Block::Object(p) = self.block() {
            self.object_at(p).prefetch_member(member);
        }
    }

    #[inline]
    fn block(&self) -> Block {
        match self.block {
            None => Block::Empty,
            Some(p) if p.addr().get() & OBJECT_TAG == 0 => Block::Inline(p),
            // SAFETY: a tagged pointer is an object block's start plus `OBJECT_TAG`
            // (invariant), so stepping back stays inside that block.
            Some(p) => Block::Object(unsafe { p.sub(OBJECT_TAG) }),
        }
    }

    /// The `Object` in this entry's object block `p`.
    #[inline]
    fn object_at(&self, p: NonNull<u8>) -> &Object {
        // SAFETY: `p` is the start of this entry's object block, which holds an initialised
        // `Object` at offset 0 and lives as long as `&self` (the entry owns it).
        unsafe { p.cast::<Object>().as_ref() }
    }

    #[inline]
    pub(crate) fn is_vacant(&self) -> bool {
        self.version == 0
    }

    /// The key's length, from the block header.
    #[inline]
    fn key_len(&self) -> usize {
        match self.block() {
            Block::Empty => 0,
            Block::Inline(p) => header_u32(p, 0),
            Block::Object(p) => header_u32(p, OBJECT_KEY_LEN_OFFSET),
        }
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        match self.block() {
            Block::Empty => &[],
            // SAFETY: an inline block holds `key_len` (its first header word) initialised key
            // bytes right after its header; the entry owns the block, so it lives as long as
            // `&self`.
            Block::Inline(p) => unsafe {
                std::slice::from_raw_parts(p.as_ptr().add(INLINE_HEADER), header_u32(p, 0))
            },
            // SAFETY: an object block holds `key_len` (the word at `OBJECT_KEY_LEN_OFFSET`)
            // initialised key bytes at `OBJECT_KEY_OFFSET`; the entry owns the block, so it
            // lives as long as `&self`.
            Block::Object(p) => unsafe {
                std::slice::from_raw_parts(
                    p.as_ptr().add(OBJECT_KEY_OFFSET),
                    header_u32(p, OBJECT_KEY_LEN_OFFSET),
                )
            },
        }
    }

    /// The value's Redis type.
    #[inline]
    pub fn kind(&self) -> ObjectKind {
        match self.block() {
            Block::Empty | Block::Inline(_) => ObjectKind::String,
            Block::Object(p) => self.object_at(p).kind(),
        }
    }

    /// The string value, or `None` if the key holds another type.
    #[inline]
    pub fn string(&self) -> Option<&[u8]> {
        match self.block() {
            Block::Empty => Some(&[]),
            Block::Inline(p) => {
                let start = INLINE_HEADER + header_u32(p, 0);
                // SAFETY: an inline block holds `value_len` (its header) initialised value
                // bytes right after the key; the entry owns the block, so it lives as long as
                // `&self`.
                Some(unsafe {
                    std::slice::from_raw_parts(p.as_ptr().add(start), inline_value_len(p))
                })
            }
            Block::Object(p) => match self.object_at(p) {
                Object::Str(v) => Some(v),
                Object::Shared(v) => Some(v),
                Object::List(_)
                | Object::Hash(_)
                | Object::Set(_)
                | Object::ZSet(_)
                | Object::Stream(_) => None,
            },
        }
    }

    /// True if the string was modified in place (Redis's "raw" encoding).
    pub fn is_grown_string(&self) -> bool {
        matches!(self.object(), Some(Object::Str(_)))
    }

    /// The non-inline value, if any.
    pub fn object(&self) -> Option<&Object> {
        match self.block() {
            Block::Object(p) => Some(self.object_at(p)),
            Block::Empty | Block::Inline(_) => None,
        }
    }

    /// Replace the value by an inline string, reusing the block when the length matches.
    pub(crate) fn set_string(&mut self, value: &[u8]) {
        if u32::try_from(value.len()).is_err() {
            self.set_object(Object::Str(value.to_vec()));
            return;
        }
        if let Block::Inline(p) = self.block() {
            if inline_value_len(p) == value.len() {
                let start = INLINE_HEADER + header_u32(p, 0);
                // SAFETY: the block holds `value.len()` value bytes at `start`; `&mut self`
                // gives exclusive access to the block, and `value` cannot point into it
                // (that would need a shared borrow of `self`).
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        value.as_ptr(),
                        p.as_ptr().add(start),
                        value.len(),
                    );
                }
                return;
            }
        }
        let block = new_inline_block(self.key(), value);
        self.replace_block(block);
    }

    /// The string value as a growable buffer, moving an inline value into an object block
    /// first. Returns `None` if the key holds another type.
    pub(crate) fn string_mut(&mut self) -> Option<&mut Vec<u8>> {
        if self.object().is_none() {
            let value = self.string().unwrap_or_default().to_vec();
            self.set_object(Object::Str(value));
        }
        if let Some(o @ Object::Shared(_)) = self.object_mut() {
            let Object::Shared(shared) = std::mem::replace(o, Object::Str(Vec::new())) else {
                unreachable!("matched as shared just above");
            };
            // Unique once the connection that read it has let go, unless COPY shared it.
            *o = Object::Str(std::sync::Arc::unwrap_or_clone(shared));
        }
        match self.object_mut() {
            Some(Object::Str(v)) => Some(v),
            _ => None,
        }
    }

    /// The non-inline value for in-place modification, if any.
    pub(crate) fn object_mut(&mut self) -> Option<&mut Object> {
        match self.block() {
            // SAFETY: the object block holds an initialised `Object` at offset 0; `&mut self`
            // gives exclusive access to the block for the returned borrow's lifetime.
            Block::Object(p) => Some(unsafe { p.cast::<Object>().as_mut() }),
            Block::Empty | Block::Inline(_) => None,
        }
    }

    pub(crate) fn set_object(&mut self, object: Object) {
        match self.object_mut() {
            Some(o) => *o = object,
            None => {
                let block = new_object_block(self.key(), object);
                self.replace_block(Some(block));
            }
        }
    }

    /// Free the current block and take `block` (which holds the same key) in its place.
    fn replace_block(&mut self, block: Option<NonNull<u8>>) {
        self.free_block();
        self.block = block;
    }

    /// Drop and free the block, leaving the entry without one.
    fn free_block(&mut self) {
        let key_len = self.key_len();
        let block = self.block();
        // Forget the block first: were an `Object` destructor to panic, the entry's own drop
        // would then find no block to free a second time.
        self.block = None;
        match block {
            Block::Empty => {}
            Block::Inline(p) => {
                let layout = inline_layout(key_len, inline_value_len(p));
                // SAFETY: the block was allocated with exactly this layout (the lengths in its
                // header never change) and the entry, its only owner, forgot it above.
                unsafe { std::alloc::dealloc(p.as_ptr(), layout) };
            }
            Block::Object(p) => {
                // SAFETY: the block holds an initialised `Object`, dropped here once; then
                // the block is freed with the layout it was allocated with. The entry, its
                // only owner, forgot it above.
                unsafe {
                    std::ptr::drop_in_place(p.cast::<Object>().as_ptr());
                    std::alloc::dealloc(p.as_ptr(), object_layout(key_len));
                }
            }
        }
    }

    /// A copy of the value under another key (COPY, RENAME across shards).
    pub(crate) fn clone_with_key(&self, key: &[u8]) -> Entry {
        let mut e = match self.object() {
            None => Entry::new_string(key, self.string().unwrap_or_default()),
            Some(o) => Entry::new_object(key, o.clone()),
        };
        e.expire_at_ms = self.expire_at_ms;
        e.flags = self.flags;
        e.access = self.access;
        e
    }

    /// Per-key version; increases on every write and doubles as memcached's CAS unique.
    #[inline]
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Absolute expiry deadline in Unix ms, if any.
    #[inline]
    pub fn expire_at_ms(&self) -> Option<u64> {
        (self.expire_at_ms != 0).then_some(self.expire_at_ms)
    }

    /// memcached client flags.
    #[inline]
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// LRU clock (seconds) of the last access.
    #[inline]
    pub fn access(&self) -> u32 {
        self.access
    }

    /// The memcached item state bits (fetched, stale, win sent, binary key; their meaning
    /// belongs to the memcached door) set by [`crate::Shard::set_mc_state`] since the last
    /// write. Any write clears them, whichever door made it: the bits are tagged with the
    /// version they were set at, and a write changes the version.
    #[inline]
    pub fn mc_state(&self) -> u8 {
        if self.mc_state >> 8 == mc_tag(self.version) {
            (self.mc_state & 0xff) as u8
        } else {
            0
        }
    }

    pub(crate) fn set_mc_state(&mut self, bits: u8) {
        self.mc_state = (mc_tag(self.version) << 8) | u32::from(bits);
    }

    /// Whether the entry is past its deadline at `now_ms`.
    #[inline]
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at_ms != 0 && self.expire_at_ms <= now_ms
    }

    /// Approximate bytes this entry costs: the slab slot, its share of the index, and the
    /// block (rounded up to 8 bytes; the allocator's size classes may round further).
    pub fn memory_bytes(&self) -> usize {
        let slot = std::mem::size_of::<Entry>() + 8;
        let key_len = self.key_len();
        let block = match self.block() {
            Block::Empty => 0,
            Block::Inline(p) => (INLINE_HEADER + key_len + inline_value_len(p)).next_multiple_of(8),
            Block::Object(p) => {
                (OBJECT_KEY_OFFSET + key_len).next_multiple_of(8) + self.object_at(p).heap_bytes()
            }
        };
        slot + block
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.free_block();
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("key", &self.key().escape_ascii().to_string())
            .field(
                "string_len",
                &self
                    .object()
                    .is_none()
                    .then(|| self.string().map(<[u8]>::len)),
            )
            .field("object", &self.object())
            .field("version", &self.version)
            .field("hash_tag", &self.hash_tag)
            .field("expire_at_ms", &self.expire_at_ms)
            .field("flags", &self.flags)
            .field("access", &self.access)
            .field("mc_state", &self.mc_state)
            .finish()
    }
}

/// The 24 bits of a version that tag memcached state: the low bits of the shard's write
/// sequence (the version's low 20 bits are the shard id, the same for every write).
#[inline]
fn mc_tag(version: u64) -> u32 {
    ((version >> 20) & 0x00ff_ffff) as u32
}

#[cfg(test)]
mod tests;
