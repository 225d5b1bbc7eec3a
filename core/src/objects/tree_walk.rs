//! `add_tree`: adds every regular file under a directory, optionally
//! recording each relative path and its id in a tree store. Links are never
//! followed and special files never opened: directories are walked by
//! handle (`io::os::WalkDir`), each entry opened in its directory without
//! following a link, so a directory or file replaced by a link after it
//! was listed is not followed either.
//!
//! A recorded path is the names from the root down, joined by `/`, each
//! name as the file system holds it: its bytes on Unix, its UTF-16
//! converted to UTF-8 on Windows. A Windows name that is not valid UTF-16
//! (an unpaired surrogate) has no UTF-8 form and fails the walk with
//! `INVALID_ARGUMENT`.

#![cfg(native_fs)]

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::add::BulkPace;
use super::hash::ObjectId;
use super::pack::Progress;
use super::report::AddTreeReport;
use super::store::ObjectStore;
use crate::btree::Store;
use crate::error::{Error, ErrorKind, Result};
use crate::io::os::{self, EntryKind};

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
    ///
    /// `root` must be a directory, not a link to one. The walk goes by
    /// directory handles: each directory is opened without following a
    /// link, listed, and its entries opened in it, again without following
    /// a link. Links and special files the listing shows are refused or
    /// skipped as `opts.links` says. An entry that changes after it was
    /// listed (a directory or file replaced by a link, a FIFO, or anything
    /// else not of its listed kind) is neither followed nor read: the walk
    /// fails with `INVALID_ARGUMENT` naming it, whatever `opts.links` says,
    /// since the listing no longer describes the tree.
    ///
    /// Platforms: on Unix (Linux, macOS) entries are opened relative to
    /// their directory's descriptor (`openat` with `O_NOFOLLOW`, and
    /// `O_DIRECTORY` for directories), so renames anywhere above cannot
    /// redirect the walk. Windows has no such open in the Win32 API: a
    /// directory is opened by path with `FILE_FLAG_OPEN_REPARSE_POINT |
    /// FILE_FLAG_BACKUP_SEMANTICS`, refused if it is not a directory or is a
    /// symbolic link or junction, and held open without delete sharing
    /// while walked, so that it cannot be renamed or removed (nor, on NTFS,
    /// a directory above it) and its path keeps naming it. A directory
    /// handle stays open per level of the directory being walked.
    pub fn add_tree(
        &self,
        root: &Path,
        opts: &AddTreeOptions,
        paths: Option<&Store>,
        progress: Progress<'_>,
    ) -> Result<AddTreeReport> {
        self.walk(root, opts, paths, progress, &mut |_| {})
    }

    /// The walk, calling `listed` with each directory's path once it is
    /// listed, before anything in it is opened (tests change the tree
    /// there).
    fn walk(
        &self,
        root: &Path,
        opts: &AddTreeOptions,
        paths: Option<&Store>,
        progress: Progress<'_>,
        listed: &mut dyn FnMut(&Path),
    ) -> Result<AddTreeReport> {
        self.check_writable()?;
        let root_dir = os::open_walk_root(root)
            .map_err(|e| Error::io(&format!("cannot open {}", root.display()), e))?
            .ok_or_else(|| Error::invalid(format!("{} is not a directory", root.display())))?;
        let mut report = AddTreeReport::default();
        let mut pending: Vec<(Vec<u8>, ObjectId)> = Vec::new();
        let mut batch = self.batch_packed()?;
        let mut batch_bytes = 0u64;
        let mut batch_files = 0usize;
        let mut pace = BulkPace::new();
        let mut root_dir = Some(root_dir);
        let mut stack = vec![ToWalk { at: None, path: root.to_path_buf(), rel: Vec::new(), depth: 0 }];
        while let Some(ToWalk { at, path: dir_path, rel, depth }) = stack.pop() {
            let dir = match at {
                None => root_dir.take().expect("the root is walked once"),
                Some((parent, name)) => parent
                    .open_dir(&name)
                    .map_err(|e| Error::io(&format!("cannot open {}", dir_path.display()), e))?
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "{} changed into a link or non-directory while being added; it was not followed",
                            dir_path.display()
                        ))
                    })?,
            };
            let dir = Rc::new(dir);
            report.dirs += 1;
            let mut entries = dir.list().map_err(|e| Error::io(&format!("cannot list {}", dir_path.display()), e))?;
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            listed(&dir_path);
            for e in entries {
                let path = dir_path.join(&e.name);
                let Some(name) = os::name_bytes(&e.name) else {
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
                match e.kind {
                    EntryKind::Dir => {
                        if depth + 1 > MAX_DEPTH {
                            return Err(Error::new(
                                ErrorKind::TooLarge,
                                format!("{} is nested too deeply", path.display()),
                            ));
                        }
                        stack.push(ToWalk { at: Some((dir.clone(), e.name)), path, rel: child_rel, depth: depth + 1 });
                        continue;
                    }
                    EntryKind::Other => {
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
                    EntryKind::File => {}
                }
                let mut f = open_regular_in(&dir, &e.name, &path)?;
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

/// A directory still to walk: its parent's handle and its name there (None
/// for the root, open already), its path for messages, its path relative
/// to the root and its depth. A parent stays open while a child of it waits
/// on the stack: one handle per level of the directory being walked.
struct ToWalk {
    at: Option<(Rc<os::WalkDir>, OsString)>,
    path: PathBuf,
    rel: Vec<u8>,
    depth: usize,
}

/// Opens the file `name` of `dir` only if it is still a regular file, as
/// [`open_regular`] does by path; `path` is for messages.
fn open_regular_in(dir: &os::WalkDir, name: &OsStr, path: &Path) -> Result<File> {
    let changed =
        || Error::invalid(format!("{} changed into a link or non-regular file while being added", path.display()));
    let f = dir.open_file(name).map_err(|e| Error::io(&format!("cannot open {}", path.display()), e))?;
    let f = f.ok_or_else(changed)?;
    let m = f.metadata().map_err(|e| Error::io(&format!("cannot stat {}", path.display()), e))?;
    if !m.is_file() {
        return Err(changed());
    }
    Ok(f)
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

#[cfg(test)]
mod tests {
    #[cfg(unix)]
    use super::*;
    #[cfg(unix)]
    use crate::objects::ObjectOptions;

    #[cfg(unix)]
    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bale-treewalk-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// `src/sub` (and `src/file.txt`) are listed, then replaced by links to
    /// a directory (and a file) outside the root before the walk opens
    /// them. Unix only: creating links on Windows needs a privilege.
    #[cfg(unix)]
    #[test]
    fn a_directory_swapped_for_a_symlink_is_never_followed_outside_the_root() {
        use std::os::unix::fs::symlink;
        let d = tmp("swap");
        let (src, outside) = (d.join("src"), d.join("outside"));
        std::fs::create_dir_all(src.join("sub")).unwrap();
        std::fs::write(src.join("sub/inside.txt"), b"inside").unwrap();
        std::fs::write(src.join("file.txt"), b"file").unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), b"outside the root").unwrap();
        let s = ObjectStore::open(d.join("store"), ObjectOptions::create()).unwrap();
        let secret = s.hash_kind().hash(b"outside the root");
        for (swapped, target) in [("sub", outside.clone()), ("file.txt", outside.join("secret.txt"))] {
            for links in [LinkPolicy::Refuse, LinkPolicy::Skip] {
                let mut swap = |dir: &Path| {
                    if dir == src {
                        std::fs::rename(src.join(swapped), d.join("moved")).unwrap();
                        symlink(&target, src.join(swapped)).unwrap();
                    }
                };
                let r = s.walk(&src, &AddTreeOptions { links }, None, &mut |_, _| {}, &mut swap);
                let e = r.expect_err("the walk went on through an entry swapped for a link");
                assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
                assert!(e.to_string().contains("while being added"), "{e}");
                assert!(!s.has(&secret).unwrap());
                std::fs::remove_file(src.join(swapped)).unwrap();
                std::fs::rename(d.join("moved"), src.join(swapped)).unwrap();
            }
        }
        // Untouched, the same tree is walked whole.
        let r = s.add_tree(&src, &AddTreeOptions::default(), None, &mut |_, _| {}).unwrap();
        assert_eq!((r.files, r.dirs), (2, 2));
        assert!(!s.has(&secret).unwrap());
    }
}
