//! "No allocation and no system call per lookup" (FORMAT.md, "Bitable"):
//! on a mapped table whose pages have all been verified once, `get` of an
//! inline value, `lower_bound`, `upper_bound`, `rank`, `find` and `select`
//! make no heap allocation, for keys present and absent. The allocator
//! counts each thread's allocations, so tests running beside this one do
//! not disturb it.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::borrow::Cow;

use bale::bitable::{Bitable, BuildOptions, Completion, OpenOptions, Value, Writer};

use crate::support::counting_alloc;
use counting_alloc::thread_allocations;

/// Allocations `f` makes on this thread.
fn allocations<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = thread_allocations();
    let r = f();
    (r, thread_allocations() - before)
}

fn key(i: u32) -> Vec<u8> {
    format!("user/{:04}/item{i:07}", i % 1000).into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    if i % 500 == 7 { vec![(i % 251) as u8; 5000] } else { vec![(i % 251) as u8; (i % 64) as usize] }
}

#[test]
fn lookups_on_a_mapped_table_do_not_allocate() {
    let dir = std::env::temp_dir().join(format!("bale-bitable-noalloc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.bitable");
    let mut keys: Vec<u32> = (0..30_000).collect();
    keys.sort_by_key(|&i| key(i));
    let mut w = Writer::create(&path, BuildOptions::default()).unwrap();
    for &i in &keys {
        w.append(&key(i), &value(i)).unwrap();
    }
    w.finish(Completion::Durable).unwrap();
    let t = Bitable::open(&path, OpenOptions::default()).unwrap();
    assert!(t.is_mapped());
    assert!(t.stats().unwrap().depth >= 3, "lookups should pass through two branch levels");

    // Warm-up: every page verified once (scans touch every leaf, lookups
    // every branch on their way).
    for e in t.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded).unwrap() {
        e.unwrap();
    }
    for &i in &keys {
        t.get(&key(i)).unwrap().unwrap();
    }

    let (mut probes, mut absent) = (0u64, 0u64);
    for (n, &i) in keys.iter().enumerate() {
        let k = key(i);
        let mut above = k.clone();
        above.push(0);
        let (got, a) = allocations(|| t.get(&k).unwrap());
        match got {
            Some(Value::Inline(Cow::Borrowed(v))) => {
                assert_eq!(a, 0, "get of {k:?} allocated {a} times");
                assert_eq!(v, value(i).as_slice());
                probes += 1;
            }
            Some(Value::Large(l)) => assert_eq!(l.len(), 5000),
            Some(Value::Inline(Cow::Owned(_))) => panic!("an inline value of a mapped table was copied"),
            None => panic!("{k:?} is missing"),
        }
        for probe in [&k, &above] {
            let (r, a) = allocations(|| t.rank(probe).unwrap());
            assert_eq!((r, a), (n as u64 + u64::from(probe != &k), 0), "rank of {probe:?}");
            let (c, a) = allocations(|| t.lower_bound(probe).unwrap());
            assert_eq!(a, 0, "lower_bound of {probe:?}");
            assert_eq!(c.ordinal(), n as u64 + u64::from(probe != &k));
            let (c, a) = allocations(|| t.upper_bound(probe).unwrap());
            assert_eq!(a, 0, "upper_bound of {probe:?}");
            assert_eq!(c.ordinal(), n as u64 + 1);
            drop(c);
        }
        let ((found, missing), a) = allocations(|| (t.find(&k).unwrap().is_some(), t.get(&above).unwrap().is_none()));
        assert_eq!((found, missing, a), (true, true, 0), "find and a missing get");
        absent += 1;
        let (c, a) = allocations(|| t.select(n as u64).unwrap());
        assert_eq!(a, 0, "select {n}");
        assert_eq!(c.key(), Some(k.as_slice()));
    }
    assert!(probes > 29_000 && absent == keys.len() as u64);

    // The count is live: without a map, each page read is a fresh buffer.
    let unmapped = Bitable::open(&path, OpenOptions { mmap: false }).unwrap();
    let (_, a) = allocations(|| unmapped.get(&key(keys[0])).unwrap());
    assert!(a > 0, "an unmapped get reads pages into buffers");
    drop((t, unmapped));
    let _ = std::fs::remove_dir_all(&dir);
}
