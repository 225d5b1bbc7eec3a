//! `ValueRef::in_page`: inline bytes a host may point into for as long as
//! its read transaction lives (zero-copy reads), and only those.

use bale::{Options, ReadOps, Store};

#[test]
fn mapped_inline_values_are_in_page_others_are_not() {
    let p = std::env::temp_dir().join(format!("bale-in-page-{}.bale", std::process::id()));
    let _ = std::fs::remove_file(&p);
    let s = Store::open(&p, Options::create()).unwrap();
    s.put(b"small", b"inline bytes").unwrap();
    s.put(b"large", &vec![3u8; 300_000]).unwrap();
    let r = s.read().unwrap();
    let small = r.get(b"small").unwrap().unwrap();
    let bytes = small.in_page().expect("an inline value of a mapped store is in its page");
    drop(small);
    s.put(b"small", b"changed").unwrap(); // a later commit does not touch pinned pages
    assert_eq!(bytes, b"inline bytes");
    assert!(r.get(b"large").unwrap().unwrap().in_page().is_none());
    drop(r);
    drop(s);

    let unmapped = Store::open(&p, Options { mmap: false, ..Options::default() }).unwrap();
    let r = unmapped.read().unwrap();
    let v = r.get(b"small").unwrap().unwrap();
    assert!(v.in_page().is_none(), "bytes copied out of a read page are not in a page");
    assert_eq!(v.as_inline(), Some(&b"changed"[..]));
    drop(v);
    drop(r);
    drop(unmapped);
    std::fs::remove_file(&p).unwrap();
}
