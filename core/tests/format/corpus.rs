//! The golden corpus through the public API: every valid case reads back
//! exactly its expected JSON, every invalid case fails with its code, and
//! every range query of a case yields exactly its keys or fails with its
//! code. A missing corpus is a failure, never a skip.

use std::path::{Path, PathBuf};

use bale::btree::{OptionValue, RangeRequest, Step};
use bale::{Options, ReadOps, Store};
use serde_json::{Value, json};

fn corpus_dir() -> PathBuf {
    match std::env::var_os("CORPUS_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus"),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Opens read-only without a map and reads every entry whole.
fn read_case(path: &std::path::Path) -> bale::Result<Value> {
    let store = Store::open(path, Options { readonly: true, mmap: false, ..Options::default() })?;
    let r = store.read()?;
    let mut entries = Vec::new();
    for e in r.iter() {
        let (k, v) = e?;
        entries.push(json!([hex(&k), hex(&v)]));
    }
    Ok(json!({
        "kind": "store",
        "format_version": store.format_version(),
        "page_size": store.page_size(),
        "count": r.len(),
        "entries": entries,
    }))
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// A query's request as the core's: key options are hex in the file.
fn request(r: &Value) -> bale::Result<RangeRequest> {
    let mut req = RangeRequest::default();
    for (name, v) in r.as_object().expect("a request is an object") {
        let v = match v {
            Value::String(s) if ["gt", "gte", "lt", "lte", "prefix"].contains(&name.as_str()) => {
                OptionValue::Bytes(unhex(s))
            }
            Value::String(s) => OptionValue::Text(s.clone()),
            Value::Bool(b) => OptionValue::Bool(*b),
            Value::Number(n) => n.as_i64().map_or_else(|| OptionValue::Number(n.as_f64().unwrap()), OptionValue::Int),
            other => OptionValue::Other(other.to_string()),
        };
        req.set(name, v)?;
    }
    Ok(req)
}

/// Keys as hex, and (key, value) pairs, of a request run in batches of
/// `batch` entries (each batch one run of the scan), values read whole.
fn run_query(r: &impl ReadOps, req: RangeRequest, batch: usize) -> bale::Result<Vec<(String, String)>> {
    let mut scan = req.scan()?;
    let mut out = Vec::new();
    while !scan.is_done() {
        let mut n = 0;
        scan.run(r, |k, v| {
            out.push((hex(k), hex(&v.to_vec()?)));
            n += 1;
            Ok::<_, bale::Error>(if n == batch { Step::Stop } else { Step::Next })
        })?;
    }
    Ok(out)
}

/// Runs every query of a case; returns how many ran.
fn run_queries(dir: &Path, case: &Value, expect: &Value) -> usize {
    let id = case["id"].as_str().expect("id");
    let Some(file) = case["queries"].as_str() else { return 0 };
    let doc: Value = serde_json::from_slice(&std::fs::read(dir.join(file)).expect("queries file")).unwrap();
    assert_eq!(doc["case"].as_str(), Some(id), "{file} names another case");
    let values: std::collections::HashMap<&str, &str> = expect["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| (e[0].as_str().unwrap(), e[1].as_str().unwrap()))
        .collect();
    let store = Store::open(
        dir.join(case["file"].as_str().unwrap()),
        Options { readonly: true, mmap: false, ..Options::default() },
    )
    .unwrap();
    let r = store.read().unwrap();
    let queries = doc["queries"].as_array().expect("queries");
    for q in queries {
        let label = format!("{id} query {}", q["id"]);
        let got = request(&q["request"])
            .and_then(|req| Ok((run_query(&r, req.clone(), usize::MAX)?, run_query(&r, req, 7)?)));
        match (q["keys"].as_array(), q["error"].as_str()) {
            (Some(keys), None) => {
                let (once, batched) = got.unwrap_or_else(|e| panic!("{label}: {e}"));
                let want: Vec<&str> = keys.iter().map(|k| k.as_str().unwrap()).collect();
                assert_eq!(once.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), want, "{label}");
                assert_eq!(batched, once, "{label}: in batches of 7");
                for (k, v) in &once {
                    assert_eq!(values[k.as_str()], v, "{label}: value of {k}");
                }
            }
            (None, Some(code)) => match got {
                Ok(_) => panic!("{label}: ran without error, expected {code}"),
                Err(e) => assert_eq!(e.code(), code, "{label}: {e}"),
            },
            _ => panic!("{label}: a query needs keys or error"),
        }
    }
    queries.len()
}

#[test]
fn every_corpus_case_reads_as_expected() {
    let dir = corpus_dir();
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(dir.join("manifest.json"))
            .unwrap_or_else(|e| panic!("corpus manifest missing at {}: {e}", dir.display())),
    )
    .expect("manifest is JSON");
    let cases = manifest["cases"].as_array().expect("cases");
    assert!(cases.len() >= 20, "only {} corpus cases", cases.len());
    let (mut valid, mut invalid, mut queries) = (0, 0, 0);
    for c in cases {
        let id = c["id"].as_str().expect("id");
        let file = dir.join(c["file"].as_str().expect("file"));
        let got = read_case(&file);
        if let Some(expect) = c["expect"].as_str() {
            let want: Value = serde_json::from_slice(&std::fs::read(dir.join(expect)).expect("expected JSON")).unwrap();
            let got = got.unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(got == want, "{id}: content differs from {expect}");
            queries += run_queries(&dir, c, &want);
            valid += 1;
        } else {
            let code = c["error"].as_str().expect("expect or error");
            match got {
                Ok(_) => panic!("{id}: read without error, expected {code}"),
                Err(e) => assert_eq!(e.code(), code, "{id}: {e}"),
            }
            invalid += 1;
        }
    }
    println!("corpus: {valid} valid and {invalid} invalid cases, {queries} range queries");
    assert!(valid > 0 && invalid > 0 && queries > 0);
}

/// Opens an object store case read-only, lists its ids and reads every
/// object whole, verified against its id.
fn read_objects_case(path: &Path) -> bale::Result<Value> {
    use bale::objects::{ObjectOptions, ObjectStore};
    let s = ObjectStore::open(path, ObjectOptions { readonly: true, ..ObjectOptions::default() })?;
    let mut objects = Vec::new();
    for id in s.ids()? {
        objects.push(json!([id.to_hex(), hex(&s.get_verified(&id)?)]));
    }
    Ok(json!({
        "kind": "objects",
        "format_version": s.format_version(),
        "hash": s.hash_kind().name(),
        "single_file": s.is_single_file(),
        "count": objects.len(),
        "objects": objects,
    }))
}

#[test]
fn every_object_store_case_reads_as_expected() {
    let dir = corpus_dir();
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(dir.join("manifest.json"))
            .unwrap_or_else(|e| panic!("corpus manifest missing at {}: {e}", dir.display())),
    )
    .expect("manifest is JSON");
    let cases = manifest["object_cases"].as_array().expect("object_cases");
    let (mut valid, mut invalid) = (0, 0);
    let mut hashes = std::collections::BTreeSet::new();
    for c in cases {
        let id = c["id"].as_str().expect("id");
        let got = read_objects_case(&dir.join(c["file"].as_str().expect("file")));
        if let Some(expect) = c["expect"].as_str() {
            let want: Value = serde_json::from_slice(&std::fs::read(dir.join(expect)).expect("expected JSON")).unwrap();
            let got = got.unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(got == want, "{id}: content differs from {expect}");
            hashes.insert((want["hash"].as_str().unwrap().to_string(), want["single_file"].as_bool().unwrap()));
            valid += 1;
        } else {
            let code = c["error"].as_str().expect("expect or error");
            match got {
                Ok(_) => panic!("{id}: read without error, expected {code}"),
                Err(e) => assert_eq!(e.code(), code, "{id}: {e}"),
            }
            invalid += 1;
        }
    }
    println!("corpus: {valid} valid and {invalid} invalid object store cases");
    assert!(valid >= 5 && invalid >= 10, "{valid} valid, {invalid} invalid");
    assert_eq!(hashes.iter().filter(|(_, single)| !single).count(), 3, "a directory store of each hash kind");
}

/// Opens a bitable case read-only without a map, reads every pair in key
/// order, then looks every key up again; with the expected document at
/// hand, also answers its probes (rank, lower bound, presence).
fn read_bitable_case(path: &Path, expect: Option<&Value>) -> bale::Result<Value> {
    use bale::bitable::{Bitable, OpenOptions};
    use std::ops::Bound;
    let t = Bitable::open(path, OpenOptions { mmap: false })?;
    let mut pairs = Vec::new();
    for r in t.range(Bound::Unbounded, Bound::Unbounded)? {
        let (k, v) = r?;
        pairs.push((k, v.to_vec(u64::MAX)?));
    }
    let mut entries = Vec::new();
    for (k, v) in &pairs {
        let again = t.get(k)?.map(|v| v.to_vec(u64::MAX)).transpose()?;
        assert_eq!(again.as_ref(), Some(v), "{}: get of {} differs from the scan", path.display(), hex(k));
        entries.push(json!([hex(k), hex(v)]));
    }
    let mut probes = Vec::new();
    for p in expect.and_then(|e| e["probes"].as_array()).into_iter().flatten() {
        let key = unhex(p["key"].as_str().expect("probe key"));
        probes.push(json!({
            "key": hex(&key),
            "rank": t.rank(&key)?,
            "lower_bound": t.lower_bound(&key)?.key().map(hex),
            "found": t.get(&key)?.is_some(),
        }));
    }
    let s = t.stats()?;
    Ok(json!({
        "kind": "bitable",
        "format_version": t.format_version(),
        "page_size": s.page_size,
        "align": s.align,
        "count": t.len(),
        "entries": entries,
        "probes": probes,
    }))
}

#[test]
fn every_bitable_case_reads_as_expected() {
    let dir = corpus_dir();
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(dir.join("manifest.json"))
            .unwrap_or_else(|e| panic!("corpus manifest missing at {}: {e}", dir.display())),
    )
    .expect("manifest is JSON");
    let cases = manifest["bitable_cases"].as_array().expect("bitable_cases");
    let (mut valid, mut invalid) = (0, 0);
    for c in cases {
        let id = c["id"].as_str().expect("id");
        let file = dir.join(c["file"].as_str().expect("file"));
        if let Some(expect) = c["expect"].as_str() {
            let want: Value = serde_json::from_slice(&std::fs::read(dir.join(expect)).expect("expected JSON")).unwrap();
            let got = read_bitable_case(&file, Some(&want)).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(got == want, "{id}: content differs from {expect}");
            valid += 1;
        } else {
            let code = c["error"].as_str().expect("expect or error");
            match read_bitable_case(&file, None) {
                Ok(_) => panic!("{id}: read without error, expected {code}"),
                Err(e) => assert_eq!(e.code(), code, "{id}: {e}"),
            }
            invalid += 1;
        }
    }
    println!("corpus: {valid} valid and {invalid} invalid bitable cases");
    assert!(valid >= 7 && invalid >= 14, "{valid} valid, {invalid} invalid");
}

/// Copies a remote case's folder (the files its manifest entry lists) to
/// a new folder: a folder bucket keeps working files beside its keys.
fn remote_copy(dir: &Path, c: &Value, to: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(to);
    for f in c["files"].as_array().expect("files") {
        let rel = f.as_str().expect("file name");
        let dst = to.join(rel);
        std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
        std::fs::copy(dir.join(c["file"].as_str().expect("file")).join(rel), &dst).expect("copy");
    }
    to.to_path_buf()
}

fn remote_doc(hash: bale::objects::HashKind, generation: u64, packs: usize, objects: Vec<Value>) -> Value {
    json!({
        "kind": "remote",
        "hash": hash.name(),
        "generation": generation,
        "packs": packs,
        "count": objects.len(),
        "objects": objects,
    })
}

/// Reads a remote folder straight from its bucket: the manifest, every pack
/// index, the object ids in order, and each object whole by range reads
/// (every record checked against its id, the object against its own).
fn read_remote_direct(bucket: &Path) -> bale::Result<Value> {
    use bale::remote::{FsBucket, Remote};
    let r = Remote::new(std::sync::Arc::new(FsBucket::open(bucket)?));
    let (m, _) = r.manifest()?;
    let index = r.index(&m)?;
    let mut ids: Vec<_> = index.objects().map(|(id, _)| *id).collect();
    ids.sort();
    let mut objects = Vec::new();
    for id in ids {
        objects.push(json!([id.to_hex(), hex(&r.read_object(&index, m.hash, &id)?)]));
    }
    Ok(remote_doc(m.hash, m.generation, m.packs.len(), objects))
}

/// Reads a remote folder through a new store connected to it by a
/// `file://` URL: pull, list the ids, read each object verified.
fn read_remote_pulled(bucket: &Path, hash: &str, store_dir: &Path) -> bale::Result<Value> {
    use bale::objects::{Config, HashKind, ObjectOptions, ObjectStore};
    use bale::remote::RemoteConfig;
    let hash = HashKind::from_name(hash).expect("a hash name");
    let _ = std::fs::remove_dir_all(store_dir);
    let config = Config { hash, ..Config::default() };
    let s = ObjectStore::open(store_dir, ObjectOptions { config, ..ObjectOptions::create() })?;
    let url = format!("file://{}", bucket.display());
    s.connect_remote("corpus", &RemoteConfig { url, ..RemoteConfig::default() }, bale::remote::DEFAULT_GRACE_MS)?;
    let r = s.open_remote("corpus")?;
    let pulled = r.pull(&s, &mut |_, _| {})?;
    let (m, _) = r.manifest()?;
    let mut objects = Vec::new();
    for id in s.ids()? {
        objects.push(json!([id.to_hex(), hex(&s.get_verified(&id)?)]));
    }
    let doc = remote_doc(s.hash_kind(), pulled.generation, m.packs.len(), objects);
    s.close()?;
    Ok(doc)
}

#[test]
fn every_remote_case_reads_as_expected() {
    let dir = corpus_dir();
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(dir.join("manifest.json"))
            .unwrap_or_else(|e| panic!("corpus manifest missing at {}: {e}", dir.display())),
    )
    .expect("manifest is JSON");
    let cases = manifest["remote_cases"].as_array().expect("remote_cases");
    let tmp = std::env::temp_dir().join(format!("bale-corpus-remotes-{}", std::process::id()));
    let (mut valid, mut invalid) = (0, 0);
    for c in cases {
        let id = c["id"].as_str().expect("id");
        let hash = c["hash"].as_str().expect("hash");
        // Each way of reading on its own copy of the folder.
        let direct = read_remote_direct(&remote_copy(&dir, c, &tmp.join(id).join("direct")));
        let bucket = remote_copy(&dir, c, &tmp.join(id).join("pulled"));
        let pulled = read_remote_pulled(&bucket, hash, &tmp.join(id).join("store"));
        for (how, got) in [("read from the bucket", direct), ("pulled into a store", pulled)] {
            if let Some(expect) = c["expect"].as_str() {
                let want: Value =
                    serde_json::from_slice(&std::fs::read(dir.join(expect)).expect("expected JSON")).unwrap();
                let got = got.unwrap_or_else(|e| panic!("{id}: {how}: {e}"));
                assert!(got == want, "{id}: {how}: content differs from {expect}");
            } else {
                let code = c["error"].as_str().expect("expect or error");
                match got {
                    Ok(_) => panic!("{id}: {how} without error, expected {code}"),
                    Err(e) => assert_eq!(e.code(), code, "{id}: {how}: {e}"),
                }
            }
        }
        if c["expect"].is_string() {
            valid += 1;
        } else {
            invalid += 1;
        }
        let _ = std::fs::remove_dir_all(tmp.join(id));
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!("corpus: {valid} valid and {invalid} invalid remote cases");
    assert!(valid >= 4 && invalid >= 15, "{valid} valid, {invalid} invalid");
}
