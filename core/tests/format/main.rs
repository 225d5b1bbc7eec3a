//! The file formats as bytes: the golden corpus through the public API, and
//! every input the fuzzers found a problem with, replayed.

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

// Records allocations for the tests that bound them (support/counting_alloc.rs).
#[global_allocator]
static ALLOC: support::counting_alloc::Counting = support::counting_alloc::Counting;

mod corpus;

// Pure computation over the memory backend or a simulated folder: the same
// bytes on every platform, so these run natively only (make/windows.mk).
#[cfg(not(windows))]
mod fuzz_regressions;
