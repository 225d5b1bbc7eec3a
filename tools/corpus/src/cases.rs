//! The valid cases: stores of several shapes with their expected content.

use std::collections::BTreeMap;
use std::sync::Arc;

use bale::io::MemStorage;
use bale::io::sim::SimRng;
use bale::{Options, Store, WriteTxn};

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;
/// One write transaction of a case, applied to the store and the model.
pub type Commit = Box<dyn FnOnce(&mut WriteTxn, &mut Model)>;

pub struct Case {
    pub id: &'static str,
    pub made: &'static str,
    pub page_size: u32,
    pub bytes: Vec<u8>,
    pub entries: Model,
}

/// Runs `commits` (each a closure over one write transaction and the model)
/// on a fresh in-memory store; returns the file bytes and the model.
pub fn build(page_size: u32, commits: Vec<Commit>) -> (Vec<u8>, Model) {
    let mem = MemStorage::new();
    let store = Store::open_storage(Arc::new(mem.clone()), Options { page_size, mmap: false, ..Options::create() })
        .expect("create");
    let mut model = Model::new();
    for c in commits {
        let mut w = store.write().expect("write");
        c(&mut w, &mut model);
        w.commit().expect("commit");
    }
    drop(store);
    (mem.to_bytes(), model)
}

pub fn put(w: &mut WriteTxn, m: &mut Model, k: &[u8], v: &[u8]) {
    w.put(k, v).expect("put");
    m.insert(k.to_vec(), v.to_vec());
}

fn del(w: &mut WriteTxn, m: &mut Model, k: &[u8]) {
    assert!(w.delete(k).expect("delete"));
    m.remove(k);
}

pub fn random_bytes(rng: &mut SimRng, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(n);
    v
}

fn small_value(rng: &mut SimRng, i: u64) -> Vec<u8> {
    let len = rng.below(200) as usize;
    let mut v = format!("value {i} ").into_bytes();
    v.extend(random_bytes(rng, len));
    v
}

fn text(n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 100);
    let mut i = 0u64;
    while v.len() < n {
        v.extend_from_slice(format!("{i:08} frame={} layer=beauty note=the quick brown fox\n", i % 240).as_bytes());
        i += 1;
    }
    v.truncate(n);
    v
}

fn keyed(n: u64, seed: u64) -> Commit {
    Box::new(move |w, m| {
        let mut rng = SimRng::new(seed);
        for i in 0..n {
            let k = format!("key-{:06}", (i * 7919) % n);
            let v = small_value(&mut rng, i);
            put(w, m, k.as_bytes(), &v);
        }
    })
}

pub fn valid() -> Vec<Case> {
    let mut out = Vec::new();
    let mut add = |id: &'static str, made: &'static str, page_size: u32, commits: Vec<Commit>| {
        let (bytes, entries) = build(page_size, commits);
        out.push(Case { id, made, page_size, bytes, entries });
    };
    add("empty", "a new store with no commit", 4096, vec![]);
    add("one-key", "one commit of one key", 4096, vec![Box::new(|w, m| put(w, m, b"hello", b"world"))]);
    add("thousands", "2,000 keys with 0-220 byte values in one commit", 4096, vec![keyed(2000, 1)]);
    add(
        "deep-tree",
        "400 keys of 1,000 bytes with shared prefixes: branches hold 3 keys, the tree is deep",
        4096,
        vec![Box::new(|w, m| {
            for i in 0..400u64 {
                let mut k = vec![b'p'; 990];
                k.extend_from_slice(format!("{:010}", (i * 7) % 400).as_bytes());
                put(w, m, &k, format!("v{i}").as_bytes());
            }
        })],
    );
    add(
        "large-values",
        "out-of-line values: 1.5 KB, 9 KB, 70 KB and 200 KB of random bytes (stored raw), between small keys",
        4096,
        vec![Box::new(|w, m| {
            let mut rng = SimRng::new(2);
            for (i, n) in [1500usize, 9000, 70_000, 200_000].into_iter().enumerate() {
                let v = random_bytes(&mut rng, n);
                put(w, m, format!("blob/{i}").as_bytes(), &v);
                put(w, m, format!("blob/{i}.meta").as_bytes(), format!("{{\"bytes\":{n}}}").as_bytes());
            }
        })],
    );
    add(
        "compressed-values",
        "out-of-line values of text that LZ4-compress: 5 KB, 64 KiB exactly, 150 KB (streamed)",
        4096,
        vec![Box::new(|w, m| {
            put(w, m, b"log/small", &text(5000));
            put(w, m, b"log/one-block", &text(65536));
            let big = text(150_000);
            w.put_stream(b"log/big", &mut big.as_slice()).expect("stream");
            m.insert(b"log/big".to_vec(), big);
        })],
    );
    add(
        "binary-keys",
        "keys with zero and 0xff bytes, the empty key, keys that prefix each other",
        4096,
        vec![Box::new(|w, m| {
            let keys: Vec<Vec<u8>> = vec![
                vec![],
                vec![0],
                vec![0, 0],
                vec![0, 1],
                vec![0xff],
                vec![0xff, 0xff],
                vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                b"a".to_vec(),
                b"a\0".to_vec(),
                b"a\0\0".to_vec(),
                b"ab".to_vec(),
                b"abcdefgh".to_vec(),
                b"abcdefgh\0".to_vec(),
                b"abcdefghi".to_vec(),
                vec![0x80; 1024],
            ];
            for (i, k) in keys.iter().enumerate() {
                put(w, m, k, &[i as u8; 3]);
            }
            let mut rng = SimRng::new(3);
            for i in 0..300u64 {
                let mut k = b"shared/prefix/".to_vec();
                k.extend(random_bytes(&mut rng, 1 + (i % 12) as usize));
                put(w, m, &k, &i.to_le_bytes());
            }
        })],
    );
    add(
        "after-deletes",
        "4,000 keys, then three quarters deleted and some rewritten over three more commits (free pages in the list)",
        4096,
        vec![
            keyed(4000, 4),
            Box::new(|w, m| {
                for i in (0..4000u64).filter(|i| i % 4 != 0) {
                    del(w, m, format!("key-{i:06}").as_bytes());
                }
            }),
            Box::new(|w, m| {
                for i in (0..4000u64).step_by(8) {
                    put(w, m, format!("key-{i:06}").as_bytes(), b"rewritten");
                }
            }),
            Box::new(|w, m| {
                let mut rng = SimRng::new(5);
                put(w, m, b"zz-large", &random_bytes(&mut rng, 30_000));
                del(w, m, b"key-000000");
            }),
        ],
    );
    add(
        "page-16k",
        "16 KiB pages: 1,000 keys and a 100 KB compressible value",
        16384,
        vec![keyed(1000, 6), Box::new(|w, m| put(w, m, b"text", &text(100_000)))],
    );
    add("page-64k", "64 KiB pages: 2,000 keys", 65536, vec![keyed(2000, 7)]);
    add(
        "many-commits",
        "60 small commits rewriting the same keys, so freed pages are reused",
        4096,
        (0..60u64)
            .map(|c| -> Commit {
                Box::new(move |w, m| {
                    for i in 0..40u64 {
                        put(w, m, format!("k{:03}", (i * 13 + c) % 97).as_bytes(), format!("commit {c}").as_bytes());
                    }
                })
            })
            .collect(),
    );
    out.extend(crate::damage::valid_after_damage());
    out
}
