//! Keys may be up to a quarter page long and values may be empty, so every
//! such pair must be storable: an empty value under the longest keys is
//! stored inline (a large value is never empty).

use std::sync::Arc;

use bale::io::MemStorage;
use bale::{Options, ReadOps, Store};

#[test]
fn empty_value_under_the_longest_keys_is_stored() {
    for ps in [4096u32, 65536] {
        let mem = MemStorage::new();
        let st =
            Store::open_storage(Arc::new(mem.clone()), Options { page_size: ps, ..Options::create() }).expect("create");
        let max = st.max_key_len();
        let keys: Vec<Vec<u8>> = (max - 6..=max).map(|n| vec![b'k'; n]).collect();
        let mut w = st.write().expect("write");
        for (i, k) in keys.iter().enumerate() {
            if i % 2 == 0 {
                w.put(k, b"").expect("put of an empty value");
            } else {
                w.put_stream(k, &mut std::io::empty()).expect("streamed empty value");
            }
        }
        w.commit().expect("commit");
        drop(st);
        let st =
            Store::open_storage(Arc::new(MemStorage::from_bytes(mem.to_bytes())), Options::default()).expect("reopen");
        let r = st.read().expect("read");
        for k in &keys {
            assert_eq!(
                r.get(k).expect("get").map(|v| v.to_vec().expect("value")),
                Some(Vec::new()),
                "{} bytes",
                k.len()
            );
        }
        assert!(bale::btree::check(&st).expect("check").is_ok());
    }
}
