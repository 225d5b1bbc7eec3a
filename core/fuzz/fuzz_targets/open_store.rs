//! Any bytes as a whole store file: open, read every entry (values too),
//! run check, and try a write. Every outcome but a panic, hang or huge
//! allocation is fine.
#![no_main]

use std::sync::Arc;

use bale::io::MemStorage;
use bale::{Options, ReadOps, Store};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mem = MemStorage::from_bytes(data.to_vec());
    let Ok(store) = Store::open_storage(Arc::new(mem), Options { mmap: false, ..Options::default() }) else {
        return;
    };
    if let Ok(r) = store.read() {
        for e in r.iter().take(10_000) {
            if e.is_err() {
                break;
            }
        }
        for e in r.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, true).take(100) {
            if e.is_err() {
                break;
            }
        }
        let _ = r.get(b"k");
    }
    let _ = bale::btree::check(&store);
    let _ = bale::btree::stat(&store);
    if let Ok(mut w) = store.write() {
        let _ = w.put(b"fuzz", &[1u8; 5000]);
        let _ = w.delete(b"k");
        let _ = w.commit();
    }
});
