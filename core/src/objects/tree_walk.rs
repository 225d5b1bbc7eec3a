//! `add_tree`: adds every regular file under a directory, optionally
//! recording each relative path and its id in a tree store. Links are never
//! followed and special files never opened.
//!
//! A recorded path is the names from the root down, joined by `/`, each
//! name as the file system holds it: its bytes on Unix, its UTF-16
//! converted to UTF-8 on Windows. A Windows name that is not valid UTF-16
//! (an unpaired surrogate) has no UTF-8 form and fails the walk with
//! `INVALID_ARGUMENT`.

#![cfg(native_fs)]

use std::fs::File;
use std::path::{Path, PathBuf};

use super::add::BulkPace;
use super::hash::ObjectId;
use super::pack::Progress;
use super::report::AddTreeReport;
use super::store::ObjectStore;
use crate::btree::Store;
use crate::error::{Error, ErrorKind, Result};
use crate::io::os;

/// What to do with a symbolic link or a special file (FIFO, socket,
/// device) met in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LinkPolicy {
    /// Fail with `INVALID_ARGUMENT` naming the entry, before it is used.
    #[default]
    Refuse,
    /// Leave it out and list it in the report.
    Skip,
}

#[derive(Debug, Clone, Default)]
pub struct AddTreeOptions {
    pub links: LinkPolicy,
}

/// Deepest directory nesting walked.
const MAX_DEPTH: usize = 4096;

impl ObjectStore {
    /// Adds every regular file below `root`. With `paths`, each file's path
    /// relative to `root` (`/`-separated bytes) is put in that tree store
    /// with the object id as value, committed after the objects it names.
    pub fn add_tree(
        &self,
        root: &Path,
        opts: &AddTreeOptions,
        paths: Option<&Store>,
        progress: Progress<'_>,
    ) -> Result<AddTreeReport> {
        self.check_writable()?;
        let meta =
            std::fs::symlink_metadata(root).map_err(|e| Error::io(&format!("cannot read {}", root.display()), e))?;
        if !meta.is_dir() {
            return Err(Error::invalid(format!("{} is not a directory", root.display())));
        }
        let mut report = AddTreeReport::default();
        let mut pending: Vec<(Vec<u8>, ObjectId)> = Vec::new();
        let mut batch = self.batch_packed()?;
        let mut batch_bytes = 0u64;
        let mut batch_files = 0usize;
        let mut pace = BulkPace::new();
        let mut stack: Vec<(PathBuf, Vec<u8>, usize)> = vec![(root.to_path_buf(), Vec::new(), 0)];
        while let Some((dir, rel, depth)) = stack.pop() {
            report.dirs += 1;
            let mut entries: Vec<_> = std::fs::read_dir(&dir)
                .map_err(|e| Error::io(&format!("cannot list {}", dir.display()), e))?
                .collect::<std::io::Result<_>>()
                .map_err(|e| Error::io(&format!("cannot list {}", dir.display()), e))?;
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let name = e.file_name();
                let path = e.path();
                let Some(name) = os::name_bytes(&name) else {
                    return Err(Error::invalid(format!(
                        "{}: the name is not valid UTF-16 (an unpaired surrogate); rename the entry",
                        path.display()
                    )));
                };
                let mut child_rel = rel.clone();
                if !child_rel.is_empty() {
                    child_rel.push(b'/');
                }
                child_rel.extend_from_slice(name);
                let ft = e.file_type().map_err(|err| Error::io(&format!("cannot stat {}", path.display()), err))?;
                if ft.is_dir() {
                    if depth + 1 > MAX_DEPTH {
                        return Err(Error::new(
                            ErrorKind::TooLarge,
                            format!("{} is nested too deeply", path.display()),
                        ));
                    }
                    stack.push((path, child_rel, depth + 1));
                    continue;
                }
                if !ft.is_file() {
                    let shown = String::from_utf8_lossy(&child_rel).into_owned();
                    match opts.links {
                        LinkPolicy::Refuse => {
                            return Err(Error::invalid(format!(
                                "{shown} is a link or special file; refusing it (skip such entries explicitly)"
                            )));
                        }
                        LinkPolicy::Skip => {
                            report.skipped.push(shown);
                            continue;
                        }
                    }
                }
                let mut f = open_regular(&path)?;
                let id = batch.add_reader(&mut f)?;
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                report.files += 1;
                report.bytes += len;
                batch_bytes += len;
                batch_files += 1;
                if paths.is_some() {
                    pending.push((child_rel, id));
                }
                if pace.due(batch_files, batch_bytes) {
                    batch.commit()?;
                    record_paths(paths, &mut pending)?;
                    batch = self.batch_packed()?;
                    batch_bytes = 0;
                    batch_files = 0;
                }
                progress(report.bytes, 0);
            }
        }
        batch.commit()?;
        record_paths(paths, &mut pending)?;
        Ok(report)
    }
}

/// Opens `path` only if it is still a regular file: no link is followed
/// and a FIFO swapped in meanwhile cannot block the open.
pub(crate) fn open_regular(path: &Path) -> Result<File> {
    let f = os::open_entry(path).map_err(|e| Error::io(&format!("cannot open {}", path.display()), e))?;
    let m = f.metadata().map_err(|e| Error::io(&format!("cannot stat {}", path.display()), e))?;
    if !m.is_file() {
        return Err(Error::invalid(format!("{} changed into a non-regular file while being added", path.display())));
    }
    Ok(f)
}

fn record_paths(paths: Option<&Store>, pending: &mut Vec<(Vec<u8>, ObjectId)>) -> Result<()> {
    let Some(p) = paths else { return Ok(()) };
    if pending.is_empty() {
        return Ok(());
    }
    let mut t = p.write()?;
    for (rel, id) in pending.drain(..) {
        t.put(&rel, id.as_bytes())?;
    }
    t.commit()
}
