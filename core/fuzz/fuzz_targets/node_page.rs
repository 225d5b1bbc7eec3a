//! Any bytes as one leaf or branch page: decode every cell.
#![no_main]

use bale::btree::page::NodeView;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = NodeView::new(data, 3) else { return };
    for i in 0..v.count().min(70_000) {
        if v.is_leaf() {
            let _ = v.entry(i);
        } else {
            let _ = v.key(i);
            let _ = v.child(i + 1);
        }
    }
    let _ = v.search(b"some key");
    if !v.is_leaf() {
        let _ = v.child_for(b"some key");
        let _ = v.child(0);
    }
});
