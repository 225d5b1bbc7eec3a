//! The object store (`ObjectStore`): adds and reads in every form, packing
//! and maintenance, handles, inspection, imports, crash images and damaged
//! files. Its kill and multi-process suites are in `process`.

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

// Records allocations for the tests that bound them (support/counting_alloc.rs).
#[global_allocator]
static ALLOC: support::counting_alloc::Counting = support::counting_alloc::Counting;

mod basic;
mod bulk_read;
mod dos_import;
mod handles;
mod inspect;
mod no_loss;
mod pack;
mod threads;
mod transfer;

// Pure computation over the memory backend or a simulated folder: the same
// bytes on every platform, so these run natively only (make/windows.mk).
#[cfg(not(windows))]
mod badfiles;
#[cfg(not(windows))]
mod crash;
#[cfg(not(windows))]
mod regressions;
#[cfg(not(windows))]
mod sim_dir;
