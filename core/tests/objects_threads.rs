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
