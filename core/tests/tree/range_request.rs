//! Range requests against a plain model of their rules (filter, reverse,
//! skip, take), run in one go, in batches that stop or leave entries at
//! random points, inside a write transaction, and through `OwnedRange`.

use std::collections::BTreeSet;
use std::sync::Arc;

use bale::btree::{Fetch, OptionValue, OwnedRange, RangeRequest, Step};
use bale::io::MemStorage;
use bale::{ErrorKind, Options, ReadOps, Store};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn keys() -> BTreeSet<Vec<u8>> {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut ks: BTreeSet<Vec<u8>> =
        [&b""[..], b"\0", b"\0\0", b"a", b"a\0", b"ab", b"\xff", b"\xff\xff", b"\xff\xff\xff"]
            .iter()
            .map(|k| k.to_vec())
            .collect();
    for _ in 0..600 {
        let len = rng.random_range(0..4);
        ks.insert((0..len).map(|_| *b"a\0\xffb".get(rng.random_range(0..4)).unwrap()).collect());
    }
    ks.extend((0..700).map(|i| format!("m{i:04}").into_bytes()));
    ks
}

/// The rules of `RangeRequest`, written out plainly.
fn model(all: &BTreeSet<Vec<u8>>, r: &RangeRequest) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = all
        .iter()
        .filter(|k| r.gt.as_ref().is_none_or(|b| *k > b))
        .filter(|k| r.gte.as_ref().is_none_or(|b| *k >= b))
        .filter(|k| r.lt.as_ref().is_none_or(|b| *k < b))
        .filter(|k| r.lte.as_ref().is_none_or(|b| *k <= b))
        .filter(|k| r.prefix.as_ref().is_none_or(|p| k.starts_with(p)))
        .cloned()
        .collect();
    if r.reverse {
        out.reverse();
    }
    out.into_iter().skip(r.offset as usize).take(r.limit.map_or(usize::MAX, |n| n as usize)).collect()
}

fn random_request(rng: &mut ChaCha8Rng, probes: &[Vec<u8>]) -> RangeRequest {
    let mut pick = |p: f64| rng.random_bool(p).then(|| probes[rng.random_range(0..probes.len())].clone());
    let (lo, hi, prefix) = (pick(0.5), pick(0.5), pick(0.3));
    let mut r = RangeRequest { prefix: prefix.map(|p| p[..p.len().min(2)].to_vec()), ..RangeRequest::default() };
    if rng.random_bool(0.5) {
        r.gt = lo;
    } else {
        r.gte = lo;
    }
    if rng.random_bool(0.5) {
        r.lt = hi;
    } else {
        r.lte = hi;
    }
    r.reverse = rng.random_bool(0.5);
    r.offset = if rng.random_bool(0.3) { rng.random_range(0..40) } else { 0 };
    r.limit = rng.random_bool(0.4).then(|| rng.random_range(0..60));
    r
}

/// Runs the request in batches whose ends fall at random: a batch stops
/// after an entry, or leaves one for the next batch.
fn batched<R: ReadOps>(r: &R, req: RangeRequest, rng: &mut ChaCha8Rng) -> Vec<Vec<u8>> {
    let mut scan = req.scan().unwrap();
    let mut out = Vec::new();
    while !scan.is_done() {
        let mut first = true;
        scan.run(r, |k, _| {
            let step = match rng.random_range(0..10) {
                0 => Step::Stop,
                1 if !first => Step::Leave,
                _ => Step::Next,
            };
            first = false;
            if step != Step::Leave {
                out.push(k.to_vec());
            }
            Ok::<_, bale::Error>(step)
        })
        .unwrap();
    }
    out
}

/// A store in memory holding `all`.
fn store_of(all: &BTreeSet<Vec<u8>>) -> Store {
    let store = Store::open_storage(Arc::new(MemStorage::new()), Options::create()).unwrap();
    let mut w = store.write().unwrap();
    for k in all {
        w.put(k, &[k.len() as u8]).unwrap();
    }
    w.commit().unwrap();
    store
}

#[test]
fn requests_agree_with_the_model_however_they_are_run() {
    let all = keys();
    let store = store_of(&all);
    let snap = Arc::new(store.read().unwrap());
    let mut probes: Vec<Vec<u8>> = all.iter().step_by(37).cloned().collect();
    probes.extend([b"a\x01".to_vec(), b"m0350\0".to_vec(), b"z".to_vec(), b"\xff\xff\xff\xff".to_vec()]);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for i in 0..600 {
        let req = random_request(&mut rng, &probes);
        let want = model(&all, &req);
        let label = format!("request {i}: {req:?}");
        let mut once = Vec::new();
        req.clone()
            .scan()
            .unwrap()
            .run(&*snap, |k, _| {
                once.push(k.to_vec());
                Ok::<_, bale::Error>(Step::Next)
            })
            .unwrap();
        assert_eq!(once, want, "{label}");
        assert_eq!(batched(&*snap, req.clone(), &mut rng), want, "{label} (batched)");
        let owned: Vec<Vec<u8>> = OwnedRange::from_scan(snap.clone(), req.clone().scan().unwrap(), Fetch::Keys)
            .map(|e| e.unwrap().0)
            .collect();
        assert_eq!(owned, want, "{label} (owned)");
        if i % 50 == 0 {
            let w = store.write().unwrap();
            assert_eq!(batched(&w, req, &mut rng), want, "{label} (write transaction)");
        }
    }
}

#[test]
fn edge_cases_by_name() {
    let all = keys();
    let store = store_of(&all);
    let snap = store.read().unwrap();
    let run = |opts: &[(&str, OptionValue)]| -> bale::Result<Vec<Vec<u8>>> {
        let mut req = RangeRequest::default();
        for (name, v) in opts {
            req.set(name, v.clone())?;
        }
        let mut out = Vec::new();
        req.scan()?.run(&snap, |k, _| {
            out.push(k.to_vec());
            Ok::<_, bale::Error>(Step::Next)
        })?;
        Ok(out)
    };
    let b = |k: &[u8]| OptionValue::Bytes(k.to_vec());
    let every: Vec<Vec<u8>> = all.iter().cloned().collect();
    assert_eq!(run(&[("prefix", b(b""))]).unwrap(), every, "the empty prefix matches every key");
    let ff: Vec<Vec<u8>> = all.iter().filter(|k| k.starts_with(b"\xff\xff")).cloned().collect();
    assert_eq!(run(&[("prefix", b(b"\xff\xff"))]).unwrap(), ff, "a 0xff prefix runs to the last key");
    assert!(ff.len() >= 2 && ff.last() == all.last());
    assert_eq!(run(&[("gte", b(b"ab")), ("lte", b(b"ab"))]).unwrap(), vec![b"ab".to_vec()]);
    assert_eq!(run(&[("gt", b(b"ab")), ("lte", b(b"ab"))]).unwrap(), Vec::<Vec<u8>>::new());
    assert_eq!(run(&[("gte", b(b"ab")), ("lt", b(b"ab"))]).unwrap(), Vec::<Vec<u8>>::new());
    assert_eq!(run(&[("gte", b(b"m0400")), ("lt", b(b"m0100"))]).unwrap(), Vec::<Vec<u8>>::new());
    assert_eq!(run(&[("prefix", b(b"m")), ("limit", OptionValue::Int(0))]).unwrap(), Vec::<Vec<u8>>::new());
    let last3: Vec<Vec<u8>> = ["m0696", "m0695", "m0694"].iter().map(|k| k.as_bytes().to_vec()).collect();
    let reversed = [
        ("prefix", b(b"m")),
        ("reverse", OptionValue::Bool(true)),
        ("offset", OptionValue::Int(3)),
        ("limit", OptionValue::Int(3)),
    ];
    assert_eq!(run(&reversed).unwrap(), last3, "reverse, then offset, then limit");
    for bad in [
        vec![("gt", b(b"a")), ("gte", b(b"a"))],
        vec![("lt", b(b"a")), ("lte", b(b"b"))],
        vec![("limit", OptionValue::Int(-1))],
        vec![("offset", OptionValue::Number(0.5))],
        vec![("start", b(b"c"))],
    ] {
        assert_eq!(run(&bad).unwrap_err().kind(), ErrorKind::InvalidArgument, "{bad:?}");
    }
}
