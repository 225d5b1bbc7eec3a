//! Importing a disk-objectstore container: its loose objects and the packed
//! objects its SQLite index lists. Reading SQLite is left to the caller
//! (the CLI and Python read `packs.idx` and hand over the rows), so the core
//! needs no SQL engine. Every object is checked against its SHA-256 key.

#![cfg(unix)]

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sha2::Digest as _;

use super::hash::{HashKind, ObjectId};
use super::pack::Progress;
use super::store::ObjectStore;
use super::transfer::TransferReport;
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

/// Hashes with SHA-256 what passes through, to check it against the key.
struct Sha256Tee<R> {
    inner: R,
    h: sha2::Sha256,
    n: u64,
}

impl<R: Read> Read for Sha256Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
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
        let k = self.f.read_at(&mut buf[..n], self.at)?;
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
        let add = |batch: &mut super::add::Batch<'_>, key: &str, r: &mut dyn Read, report: &mut TransferReport| {
            if same_ids
                && let Ok(id) = ObjectId::from_hex(HashKind::Sha256, key)
                && self.has(&id)?
            {
                report.objects_present += 1;
                return Ok(None);
            }
            let mut tee = Sha256Tee { inner: r, h: sha2::Sha256::new(), n: 0 };
            let id = batch.add_reader(&mut tee)?;
            let got = ObjectId::from_bytes(HashKind::Sha256, &tee.h.finalize())?;
            if !got.to_hex().eq_ignore_ascii_case(key) {
                return Err(damaged(key, format!("its content hashes to {got}")));
            }
            debug_assert!(!same_ids || id == got);
            report.objects_copied += 1;
            report.bytes_copied += tee.n;
            Ok(Some(tee.n))
        };

        // Loose objects: loose/<prefix>/<rest>, uncompressed.
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
        let mut packs: HashMap<u64, File> = HashMap::new();
        for row in packed {
            let row = row?;
            if !is_sha256_hex(&row.hashkey) {
                return Err(Error::invalid(format!("{:?} is not a SHA-256 key", row.hashkey)));
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
