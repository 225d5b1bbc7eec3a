//! Remotes: an object store's records in packs in an S3-compatible bucket,
//! shared by many machines that coordinate only through the bucket's
//! conditional writes (FORMAT.md, "Remotes"). The protocol is synchronous
//! and runs over any [`Bucket`]; the S3 client is behind the `s3` feature.

pub mod bucket;
pub mod cache;
pub mod config;
pub mod fault;
mod fetch;
#[cfg(native_fs)]
pub mod fs_bucket;
mod gc;
mod handle;
pub mod manifest;
pub mod pack_index;
pub mod probe;
mod push;
mod read;
#[cfg(all(feature = "s3", native_fs))]
pub mod s3;

pub use bucket::{Bucket, Condition, Fetched, Got, Listed, MemBucket, Written, too_long};
pub use cache::RemoteCache;
#[cfg(native_fs)]
pub use config::open_bucket;
pub use config::{DEFAULT_GRACE_MS, RemoteConfig, check_remote_name};
pub use fetch::{PullReport, RangeRead};
#[cfg(native_fs)]
pub use fs_bucket::FsBucket;
pub use gc::{GcOptions, GcReport, LEASE_KEY};
pub use handle::{Located, Remote, RemoteIndex, RemoteOptions, Traffic};
pub use manifest::{Manifest, PackId, PackRef, Tombstone};
pub use pack_index::{IndexEntry, PackBuilder};
pub use probe::probe_conditional_writes;
pub use push::{PushOptions, PushReport};
pub use read::ObjectRead;
#[cfg(all(feature = "s3", native_fs))]
pub use s3::{S3Addressing, S3Bucket, S3Credentials, S3Location, S3Options};
