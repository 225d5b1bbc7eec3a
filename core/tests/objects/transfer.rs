//! Adding a directory tree (links and special files are never followed),
//! copying objects between stores, cleaning, and changing compression.

use bale::objects::{AddTreeOptions, Compression, Config, ObjectId, ObjectOptions, ObjectStore};
use bale::{ErrorKind, Options, Store};

use crate::support::replace;

fn small() -> Config {
    Config { chunk_min: 1024, chunk_avg: 4096, chunk_max: 16384, fanout: 16, ..Config::default() }
}

fn tree(root: &std::path::Path) {
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("top.txt"), b"top").unwrap();
    std::fs::write(root.join("a/one.json"), b"{\"x\": 1}").unwrap();
    std::fs::write(root.join("a/b/big.bin"), vec![7u8; 100_000]).unwrap();
    std::fs::write(root.join("a/dup.txt"), b"top").unwrap();
}

#[test]
fn add_tree_records_paths() {
    let d = tmp!("tree");
    let src = d.join("src");
    tree(&src);
    let s = ObjectStore::open(d.join("store"), ObjectOptions { config: small(), ..ObjectOptions::create() }).unwrap();
    let paths = Store::open(d.join("paths.bale"), Options::create()).unwrap();
    let r = s.add_tree(&src, &AddTreeOptions::default(), Some(&paths), &mut |_, _| {}).unwrap();
    assert_eq!((r.files, r.bytes), (4, 3 + 8 + 100_000 + 3));
    let id = |p: &str| ObjectId::from_bytes(s.hash_kind(), &paths.get(p.as_bytes()).unwrap().unwrap()).unwrap();
    assert_eq!(s.get(&id("a/b/big.bin")).unwrap(), vec![7u8; 100_000]);
    assert_eq!(id("top.txt"), id("a/dup.txt"));
    assert_eq!(s.stats().unwrap().objects, 3);
}

/// Unix only: on Windows, creating a symbolic link needs a privilege (or
/// developer mode), Wine 8's `CreateSymbolicLinkW` is a stub that creates
/// nothing, and Windows file systems have no FIFOs; the walk's refusal of
/// links there rests on opening with `FILE_FLAG_OPEN_REPARSE_POINT`.
#[cfg(unix)]
#[test]
fn add_tree_never_follows_links() {
    use bale::objects::LinkPolicy;
    use std::os::unix::fs::symlink;
    let d = tmp!("links");
    let src = d.join("src");
    tree(&src);
    let s = ObjectStore::open(d.join("store"), ObjectOptions { config: small(), ..ObjectOptions::create() }).unwrap();
    let paths = Store::open(d.join("paths.bale"), Options::create()).unwrap();
    // A link to a secret outside the tree, and a FIFO: refused by default,
    // listed when skipped, and never opened either way.
    let secret = d.join("secret");
    std::fs::write(&secret, b"outside").unwrap();
    symlink(&secret, src.join("a/link")).unwrap();
    let fifo = src.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = s.add_tree(&src, &AddTreeOptions::default(), None, &mut |_, _| {}).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let r = s.add_tree(&src, &AddTreeOptions { links: LinkPolicy::Skip }, Some(&paths), &mut |_, _| {}).unwrap();
    let mut skipped = r.skipped.clone();
    skipped.sort();
    assert_eq!(skipped, vec!["a/link".to_string(), "pipe".to_string()]);
    assert!(!s.has(&s.hash_kind().hash(b"outside")).unwrap());
    assert!(paths.get(b"a/link").unwrap().is_none());
    // The root itself must be a real directory, not a link to one.
    symlink(&src, d.join("srclink")).unwrap();
    let e = s.add_tree(&d.join("srclink"), &AddTreeOptions::default(), None, &mut |_, _| {}).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = s.add_tree(&src.join("top.txt"), &AddTreeOptions::default(), None, &mut |_, _| {}).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = s.add_tree(&d.join("missing"), &AddTreeOptions::default(), None, &mut |_, _| {}).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
}

#[test]
fn export_and_import_move_only_missing_objects() {
    let d = tmp!("transfer");
    let a = ObjectStore::open(d.join("a"), ObjectOptions { config: small(), ..ObjectOptions::create() }).unwrap();
    let b =
        ObjectStore::open(d.join("b.bale"), ObjectOptions { single_file: true, ..ObjectOptions::create() }).unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let ids: Vec<_> = vec![a.add(b"one").unwrap(), a.add(b"two").unwrap(), a.add(&big).unwrap()];
    b.add(b"two").unwrap();
    let r = a.export_to(&b, None, &mut |_, _| {}).unwrap();
    assert_eq!((r.objects_copied, r.objects_present), (2, 1));
    for id in &ids {
        assert_eq!(b.get_verified(id).unwrap(), a.get(id).unwrap());
    }
    let r = a.import_from(&b, None, &mut |_, _| {}).unwrap();
    assert_eq!((r.objects_copied, r.objects_present), (0, 3));
    let other = ObjectStore::open(
        d.join("c"),
        ObjectOptions {
            config: Config { hash: bale::objects::HashKind::Sha256, ..small() },
            ..ObjectOptions::create()
        },
    )
    .unwrap();
    assert_eq!(a.export_to(&other, None, &mut |_, _| {}).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn clean_compacts_the_index_and_repack_changes_the_policy() {
    let d = tmp!("clean");
    let p = d.join("s");
    let s = ObjectStore::open(&p, ObjectOptions { config: small(), ..ObjectOptions::create() }).unwrap();
    let ids: Vec<_> =
        (0..3000u32).map(|i| s.add(format!("object {i} {}", "x".repeat(200)).as_bytes()).unwrap()).collect();
    std::fs::write(p.join("index.rebuild"), b"left over").unwrap();
    assert_eq!(s.delete(&ids[..2500]).unwrap(), 2500);
    if replace::replaces_open_files() {
        let r = s.clean().unwrap();
        assert!(r.files_removed >= 2, "{r:?}");
        assert!(r.index_bytes_after < r.index_bytes_before, "{r:?}");
        assert!(!p.join("index.rebuild").exists());
    } else {
        // The open index cannot be replaced here: clean fails at that
        // step, and the store goes on with the index it had.
        assert_eq!(s.clean().unwrap_err().kind(), ErrorKind::Io);
    }
    for id in &ids[2500..] {
        s.get_verified(id).unwrap();
    }
    assert!(s.meta(&ids[2999]).unwrap().compressed);
    s.repack(Some(Compression::Never), &mut |_, _| {}).unwrap();
    assert!(!s.meta(&ids[2999]).unwrap().compressed);
    let fresh = s.add(&vec![b'q'; 5000]).unwrap();
    assert!(!s.meta(&fresh).unwrap().compressed);
    s.close().unwrap();
    let s = ObjectStore::open(&p, ObjectOptions::default()).unwrap();
    assert_eq!(s.compression(), Compression::Never);
    assert!(s.validate(100.0, &mut |_, _| {}).unwrap().is_ok());
}

#[test]
fn a_single_file_store_repacks_too() {
    let d = tmp!("single-repack");
    let s = ObjectStore::open(
        d.join("s.bale"),
        ObjectOptions { config: small(), single_file: true, ..ObjectOptions::create() },
    )
    .unwrap();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2654435761) >> 11) as u8).collect();
    let big_id = s.add(&big).unwrap();
    let text = s.add(&b"compressible ".repeat(500)).unwrap();
    assert!(s.meta(&text).unwrap().compressed);
    assert_eq!(s.delete(&[big_id]).unwrap(), 1);
    let r = s.repack(None, &mut |_, _| {}).unwrap();
    assert!(r.entries_dropped > 10, "{r:?}");
    let r = s.repack(Some(Compression::Never), &mut |_, _| {}).unwrap();
    assert_eq!(r.records_moved, 1);
    assert!(!s.meta(&text).unwrap().compressed);
    assert_eq!(s.compression(), Compression::Never);
    assert_eq!(s.get_verified(&text).unwrap(), b"compressible ".repeat(500));
    assert!(s.validate(100.0, &mut |_, _| {}).unwrap().is_ok());
    assert_eq!(s.stats().unwrap().objects, 1);
}
