//! Whether this system renames a file over one that another handle has
//! open (POSIX rename semantics). Unix always does; Windows does with
//! `FILE_RENAME_FLAG_POSIX_SEMANTICS` (Windows 10 1709 and later, on NTFS),
//! but Wine 8, where the Windows tests run here, refuses to replace a file
//! any handle has open. Compaction and the object store's `clean` and
//! `rebuild_index` replace an open file (FORMAT.md, "Windows"); without
//! this they must fail with `IO` and leave the store as it was, and the
//! tests check that instead. std's rename tries the same two renames as
//! the core, so it answers for it.
#![allow(dead_code)]

use std::sync::OnceLock;

pub fn replaces_open_files() -> bool {
    static ANSWER: OnceLock<bool> = OnceLock::new();
    *ANSWER.get_or_init(|| {
        let dir = std::env::temp_dir();
        let (a, b) = (
            dir.join(format!("bale-replace-{}-a", std::process::id())),
            dir.join(format!("bale-replace-{}-b", std::process::id())),
        );
        std::fs::write(&a, b"new").expect("write");
        std::fs::write(&b, b"old").expect("write");
        let held = std::fs::File::open(&b).expect("open");
        let replaced = std::fs::rename(&a, &b).is_ok();
        drop(held);
        let _ = std::fs::remove_file(&a);
        let _ = std::fs::remove_file(&b);
        replaced
    })
}
