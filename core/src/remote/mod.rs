//! Remotes: an object store's packs in an S3-compatible bucket, shared by
//! many machines that coordinate only through the bucket's conditional
//! writes (FORMAT.md, "Remotes").

pub mod bucket;

pub use bucket::{Bucket, Condition, Fetched, Listed, MemBucket, Written};
