//! bale-corpus: writes the golden corpus of `tests/corpus` and checks that
//! the checked-in files are what this build writes.
//!
//! usage: bale-corpus generate DIR | bale-corpus check DIR |
//!        bale-corpus remote-fixture OUT_DIR
//!
//! Writers are deterministic (seeded generator, no clocks), so `check`
//! regenerates every case of the current format version and compares it
//! byte for byte. Directories of older format versions are frozen: `check`
//! leaves them alone and the runners keep reading them.
//!
//! `remote-fixture` writes remotes as folders for the suites that read
//! them over HTTP (remote_fixture.rs), with an `expected.json` of their
//! own; its `remote/` is also the corpus's `remote/v1/remote-blake3`.

mod bitables;
mod cases;
mod damage;
mod objects;
mod queries;
mod remote_fixture;
mod remotes;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

pub const PRODUCER: &str =
    concat!("bale-corpus ", env!("CARGO_PKG_VERSION"), " (cargo run -p bale-corpus -- generate tests/corpus)");

/// One file of the corpus, as bytes, with its manifest entry.
pub struct Output {
    pub path: String,
    pub bytes: Vec<u8>,
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The canonical JSON of a store's expected content: sorted pairs as hex.
pub fn expected_json(page_size: u32, entries: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>) -> Vec<u8> {
    let pairs: Vec<Value> = entries.iter().map(|(k, v)| json!([to_hex(k), to_hex(v)])).collect();
    let doc = json!({
        "kind": "store",
        "format_version": bale::btree::FORMAT_VERSION,
        "page_size": page_size,
        "count": entries.len(),
        "entries": pairs,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("json");
    s.push('\n');
    s.into_bytes()
}

/// Every file of the corpus, the manifest last.
fn build() -> Vec<Output> {
    let mut files = Vec::new();
    let mut entries = Vec::new();
    for case in cases::valid() {
        let v = format!("tree/v{}", bale::btree::FORMAT_VERSION);
        let file = format!("{v}/{}.bale", case.id);
        let expect = format!("{v}/{}.json", case.id);
        let mut entry = json!({
            "id": case.id,
            "kind": "store",
            "file": file,
            "format_version": bale::btree::FORMAT_VERSION,
            "producer": PRODUCER,
            "made": case.made,
            "expect": expect,
        });
        if let Some(q) = queries::queries_json(case.id, &case.entries) {
            let path = format!("{v}/{}.queries.json", case.id);
            entry["queries"] = json!(path);
            files.push(Output { path, bytes: q });
        }
        entries.push(entry);
        files.push(Output { path: file, bytes: case.bytes });
        files.push(Output { path: expect, bytes: expected_json(case.page_size, &case.entries) });
    }
    for case in damage::invalid() {
        let file = format!("invalid/tree/v{}/{}.bale", bale::btree::FORMAT_VERSION, case.id);
        entries.push(json!({
            "id": case.id,
            "kind": "store",
            "file": file,
            "format_version": bale::btree::FORMAT_VERSION,
            "producer": PRODUCER,
            "made": case.made,
            "error": case.error,
        }));
        files.push(Output { path: file, bytes: case.bytes });
    }
    let (obj_files, obj_entries) = objects::outputs(PRODUCER);
    files.extend(obj_files);
    let (bt_files, bt_entries) = bitables::outputs(PRODUCER);
    files.extend(bt_files);
    let (remote_files, remote_entries) = remotes::outputs(PRODUCER);
    files.extend(remote_files);
    let manifest = json!({
        "_comment": concat!(
            "bale golden corpus. Each case names a file. A runner opens it read-only through its public API ",
            "(no memory map where that is an option), reads every entry in key order with its value whole, ",
            "and compares with `expect` (canonical JSON: sorted [key, value] pairs in hex) or, for `error` ",
            "cases, checks that the first error raised by those steps has that code. A case with `queries` ",
            "names a file of range requests over that store, each with the keys it must yield in order ",
            "(hex) or the error code it must raise; every runner runs each one through its public range ",
            "API (README.md here). Regenerate with ",
            "`cargo run -p bale-corpus -- generate tests/corpus`; `make corpus-check` fails on drift. ",
            "`object_cases` are object stores (a directory, or one file when `single_file`): a runner opens ",
            "each read-only, lists its object ids in order, reads each object whole (verified against its id), ",
            "and compares with `expect` (canonical JSON: [id, content in hex] pairs) or checks the error code. ",
            "`bitable_cases` are bitables: a runner opens each read-only (no memory map where that is an option), ",
            "reads every pair in key order with its value whole, then looks every key up and reads its value ",
            "again, and compares with `expect` (sorted [key, value] pairs in hex, plus `probes`: for each probe ",
            "key, its rank, the first key at or above it and whether it is present) or checks the error code. ",
            "`remote_cases` are remotes laid out as folders (a bucket whose keys are paths: `manifest`, ",
            "`packs/<name>.pack` and `.idx`; `files` lists them, `hash` names the remote's hash): a runner opens ",
            "each read-only through its public API (its own copy of the folder where its API writes to a bucket), ",
            "reads the manifest and every pack index, lists the object ids in order, reads each object whole ",
            "(verified against its id), and compares with `expect` (canonical JSON: `hash`, the manifest's ",
            "`generation` and live `packs`, [id, content in hex] pairs) or checks the error code."
        ),
        "cases": entries,
        "object_cases": obj_entries,
        "bitable_cases": bt_entries,
        "remote_cases": remote_entries,
    });
    let mut m = serde_json::to_string_pretty(&manifest).expect("json");
    m.push('\n');
    files.push(Output { path: "manifest.json".into(), bytes: m.into_bytes() });
    files
}

fn generate(dir: &Path) -> std::io::Result<usize> {
    let files = build();
    for f in &files {
        let p = dir.join(&f.path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, &f.bytes)?;
    }
    Ok(files.len())
}

/// Lists the differences between `dir` and a fresh build.
fn check(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut drift = Vec::new();
    let files = build();
    let current = format!("v{}", bale::btree::FORMAT_VERSION);
    for f in &files {
        match std::fs::read(dir.join(&f.path)) {
            Ok(b) if b == f.bytes => {}
            Ok(_) => drift.push(format!("{} differs from what this build writes", f.path)),
            Err(_) => drift.push(format!("{} is missing", f.path)),
        }
    }
    // Files of the current version that the generator no longer writes.
    let known: std::collections::BTreeSet<PathBuf> = files.iter().map(|f| PathBuf::from(&f.path)).collect();
    let obj = format!("v{}", bale::objects::config::OBJECTS_VERSION);
    let subs = [
        format!("tree/{current}"),
        format!("invalid/tree/{current}"),
        format!("objects/{obj}"),
        format!("invalid/objects/{obj}"),
        format!("bitable/v{}", bale::bitable::FORMAT_VERSION),
        format!("invalid/bitable/v{}", bale::bitable::FORMAT_VERSION),
        format!("remote/v{}", bale::remote::manifest::MANIFEST_VERSION),
        format!("invalid/remote/v{}", bale::remote::manifest::MANIFEST_VERSION),
    ];
    for sub in subs {
        let mut stack = vec![PathBuf::from(&sub)];
        while let Some(rel_dir) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(dir.join(&rel_dir)) else { continue };
            for e in rd.flatten() {
                let rel = rel_dir.join(e.file_name());
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(rel);
                } else if !known.contains(&rel) {
                    drift.push(format!("{} is not written by this build (stale?)", rel.display()));
                }
            }
        }
    }
    Ok(drift)
}

const USAGE: &str = "usage: bale-corpus generate DIR | bale-corpus check DIR | bale-corpus remote-fixture OUT_DIR";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(cmd), Some(dir)) = (args.get(1), args.get(2)) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let dir = Path::new(dir);
    match cmd.as_str() {
        "generate" => match generate(dir) {
            Ok(n) => {
                println!("wrote {n} files under {}", dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bale-corpus: {e}");
                ExitCode::FAILURE
            }
        },
        "check" => match check(dir) {
            Ok(d) if d.is_empty() => {
                println!("corpus at {} is up to date", dir.display());
                ExitCode::SUCCESS
            }
            Ok(d) => {
                for line in d {
                    eprintln!("drift: {line}");
                }
                eprintln!("run `cargo run -p bale-corpus -- generate {}` and commit the result", dir.display());
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("bale-corpus: {e}");
                ExitCode::FAILURE
            }
        },
        "remote-fixture" => match remote_fixture::write(dir) {
            Ok(()) => {
                println!("wrote a remote fixture under {}", dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bale-corpus: {e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
