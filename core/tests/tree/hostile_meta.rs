//! Hostile metas and pages that once crashed, hung or misled the store.
//! Each test reseals a damaged field with a valid checksum, so only the
//! decoders' own checks stand between the bytes and the process. Every
//! operation runs on a thread with a deadline: a hang fails the test
//! instead of stalling the suite.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use bale::btree::meta::{Meta, meta_page};
use bale::btree::page::{KIND_LEAF, seal, verify};
use bale::io::MemStorage;
use bale::{ErrorKind, Options, ReadOps, Store};

fn opts(page_size: u32) -> Options {
    Options { page_size, mmap: false, ..Options::create() }
}

/// A store of `n` keys with a free list, committed a few times.
fn fixture(page_size: u32, n: u32) -> Vec<u8> {
    let mem = MemStorage::new();
    let st = Store::open_storage(Arc::new(mem.clone()), opts(page_size)).expect("create");
    for round in 0..3u32 {
        let mut w = st.write().expect("write");
        for i in 0..n {
            w.put(format!("key{i:05}").as_bytes(), format!("value {i} round {round}").as_bytes()).expect("put");
        }
        w.commit().expect("commit");
    }
    drop(st);
    mem.to_bytes()
}

fn latest(bytes: &[u8], ps: usize) -> Meta {
    let a = Meta::decode(&bytes[ps..2 * ps], 1);
    let b = Meta::decode(&bytes[2 * ps..3 * ps], 2);
    match (a, b) {
        (Ok(a), Ok(b)) => {
            if a.txn > b.txn {
                a
            } else {
                b
            }
        }
        (Ok(m), _) | (_, Ok(m)) => m,
        _ => panic!("fixture has no valid meta"),
    }
}

/// Writes `m` into the slot its txn selects (both slots when `both`).
fn put_meta(bytes: &mut [u8], ps: usize, m: &Meta, both: bool) {
    let slots: Vec<u64> = if both { vec![1, 2] } else { vec![meta_page(m.txn)] };
    for slot in slots {
        let mut page = m.encode(ps);
        // Meta::encode seals for the slot its txn selects; reseal for this one.
        seal(&mut page, slot);
        bytes[slot as usize * ps..(slot as usize + 1) * ps].copy_from_slice(&page);
    }
}

/// What the operations on a hostile file gave: the error kinds of open,
/// a full read, `check`, `stat` and a write, in that order (None: success).
#[derive(Debug)]
struct Outcome {
    open: Option<ErrorKind>,
    read: Option<ErrorKind>,
    check: Option<ErrorKind>,
    stat: Option<ErrorKind>,
    write: Option<ErrorKind>,
}

fn kind<T>(r: bale::Result<T>) -> Option<ErrorKind> {
    r.err().map(|e| e.kind())
}

fn exercise(bytes: Vec<u8>) -> Outcome {
    let st = match Store::open_storage(
        Arc::new(MemStorage::from_bytes(bytes)),
        Options { mmap: false, ..Options::default() },
    ) {
        Ok(s) => s,
        Err(e) => {
            let k = Some(e.kind());
            return Outcome { open: k, read: k, check: k, stat: k, write: k };
        }
    };
    let read = kind(st.read().and_then(|r| r.iter().collect::<bale::Result<Vec<_>>>()));
    let check = match bale::btree::check(&st) {
        Ok(rep) if rep.is_ok() => None,
        Ok(_) => Some(ErrorKind::Corrupt),
        Err(e) => Some(e.kind()),
    };
    let stat = kind(bale::btree::stat(&st));
    let write = kind(st.write().and_then(|mut w| {
        w.put(b"new key", b"new value")?;
        w.commit()
    }));
    Outcome { open: None, read, check, stat, write }
}

/// Runs `exercise` on a thread; panics (fails the test) if it panicked or
/// did not finish in time.
fn bounded(bytes: Vec<u8>) -> Outcome {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(exercise(bytes));
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(o) => o,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the store hung on a hostile file"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the store panicked on a hostile file"),
    }
}

#[test]
fn huge_page_count_at_64k_pages_is_corrupt_not_overflow() {
    let ps = 65536usize;
    let mut bytes = fixture(ps as u32, 50);
    let mut m = latest(&bytes, ps);
    for pc in [1u64 << 48, (1 << 48) - 1, (1 << 47) + 3, u64::MAX / ps as u64 + 1] {
        m.page_count = pc;
        put_meta(&mut bytes, ps, &m, true);
        let o = bounded(bytes.clone());
        assert_eq!(o.open, Some(ErrorKind::Corrupt), "page_count {pc}: {o:?}");
    }
}

#[test]
fn free_list_cycle_with_huge_count_is_corrupt_not_endless() {
    for ps in [4096usize, 65536] {
        let mut bytes = fixture(ps as u32, if ps == 4096 { 400 } else { 2000 });
        let m = latest(&bytes, ps);
        assert!(m.free_head != 0, "fixture has no free list");
        // The head page's next pointer (right after the header) names itself.
        let head = m.free_head as usize;
        let page = &mut bytes[head * ps..(head + 1) * ps];
        page[16..24].copy_from_slice(&(head as u64).to_le_bytes());
        seal(page, head as u64);
        for count in [1u64 << 40, 2, m.page_count - 3] {
            let mut hm = m;
            hm.free_pages = count;
            // A count past the page count makes the meta itself invalid:
            // damage both slots so nothing valid is left to fall back to.
            put_meta(&mut bytes, ps, &hm, count > m.page_count);
            let o = bounded(bytes.clone());
            let corrupt = Some(ErrorKind::Corrupt);
            assert!(
                o.open == corrupt || (o.write == corrupt && o.check == corrupt && o.stat == corrupt),
                "ps {ps}, free_pages {count}: {o:?}"
            );
        }
    }
}

#[test]
fn max_transaction_id_is_corrupt_not_overflow() {
    let ps = 4096usize;
    let pristine = fixture(ps as u32, 50);
    let m = latest(&pristine, ps);
    for txn in [u64::MAX, u64::MAX - 1, 1 << 62, (1 << 62) + 1] {
        let mut bytes = pristine.clone();
        let mut hm = m;
        hm.txn = txn;
        hm.durable_upto = txn;
        put_meta(&mut bytes, ps, &hm, true);
        let o = bounded(bytes);
        assert_eq!(o.open, Some(ErrorKind::Corrupt), "txn {txn}: {o:?}");
    }
    // Beside a valid older slot, a newest slot with an impossible id is
    // skipped, and the store stays usable at the valid commit.
    let mut bytes = pristine.clone();
    let mut hm = m;
    hm.txn = if m.txn.is_multiple_of(2) { u64::MAX } else { u64::MAX - 1 };
    hm.durable_upto = hm.txn;
    put_meta(&mut bytes, ps, &hm, false);
    let o = bounded(bytes);
    assert_eq!((o.open, o.read, o.write), (None, None, None), "{o:?}");
}

#[test]
fn page_written_after_the_snapshot_is_corrupt_not_read() {
    let ps = 4096usize;
    let mut bytes = fixture(ps as u32, 400);
    let m = latest(&bytes, ps);
    let leaf = (3..m.page_count as usize)
        .find(|&p| verify(&bytes[p * ps..(p + 1) * ps], p as u64, KIND_LEAF).is_ok())
        .expect("a leaf");
    let page = &mut bytes[leaf * ps..(leaf + 1) * ps];
    page[8..16].copy_from_slice(&(m.txn + 1).to_le_bytes());
    seal(page, leaf as u64);
    let o = bounded(bytes);
    assert_eq!(o.read, Some(ErrorKind::Corrupt), "{o:?}");
    assert_eq!(o.check, Some(ErrorKind::Corrupt), "{o:?}");
}

/// Seeded sweep at 64 KiB pages, where page counts reach the byte-size
/// limit soonest: every meta field, alone and with the other slot damaged
/// too, set to values at and past the bounds. Each file must give typed
/// errors or a consistent store, never a panic, hang or abort.
#[test]
fn hostile_meta_fields_at_64k_pages_give_typed_errors() {
    use bale::io::sim::SimRng;
    let ps = 65536usize;
    let pristine = fixture(ps as u32, 3000);
    let m = latest(&pristine, ps);
    let mut rng = SimRng::new(0x64_4B);
    let extremes = |rng: &mut SimRng| -> u64 {
        let c = [
            0,
            1,
            2,
            3,
            m.page_count - 1,
            m.page_count,
            m.page_count + 1,
            (1 << 47) + 1,
            (1 << 48) - 1,
            1 << 48,
            u64::MAX / ps as u64,
            u64::MAX / ps as u64 + 1,
            (1 << 62) - 1,
            1 << 62,
            u64::MAX,
            rng.next_u64(),
        ];
        c[rng.below(c.len() as u64) as usize]
    };
    let mut typed = 0;
    for case in 0..150 {
        let mut hm = m;
        let v = extremes(&mut rng);
        match rng.below(8) {
            0 => hm.txn = v,
            1 => hm.durable_upto = v,
            2 => hm.page_count = v,
            3 => hm.free_pages = v,
            4 => hm.free_head = v,
            5 => hm.root = v,
            6 => hm.entries = v,
            _ => {
                hm.page_count = v;
                hm.free_pages = extremes(&mut rng);
            }
        }
        let mut bytes = pristine.clone();
        put_meta(&mut bytes, ps, &hm, rng.below(2) == 0);
        let o = bounded(bytes);
        if [o.open, o.read, o.check, o.stat, o.write].iter().any(|k| k.is_some()) {
            typed += 1;
        }
        // Whatever was refused, a store that opened reads consistently or
        // says why: a read that succeeded must agree with check and stat.
        if o.open.is_none() && o.read.is_none() {
            assert!(o.stat.is_none() || o.check.is_some(), "case {case} ({hm:?}): stat failed but check passed: {o:?}");
        }
    }
    assert!(typed > 50, "too few cases were refused ({typed}): the generator is not hostile enough");
}
