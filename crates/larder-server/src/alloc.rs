//! The global allocator: mimalloc, wrapped to count live heap bytes for INFO `used_memory` and
//! the `maxmemory` check.
//!
//! The wrapper calls mimalloc's C functions itself rather than through the `mimalloc` crate,
//! whose allocator asks `mi_malloc_aligned` for every layout: for a block whose size class
//! is not a power of two, or whose page has no free block at hand, that takes a slower
//! generic path, then over-allocates. Every block mimalloc hands out is aligned to at least
//! 8 bytes (a machine word), so a layout with an alignment of 8 or less, no larger than its
//! size, goes to plain `mi_malloc`, as Rust's own `System` allocator does with `malloc`.
//!
//! Counting uses 64 cache-line-padded counters; each of the first threads owns one and adds
//! to it without a locked instruction (`count`), and no thread-local destructor runs inside
//! the allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use libmimalloc_sys as mi;

const SLOTS: usize = 64;

#[repr(align(128))]
struct Slot(AtomicIsize);

static COUNTERS: [Slot; SLOTS] = [const { Slot(AtomicIsize::new(0)) }; SLOTS];
/// The next slot to hand out; slot 0 is the shared one.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Add `n` to this thread's count. Slots 1 and up each belong to one thread for good (the
/// first threads to allocate: the workers start early), which adds with a plain load and
/// store: no other thread writes there, and a locked add would cost as much as a small
/// allocation. Threads started after every slot was handed out share slot 0, with atomic
/// adds. A reader sums the slots; a thread's count stays in its slot after it ends.
#[inline]
fn count(n: isize) {
    let i = MY_SLOT.with(|s| {
        let mut i = s.get();
        if i == usize::MAX {
            i = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
            if i >= SLOTS {
                i = 0;
            }
            s.set(i);
        }
        i
    });
    let c = &COUNTERS[i].0;
    if i == 0 {
        c.fetch_add(n, Ordering::Relaxed);
    } else {
        c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }
}

/// The alignment every mimalloc block has.
const WORD: usize = std::mem::size_of::<usize>();

/// Whether plain `mi_malloc` (and `mi_realloc`) meet `align` for `size` bytes.
#[inline]
fn plain(size: usize, align: usize) -> bool {
    align <= WORD && align <= size
}

/// Count `delta` bytes if `p` (what mimalloc returned) is a block.
#[inline]
fn counted(p: *mut std::ffi::c_void, delta: isize) -> *mut u8 {
    if !p.is_null() {
        count(delta);
    }
    p.cast()
}

/// A new block for `layout` (zeroed or not: a constant at every call, so the choice folds
/// away), counted.
#[inline(always)]
fn allocate(layout: Layout, zeroed: bool) -> *mut u8 {
    let (size, align) = (layout.size(), layout.align());
    // SAFETY: mimalloc's allocation functions have no preconditions.
    let p = unsafe {
        match (plain(size, align), zeroed) {
            (true, false) => mi::mi_malloc(size),
            (true, true) => mi::mi_zalloc(size),
            (false, false) => mi::mi_malloc_aligned(size, align),
            (false, true) => mi::mi_zalloc_aligned(size, align),
        }
    };
    counted(p, size as isize)
}

/// mimalloc with byte counting.
pub struct Counting;

// SAFETY: every method allocates, frees or reallocates with mimalloc, asking for the layout's
// alignment unless mimalloc's word alignment already meets it (`plain`), which upholds
// GlobalAlloc's contract; the counting is side bookkeeping that never touches the memory.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        allocate(layout, false)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: `ptr` came from mimalloc (this allocator) and is freed once.
        unsafe { mi::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        allocate(layout, true)
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        // SAFETY: `ptr` came from mimalloc (this allocator) with `layout`; the caller upholds
        // `realloc`'s contract (a non-zero `new_size` that does not overflow).
        let p = unsafe {
            if plain(new_size, align) {
                mi::mi_realloc(ptr.cast(), new_size)
            } else {
                mi::mi_realloc_aligned(ptr.cast(), new_size, align)
            }
        };
        counted(p, new_size as isize - layout.size() as isize)
    }
}

/// Live heap bytes allocated through Rust's allocator.
pub fn used_bytes() -> usize {
    COUNTERS
        .iter()
        .map(|s| s.0.load(Ordering::Relaxed))
        .sum::<isize>()
        .max(0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More threads than slots, each holding 4 MiB at once: the owned slots and the shared
    /// one count them all, and count them gone. Other tests allocate meanwhile, so only
    /// changes far above their noise are asserted.
    #[test]
    fn counts_every_threads_blocks_owned_slot_or_shared() {
        const THREADS: usize = SLOTS + 16;
        const BLOCK: usize = 4 << 20;
        let before = used_bytes();
        let held = std::sync::Barrier::new(THREADS + 1);
        let release = std::sync::Barrier::new(THREADS + 1);
        let during = std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    let block = vec![1u8; BLOCK];
                    held.wait();
                    release.wait();
                    drop(block);
                });
            }
            held.wait();
            let during = used_bytes();
            release.wait();
            during
        });
        let all = THREADS * BLOCK;
        assert!(during >= before + all - all / 8, "{before} -> {during}");
        let after = used_bytes();
        assert!(after < during - all + all / 8, "{during} -> {after}");
    }
}
