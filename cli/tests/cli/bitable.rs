//! `bale bitable`: tables built, read, merged, exported and checked through
//! the built binary.

use crate::support::*;

fn p(t: &Tmp, name: &str) -> String {
    t.path(name).display().to_string()
}

fn tsv(n: usize) -> Vec<u8> {
    (0..n).map(|i| format!("key{i:06}\tvalue {i}\n")).collect::<String>().into_bytes()
}

#[test]
fn build_get_scan_stat_check() {
    let t = Tmp::new();
    let table = p(&t, "t.bitable");
    let built = json(&["bitable", "build", &table, "-", "--json"]);
    assert_eq!(built["entries"], 0, "empty stdin builds an empty table");
    let out = ok_with(&["bitable", "build", &table, "--json"], &tsv(5000));
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["entries"], 5000);
    assert_eq!(v["depth"], 2);
    assert_eq!(ok(&["bitable", "get", &table, "key000123"]), b"value 123");
    assert_eq!(ok(&["bitable", "get", &table, "--ordinal", "4999"]), b"value 4999");
    assert_eq!(ok(&["bitable", "get", &table, "6b6579303030303031", "--hex"]), b"value 1");
    let o = run(&["bitable", "get", &table, "nokey"]);
    assert_eq!(code(&o), 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("NOT_FOUND"));
    assert_eq!(
        lines(&["bitable", "scan", &table, "--prefix", "key00499", "--values", "--ranks"]),
        (4990..5000).map(|i| format!("{i}\tkey{i:06}\tvalue {i}")).collect::<Vec<_>>()
    );
    assert_eq!(lines(&["bitable", "scan", &table, "--ordinal", "10", "--limit", "2"]), ["key000010", "key000011"]);
    assert_eq!(
        lines(&["bitable", "scan", &table, "--from", "key000100", "--to", "key000103", "--reverse"]),
        ["key000102", "key000101", "key000100"]
    );
    let s = json(&["bitable", "scan", &table, "--after", "key004997", "--json"]);
    assert_eq!(s["count"], 2);
    assert_eq!(s["entries"][0]["ordinal"], 4998);
    let st = json(&["bitable", "stat", &table, "--json"]);
    assert_eq!(st["entries"], 5000);
    assert_eq!(st["completion"], "durable");
    let c = json(&["bitable", "check", &table, "--json"]);
    assert_eq!((c["ok"].clone(), c["entries_checked"].clone()), (serde_json::json!(true), serde_json::json!(5000)));
}

#[test]
fn unsorted_input_and_its_errors() {
    let t = Tmp::new();
    let table = p(&t, "u.bitable");
    let mut input: Vec<String> =
        (0..3000).map(|i| format!("{{\"key\":\"k{:05}\",\"value\":{i}}}", (i * 7919) % 3000)).collect();
    input.push("{\"key\":\"k00007\",\"value\":\"last\"}".into());
    let body = input.join("\n").into_bytes();
    let o = run_with(&["bitable", "build", &table, "--format", "jsonl"], &body);
    assert_eq!(code(&o), 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--unsorted"), "the error says how to build it");
    assert!(!t.path("u.bitable").exists());
    ok_with(&["bitable", "build", &table, "--format", "jsonl", "--unsorted", "--memory", "64K"], &body);
    assert_eq!(ok(&["bitable", "get", &table, "k00007"]), b"last");
    assert_eq!(lines(&["bitable", "scan", &table]).len(), 3000);
    let o = run_with(
        &["bitable", "build", &p(&t, "d.bitable"), "--format", "jsonl", "--unsorted", "--duplicates", "error"],
        &body,
    );
    assert_eq!(code(&o), 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("more than once"));
    let names: Vec<String> =
        std::fs::read_dir(t.path("")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
    assert_eq!(names, ["u.bitable"], "no temporary files are left");
}

#[test]
fn binary_records_stream_large_values() {
    let t = Tmp::new();
    let big = noise(300_000, 9);
    let mut body = Vec::new();
    for (k, v) in [(&b"a"[..], &big[..]), (b"b", b"small")] {
        body.extend_from_slice(&(k.len() as u32).to_le_bytes());
        body.extend_from_slice(k);
        body.extend_from_slice(&(v.len() as u64).to_le_bytes());
        body.extend_from_slice(v);
    }
    let table = p(&t, "b.bitable");
    ok_with(&["bitable", "build", &table, "--format", "binary", "--fast", "--align", "64"], &body);
    assert_eq!(ok(&["bitable", "get", &table, "a"]), big);
    let out = p(&t, "a.out");
    let r = json(&["bitable", "get", &table, "a", "-o", &out, "--json"]);
    assert_eq!(r["bytes"], 300_000);
    assert_eq!(std::fs::read(&out).unwrap(), big);
    assert_eq!(json(&["bitable", "stat", &table, "--json"])["completion"], "fast");
    let o = run_with(&["bitable", "build", &p(&t, "c.bitable"), "--format", "binary"], &body[..1000]);
    assert_eq!(code(&o), 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("ends inside a value"));
}

#[test]
fn merge_and_export() {
    let t = Tmp::new();
    let (a, b) = (p(&t, "a.bitable"), p(&t, "b.bitable"));
    ok_with(&["bitable", "build", &a], b"k1\told\nk2\ta\n");
    ok_with(&["bitable", "build", &b], b"k1\tnew\nk3\tb\n");
    let m = p(&t, "m.bitable");
    let r = json(&["bitable", "merge", &m, &a, &b, "--json"]);
    assert_eq!((r["input_pairs"].clone(), r["entries"].clone()), (serde_json::json!(4), serde_json::json!(3)));
    assert_eq!(ok(&["bitable", "get", &m, "k1"]), b"new");
    let o = run(&["bitable", "merge", &p(&t, "x.bitable"), &a, &b, "--duplicates", "error"]);
    assert_eq!(code(&o), 1);
    let store = p(&t, "s.bale");
    ok_with(&["kv", "load", &store, "--create"], &tsv(300));
    let e = p(&t, "e.bitable");
    let r = json(&["bitable", "export", &store, &e, "--json"]);
    assert_eq!(r["entries"], 300);
    assert_eq!(ok(&["bitable", "get", &e, "key000299"]), b"value 299");
}

#[test]
fn damaged_and_foreign_files_exit_with_their_codes() {
    let t = Tmp::new();
    let table = p(&t, "t.bitable");
    ok_with(&["bitable", "build", &table], &tsv(3000));
    let mut bytes = std::fs::read(&table).unwrap();
    // A byte in the middle of a leaf: its checksum fails.
    bytes[4096 * 3 + 100] ^= 0x40;
    let bad = p(&t, "bad.bitable");
    std::fs::write(&bad, &bytes).unwrap();
    let o = run(&["bitable", "check", &bad, "--json"]);
    assert_eq!(code(&o), 3);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["problems"][0]["code"], "CHECKSUM_MISMATCH");
    assert_eq!(v["problems"][0]["page"], 3);
    let o = run(&["bitable", "scan", &bad]);
    assert_eq!(code(&o), 3);
    let truncated = p(&t, "short.bitable");
    std::fs::write(&truncated, &std::fs::read(&table).unwrap()[..10_000]).unwrap();
    assert_eq!(code(&run(&["bitable", "stat", &truncated])), 3);
    let text_file = p(&t, "text.txt");
    std::fs::write(&text_file, "hello").unwrap();
    assert_eq!(code(&run(&["bitable", "stat", &text_file])), 5);
    let store = p(&t, "s.bale");
    ok_with(&["kv", "load", &store, "--create"], b"a\tb\n");
    let o = run(&["bitable", "stat", &store]);
    assert_eq!(code(&o), 1, "a tree store is not a bitable");
    assert!(String::from_utf8_lossy(&o.stderr).contains("INVALID_ARGUMENT"));
}
