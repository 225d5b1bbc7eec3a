//! Damaged files: invalid cases with the error code each must produce, and
//! damage that a reader must survive (a torn meta page falls back to the
//! commit before it).

use bale::btree::page::{CellValue, KIND_BRANCH, KIND_FREE, KIND_LEAF, KIND_VINDEX, NodeView, PAGE_HDR, seal};
use bale::format::checksum::checksum;
use bale::io::sim::SimRng;

use crate::cases::{Case, Model, build, newest_meta, put, random_bytes};

pub struct Invalid {
    pub id: &'static str,
    pub made: &'static str,
    pub error: &'static str,
    pub bytes: Vec<u8>,
}

const PS: usize = 4096;

fn base() -> Vec<u8> {
    // Deep enough to have branch pages, with one large random value.
    build(
        PS as u32,
        vec![Box::new(|w, m| {
            let mut rng = SimRng::new(11);
            for i in 0..1200u64 {
                put(w, m, format!("key-{i:06}").as_bytes(), &random_bytes(&mut rng, 40));
            }
            put(w, m, b"big", &random_bytes(&mut rng, 100_000));
        })],
    )
    .0
}

/// Page numbers whose first byte is `kind`.
fn pages_of(b: &[u8], kind: u8) -> Vec<usize> {
    b.chunks(PS).enumerate().skip(3).filter(|(_, p)| p.first() == Some(&kind)).map(|(i, _)| i).collect()
}

fn page(b: &mut [u8], pn: usize) -> &mut [u8] {
    &mut b[pn * PS..(pn + 1) * PS]
}

// Meta page fields (FORMAT.md, "Meta pages").
const META_TXN: usize = 8;
const META_PAGE_COUNT: usize = 32;
const META_FREE_HEAD: usize = 40;
const META_FREE_PAGES: usize = 48;
const META_DURABLE_UPTO: usize = 64;

fn get_u64(p: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(p[off..off + 8].try_into().expect("8 bytes"))
}

fn set_u64(p: &mut [u8], off: usize, v: u64) {
    p[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Rewrites fields of the meta page in slot `pn` (1 or 2) and recomputes
/// its checksum, so that only the field checks can refuse it.
fn edit_meta(b: &mut [u8], ps: usize, pn: usize, edit: impl FnOnce(&mut [u8])) {
    let p = &mut b[pn * ps..(pn + 1) * ps];
    edit(p);
    seal(p, pn as u64);
}

fn reseal_header(b: &mut [u8]) {
    let sum = checksum(&b[0..56], 0);
    b[56..64].copy_from_slice(&sum.to_le_bytes());
}

/// The first page of the large value's first block.
fn first_block_page(b: &[u8]) -> usize {
    for pn in pages_of(b, KIND_LEAF) {
        let p = &b[pn * PS..(pn + 1) * PS];
        let v = NodeView::new(p, pn as u64).expect("leaf");
        for i in 0..v.count() {
            if let Ok((_, CellValue::Large(r))) = v.entry(i) {
                assert_eq!(r.depth, 1);
                let idx = &b[r.root as usize * PS..];
                assert_eq!(idx[0], KIND_VINDEX);
                return u64::from_le_bytes(idx[PAGE_HDR..PAGE_HDR + 8].try_into().expect("8 bytes")) as usize;
            }
        }
    }
    panic!("no large value in the base store")
}

pub fn invalid() -> Vec<Invalid> {
    let b = base();
    let mut out = Vec::new();
    let mut add = |id, made, error, bytes| out.push(Invalid { id, made, error, bytes });

    add("empty-file", "a file of zero bytes", "NOT_A_BALE_FILE", vec![]);
    let mut x = b.clone();
    x[1] = b'X';
    add("wrong-magic", "the second magic byte changed", "NOT_A_BALE_FILE", x);
    add("truncated-header", "the first 40 bytes only", "CORRUPT", b[..40].to_vec());
    add(
        "truncated-half",
        "the file cut in half: shorter than its meta's page count",
        "CORRUPT",
        b[..b.len() / 2].to_vec(),
    );
    let mut x = b.clone();
    x[12] = 9;
    reseal_header(&mut x);
    add("future-version", "format version 9 with a valid header checksum", "UNSUPPORTED_VERSION", x);
    let mut x = b.clone();
    x[8..12].copy_from_slice(b"ZZZZ");
    reseal_header(&mut x);
    add("unknown-kind", "file kind ZZZZ with a valid header checksum", "UNSUPPORTED_VERSION", x);
    let mut x = b.clone();
    x[17] ^= 0x10;
    add("header-bit-flip", "one bit of the page size flipped", "CHECKSUM_MISMATCH", x);
    let mut x = b.clone();
    page(&mut x, 1)[40] ^= 1;
    page(&mut x, 2)[40] ^= 1;
    add("both-metas-flipped", "one bit flipped in each meta page", "CHECKSUM_MISMATCH", x);
    let mut x = b.clone();
    let leaf = pages_of(&b, KIND_LEAF)[5];
    page(&mut x, leaf)[2000] ^= 4;
    add("leaf-bit-flip", "one bit flipped inside a leaf page", "CHECKSUM_MISMATCH", x);
    let mut x = b.clone();
    let branch = pages_of(&b, KIND_BRANCH)[0];
    page(&mut x, branch)[PS - 100] ^= 4;
    add("branch-bit-flip", "one bit flipped inside a branch page", "CHECKSUM_MISMATCH", x);
    let mut x = b.clone();
    let blk = first_block_page(&b);
    page(&mut x, blk)[100] ^= 1;
    add("value-block-bit-flip", "one bit flipped in a large value's block", "CHECKSUM_MISMATCH", x);
    // A branch whose first child is the branch itself, checksum recomputed.
    let mut x = b.clone();
    {
        let p = page(&mut x, branch);
        p[PAGE_HDR..PAGE_HDR + 8].copy_from_slice(&(branch as u64).to_le_bytes());
        seal(p, branch as u64);
    }
    add("tree-cycle", "a branch whose first child is itself (checksum recomputed)", "CORRUPT", x);
    // A leaf cell offset pointing past the page end, checksum recomputed.
    let mut x = b.clone();
    {
        let p = page(&mut x, leaf);
        p[PAGE_HDR..PAGE_HDR + 2].copy_from_slice(&((PS - 12) as u16).to_le_bytes());
        seal(p, leaf as u64);
    }
    add("cell-past-end", "a leaf slot pointing at a cell that runs past the page (checksum recomputed)", "CORRUPT", x);
    // A leaf key length running past the page, checksum recomputed.
    let mut x = b.clone();
    {
        let p = page(&mut x, leaf);
        let off = u16::from_le_bytes([p[PAGE_HDR], p[PAGE_HDR + 1]]) as usize;
        p[off..off + 2].copy_from_slice(&4000u16.to_le_bytes());
        seal(p, leaf as u64);
    }
    add(
        "key-length-past-end",
        "a leaf key length of 4,000 at a cell near the page end (checksum recomputed)",
        "CORRUPT",
        x,
    );
    // Hostile metas: every checksum valid, every slot failing a field check.
    // The base has commit 0 in slot 1 (page 1) and commit 1 in slot 2.
    let mut x = b.clone();
    edit_meta(&mut x, PS, 1, |p| set_u64(p, META_TXN, 1 << 62));
    edit_meta(&mut x, PS, 2, |p| set_u64(p, META_TXN, u64::MAX));
    add(
        "meta-txn-max",
        "meta txn 2^62 in slot 1 and u64::MAX in slot 2, each of its slot's parity (checksums recomputed): no txn below 2^62",
        "CORRUPT",
        x,
    );
    let mut x = b.clone();
    for pn in [1, 2] {
        edit_meta(&mut x, PS, pn, |p| {
            let t = get_u64(p, META_TXN);
            set_u64(p, META_DURABLE_UPTO, t + 1);
        });
    }
    add("meta-durable-past-txn", "durable_upto = txn + 1 in both meta slots (checksums recomputed)", "CORRUPT", x);
    let mut x = b.clone();
    {
        let (p1, p2) = (x[PS..2 * PS].to_vec(), x[2 * PS..3 * PS].to_vec());
        x[PS..2 * PS].copy_from_slice(&p2);
        x[2 * PS..3 * PS].copy_from_slice(&p1);
        seal(page(&mut x, 1), 1);
        seal(page(&mut x, 2), 2);
    }
    add(
        "meta-wrong-slot",
        "the two meta pages swapped, each resealed for its new page: both txns fail the slot parity",
        "CORRUPT",
        x,
    );
    add(
        "meta-page-count-overflow-64k",
        "64 KiB pages, page_count 2^48 in both meta slots (checksums recomputed): page_count x ps is 2^64",
        "CORRUPT",
        page_count_overflow(),
    );
    add(
        "free-list-self-loop",
        "a free-list page whose next page is itself, named by both metas with free_pages = 2^40 (checksums recomputed)",
        "CORRUPT",
        free_list_self_loop(),
    );
    out
}

fn page_count_overflow() -> Vec<u8> {
    const PS64: usize = 65536;
    let (mut x, _) = build(PS64 as u32, vec![Box::new(|w, m| put(w, m, b"key", b"value"))]);
    for pn in [1, 2] {
        edit_meta(&mut x, PS64, pn, |p| set_u64(p, META_PAGE_COUNT, 1 << 48));
    }
    x
}

/// Two commits, the second with a one-page free list; that page is made to
/// point at itself and both metas name it with a chain length of 2^40.
fn free_list_self_loop() -> Vec<u8> {
    let (mut x, _) = build(
        PS as u32,
        vec![
            Box::new(|w, m| {
                for i in 0..400u64 {
                    put(w, m, format!("key-{i:06}").as_bytes(), b"first");
                }
            }),
            Box::new(|w, m| put(w, m, b"key-000000", b"second")),
        ],
    );
    let head = newest_meta(&x, PS).free_head as usize;
    assert!(head != 0 && x[head * PS] == KIND_FREE, "no free list");
    {
        let p = page(&mut x, head);
        set_u64(p, PAGE_HDR, head as u64);
        seal(p, head as u64);
    }
    for pn in [1, 2] {
        edit_meta(&mut x, PS, pn, |p| {
            set_u64(p, META_FREE_HEAD, head as u64);
            set_u64(p, META_FREE_PAGES, 1 << 40);
        });
    }
    x
}

/// Damage a reader must survive: the newest meta torn, so the commit
/// before it is what the file holds.
pub fn valid_after_damage() -> Vec<Case> {
    let (mut bytes, _) = build(
        PS as u32,
        vec![
            Box::new(|w, m: &mut Model| put(w, m, b"first", b"commit 1")),
            Box::new(|w, m: &mut Model| put(w, m, b"second", b"commit 2")),
        ],
    );
    // Commit 2 lives in meta slot 1 (page 1): tear it.
    page(&mut bytes, 1)[300] ^= 0xff;
    let mut entries = Model::new();
    entries.insert(b"first".to_vec(), b"commit 1".to_vec());
    let torn = Case {
        id: "torn-newest-meta",
        made: "two commits, then the newest meta page damaged: the file holds the first commit",
        page_size: PS as u32,
        bytes,
        entries: entries.clone(),
    };
    let (mut bytes, _) = build(
        PS as u32,
        vec![
            Box::new(|w, m: &mut Model| put(w, m, b"first", b"commit 1")),
            Box::new(|w, m: &mut Model| put(w, m, b"second", b"commit 2")),
        ],
    );
    // Commit 2 (slot 1) claims durability past itself, checksum recomputed.
    edit_meta(&mut bytes, PS, 1, |p| {
        assert_eq!(get_u64(p, META_TXN), 2);
        set_u64(p, META_DURABLE_UPTO, 3);
    });
    let invalid_newest = Case {
        id: "newest-meta-fails-field-check",
        made: "two commits, then the newest meta resealed with durable_upto > txn: that slot is invalid, the file holds the first commit",
        page_size: PS as u32,
        bytes,
        entries,
    };
    vec![torn, invalid_newest]
}
