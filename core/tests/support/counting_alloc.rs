//! A global allocator that records the largest single allocation, so that
//! bad-input tests can assert that no hostile length drove a huge one, the
//! bytes allocated at once, so that streaming tests can assert a bound, and
//! the allocations each thread made, so that a test can assert that a call
//! makes none. A test binary installs it with `#[global_allocator]` and
//! reads `LARGEST`, or `LIVE` and `PEAK`, or `thread_allocations()`.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct Counting;

/// The largest allocation since it was last reset.
pub static LARGEST: AtomicUsize = AtomicUsize::new(0);
/// Bytes allocated and not yet freed.
pub static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most `LIVE` has been since it was last reset (to `LIVE`).
pub static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Allocations that would take `LIVE` past this fail (a test's memory
/// limit where the OS offers none, see guard.rs); no limit by default.
pub static CAP: AtomicUsize = AtomicUsize::new(usize::MAX);

thread_local! {
    // Const-initialised and without a destructor: safe to touch from the
    // allocator at any point of a thread's life.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Allocations (and reallocations) this thread has made so far.
pub fn thread_allocations() -> u64 {
    ALLOCATIONS.try_with(|c| c.get()).unwrap_or(0)
}

fn counted() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

/// False when `n` more bytes would pass `CAP`.
fn fits(n: usize) -> bool {
    LIVE.load(Ordering::Relaxed).saturating_add(n) <= CAP.load(Ordering::Relaxed)
}

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: forwards to the system allocator, only recording sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        counted();
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        if !fits(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        counted();
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        if !fits(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        counted();
        LARGEST.fetch_max(new, Ordering::Relaxed);
        if !fits(new.saturating_sub(l.size())) {
            return std::ptr::null_mut();
        }
        // SAFETY: same contract as the caller's.
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            if new >= l.size() {
                grew(new - l.size());
            } else {
                LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            }
        }
        q
    }
}
