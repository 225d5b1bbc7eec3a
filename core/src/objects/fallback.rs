//! An index that may have fallen back to an earlier commit (FORMAT.md,
//! "Index"): found from its meta slots, recorded in the index itself so
//! that the next commit cannot erase the evidence, and kept until
//! `rebuild_index` replaces the index.

use super::entry::KEY_FALLBACK;
use super::store::{INDEX_NAME, ObjectStore, guard};
use crate::btree::{ReadOps, ReadTxn};
use crate::error::{Error, Result};

/// The longest warning read back from the index (a hostile value is not
/// read whole).
const MAX_WARNING: u64 = 4096;

impl ObjectStore {
    /// At opening: notes a lost commit and, in a directory store opened for
    /// writing, records it in the index (best effort: this handle keeps
    /// the files anyway when that write fails).
    pub(super) fn with_index_warning(self) -> ObjectStore {
        // A store whose slots cannot be read fails on its first call anyway.
        let lost = self.lost_commits().unwrap_or(None);
        if let Some(w) = &lost
            && self.inner.dir.is_some()
            && !self.inner.readonly
        {
            let _ = self.mark_fallback(w);
        }
        *guard(&self.inner.index_warning) = lost;
        self
    }

    fn mark_fallback(&self, warning: &str) -> Result<()> {
        let mut t = self.inner.index.write()?;
        if t.get(KEY_FALLBACK)?.is_none() {
            t.put(KEY_FALLBACK, warning.as_bytes())?;
            t.commit()?;
        }
        Ok(())
    }

    /// Set when the index may have fallen back to an earlier commit
    /// (damage to its newest commit, or a crash while that was written):
    /// objects acknowledged after it may then be missing from it although
    /// their records are still in the packs or staging files. A directory
    /// store records this in its index when a handle opens it for writing,
    /// and keeps it until `rebuild_index` recovers those objects and clears
    /// it; meanwhile the packer removes no staging file, and `clean` and
    /// `repack` refuse to run. `validate` reports the same.
    pub fn index_warning(&self) -> Option<String> {
        let marked = self.inner.index.read().ok().and_then(|r| self.fallback(&r).ok().flatten());
        marked.or_else(|| guard(&self.inner.index_warning).clone())
    }

    /// In a directory store: the warning while records no entry names may
    /// be objects the index lost, from the index or, where recording it
    /// failed, from this handle's opening.
    pub(crate) fn fallback(&self, snap: &ReadTxn) -> Result<Option<String>> {
        if self.inner.dir.is_none() {
            return Ok(None);
        }
        match snap.get(KEY_FALLBACK)? {
            Some(v) => {
                let text = v.read_range(0, v.len().min(MAX_WARNING))?;
                Ok(Some(String::from_utf8_lossy(&text).into_owned()))
            }
            None => Ok(guard(&self.inner.index_warning).clone()),
        }
    }

    /// `CORRUPT` while [`ObjectStore::fallback`] holds: `what` removes
    /// records no entry names.
    pub(crate) fn refuse_on_fallback(&self, what: &str) -> Result<()> {
        if let Some(w) = self.fallback(&self.inner.index.read()?)? {
            return Err(Error::corrupt(format!(
                "{what} refused: it would remove records that may hold objects the index lost; {w}"
            )));
        }
        Ok(())
    }

    /// The index's meta slots checked against the commit in use: a
    /// message when one is damaged or blank past commit 0.
    pub(crate) fn lost_commits(&self) -> Result<Option<String>> {
        let index = &self.inner.index;
        let in_use = index.read()?.snapshot().meta;
        for (i, state) in index.meta_slots()?.iter().enumerate() {
            let Some(problem) = crate::btree::meta::slot_problem(state, i as u64 + 1, &in_use) else { continue };
            let (what, hint) = match &self.inner.dir {
                Some(d) => (
                    format!("{}/{INDEX_NAME}", d.display()),
                    "run `bale obj validate`; `bale obj repair --rebuild-index` recovers them from the packs",
                ),
                None => ("the store file".to_string(), "run `bale obj validate` and `bale check`"),
            };
            return Ok(Some(format!(
                "{what}: {problem}; objects acknowledged after commit {} may be missing from the index: {hint}",
                in_use.txn
            )));
        }
        Ok(None)
    }
}
