//! Leaves stay well filled when commits scatter inserts over a large tree:
//! an insert into a full leaf splits it, and repacking the two halves must
//! not leave a leaf holding one entry (such leaves would pile up).

use bale::{Options, ReadOps, Store};

fn key(x: &mut u64) -> [u8; 33] {
    let mut k = [b'o'; 33];
    for b in k[1..].iter_mut() {
        *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *b = (*x >> 56) as u8;
    }
    k
}

#[test]
fn scattered_inserts_keep_leaves_filled() {
    let p = std::env::temp_dir().join(format!("bale-leaf-fill-{}.bale", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let s = Store::open(&p, Options::create()).unwrap();
    let mut x = 1u64;
    let mut all: Vec<[u8; 33]> = (0..60_000).map(|_| key(&mut x)).collect();
    all.sort();
    let mut t = s.write().unwrap();
    for k in &all {
        t.put(k, &[7u8; 32]).unwrap();
    }
    t.commit().unwrap();
    // Far fewer inserts per commit than leaves: changed leaves are isolated.
    for _ in 0..40 {
        let mut keys: Vec<[u8; 33]> = (0..500).map(|_| key(&mut x)).collect();
        keys.sort();
        let mut t = s.write().unwrap();
        for k in &keys {
            t.put(k, &[7u8; 32]).unwrap();
        }
        t.commit().unwrap();
    }
    let st = bale::btree::stat(&s).unwrap();
    assert_eq!(st.entries, 80_000);
    assert!(s.read().unwrap().get(&all[12_345]).unwrap().is_some());
    assert!(st.fill > 0.6, "leaf fill fell to {:.3} over {} leaves", st.fill, st.leaf_pages);
    let _ = std::fs::remove_file(&p);
}
