//! The B+-tree store (`Store`, the TREE file): the model, crash images,
//! durability modes, injected faults, damaged and hostile files, and the file
//! backend. Its kill, lock and multi-process suites are in `process`.

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

// Records allocations for the tests that bound them (support/counting_alloc.rs).
#[global_allocator]
static ALLOC: support::counting_alloc::Counting = support::counting_alloc::Counting;

mod badfiles;
mod check_map;
mod file;
mod in_page;

// Pure computation over the memory backend or a simulated folder: the same
// bytes on every platform, so these run natively only (make/windows.mk).
#[cfg(not(windows))]
mod crash;
#[cfg(not(windows))]
mod durability;
#[cfg(not(windows))]
mod estimate;
#[cfg(not(windows))]
mod failed_put;
#[cfg(not(windows))]
mod faults;
#[cfg(not(windows))]
mod hostile_meta;
#[cfg(not(windows))]
mod leaf_fill;
#[cfg(not(windows))]
mod long_key_empty_value;
#[cfg(not(windows))]
mod lossy_faults;
#[cfg(not(windows))]
mod meta_slots;
#[cfg(not(windows))]
mod model;
#[cfg(not(windows))]
mod range_request;
#[cfg(not(windows))]
mod torn_meta;
