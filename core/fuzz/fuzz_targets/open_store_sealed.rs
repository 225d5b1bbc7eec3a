//! Like `open_store`, but first recomputes the header checksum and every
//! page trailer, so that mutations reach the decoders behind the checksums
//! (the tree walk, cell parsing, value index, free list).
#![no_main]

use std::sync::Arc;

use bale::btree::page::seal;
use bale::format::checksum::checksum;
use bale::io::MemStorage;
use bale::{Options, ReadOps, Store};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut b = data.to_vec();
    if b.len() >= 64 {
        let sum = checksum(&b[0..56], 0);
        b[56..64].copy_from_slice(&sum.to_le_bytes());
    }
    let ps = 4096;
    for (pn, page) in b.chunks_mut(ps).enumerate().skip(1) {
        if page.len() == ps && (1..=5).contains(&page[0]) {
            seal(page, pn as u64);
        }
    }
    let Ok(store) = Store::open_storage(Arc::new(MemStorage::from_bytes(b)), Options { mmap: false, ..Options::default() })
    else {
        return;
    };
    if let Ok(r) = store.read() {
        for e in r.iter().take(10_000) {
            if e.is_err() {
                break;
            }
        }
        for e in r.prefix(b"key", true).take(100) {
            if e.is_err() {
                break;
            }
        }
        if let Ok(Some(v)) = r.get(b"big") {
            let _ = v.read_range(70_000, 10_000);
        }
    }
    let _ = bale::btree::check(&store);
    let _ = bale::btree::stat(&store);
    if let Ok(mut w) = store.write() {
        let _ = w.put(b"fuzz", &[1u8; 5000]);
        let _ = w.delete(b"key00002");
        let _ = w.commit();
    }
});
