//! Object store handles: what `close` does to the work of other clones of
//! the handle, and the store locks between processes.

mod object_gen;

use bale::ErrorKind;
use bale::io::sim::SimRng;
use bale::objects::{ObjectOptions, ObjectStore};
use object_gen::{noise, small_chunks, tmp_dir};

fn kind<T>(r: bale::Result<T>) -> Option<ErrorKind> {
    r.err().map(|e| e.kind())
}

/// A batch open when its handle is closed (through any clone) is refused
/// from then on: its adds and its commit fail with `CLOSED`, nothing of it
/// is stored, and a single-file batch's writer lock goes with it.
#[test]
fn a_batch_open_at_close_fails_with_closed() {
    let dir = tmp_dir("obj-close-batch");
    let big = noise(&mut SimRng::new(5), 60_000);
    for single in [false, true] {
        let path = dir.join(if single { "o.bale" } else { "o" });
        let opts = ObjectOptions { config: small_chunks(), single_file: single, ..ObjectOptions::create() };
        let s = ObjectStore::open(&path, opts).expect("create");
        let kept = s.add(b"committed before the close").expect("add");
        let other = s.clone();
        let mut b = s.batch().expect("batch");
        let early = b.add(b"added before the close").expect("add in the batch");
        let mut w = b.add_stream();
        w.write(&big[..30_000]).expect("stream in the batch");
        other.close().expect("close");
        assert_eq!(kind(w.write(&big[30_000..])), Some(ErrorKind::Closed), "single file: {single}");
        assert_eq!(kind(w.finish()), Some(ErrorKind::Closed), "single file: {single}");
        assert_eq!(kind(b.add(b"added after the close")), Some(ErrorKind::Closed), "single file: {single}");
        assert_eq!(kind(b.add_reader(&mut &big[..])), Some(ErrorKind::Closed), "single file: {single}");
        assert_eq!(kind(b.commit()), Some(ErrorKind::Closed), "single file: {single}");
        assert_eq!(kind(s.batch()), Some(ErrorKind::Closed));
        assert_eq!(kind(s.add(b"x")), Some(ErrorKind::Closed));
        drop(s);
        let again = ObjectStore::open(&path, ObjectOptions::default()).expect("reopen");
        assert!(again.has(&kept).expect("has"));
        assert!(!again.has(&early).expect("has"), "single file: {single}: a batch of a closed handle was stored");
        assert!(!again.has(&bale::objects::HashKind::Blake3.hash(&big)).expect("has"));
        let late = again.add(b"the writer lock is free").expect("add after");
        assert!(again.has(&late).expect("has"));
        again.close().expect("close");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
