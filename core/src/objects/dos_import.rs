//! Importing a disk-objectstore container: its loose objects and the packed
//! objects its SQLite index lists. With the `dos-import` feature (on by
//! default) the core reads the container itself (`config.json`, and
//! `packs.idx` through SQLite); without it the caller hands over the rows.
//! Every object is checked against its SHA-256 key.

#![cfg(native_fs)]

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::Digest as _;

use super::hash::{HashKind, ObjectId};
use super::pack::Progress;
use super::report::TransferReport;
use super::store::ObjectStore;
use super::tree_walk::open_regular;
use crate::error::{Error, ErrorKind, Result};

/// A container's layout, from its `config.json`.
#[derive(Debug, Clone)]
pub struct DosContainer {
    pub root: PathBuf,
    /// `hash_type`: only "sha256" exists.
    pub hash_type: String,
    /// `loose_prefix_len`: hex digits of the loose objects' directory names.
    pub loose_prefix_len: usize,
    /// `compression_algorithm`: "zlib+<level>" (how packed objects marked
    /// compressed are stored).
    pub compression: String,
}

/// One row of the container's `db_object` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DosPacked {
    pub hashkey: String,
    pub compressed: bool,
    /// Length of the object's content.
    pub size: u64,
    pub offset: u64,
    /// Bytes it takes in the pack.
    pub length: u64,
    pub pack_id: u64,
}

/// Content bytes per commit of the destination.
const COMMIT_BYTES: u64 = 256 << 20;

/// Hashes with SHA-256 what passes through, to check it against the key,
/// and keeps the container's failure, which the batch reports only as a
/// failed stream.
struct Sha256Tee<'k, R> {
    inner: R,
    key: &'k str,
    h: sha2::Sha256,
    n: u64,
    failed: Option<Error>,
}

impl<R: Read> Read for Sha256Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = match self.inner.read(buf) {
            Ok(k) => k,
            Err(e) => {
                self.failed = Some(match e.kind() {
                    // A pack that ends early, or zlib data that does not decode.
                    std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::InvalidData
                    | std::io::ErrorKind::InvalidInput => Error::new(
                        ErrorKind::Corrupt,
                        format!("container object {}: {e}; the container is damaged", self.key),
                    ),
                    _ => Error::io(
                        &format!("cannot read container object {}", self.key),
                        std::io::Error::new(e.kind(), e.to_string()),
                    ),
                });
                return Err(e);
            }
        };
        self.h.update(&buf[..k]);
        self.n += k as u64;
        Ok(k)
    }
}

/// Reads `len` bytes at `offset` of a file.
struct Section<'a> {
    f: &'a File,
    at: u64,
    end: u64,
}

impl Read for Section<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min((self.end - self.at) as usize);
        if n == 0 {
            return Ok(0);
        }
        let k = crate::io::os::read_at(self.f, &mut buf[..n], self.at)?;
        if k == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the pack ends before the object"));
        }
        self.at += k as u64;
        Ok(k)
    }
}

fn damaged(key: &str, what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::ChecksumMismatch, format!("container object {key}: {what}; the container is damaged"))
}

impl ObjectStore {
    /// Adds every object of the container that this store lacks: the loose
    /// objects found under `loose/`, then the packed ones `packed` lists
    /// (rows of `packs.idx`). Each must hash to its key with SHA-256 or the
    /// import stops with `CHECKSUM_MISMATCH`; links under `loose/` are
    /// refused. In a SHA-256 store the objects keep their ids.
    pub fn import_disk_objectstore(
        &self,
        c: &DosContainer,
        packed: &mut dyn Iterator<Item = Result<DosPacked>>,
        progress: Progress<'_>,
    ) -> Result<TransferReport> {
        self.check_writable()?;
        if c.hash_type != "sha256" {
            return Err(Error::invalid(format!(
                "container hash type {:?} is not supported (only sha256)",
                c.hash_type
            )));
        }
        if !(c.compression.starts_with("zlib+") || c.compression == "zlib") {
            return Err(Error::invalid(format!(
                "container compression {:?} is not supported (only zlib)",
                c.compression
            )));
        }
        let mut report = TransferReport::default();
        let mut batch = self.batch_packed()?;
        let mut pending = 0u64;
        let mut done = 0u64;
        let same_ids = self.hash_kind() == HashKind::Sha256;
        let add = |batch: &mut super::add::Batch, key: &str, r: &mut dyn Read, report: &mut TransferReport| {
            if same_ids
                && let Ok(id) = ObjectId::from_hex(HashKind::Sha256, key)
                && self.has(&id)?
            {
                report.objects_present += 1;
                return Ok(None);
            }
            let mut tee = Sha256Tee { inner: r, key, h: sha2::Sha256::new(), n: 0, failed: None };
            let id = batch.add_reader(&mut tee).map_err(|e| tee.failed.take().unwrap_or(e))?;
            let got = ObjectId::from_bytes(HashKind::Sha256, &tee.h.finalize())?;
            if !got.to_hex().eq_ignore_ascii_case(key) {
                return Err(damaged(key, format!("its content hashes to {got}")));
            }
            debug_assert!(!same_ids || id == got);
            report.objects_copied += 1;
            report.bytes_copied += tee.n;
            Ok(Some(tee.n))
        };

        // Loose objects: loose/<prefix>/<rest>, uncompressed. Their keys are
        // kept: `pack_all_loose` leaves an object loose as well as packed
        // until `clean_storage` runs, and its packed copy is then skipped.
        let mut loose_keys: Vec<ObjectId> = Vec::new();
        let loose = c.root.join("loose");
        if loose.exists() {
            for d in sorted_dir(&loose)? {
                let meta = std::fs::symlink_metadata(&d).map_err(|e| Error::io("cannot stat a loose directory", e))?;
                if !meta.is_dir() {
                    return Err(Error::invalid(format!("{} is not a directory; refusing it", d.display())));
                }
                let prefix = file_name(&d)?;
                for f in sorted_dir(&d)? {
                    let key = format!("{prefix}{}", file_name(&f)?);
                    if prefix.len() != c.loose_prefix_len || !is_sha256_hex(&key) {
                        return Err(Error::invalid(format!("{} is not a loose object name; refusing it", f.display())));
                    }
                    let mut file = open_regular(&f)?;
                    loose_keys.push(ObjectId::from_hex(HashKind::Sha256, &key)?);
                    pending += add(&mut batch, &key, &mut file, &mut report)?.unwrap_or(0);
                    done += 1;
                    progress(done, 0);
                    if pending >= COMMIT_BYTES {
                        batch.commit()?;
                        batch = self.batch_packed()?;
                        pending = 0;
                    }
                }
            }
        }

        // Packed objects: packs/<pack_id> at offset, zlib when compressed.
        loose_keys.sort_unstable();
        let mut packs: HashMap<u64, File> = HashMap::new();
        for row in packed {
            let row = row?;
            let Ok(key) = ObjectId::from_hex(HashKind::Sha256, &row.hashkey) else {
                return Err(Error::invalid(format!("{:?} is not a SHA-256 key", row.hashkey)));
            };
            if loose_keys.binary_search(&key).is_ok() {
                done += 1;
                progress(done, 0);
                continue;
            }
            let f = match packs.entry(row.pack_id) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(open_regular(&c.root.join("packs").join(row.pack_id.to_string()))?)
                }
            };
            let f = &*f;
            let end = row.offset.checked_add(row.length).ok_or_else(|| damaged(&row.hashkey, "impossible offset"))?;
            let section = Section { f, at: row.offset, end };
            let n = if row.compressed {
                let mut z = flate2::read::ZlibDecoder::new(section).take(row.size.saturating_add(1));
                add(&mut batch, &row.hashkey, &mut z, &mut report)?
            } else {
                add(&mut batch, &row.hashkey, &mut section.take(row.size.saturating_add(1)), &mut report)?
            };
            if let Some(n) = n {
                if n != row.size {
                    return Err(damaged(&row.hashkey, format!("it holds {n} bytes, the index says {}", row.size)));
                }
                pending += n;
            }
            done += 1;
            progress(done, 0);
            if pending >= COMMIT_BYTES {
                batch.commit()?;
                batch = self.batch_packed()?;
                pending = 0;
            }
        }
        batch.commit()?;
        Ok(report)
    }
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn file_name(p: &Path) -> Result<String> {
    p.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
        .ok_or_else(|| Error::invalid(format!("{} has a name that is not UTF-8; refusing it", p.display())))
}

fn sorted_dir(p: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(p)
        .map_err(|e| Error::io(&format!("cannot list {}", p.display()), e))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::io(&format!("cannot list {}", p.display()), e))?;
    v.sort();
    Ok(v)
}

/// Largest `config.json` read (a container's is about 200 bytes).
#[cfg(feature = "dos-import")]
const MAX_CONFIG_BYTES: u64 = 64 << 10;

#[cfg(feature = "dos-import")]
fn container_corrupt(what: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("disk-objectstore container: {what}"))
}

#[cfg(feature = "dos-import")]
impl DosContainer {
    /// The container at `root`, as its `config.json` describes it.
    pub fn open(root: impl AsRef<Path>) -> Result<DosContainer> {
        let root = root.as_ref();
        let path = root.join("config.json");
        let f = File::open(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::new(
                ErrorKind::NotFound,
                format!("{} is not a disk-objectstore container: it has no config.json", root.display()),
            ),
            _ => Error::io(&format!("cannot read {}", path.display()), e),
        })?;
        let mut text = Vec::new();
        f.take(MAX_CONFIG_BYTES)
            .read_to_end(&mut text)
            .map_err(|e| Error::io(&format!("cannot read {}", path.display()), e))?;
        let v: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| container_corrupt(format!("config.json is not JSON of at most 64 KiB: {e}")))?;
        let text_field = |name: &str| {
            v.get(name)
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| container_corrupt(format!("config.json has no text field {name}")))
        };
        let loose_prefix_len = v
            .get("loose_prefix_len")
            .and_then(serde_json::Value::as_u64)
            .filter(|n| *n <= 64)
            .ok_or_else(|| container_corrupt("config.json has no loose_prefix_len of at most 64"))?;
        Ok(DosContainer {
            root: root.to_path_buf(),
            hash_type: text_field("hash_type")?,
            loose_prefix_len: loose_prefix_len as usize,
            compression: text_field("compression_algorithm")?,
        })
    }
}

#[cfg(feature = "dos-import")]
fn sql(e: rusqlite::Error) -> Error {
    container_corrupt(format!("packs.idx: {e}"))
}

#[cfg(feature = "dos-import")]
fn packed_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DosPacked> {
    let n = |i: usize| -> rusqlite::Result<u64> {
        let v: i64 = r.get(i)?;
        u64::try_from(v).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(i, v))
    };
    Ok(DosPacked {
        hashkey: r.get(0)?,
        compressed: r.get(1)?,
        size: n(2)?,
        offset: n(3)?,
        length: n(4)?,
        pack_id: n(5)?,
    })
}

#[cfg(feature = "dos-import")]
impl ObjectStore {
    /// Imports the disk-objectstore container at `root`: its `config.json`
    /// and its SQLite index `packs.idx` (opened read-only; a damaged one is
    /// `CORRUPT`) are read here, then as
    /// [`import_disk_objectstore`](Self::import_disk_objectstore).
    pub fn import_dos_container(&self, root: impl AsRef<Path>, progress: Progress<'_>) -> Result<TransferReport> {
        self.check_writable()?;
        let c = DosContainer::open(root)?;
        let idx = c.root.join("packs.idx");
        if !idx.is_file() {
            return Err(container_corrupt(format!("{} is missing", idx.display())));
        }
        let db = rusqlite::Connection::open_with_flags(
            &idx,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        // The file is not trusted: no functions with side effects from its
        // schema, and cell sizes checked as pages are read.
        db.execute_batch("PRAGMA trusted_schema = OFF; PRAGMA cell_size_check = ON;").map_err(sql)?;
        // Pack by pack, in offset order: the packs are read front to back.
        let mut stmt = db
            .prepare(
                "SELECT hashkey, compressed, size, offset, length, pack_id FROM db_object ORDER BY pack_id, offset",
            )
            .map_err(sql)?;
        let mut rows = stmt.query_map([], packed_row).map_err(sql)?.map(|r| r.map_err(sql));
        self.import_disk_objectstore(&c, &mut rows, progress)
    }
}
