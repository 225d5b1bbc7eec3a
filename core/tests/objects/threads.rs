//! One handle shared by threads: bulk adds, packing and maintenance from
//! several threads at once never write over each other.

use bale::ErrorKind;
use bale::objects::{ObjectOptions, ObjectStore};

fn blob(t: u64, i: u64) -> Vec<u8> {
    let mut x = t * 1_000_003 + i;
    (0..200 + (i % 700) as usize)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect()
}

#[test]
fn threads_of_one_handle_bulk_add_and_pack_without_overlap() {
    let p = std::env::temp_dir().join(format!("bale-obj-threads-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    let s = ObjectStore::open(&p, ObjectOptions::create()).unwrap();
    let all: Vec<(bale::objects::ObjectId, Vec<u8>)> = std::thread::scope(|sc| {
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                let s = &s;
                sc.spawn(move || {
                    let mut out = Vec::new();
                    for round in 0..5u64 {
                        let items: Vec<Vec<u8>> = (0..400).map(|i| blob(t, round * 1000 + i)).collect();
                        // A maintenance call of this handle (below) makes a
                        // batch starting meanwhile fail with LOCKED: retry.
                        let ids = loop {
                            match s.add_many(items.iter().map(Vec::as_slice)) {
                                Ok(ids) => break ids,
                                Err(e) => assert_eq!(e.kind(), ErrorKind::Locked, "{e}"),
                            }
                        };
                        out.extend(ids.into_iter().zip(items));
                        match s.pack() {
                            Ok(_) => {}
                            Err(e) => assert_eq!(e.kind(), ErrorKind::Locked, "{e}"),
                        }
                    }
                    out
                })
            })
            .collect();
        // Maintenance while batches of this handle are open is refused, not
        // run under them.
        for _ in 0..20 {
            if let Err(e) = s.delete(&[]) {
                assert_eq!(e.kind(), ErrorKind::Locked, "{e}");
            }
        }
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    for (id, data) in &all {
        assert_eq!(&s.get_verified(id).unwrap(), data);
    }
    let r = s.validate(100.0, &mut |_, _| {}).unwrap();
    assert!(r.is_ok(), "{:?}", &r.problems[..r.problems.len().min(3)]);
    assert_eq!(s.stats().unwrap().objects, 4 * 5 * 400);
    let _ = std::fs::remove_dir_all(&p);
}

/// Sets a flag when the thread that owns it panics, so that the loops of
/// the other threads end (and the failure is reported, not a hang).
struct StopOnPanic<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// `validate` on its own handle while writer handles add (each reopened
/// after every few batches, which leaves its staging file to the packer)
/// and a packer handle packs in a loop: records move and the files they
/// were in go while it runs, and it must report nothing.
#[test]
fn validate_beside_writers_and_a_packer_reports_nothing() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    const WRITERS: u64 = 3;
    const ROUNDS: u64 = 20;
    const BATCHES: u64 = 3;
    const PER_BATCH: u64 = 20;
    let p = std::env::temp_dir().join(format!("bale-obj-validate-race-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    ObjectStore::open(&p, ObjectOptions::create()).unwrap().close().unwrap();
    let writing = AtomicUsize::new(WRITERS as usize);
    let stop = AtomicBool::new(false);
    let (runs, moved) = std::thread::scope(|sc| {
        let _stop = StopOnPanic(&stop);
        for t in 0..WRITERS {
            let (p, writing, stop) = (&p, &writing, &stop);
            sc.spawn(move || {
                let _stop = StopOnPanic(stop);
                for round in 0..ROUNDS {
                    let s = ObjectStore::open(p, ObjectOptions::default()).unwrap();
                    for b in 0..BATCHES {
                        let mut batch = s.batch().unwrap();
                        for i in 0..PER_BATCH {
                            let mut data = blob(t, round * 1000 + b * 100 + i);
                            data.resize(data.len() * 8, t as u8);
                            batch.add(&data).unwrap();
                        }
                        batch.commit().unwrap();
                    }
                    s.close().unwrap();
                }
                writing.fetch_sub(1, Ordering::SeqCst);
            });
        }
        let packer = sc.spawn(|| {
            let s = ObjectStore::open(&p, ObjectOptions::default()).unwrap();
            let mut moved = 0;
            while !stop.load(Ordering::SeqCst) {
                let r = s.pack().unwrap();
                assert!(r.problems.is_empty(), "{:?}", r.problems);
                moved += r.records_moved;
            }
            s.close().unwrap();
            moved
        });
        let v = ObjectStore::open(&p, ObjectOptions { readonly: true, ..ObjectOptions::default() }).unwrap();
        let mut runs = 0;
        while writing.load(Ordering::SeqCst) > 0 && !stop.load(Ordering::SeqCst) || runs == 0 {
            // Pauses now and then give the packer time to move records
            // while a run is under way (they only widen the race).
            let mut calls = 0u64;
            let mut pace = |_, _| {
                calls += 1;
                if calls.is_multiple_of(10) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            };
            let r = v.validate(100.0, &mut pace).unwrap();
            let some = &r.problems[..r.problems.len().min(3)];
            assert!(r.is_ok(), "run {runs}: {} problems: {some:?}", r.problems.len());
            runs += 1;
        }
        stop.store(true, Ordering::SeqCst);
        (runs, packer.join().unwrap())
    });
    let s = ObjectStore::open(&p, ObjectOptions::default()).unwrap();
    let r = s.validate(100.0, &mut |_, _| {}).unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    assert_eq!(r.objects_checked, WRITERS * ROUNDS * BATCHES * PER_BATCH);
    assert!(moved > 0 && runs > 0, "the packer moved {moved} records during {runs} validate runs");
    println!("{runs} validate runs beside writers and a packer that moved {moved} records");
    let _ = std::fs::remove_dir_all(&p);
}
