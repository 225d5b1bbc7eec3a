//! Remotes over an in-memory bucket and reads straight from a remote. The
//! same protocol on real S3 servers is the `s3` binary; killed pushers are
//! in `process`.

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod mem;

// Pure computation over the memory backend or a simulated folder: the same
// bytes on every platform, so these run natively only (make/windows.mk).
#[cfg(not(windows))]
mod read;
