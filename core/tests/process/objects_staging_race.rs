//! The packer takes any staging file it can lock. A writer must therefore
//! never let a staging file appear under a name the packer reads
//! (`staging/<16 hex>.pack`) before it holds that file's lock: a probe
//! directory tries to lock every such file the moment it appears.

use std::sync::{Arc, Mutex};

use bale::io::Storage;
use bale::objects::dir::FsDir;
use bale::objects::{Dir, ObjectOptions, ObjectStore};

struct ProbeDir {
    inner: FsDir,
    unlocked: Mutex<Vec<String>>,
}

impl ProbeDir {
    /// What a packer would do as soon as `name` is listed.
    fn probe(&self, name: &str) {
        let visible = name.starts_with("staging/") && name.ends_with(".pack");
        if visible
            && let Ok(f) = self.inner.open(name, true)
            && f.lock_writer(false).is_ok()
        {
            self.unlocked.lock().unwrap().push(name.to_string());
            f.unlock_writer();
        }
    }
}

impl Dir for ProbeDir {
    forward_dir!(inner: open, open_index, list, exists, create_dir, remove, truncate, sync_dir, lock_file, display);
    fn create_new(&self, name: &str) -> bale::Result<Arc<dyn Storage>> {
        let f = self.inner.create_new(name)?;
        self.probe(name);
        Ok(f)
    }
    fn rename(&self, from: &str, to: &str) -> bale::Result<()> {
        self.inner.rename(from, to)?;
        self.probe(to);
        Ok(())
    }
}

#[test]
fn a_staging_file_is_locked_before_the_packer_can_see_it() {
    let p = std::env::temp_dir().join(format!("bale-staging-probe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    let dir = Arc::new(ProbeDir { inner: FsDir::new(&p), unlocked: Mutex::new(Vec::new()) });
    let s = ObjectStore::open_dir(dir.clone(), ObjectOptions::create()).unwrap();
    for i in 0..3 {
        s.add(format!("object {i}").as_bytes()).unwrap();
        s.pack().unwrap();
    }
    assert_eq!(s.stats().unwrap().objects, 3);
    assert_eq!(
        *dir.unlocked.lock().unwrap(),
        Vec::<String>::new(),
        "staging files visible before their writer locked them"
    );
    let _ = std::fs::remove_dir_all(&p);
}
