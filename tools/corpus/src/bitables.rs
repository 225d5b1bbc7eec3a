//! Bitable cases: tables of several page sizes and alignments, large
//! values, an empty table, one key, a deep table and binary keys, with
//! their expected content and probes; and damaged or foreign files with
//! the error code each must produce.

use std::collections::BTreeMap;
use std::sync::Arc;

use bale::bitable::{BuildOptions, Completion, Compression, Writer};
use bale::format::checksum::checksum;
use bale::io::MemStorage;
use bale::io::sim::SimRng;
use serde_json::{Value, json};

use crate::{Output, to_hex};

type Pairs = BTreeMap<Vec<u8>, Vec<u8>>;

struct Case {
    id: &'static str,
    made: &'static str,
    opts: BuildOptions,
    pairs: Pairs,
}

fn opts(page_size: u32, align: u32) -> BuildOptions {
    BuildOptions { page_size, align, compression: Compression::Auto }
}

fn build(opts: BuildOptions, pairs: &Pairs) -> Vec<u8> {
    let out = MemStorage::new();
    let mut w = Writer::new(Arc::new(out.clone()), opts).expect("writer");
    w.append_iter(pairs.iter()).expect("append");
    w.finish(Completion::Durable).expect("finish");
    out.to_bytes()
}

fn noise(rng: &mut SimRng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

fn valid() -> Vec<Case> {
    let mut rng = SimRng::new(0xb17ab1e);
    let mut small = Pairs::new();
    for i in 0..400u32 {
        let key = format!("asset/{}/{:05}", ["aurora", "basalt", "cinder"][i as usize % 3], i * 37 % 1000);
        small.insert(key.into_bytes(), format!("{{\"n\":{i}}}").into_bytes());
    }
    let mut fixed = Pairs::new();
    for i in 0..2000u64 {
        // Fixed-layout records: 8-byte big-endian ids, 16-byte values.
        let mut k = i.to_le_bytes();
        k.reverse();
        let mut v = (i * 3).to_le_bytes().to_vec();
        v.extend_from_slice(&(i * 5).to_le_bytes());
        fixed.insert(k.to_vec(), v);
    }
    let text: Vec<u8> = (0..20_000u32).flat_map(|i| format!("frame={i} layer=beauty\n").into_bytes()).collect();
    let mut large = Pairs::new();
    large.insert(b"blob/noise".to_vec(), noise(&mut rng, 150_000));
    large.insert(b"blob/text".to_vec(), text);
    large.insert(b"inline/just-below".to_vec(), vec![b'x'; 1024]);
    large.insert(b"inline/just-above".to_vec(), vec![b'y'; 1025]);
    large.insert(b"inline/empty".to_vec(), Vec::new());
    let mut deep = Pairs::new();
    for i in 0..150u32 {
        let mut k = vec![b'k'; 1020];
        let mut n = i.to_le_bytes();
        n.reverse();
        k.extend_from_slice(&n);
        deep.insert(k, i.to_le_bytes().to_vec());
    }
    let mut binary = Pairs::new();
    for k in
        [&b""[..], b"\x00", b"\x00\x00", b"\x00\x01", b"a", b"ab", b"abc\xff", b"\xff", b"\xff\xff", b"\xff\xff\xff"]
    {
        binary.insert(k.to_vec(), k.iter().rev().copied().collect());
    }
    let mut one = Pairs::new();
    one.insert(b"the only key".to_vec(), b"and its value".to_vec());
    vec![
        Case { id: "bitable-empty", made: "an empty table (4 KiB pages)", opts: opts(4096, 1), pairs: Pairs::new() },
        Case { id: "bitable-one-key", made: "one pair: the root is a leaf", opts: opts(4096, 1), pairs: one },
        Case {
            id: "bitable-small",
            made: "400 path-like keys with JSON values, two levels (pages share key prefixes)",
            opts: opts(4096, 1),
            pairs: small,
        },
        Case {
            id: "bitable-fixed-16k-align8",
            made: "2,000 fixed-layout records (8-byte big-endian keys, 16-byte values), 16 KiB pages, 8-byte alignment",
            opts: opts(16384, 8),
            pairs: fixed,
        },
        Case {
            id: "bitable-large-values",
            made: "large values (150 KB incompressible, 500 KB of LZ4-compressed text), values either side of the inline limit, an empty value; 64-byte alignment",
            opts: opts(4096, 64),
            pairs: large,
        },
        Case {
            id: "bitable-deep",
            made: "150 keys of 1,024 bytes differing only at the end: three pairs per leaf, four children per branch, four levels",
            opts: opts(4096, 1),
            pairs: deep,
        },
        Case {
            id: "bitable-binary-keys",
            made: "binary keys: the empty key, zero bytes, 0xff runs, keys that are prefixes of others",
            opts: opts(4096, 1),
            pairs: binary,
        },
    ]
}

/// Keys to probe each table with: every key, and neighbours of some.
fn probes(pairs: &Pairs) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = vec![Vec::new(), vec![0x00], vec![0x7f], vec![0xff; 4]];
    for (i, k) in pairs.keys().enumerate().filter(|(i, _)| i % 50 == 0) {
        let _ = i;
        out.push(k.clone());
        let mut after = k.clone();
        after.push(0);
        out.push(after);
        if !k.is_empty() {
            out.push(k[..k.len() - 1].to_vec());
        }
    }
    out.sort();
    out.dedup();
    out
}

fn expected_json(c: &Case) -> Vec<u8> {
    let keys: Vec<&Vec<u8>> = c.pairs.keys().collect();
    let probes: Vec<Value> = probes(&c.pairs)
        .iter()
        .map(|p| {
            let rank = keys.partition_point(|k| k.as_slice() < p.as_slice());
            json!({
                "key": to_hex(p),
                "rank": rank,
                "lower_bound": keys.get(rank).map(|k| to_hex(k)),
                "found": c.pairs.contains_key(p),
            })
        })
        .collect();
    let doc = json!({
        "kind": "bitable",
        "format_version": bale::bitable::FORMAT_VERSION,
        "page_size": c.opts.page_size,
        "align": c.opts.align,
        "count": c.pairs.len(),
        "entries": c.pairs.iter().map(|(k, v)| json!([to_hex(k), to_hex(v)])).collect::<Vec<_>>(),
        "probes": probes,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("json");
    s.push('\n');
    s.into_bytes()
}

/// Rewrites page `no`'s trailer checksum after a change.
fn reseal(bytes: &mut [u8], ps: usize, no: usize) {
    let page = &mut bytes[no * ps..(no + 1) * ps];
    let sum = checksum(&page[..ps - 8], no as u64);
    page[ps - 8..].copy_from_slice(&sum.to_le_bytes());
}

/// Rewrites the table checksum of page 0 after a change to the meta.
fn reseal_meta(bytes: &mut [u8]) {
    let sum = checksum(&bytes[..248], 0);
    bytes[248..256].copy_from_slice(&sum.to_le_bytes());
}

struct Invalid {
    id: &'static str,
    made: &'static str,
    error: &'static str,
    bytes: Vec<u8>,
}

fn invalid(cases: &[Case]) -> Vec<Invalid> {
    let small = build(cases[2].opts, &cases[2].pairs);
    let large = build(cases[4].opts, &cases[4].pairs);
    let ps = 4096;
    let mut out = Vec::new();
    let mut push = |id, made, error, bytes| out.push(Invalid { id, made, error, bytes });
    push("bitable-truncated", "the small table cut to 3 pages", "CORRUPT", small[..3 * ps].to_vec());
    let mut unfinished = small.clone();
    unfinished[64..256].fill(0);
    push(
        "bitable-unfinished",
        "the small table with its meta zero, as a build leaves it before finishing",
        "CORRUPT",
        unfinished,
    );
    let mut h = small.clone();
    h[17] ^= 0x01;
    push("bitable-header-flip", "one bit of the file header's page size flipped", "CHECKSUM_MISMATCH", h);
    let mut m = small.clone();
    m[66] ^= 0x10;
    push("bitable-meta-flip", "one bit of the pair count flipped (the table checksum catches it)", "CORRUPT", m);
    let mut leaf = small.clone();
    leaf[2 * ps + 1000] ^= 0x04;
    push("bitable-leaf-flip", "one bit of leaf page 2 flipped", "CHECKSUM_MISMATCH", leaf);
    let mut count = small.clone();
    count[ps + 2..ps + 4].copy_from_slice(&600u16.to_le_bytes());
    reseal(&mut count, ps, 1);
    push("bitable-leaf-count", "leaf page 1 resealed with a count of 600 slots", "CORRUPT", count);
    let mut slot = small.clone();
    slot[ps + 16 + 4..ps + 16 + 6].copy_from_slice(&4090u16.to_le_bytes());
    reseal(&mut slot, ps, 1);
    push("bitable-slot-outside", "leaf page 1 resealed with a key offset past the page", "CORRUPT", slot);
    let mut root = small.clone();
    let root_no = u64::from_le_bytes(small[96..104].try_into().unwrap_or_default()) as usize;
    root[root_no * ps + 8..root_no * ps + 16].copy_from_slice(&9999u64.to_le_bytes());
    reseal(&mut root, ps, root_no);
    push("bitable-branch-child", "the root resealed with its children out of the file", "CORRUPT", root);
    let mut level = small.clone();
    level[root_no * ps + 1] = 5;
    reseal(&mut level, ps, root_no);
    push("bitable-branch-level", "the root resealed with level 5 in a two-level table", "CORRUPT", level);
    let mut depth = small.clone();
    depth[88] = 49;
    reseal_meta(&mut depth);
    push("bitable-depth", "the meta resealed with depth 49 (above the limit of 48)", "CORRUPT", depth);
    let mut kind = small.clone();
    kind[8..12].copy_from_slice(b"BTBX");
    let sum = checksum(&kind[..56], 0);
    kind[56..64].copy_from_slice(&sum.to_le_bytes());
    push("bitable-unknown-kind", "a valid header of an unknown kind", "UNSUPPORTED_VERSION", kind);
    let mut future = small.clone();
    future[12..14].copy_from_slice(&2u16.to_le_bytes());
    let sum = checksum(&future[..56], 0);
    future[56..64].copy_from_slice(&sum.to_le_bytes());
    push("bitable-version-2", "a valid header of bitable format version 2", "UNSUPPORTED_VERSION", future);
    push("bitable-not-bale", "a text file", "NOT_A_BALE_FILE", b"key\tvalue\n".to_vec());
    // The noise value's first block: raw bytes right after the region start.
    let mut block = large.clone();
    let values = u64::from_le_bytes(large[104..112].try_into().unwrap_or_default()) as usize;
    block[values + 100] ^= 0x80;
    push("bitable-large-block", "one bit of a large value's first block flipped", "CHECKSUM_MISMATCH", block);
    out
}

pub fn outputs(producer: &str) -> (Vec<Output>, Vec<Value>) {
    let v = format!("v{}", bale::bitable::FORMAT_VERSION);
    let (mut files, mut entries) = (Vec::new(), Vec::new());
    let cases = valid();
    for c in &cases {
        let file = format!("bitable/{v}/{}.bitable", c.id);
        let expect = format!("bitable/{v}/{}.json", c.id);
        entries.push(json!({
            "id": c.id,
            "kind": "bitable",
            "file": file,
            "format_version": bale::bitable::FORMAT_VERSION,
            "producer": producer,
            "made": c.made,
            "expect": expect,
        }));
        files.push(Output { path: file, bytes: build(c.opts, &c.pairs) });
        files.push(Output { path: expect, bytes: expected_json(c) });
    }
    for c in invalid(&cases) {
        let file = format!("invalid/bitable/{v}/{}.bitable", c.id);
        entries.push(json!({
            "id": c.id,
            "kind": "bitable",
            "file": file,
            "format_version": bale::bitable::FORMAT_VERSION,
            "producer": producer,
            "made": c.made,
            "error": c.error,
        }));
        files.push(Output { path: file, bytes: c.bytes });
    }
    (files, entries)
}
