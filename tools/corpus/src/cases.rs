//! The valid cases: stores of several shapes with their expected content.

use std::collections::BTreeMap;
use std::sync::Arc;

use bale::btree::meta::Meta;
use bale::btree::page::{CellValue, KIND_FREE, KIND_VINDEX, NodeView, PAGE_HDR};
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
    build_then(page_size, commits, vec![])
}

/// Like [`build`], then reopens the store non-durable (`durable: false`)
/// and runs `non_durable` on that handle, so the last commits have
/// `durable_upto = t - 1`.
pub fn build_then(page_size: u32, commits: Vec<Commit>, non_durable: Vec<Commit>) -> (Vec<u8>, Model) {
    let mem = MemStorage::new();
    let mut model = Model::new();
    let runs = [(commits, true), (non_durable, false)];
    for (i, (commits, durable)) in runs.into_iter().enumerate() {
        if i > 0 && commits.is_empty() {
            continue;
        }
        let opts = Options { page_size, mmap: false, durable, ..Options::create() };
        let store = Store::open_storage(Arc::new(mem.clone()), opts).expect("open");
        for c in commits {
            let mut w = store.write().expect("write");
            c(&mut w, &mut model);
            w.commit().expect("commit");
        }
        drop(store);
    }
    (mem.to_bytes(), model)
}

/// The valid meta with the higher transaction id, decoded.
pub fn newest_meta(b: &[u8], ps: usize) -> Meta {
    let m1 = Meta::decode(&b[ps..2 * ps], 1);
    let m2 = Meta::decode(&b[2 * ps..3 * ps], 2);
    match (m1, m2) {
        (Ok(a), Ok(b)) => {
            if a.txn > b.txn {
                a
            } else {
                b
            }
        }
        (Ok(m), Err(_)) | (Err(_), Ok(m)) => m,
        _ => panic!("no valid meta"),
    }
}

/// The free-list chain of the newest commit: (chain pages, words per page).
pub fn free_chain(b: &[u8], ps: usize) -> Vec<(u64, Vec<u64>)> {
    let m = newest_meta(b, ps);
    let mut out = Vec::new();
    let mut pn = m.free_head;
    while pn != 0 {
        let p = &b[pn as usize * ps..(pn as usize + 1) * ps];
        assert_eq!(p[0], KIND_FREE, "page {pn} is not a free-list page");
        let n = u16::from_le_bytes([p[2], p[3]]) as usize;
        let next = u64_at(p, PAGE_HDR);
        let words = (0..n).map(|j| u64_at(p, PAGE_HDR + 8 + 8 * j)).collect();
        out.push((pn, words));
        pn = next;
        assert!(out.len() as u64 <= m.free_pages, "free list longer than its meta says");
    }
    assert_eq!(out.len() as u64, m.free_pages);
    out
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

pub fn put(w: &mut WriteTxn, m: &mut Model, k: &[u8], v: &[u8]) {
    w.put(k, v).expect("put");
    m.insert(k.to_vec(), v.to_vec());
}

pub fn del(w: &mut WriteTxn, m: &mut Model, k: &[u8]) {
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
    out.extend(deep_value());
    out.extend(non_durable());
    out.extend(long_free_list());
    out.extend(crate::damage::valid_after_damage());
    out
}

/// Level-0 block-index entries per 4 KiB page: (4096 - 24) / 24.
const E0_4K: usize = 169;
/// One block more than a level-0 index page lists: 169 full blocks and a
/// short last one.
const DEEP_VALUE_LEN: usize = E0_4K * 65536 + 1000;

/// `n` bytes in 64 KiB blocks that each LZ4-compress into one 4 KiB page:
/// every block starts with its number, then repeats a short pattern.
fn blocky(n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n);
    let mut b = 0usize;
    while v.len() < n {
        let start = v.len();
        v.extend_from_slice(format!("block {b:05}\n").as_bytes());
        let pattern = format!("bale-{:03}-", b % 1000);
        while v.len() < start + 65536 {
            v.extend_from_slice(pattern.as_bytes());
        }
        v.truncate(start + 65536);
        b += 1;
    }
    v.truncate(n);
    v
}

/// A value whose block index has two levels.
fn deep_value() -> Vec<Case> {
    let (bytes, entries) = build(
        4096,
        vec![Box::new(|w, m| {
            let v = blocky(DEEP_VALUE_LEN);
            w.put_stream(b"deep-value", &mut v.as_slice()).expect("stream");
            m.insert(b"deep-value".to_vec(), v);
            put(w, m, b"small", b"next to it");
        })],
    );
    let ps = 4096;
    let meta = newest_meta(&bytes, ps);
    let leaf = &bytes[meta.root as usize * ps..(meta.root as usize + 1) * ps];
    let view = NodeView::new(leaf, meta.root).expect("leaf root");
    let Ok((_, CellValue::Large(r))) = view.entry(0) else { panic!("deep-value is not a large value") };
    assert_eq!(r.depth, 2, "block index depth");
    let root = &bytes[r.root as usize * ps..];
    assert_eq!((root[0], root[1], u16::from_le_bytes([root[2], root[3]])), (KIND_VINDEX, 1, 2));
    // Every block compressed into one page: 170 block pages, 3 index pages.
    assert!(bytes.len() / ps < 200, "{} pages", bytes.len() / ps);
    vec![Case {
        id: "value-index-depth-2",
        made: "an 11 MB value of 170 compressible 64 KiB blocks, each stored in one page: its block index has two levels (169 blocks per level-0 page)",
        page_size: 4096,
        bytes,
        entries,
    }]
}

/// A durable commit, then a non-durable one on a reopened handle.
fn non_durable() -> Vec<Case> {
    let (bytes, entries) = build_then(
        4096,
        vec![keyed(300, 8)],
        vec![Box::new(|w, m| {
            for i in (0..300u64).step_by(3) {
                put(w, m, format!("key-{i:06}").as_bytes(), b"non-durable rewrite");
            }
            put(w, m, b"added-non-durably", b"yes");
        })],
    );
    let meta = newest_meta(&bytes, 4096);
    assert_eq!((meta.txn, meta.durable_upto), (2, 1), "the last commit must be non-durable");
    vec![Case {
        id: "non-durable-commit",
        made: "a durable commit, then a non-durable one (durable_upto = t - 1) on a handle opened with durable = false",
        page_size: 4096,
        bytes,
        entries,
    }]
}

/// Key `i` of the free-list case and its value: a 1,024-byte leaf cell,
/// so three cells fill a 4 KiB leaf while branches stay small.
fn fat_key(i: u64) -> Vec<u8> {
    format!("f-{i:06}").into_bytes()
}

fn fat_value(i: u64) -> Vec<u8> {
    let mut v = format!("value of f-{i:06} ").into_bytes();
    v.resize(1024 - 5 - 8, b'.');
    v
}

/// Leaves freed alternately by two commits, so that the free state holds
/// two groups of hundreds of one-page runs: its words take several chain
/// pages and its groups cross page boundaries.
fn long_free_list() -> Vec<Case> {
    const KEYS: u64 = 1800;
    let (bytes, entries) = build(
        4096,
        vec![
            Box::new(|w, m| {
                for i in 0..KEYS {
                    put(w, m, &fat_key(i), &fat_value(i));
                }
            }),
            Box::new(|w, m| {
                for i in (0..KEYS).filter(|i| (i / 3) % 2 == 1) {
                    del(w, m, &fat_key(i));
                }
            }),
            Box::new(|w, m| {
                for i in (6..KEYS).filter(|i| (i / 3) % 2 == 0) {
                    del(w, m, &fat_key(i));
                }
            }),
        ],
    );
    let chain = free_chain(&bytes, 4096);
    assert!(chain.len() >= 3, "free list of {} chain pages", chain.len());
    // Walk the word stream and record where each group starts and ends.
    let words: Vec<u64> = chain.iter().flat_map(|(_, w)| w.iter().copied()).collect();
    let per = chain[0].1.len();
    let (mut at, mut crossing) = (1usize, 0);
    for _ in 0..words[0] {
        let runs = words[at + 1] as usize;
        let end = at + 2 + 2 * runs;
        if at / per != (end - 1) / per {
            crossing += 1;
        }
        at = end;
    }
    assert_eq!(at, words.len());
    assert!(crossing >= 1, "no group crosses a chain page boundary");
    vec![Case {
        id: "long-free-list",
        made: "1,800 keys in 600 leaves, alternate leaves deleted by two commits: a free list of several chain pages, groups crossing page boundaries",
        page_size: 4096,
        bytes,
        entries,
    }]
}
