//! The global allocator: mimalloc, wrapped to count live heap bytes for INFO `used_memory` and
//! the `maxmemory` check.
//!
//! Counting uses 64 cache-line-padded counters; each thread adds to the one picked by its
//! thread index, so the hot path is one uncontended atomic add and no thread-local destructor
//! runs inside the allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use mimalloc::MiMalloc;

const SLOTS: usize = 64;

#[repr(align(128))]
struct Slot(AtomicIsize);

static COUNTERS: [Slot; SLOTS] = [const { Slot(AtomicIsize::new(0)) }; SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline]
fn slot() -> &'static AtomicIsize {
    let i = MY_SLOT.with(|s| {
        let mut i = s.get();
        if i == usize::MAX {
            i = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
            s.set(i);
        }
        i
    });
    &COUNTERS[i].0
}

/// mimalloc with byte counting.
pub struct Counting;

// SAFETY: every method forwards to mimalloc with the same arguments, which upholds
// GlobalAlloc's contract; the counting is side bookkeeping that never touches the memory.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        let p = unsafe { MiMalloc.alloc(layout) };
        if !p.is_null() {
            slot().fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        slot().fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded unchanged; `ptr` was allocated by this allocator with `layout`.
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            slot().fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        let p = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            slot().fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
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
