//! Bitables (the BTBL file): reads against a model, building, merging,
//! threads, the memory budget, crash images and damaged files.

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

// Records allocations for the tests that bound them (support/counting_alloc.rs).
#[global_allocator]
static ALLOC: support::counting_alloc::Counting = support::counting_alloc::Counting;

mod badfiles;
mod merge;
mod model;
mod no_alloc;
mod threads;

// Pure computation over the memory backend or a simulated folder: the same
// bytes on every platform, so these run natively only (make/windows.mk).
#[cfg(not(windows))]
mod budget;
#[cfg(not(windows))]
mod crash;
