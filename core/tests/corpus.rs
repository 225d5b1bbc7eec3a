//! The golden corpus through the public API: every valid case reads back
//! exactly its expected JSON, every invalid case fails with its code.
//! A missing corpus is a failure, never a skip.

use std::path::PathBuf;

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
    let (mut valid, mut invalid) = (0, 0);
    for c in cases {
        let id = c["id"].as_str().expect("id");
        let file = dir.join(c["file"].as_str().expect("file"));
        let got = read_case(&file);
        if let Some(expect) = c["expect"].as_str() {
            let want: Value = serde_json::from_slice(&std::fs::read(dir.join(expect)).expect("expected JSON")).unwrap();
            let got = got.unwrap_or_else(|e| panic!("{id}: {e}"));
            assert!(got == want, "{id}: content differs from {expect}");
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
    println!("corpus: {valid} valid and {invalid} invalid cases");
    assert!(valid > 0 && invalid > 0);
}
