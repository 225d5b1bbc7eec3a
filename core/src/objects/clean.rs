//! `clean`: packs what no writer holds, removes leftovers of interrupted
//! operations, and compacts the index.

use super::report::CleanReport;
use super::staging::new_name;
use super::store::{INDEX_NAME, ObjectStore, STAGING_DIR, staging_name_number};
use crate::btree::{Store, compact_into, stat};
use crate::error::Result;

/// Files an interrupted creation, rebuild or clean may leave.
const LEFTOVERS: [&str; 3] = ["config.tmp", "index.rebuild", "index.compact"];

impl ObjectStore {
    /// Needs exclusive use of the store. A single-file store only has its
    /// unreachable chunks dropped (its file is compacted with `bale compact`).
    pub fn clean(&self) -> Result<CleanReport> {
        self.exclusive(|| {
            let mut report = CleanReport::default();
            let Some(dir) = self.inner.dir.clone() else {
                self.drop_unreachable()?;
                return Ok(report);
            };
            self.refuse_on_fallback("clean")?;
            let packed = self.pack_locked(&*dir, &mut |_, _| {})?;
            report.files_removed += packed.files_removed;
            report.bytes_freed += packed.bytes_freed;
            // Packs the packer keeps because it cannot tell their records
            // from objects an index that fell back lost.
            let (files, bytes) = self.remove_unnamed_packs(&*dir, &self.inner.index.read()?)?;
            report.files_removed += files;
            report.bytes_freed += bytes;
            // Staging files whose making was interrupted (no lock: their
            // writer is gone).
            for name in dir.list(STAGING_DIR)? {
                let Some(n) = name.strip_suffix(".new").and_then(staging_name_number) else { continue };
                let path = new_name(n);
                let f = dir.open(&path, true)?;
                if f.lock_writer(false).is_ok() {
                    report.bytes_freed += f.len()?;
                    drop(f);
                    dir.remove(&path)?;
                    report.files_removed += 1;
                }
            }
            for name in LEFTOVERS {
                if dir.exists(name)? {
                    report.bytes_freed += dir.open(name, false)?.len()?;
                    dir.remove(name)?;
                    report.files_removed += 1;
                }
            }
            let tmp = LEFTOVERS[2];
            let index = &self.inner.index;
            report.index_bytes_before = index_bytes(index)?;
            {
                let src = index.read()?;
                let out = compact_into(&src, dir.open_index(tmp, true, false)?, index.page_size())?;
                out.close()?;
            }
            dir.sync_dir("")?;
            dir.rename(tmp, INDEX_NAME)?;
            dir.sync_dir("")?;
            index.install(dir.open_index(INDEX_NAME, false, false)?);
            report.index_bytes_after = index_bytes(index)?;
            Ok(report)
        })
    }
}

fn index_bytes(index: &Store) -> Result<u64> {
    let s = stat(index)?;
    Ok(s.file_pages * s.page_size)
}
