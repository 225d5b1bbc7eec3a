//! What `ObjectStore` calls return, as plain JS objects: the core's reports
//! with camelCase names, counts as numbers (exact up to 2^53) and ids as
//! hex. Each is built on the thread that ran the call and converted on the
//! JS thread.

use bale::objects as core;
use napi::bindgen_prelude::ToNapiValue;
use napi::{Result, sys};
use napi_derive::napi;

use crate::error;
use crate::js;

/// The bytes of an object, returned as a Buffer owned by JS (a copy; never
/// an external buffer).
pub struct ObjectBytes(pub Vec<u8>);

impl ToNapiValue for ObjectBytes {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let len = val.0.len();
        js::buffer_copy(env, &val.0).map_err(|_| {
            let e = bale::Error::new(
                bale::ErrorKind::TooLarge,
                format!("{len} bytes do not fit in one Buffer here; read the object with createReadStream"),
            );
            error::to_napi(env, &e)
        })
    }
}

/// What the store knows of one object.
#[napi(object)]
pub struct ObjectMeta {
    pub id: String,
    /// Length of the content in bytes.
    pub size: f64,
    /// Bytes its top record takes on disk, header included (the chunks of a
    /// chunked object are counted in `stats()`).
    pub stored_size: f64,
    /// Split into chunks.
    pub chunked: bool,
    /// In a numbered pack (or a single-file store), not in a staging file.
    pub packed: bool,
    /// Stored compressed.
    pub compressed: bool,
}

impl From<core::ObjectMeta> for ObjectMeta {
    fn from(m: core::ObjectMeta) -> ObjectMeta {
        ObjectMeta {
            id: m.id.to_hex(),
            size: m.size as f64,
            stored_size: m.stored_size as f64,
            chunked: m.chunked,
            packed: m.packed,
            compressed: m.compressed,
        }
    }
}

/// Counts and sizes of the whole store, from one index snapshot.
#[napi(object)]
pub struct ObjectStats {
    /// Stored objects, and the sum of their lengths.
    pub objects: f64,
    pub logical_bytes: f64,
    /// Records the index names (objects stored whole, chunks, lists), and
    /// the bytes they take on disk, headers included.
    pub records: f64,
    pub stored_bytes: f64,
    pub chunked_objects: f64,
    pub chunks: f64,
    /// Records still in staging files (not yet packed).
    pub staged_records: f64,
    pub compressed_records: f64,
    /// Content bytes stored once each (blobs and chunks, before
    /// compression): `logicalBytes - uniqueBytes` is what deduplication
    /// saved.
    pub unique_bytes: f64,
    /// Numbered packs and their committed bytes.
    pub packs: f64,
    pub pack_bytes: f64,
}

impl From<core::ObjectStats> for ObjectStats {
    fn from(s: core::ObjectStats) -> ObjectStats {
        ObjectStats {
            objects: s.objects as f64,
            logical_bytes: s.logical_bytes as f64,
            records: s.records as f64,
            stored_bytes: s.stored_bytes as f64,
            chunked_objects: s.chunked_objects as f64,
            chunks: s.chunks as f64,
            staged_records: s.staged_records as f64,
            compressed_records: s.compressed_records as f64,
            unique_bytes: s.unique_bytes as f64,
            packs: s.packs as f64,
            pack_bytes: s.pack_bytes as f64,
        }
    }
}

/// What `pack()` or `repack()` did.
#[napi(object)]
pub struct PackReport {
    /// Staging files (pack) or packs (repack) emptied and removed.
    pub files_removed: f64,
    pub records_moved: f64,
    pub bytes_moved: f64,
    /// Staging files left alone because a writer still holds them.
    pub files_in_use: f64,
    /// Index entries dropped because nothing refers to them any more.
    pub entries_dropped: f64,
    /// Bytes the store's files shrank by.
    pub bytes_freed: f64,
    /// Problems found and left in place (damaged files are never removed),
    /// and files no commit names, removed.
    pub problems: Vec<ObjectProblem>,
}

impl From<core::PackReport> for PackReport {
    fn from(r: core::PackReport) -> PackReport {
        PackReport {
            files_removed: r.files_removed as f64,
            records_moved: r.records_moved as f64,
            bytes_moved: r.bytes_moved as f64,
            files_in_use: r.files_in_use as f64,
            entries_dropped: r.entries_dropped as f64,
            bytes_freed: r.bytes_freed as f64,
            problems: problems(r.problems),
        }
    }
}

/// One problem a report lists (`validate()`, `pack()`, `repack()`,
/// `rebuildIndex()`).
#[napi(object)]
pub struct ObjectProblem {
    /// The record or object concerned, when there is one.
    pub id: Option<String>,
    /// The store file concerned, relative to the store (`packs/3.pack`),
    /// when there is one.
    pub file: Option<String>,
    /// The code a read of it would fail with (`CORRUPT`,
    /// `CHECKSUM_MISMATCH`, `NOT_FOUND` for a missing chunk).
    #[napi(ts_type = "ErrorCode")]
    pub code: String,
    /// What was found and what was done.
    pub message: String,
}

fn problems(ps: Vec<core::ObjectProblem>) -> Vec<ObjectProblem> {
    ps.into_iter()
        .map(|p| ObjectProblem {
            id: p.id.map(|i| i.to_hex()),
            file: p.file,
            code: p.code.to_owned(),
            message: p.message,
        })
        .collect()
}

/// What `validate()` checked and found.
#[napi(object)]
pub struct ValidateReport {
    /// True when no problem was found.
    pub ok: bool,
    pub objects_checked: f64,
    pub records_checked: f64,
    pub bytes_checked: f64,
    pub problems: Vec<ObjectProblem>,
}

impl From<core::ValidateReport> for ValidateReport {
    fn from(r: core::ValidateReport) -> ValidateReport {
        ValidateReport {
            ok: r.is_ok(),
            objects_checked: r.objects_checked as f64,
            records_checked: r.records_checked as f64,
            bytes_checked: r.bytes_checked as f64,
            problems: problems(r.problems),
        }
    }
}

/// What `rebuildIndex()` found.
#[napi(object)]
pub struct RebuildReport {
    /// Intact records read, and the objects among them.
    pub records: f64,
    pub objects: f64,
    /// Records that failed their checksum or hash, and damaged stretches skipped.
    pub bad_records: f64,
    pub skipped_ranges: f64,
    /// Files skipped, and objects left out because a chunk is missing.
    pub problems: Vec<ObjectProblem>,
}

impl From<core::RebuildReport> for RebuildReport {
    fn from(r: core::RebuildReport) -> RebuildReport {
        RebuildReport {
            records: r.records as f64,
            objects: r.objects as f64,
            bad_records: r.bad_records as f64,
            skipped_ranges: r.skipped_ranges as f64,
            problems: problems(r.problems),
        }
    }
}

/// What `exportTo()`, `importFrom()` or `importDos()` copied.
#[napi(object)]
pub struct TransferReport {
    /// Objects written to the destination, and their content bytes.
    pub objects_copied: f64,
    pub bytes_copied: f64,
    /// Objects the destination had already.
    pub objects_present: f64,
}

impl From<core::TransferReport> for TransferReport {
    fn from(r: core::TransferReport) -> TransferReport {
        TransferReport {
            objects_copied: r.objects_copied as f64,
            bytes_copied: r.bytes_copied as f64,
            objects_present: r.objects_present as f64,
        }
    }
}

/// What `addTree()` added.
#[napi(object)]
pub struct AddTreeReport {
    /// Regular files added and their bytes.
    pub files: f64,
    pub bytes: f64,
    /// Directories walked.
    pub dirs: f64,
    /// Links and special files left out (with `links: 'skip'`), as paths
    /// relative to the directory.
    pub skipped: Vec<String>,
}

impl From<core::AddTreeReport> for AddTreeReport {
    fn from(r: core::AddTreeReport) -> AddTreeReport {
        AddTreeReport { files: r.files as f64, bytes: r.bytes as f64, dirs: r.dirs as f64, skipped: r.skipped }
    }
}

/// What `clean()` removed.
#[napi(object)]
pub struct CleanReport {
    /// Staging files packed and removed, and leftover files removed.
    pub files_removed: f64,
    pub bytes_freed: f64,
    /// Size of the index before and after its compaction (0 for a
    /// single-file store, whose file is compacted as a tree store).
    pub index_bytes_before: f64,
    pub index_bytes_after: f64,
}

impl From<core::CleanReport> for CleanReport {
    fn from(r: core::CleanReport) -> CleanReport {
        CleanReport {
            files_removed: r.files_removed as f64,
            bytes_freed: r.bytes_freed as f64,
            index_bytes_before: r.index_bytes_before as f64,
            index_bytes_after: r.index_bytes_after as f64,
        }
    }
}

/// The parameters of an open store (fixed at creation, but for the
/// compression policy, which `repack({ compression })` changes).
#[napi(object)]
pub struct ObjectStoreConfig {
    #[napi(ts_type = "HashName")]
    pub hash: String,
    /// The policy new records are written with.
    #[napi(ts_type = "CompressionPolicy")]
    pub compression: String,
    pub chunk_min: u32,
    pub chunk_avg: u32,
    pub chunk_max: u32,
    pub pack_target: f64,
    pub fanout: u32,
}

impl ObjectStoreConfig {
    pub fn of(c: &core::Config, compression: core::Compression) -> ObjectStoreConfig {
        ObjectStoreConfig {
            hash: c.hash.name().to_owned(),
            compression: compression.name().to_owned(),
            chunk_min: c.chunk_min,
            chunk_avg: c.chunk_avg,
            chunk_max: c.chunk_max,
            pack_target: c.pack_target as f64,
            fanout: c.fanout,
        }
    }
}
