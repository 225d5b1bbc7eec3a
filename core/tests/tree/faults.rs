//! I/O error injection (reliability plan, R6).
//!
//! A small workload (create, commits with large values, deletes, an abort)
//! runs once over a counting backend to learn its number K of writes and
//! syncs, then once for every N in 1..=K over a `FaultyStorage` that fails
//! the N-th of them. Each time: the failure surfaces as an `Io` error, the
//! handle refuses every later write transaction (`Closed`), and the bytes
//! left behind reopen to the last committed state or the one in flight,
//! pass `check`, and let the workload run to the same final state. Reads
//! fail the same way, one at a time, for every read the workload makes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::support::ReadFaulty;
use bale::io::sim::{FaultyStorage, SimRng};
use bale::io::{MemStorage, Storage};
use bale::{ErrorKind, Options, ReadOps, Store};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Stream(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

#[derive(Clone, Debug)]
struct Txn {
    ops: Vec<Op>,
    abort: bool,
}

fn bytes(rng: &mut SimRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

/// A few commits: many small keys, a 300 KB value, a streamed value,
/// overwrites and deletes of large values, and an aborted transaction.
fn workload(seed: u64) -> Vec<Txn> {
    let mut rng = SimRng::new(seed);
    let mut txns = Vec::new();
    let small = |rng: &mut SimRng, n: u64| -> Vec<Op> {
        (0..n)
            .map(|_| {
                let len = rng.below(200) as usize;
                Op::Put(format!("k{:03}", rng.below(150)).into_bytes(), bytes(rng, len))
            })
            .collect()
    };
    let mut t0 = small(&mut rng, 120);
    t0.push(Op::Put(b"big".to_vec(), bytes(&mut rng, 300 * 1024)));
    txns.push(Txn { ops: t0, abort: false });
    let mut t1 = small(&mut rng, 20);
    t1.push(Op::Stream(b"stream".to_vec(), bytes(&mut rng, 150 * 1024)));
    t1.push(Op::Put(b"medium".to_vec(), bytes(&mut rng, 5000)));
    txns.push(Txn { ops: t1, abort: false });
    let mut t2 = small(&mut rng, 10);
    t2.push(Op::Put(b"big".to_vec(), bytes(&mut rng, 200 * 1024)));
    txns.push(Txn { ops: t2, abort: true });
    let mut t3: Vec<Op> = (0..40).map(|i| Op::Delete(format!("k{:03}", i * 3).into_bytes())).collect();
    t3.push(Op::Delete(b"stream".to_vec()));
    t3.push(Op::Put(b"big".to_vec(), bytes(&mut rng, 90 * 1024)));
    txns.push(Txn { ops: t3, abort: false });
    let mut t4 = small(&mut rng, 30);
    t4.push(Op::Delete(b"big".to_vec()));
    t4.push(Op::Put(b"medium".to_vec(), b"now small".to_vec()));
    txns.push(Txn { ops: t4, abort: false });
    txns
}

fn apply(model: &mut Model, t: &Txn) {
    for op in &t.ops {
        match op {
            Op::Put(k, v) | Op::Stream(k, v) => {
                model.insert(k.clone(), v.clone());
            }
            Op::Delete(k) => {
                model.remove(k);
            }
        }
    }
}

/// The committed states: `states[i]` is the content after `i` transactions.
fn states(txns: &[Txn]) -> Vec<Model> {
    let mut out = vec![Model::new()];
    for t in txns {
        let mut m = out.last().cloned().unwrap_or_default();
        if !t.abort {
            apply(&mut m, t);
        }
        out.push(m);
    }
    out
}

/// Where the workload stopped.
enum Stop {
    Completed,
    /// Failed while creating the store.
    Create(bale::Error),
    /// Failed inside transaction `txn` (in an operation or its commit).
    Txn {
        txn: usize,
        in_commit: bool,
        err: bale::Error,
        store: Store,
    },
}

fn run_txn(store: &Store, t: &Txn) -> Result<(), (bool, bale::Error)> {
    let mut w = store.write().map_err(|e| (false, e))?;
    for op in &t.ops {
        let r = match op {
            Op::Put(k, v) => w.put(k, v),
            Op::Stream(k, v) => w.put_stream(k, &mut v.as_slice()).map(|_| ()),
            Op::Delete(k) => w.delete(k).map(|_| ()),
        };
        r.map_err(|e| (false, e))?;
    }
    if t.abort {
        w.abort();
        Ok(())
    } else {
        w.commit().map_err(|e| (true, e))
    }
}

fn run(storage: Arc<dyn Storage>, txns: &[Txn], page_size: u32) -> Stop {
    let store = match Store::open_storage(storage, Options { page_size, ..Options::create() }) {
        Ok(s) => s,
        Err(e) => return Stop::Create(e),
    };
    for (i, t) in txns.iter().enumerate() {
        if let Err((in_commit, err)) = run_txn(&store, t) {
            return Stop::Txn { txn: i, in_commit, err, store };
        }
    }
    Stop::Completed
}

fn content(store: &Store) -> Model {
    let r = store.read().expect("read txn");
    let m: Model = r.iter().map(|e| e.expect("iterate")).collect();
    assert_eq!(m.len() as u64, r.len(), "entry count");
    m
}

/// Counts writes and syncs (what `FaultyStorage` counts).
struct Counting {
    inner: MemStorage,
    ops: AtomicU64,
}

impl Storage for Counting {
    fn len(&self) -> bale::Result<u64> {
        self.inner.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> bale::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, data: &[u8], offset: u64) -> bale::Result<()> {
        self.ops.fetch_add(1, Ordering::SeqCst);
        self.inner.write_all_at(data, offset)
    }
    fn sync(&self) -> bale::Result<()> {
        self.ops.fetch_add(1, Ordering::SeqCst);
        self.inner.sync()
    }
    forward_locks!(inner);
}

/// Reopens bytes left by a failed run and checks them against the states
/// allowed when transaction `txn` was in flight (`None`: during create).
/// Returns how many transactions the bytes hold.
fn recover(bytes: Vec<u8>, txn: Option<usize>, states: &[Model], what: &str) -> (Store, usize) {
    let store = Store::open_storage(Arc::new(MemStorage::from_bytes(bytes)), Options::create())
        .unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let got = content(&store);
    let done = match txn {
        None => {
            assert!(got.is_empty(), "{what}: a store that failed to be created holds keys");
            0
        }
        Some(i) if got == states[i] => i,
        Some(i) if got == states[i + 1] => i + 1,
        Some(i) => panic!(
            "{what}: reopened content ({} keys) is neither state {i} ({} keys) nor state {} ({} keys)",
            got.len(),
            states[i].len(),
            i + 1,
            states[i + 1].len()
        ),
    };
    let rep = bale::btree::check(&store).unwrap_or_else(|e| panic!("{what}: check failed: {e}"));
    assert!(rep.is_ok(), "{what}: check found {:?}", rep.problems);
    (store, done)
}

#[derive(Default)]
struct Tally {
    points: u64,
    create: u64,
    in_ops: u64,
    in_commit: u64,
    showed_new: u64,
}

fn sweep(seed: u64, page_size: u32, tally: &mut Tally) -> u64 {
    let txns = workload(seed);
    let states = states(&txns);
    let last = states.last().cloned().unwrap_or_default();

    let counting = Arc::new(Counting { inner: MemStorage::new(), ops: AtomicU64::new(0) });
    assert!(matches!(run(counting.clone(), &txns, page_size), Stop::Completed));
    let k = counting.ops.load(Ordering::SeqCst);
    assert!(k > 10, "the workload did only {k} writes and syncs");
    {
        let s = Store::open_storage(Arc::new(MemStorage::from_bytes(counting.inner.to_bytes())), Options::default())
            .expect("reopen clean run");
        assert!(content(&s) == last, "clean run: wrong final content");
    }

    for n in 1..=k + 1 {
        let faulty = Arc::new(FaultyStorage::new(MemStorage::new(), n));
        let stop = run(faulty.clone(), &txns, page_size);
        let what = format!("page size {page_size}, fail at {n} of {k}");
        if n > k {
            assert!(matches!(stop, Stop::Completed), "{what}: the workload did not complete");
            assert_eq!(faulty.failures(), 0, "{what}");
            continue;
        }
        tally.points += 1;
        assert_eq!(faulty.failures(), 1, "{what}: the injected fault was not hit");
        let (store, done) = match stop {
            Stop::Completed => panic!("{what}: the workload completed although an operation failed"),
            Stop::Create(err) => {
                tally.create += 1;
                assert_eq!(err.kind(), ErrorKind::Io, "{what}: {err}");
                recover(faulty.inner().to_bytes(), None, &states, &what)
            }
            Stop::Txn { txn, in_commit, err, store } => {
                if in_commit {
                    tally.in_commit += 1;
                } else {
                    tally.in_ops += 1;
                }
                assert_eq!(err.kind(), ErrorKind::Io, "{what}: txn {txn}: {err}");
                // Poisoned: no further write transaction on this handle.
                for _ in 0..2 {
                    match store.write() {
                        Ok(_) => panic!("{what}: write() succeeded after a failed operation"),
                        Err(e) => assert_eq!(e.kind(), ErrorKind::Closed, "{what}: {e}"),
                    }
                }
                drop(store);
                let (s, done) = recover(faulty.inner().to_bytes(), Some(txn), &states, &what);
                if done > txn {
                    tally.showed_new += 1;
                }
                (s, done)
            }
        };
        // The recovered store finishes the workload to the same end state.
        for t in &txns[done..] {
            if let Err((_, e)) = run_txn(&store, t) {
                panic!("{what}: resuming the workload failed: {e}");
            }
        }
        assert!(content(&store) == last, "{what}: resumed workload ends in the wrong state");
        let rep = bale::btree::check(&store).expect("check");
        assert!(rep.is_ok(), "{what}: after resuming: {:?}", rep.problems);
    }
    k
}

#[test]
fn every_write_and_sync_failure_poisons_and_recovers() {
    let mut tally = Tally::default();
    let k4 = sweep(7, 4096, &mut tally);
    let k64 = sweep(8, 65536, &mut tally);
    println!(
        "R6 faults: {} injection points (K = {k4} at 4 KiB pages, {k64} at 64 KiB pages): {} in create, {} in operations, {} in commit; {} reopened to the commit in flight",
        tally.points, tally.create, tally.in_ops, tally.in_commit, tally.showed_new
    );
    assert_eq!(tally.points, k4 + k64);
    assert!(tally.create > 0 && tally.in_ops > 0 && tally.in_commit > 0);
}

/// A reader that yields `left` bytes of data and then fails.
struct FailingReader {
    left: usize,
}

impl std::io::Read for FailingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other("source went away"));
        }
        let n = buf.len().min(self.left);
        for (i, b) in buf[..n].iter_mut().enumerate() {
            *b = (self.left - i) as u8;
        }
        self.left -= n;
        Ok(n)
    }
}

/// Regression: a value stream that fails part way (the caller's source, not
/// the storage) must not leave a committed store with pages nobody owns.
#[test]
fn failed_value_stream_leaves_no_orphan_pages() {
    let mem = MemStorage::new();
    let store = Store::open_storage(Arc::new(mem.clone()), Options::create()).expect("create");
    store.put(b"before", b"1").expect("put");
    let mut w = store.write().expect("write");
    w.put(b"kept", b"2").expect("put");
    let err = w.put_stream(b"streamed", &mut FailingReader { left: 200 * 1024 }).expect_err("the stream fails");
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
    // Whether or not this commit is accepted, the store must stay consistent.
    let committed = w.commit().is_ok();
    let reopened =
        Store::open_storage(Arc::new(MemStorage::from_bytes(mem.to_bytes())), Options::default()).expect("reopen");
    let rep = bale::btree::check(&reopened).expect("check");
    assert!(rep.is_ok(), "commit accepted = {committed}; check found {:?}", rep.problems);
    assert_eq!(content(&reopened).get(b"streamed".as_slice()), None);
    // The caller's source failed, not the storage: the transaction stays
    // usable and the handle is not poisoned.
    assert!(committed, "the commit after a failed value stream was refused");
    assert_eq!(content(&reopened).get(b"kept".as_slice()).map(Vec::as_slice), Some(b"2".as_slice()));
    store.put(b"after", b"3").expect("a later write transaction");
}

/// Every read of the workload fails once, in turn. A failed read surfaces as
/// an `Io` error; the bytes stay a committed state that passes `check`; and
/// the handle is either poisoned (`Closed`) or still fully usable: running
/// the rest of the workload through it reaches the right final state.
#[test]
fn every_read_failure_is_reported_and_harmless() {
    let txns = workload(9);
    let states = states(&txns);
    let last = states.last().cloned().unwrap_or_default();
    let counting = Arc::new(ReadFaulty::new(MemStorage::new(), 0));
    assert!(matches!(run(counting.clone(), &txns, 4096), Stop::Completed));
    // The reads of a final full scan through the same handle count too.
    let reopened = Store::open_storage(counting.clone(), Options::default()).expect("reopen");
    assert!(content(&reopened) == last);
    drop(reopened);
    let k = counting.reads.load(Ordering::SeqCst);
    assert!(k > 10, "only {k} reads");
    let (mut poisoned, mut usable, mut in_scan) = (0u64, 0u64, 0u64);
    for n in 1..=k {
        let what = format!("read {n} of {k} fails");
        let mem = MemStorage::new();
        let st = Arc::new(ReadFaulty::new(mem.clone(), n));
        let (store, done) = match run(st.clone(), &txns, 4096) {
            Stop::Create(e) => {
                assert_eq!(e.kind(), ErrorKind::Io, "{what}: {e}");
                let (s, d) = recover(mem.to_bytes(), None, &states, &what);
                usable += 1;
                (s, d)
            }
            Stop::Txn { txn, err, store, .. } => {
                assert_eq!(err.kind(), ErrorKind::Io, "{what}: txn {txn}: {err}");
                let (_, done) = recover(mem.to_bytes(), Some(txn), &states, &what);
                match store.write() {
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::Closed, "{what}: {e}");
                        poisoned += 1;
                        let (s, d) = recover(mem.to_bytes(), Some(txn), &states, &what);
                        (s, d)
                    }
                    Ok(w) => {
                        drop(w);
                        usable += 1;
                        (store, done)
                    }
                }
            }
            Stop::Completed => {
                // The failing read is in the final scan.
                let s = match Store::open_storage(st.clone(), Options::default()) {
                    Ok(s) => s,
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::Io, "{what}: {e}");
                        Store::open_storage(st.clone(), Options::default()).expect("reopen after the failed one")
                    }
                };
                let scan = s.read().and_then(|r| r.iter().collect::<bale::Result<Vec<_>>>());
                match scan {
                    Err(e) => assert_eq!(e.kind(), ErrorKind::Io, "{what}: {e}"),
                    Ok(v) => assert!(v.into_iter().collect::<Model>() == last, "{what}: wrong scan"),
                }
                in_scan += 1;
                (s, txns.len())
            }
        };
        for t in &txns[done..] {
            if let Err((_, e)) = run_txn(&store, t) {
                panic!("{what}: resuming the workload failed: {e}");
            }
        }
        assert!(content(&store) == last, "{what}: the workload ends in the wrong state");
        let rep = bale::btree::check(&store).expect("check");
        assert!(rep.is_ok(), "{what}: {:?}", rep.problems);
    }
    println!(
        "R6 read faults: {k} injection points: {poisoned} poisoned the handle, {usable} left it usable, {in_scan} in the final scan"
    );
    assert_eq!(poisoned + usable + in_scan, k);
}

/// Regression: once a storage write fails, the handle is poisoned, and that
/// includes the transaction that saw the failure: its commit must be
/// refused like every later write transaction.
#[test]
fn commit_after_failed_put_is_refused() {
    // Creating the store takes two writes and two syncs (meta first, then
    // the header); the fifth operation is the first block write of the
    // large value.
    let faulty = Arc::new(FaultyStorage::new(MemStorage::new(), 5));
    let store = Store::open_storage(faulty.clone(), Options::create()).expect("create");
    let mut w = store.write().expect("write");
    w.put(b"small", b"value").expect("small put");
    let big = vec![0x5au8; 200 * 1024];
    let err = w.put(b"big", &big).expect_err("the injected fault must surface");
    assert_eq!(err.kind(), ErrorKind::Io);
    assert_eq!(faulty.failures(), 1);
    let r = w.commit();
    let bytes = faulty.inner().to_bytes();
    let reopened = Store::open_storage(Arc::new(MemStorage::from_bytes(bytes)), Options::default()).expect("reopen");
    let rep = bale::btree::check(&reopened).expect("check");
    assert!(rep.is_ok(), "committing after the failed put left a damaged store: {:?}", rep.problems);
    match r {
        Ok(()) => panic!("commit succeeded after an operation of the same transaction failed with an i/o error"),
        Err(e) => assert_eq!(e.kind(), ErrorKind::Closed, "{e}"),
    }
    assert_eq!(store.write().err().map(|e| e.kind()), Some(ErrorKind::Closed));
    assert!(content(&reopened).is_empty());
}
