//! Copying objects between stores: only what the destination lacks moves,
//! and every object is verified against its id on the way.

use super::hash::ObjectId;
use super::pack::Progress;
use super::report::TransferReport;
use super::store::ObjectStore;
use crate::error::{Error, ErrorKind, Result};

/// Content bytes per destination commit.
const COMMIT_BYTES: u64 = 256 << 20;

impl ObjectStore {
    /// Copies `ids` (every object when `None`) into `dest`, skipping those
    /// it has. Both stores must use the same hash. Each object is streamed
    /// (bounded memory), re-chunked with the destination's parameters, and
    /// refused with `CHECKSUM_MISMATCH` if it does not hash to its id.
    pub fn export_to(
        &self,
        dest: &ObjectStore,
        ids: Option<&[ObjectId]>,
        progress: Progress<'_>,
    ) -> Result<TransferReport> {
        self.check_open()?;
        dest.check_writable()?;
        if self.hash_kind() != dest.hash_kind() {
            return Err(Error::invalid(format!(
                "the stores name objects with different hashes ({} and {}); ids would not carry over",
                self.hash_kind().name(),
                dest.hash_kind().name()
            )));
        }
        let all;
        let ids = match ids {
            Some(i) => i,
            None => {
                all = self.ids()?;
                &all
            }
        };
        let present = dest.has_many(ids)?;
        let mut report = TransferReport::default();
        let mut batch = dest.batch_packed()?;
        let mut pending = 0u64;
        for (id, have) in ids.iter().zip(present) {
            if have {
                report.objects_present += 1;
                continue;
            }
            let mut r = self.reader(id)?;
            r.set_verify(true);
            let got = batch.add_reader(&mut r)?;
            if got != *id {
                return Err(Error::new(
                    ErrorKind::ChecksumMismatch,
                    format!("object {id} read back as {got}; the source store is damaged, run `bale obj validate`"),
                ));
            }
            report.objects_copied += 1;
            report.bytes_copied += r.len();
            pending += r.len();
            if pending >= COMMIT_BYTES {
                batch.commit()?;
                batch = dest.batch_packed()?;
                pending = 0;
            }
            progress(report.objects_copied + report.objects_present, ids.len() as u64);
        }
        batch.commit()?;
        Ok(report)
    }

    /// Copies `ids` (every object when `None`) from `src` into this store,
    /// skipping those it has.
    pub fn import_from(
        &self,
        src: &ObjectStore,
        ids: Option<&[ObjectId]>,
        progress: Progress<'_>,
    ) -> Result<TransferReport> {
        src.export_to(self, ids, progress)
    }
}
