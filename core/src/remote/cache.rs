//! What a store keeps of a remote beside it (FORMAT.md, "Remotes in a
//! store"): the last manifest seen and the packs' indexes, which never
//! change once written, so reads and pushes need not fetch them again.

use std::sync::Arc;

use crate::error::{ErrorKind, Result};
use crate::objects::Dir;

/// The folder `remotes/<name>/` of a directory store.
#[derive(Clone)]
pub struct RemoteCache {
    dir: Arc<dyn Dir>,
    base: String,
}

impl std::fmt::Debug for RemoteCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteCache({}/{})", self.dir.display(), self.base)
    }
}

impl RemoteCache {
    /// The cache under `base` (a `/`-separated folder of `dir`), made if
    /// missing.
    pub fn open(dir: Arc<dyn Dir>, base: &str) -> Result<RemoteCache> {
        let mut at = String::new();
        for part in base.split('/').filter(|p| !p.is_empty()) {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            if !dir.exists(&at)? {
                match dir.create_dir(&at) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::Io && dir.exists(&at)? => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let c = RemoteCache { dir, base: at };
        c.ensure(&c.path("idx"))?;
        Ok(c)
    }

    fn ensure(&self, sub: &str) -> Result<()> {
        if !self.dir.exists(sub)? {
            match self.dir.create_dir(sub) {
                Ok(()) => {}
                Err(_) if self.dir.exists(sub)? => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn path(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    /// A file's bytes, or `None` when it is missing.
    pub fn read(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let f = match self.dir.open(&self.path(name), false) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let len = f.len()?;
        let mut b = vec![0u8; usize::try_from(len).unwrap_or(0)];
        f.read_exact_at(&mut b, 0)?;
        Ok(Some(b))
    }

    /// Replaces a file whole: written beside it, synced, renamed over it.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let tmp = self.path(&format!("{name}.{:016x}.tmp", crate::objects::random_u64()));
        let f = self.dir.create_new(&tmp)?;
        let r = f.write_all_at(bytes, 0).and_then(|()| f.sync());
        drop(f);
        if let Err(e) = r {
            let _ = self.dir.remove(&tmp);
            return Err(e);
        }
        self.dir.rename(&tmp, &self.path(name))
    }

    pub fn remove(&self, name: &str) -> Result<()> {
        match self.dir.remove(&self.path(name)) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Removes every file of the cache, then its folders.
    pub fn clear(&self) -> Result<()> {
        let idx = self.path("idx");
        if self.dir.exists(&idx)? {
            for n in self.dir.list(&idx)? {
                crate::objects::dir::remove_if_present(&*self.dir, &format!("{idx}/{n}"))?;
            }
        }
        for n in self.dir.list(&self.base)? {
            if n != "idx" {
                crate::objects::dir::remove_if_present(&*self.dir, &self.path(&n))?;
            }
        }
        self.dir.remove_dir(&idx)?;
        self.dir.remove_dir(&self.base)
    }
}
