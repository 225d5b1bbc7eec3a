//! The crash-simulating object store directory itself: what a crash
//! image keeps of unsynced writes and directory entries, and locks that
//! belong to handles.

use bale::ErrorKind;
use bale::io::sim::{CrashMode, SimRng};
use bale::objects::sim_dir::{EntryMode, SimDir};
use bale::objects::{Dir, LockMode};

fn bytes(d: &SimDir, name: &str) -> Option<Vec<u8>> {
    d.files().get(name).cloned()
}

#[test]
fn unsynced_entries_and_writes_vanish_in_a_crash() {
    let d = SimDir::new();
    d.record_sync_points(true);
    d.create_dir("sub").unwrap();
    let f = d.create_new("sub/a").unwrap();
    f.write_all_at(b"hello", 0).unwrap();
    f.sync().unwrap();
    // The file's bytes are durable, its entry (and its directory) not.
    let p = d.now();
    let img = p.image(CrashMode::DropAll, EntryMode::SyncedOnly, &mut SimRng::new(1));
    assert!(!img.exists("sub").unwrap());
    d.sync_dir("").unwrap();
    d.sync_dir("sub").unwrap();
    f.write_all_at(b"HELLO world", 0).unwrap();
    d.rename("sub/a", "sub/b").unwrap();
    let img = d.now().image(CrashMode::DropAll, EntryMode::SyncedOnly, &mut SimRng::new(1));
    assert_eq!(bytes(&img, "sub/a").unwrap(), b"hello");
    assert!(!img.exists("sub/b").unwrap());
    let all = d.now().image(CrashMode::TornPrefix, EntryMode::UnsyncedPrefix, &mut SimRng::new(3));
    assert!(all.exists("sub/a").unwrap() != all.exists("sub/b").unwrap());
    d.sync_dir("sub").unwrap();
    d.remove("sub/b").unwrap();
    let img = d.now().image(CrashMode::DropAll, EntryMode::SyncedOnly, &mut SimRng::new(1));
    assert_eq!(bytes(&img, "sub/b").unwrap(), b"hello", "an unsynced remove is undone");
    assert_eq!(d.take_points().len(), 4);
    // The open handle still reads the removed file.
    let mut b = [0u8; 5];
    f.read_exact_at(&mut b, 0).unwrap();
    assert_eq!(&b, b"HELLO");
}

#[test]
fn locks_belong_to_handles() {
    let d = SimDir::new();
    let a = d.create_new("f").unwrap();
    let b = d.open("f", true).unwrap();
    a.lock_writer(false).unwrap();
    assert_eq!(b.lock_writer(false).unwrap_err().kind(), ErrorKind::Locked);
    drop(a);
    b.lock_writer(false).unwrap();
    let (l1, l2) = (d.lock_file().unwrap(), d.lock_file().unwrap());
    assert!(l1.set(0, LockMode::Shared, false).unwrap());
    assert!(l2.set(0, LockMode::Shared, false).unwrap());
    assert!(!l1.set(0, LockMode::Exclusive, false).unwrap());
    drop(l2);
    assert!(l1.set(0, LockMode::Exclusive, false).unwrap());
    let l3 = d.lock_file().unwrap();
    assert!(!l3.set(0, LockMode::Shared, false).unwrap());
    assert!(l1.set(0, LockMode::Shared, true).unwrap());
    assert!(l3.set(0, LockMode::Shared, false).unwrap());
}
