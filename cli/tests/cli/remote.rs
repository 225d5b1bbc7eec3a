//! `bale obj remote`, `push`, `pull`, `fetch` and `get --remote`, through
//! the built binary, with a folder as the bucket (file://): the same
//! protocol as S3, whose runs against real servers are in
//! core/tests/s3/.

use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::*;

fn url(t: &Tmp) -> String {
    format!("file://{}", t.path("bucket").display())
}

fn store(t: &Tmp, name: &str) -> String {
    t.path(name).display().to_string()
}

/// A store with `n` small objects, one compressible and one chunked; their ids and bytes.
fn filled(t: &Tmp, name: &str, seed: u64) -> (String, Vec<(String, Vec<u8>)>) {
    let s = store(t, name);
    ok(&["obj", "init", &s, "--chunk-min", "1K", "--chunk-avg", "4K", "--chunk-max", "16K"]);
    let mut out = Vec::new();
    for (i, data) in [noise(3000, seed), format!("text {seed} ").repeat(500).into_bytes(), noise(300_000, seed + 1)]
        .into_iter()
        .enumerate()
    {
        let f = t.path(&format!("{name}-{i}"));
        std::fs::write(&f, &data).unwrap();
        let id = text(&["obj", "add", &s, &f.display().to_string()]).trim().to_string();
        out.push((id, data));
    }
    (s, out)
}

#[test]
fn push_pull_lazy_fetch_and_gc_through_the_command_line() {
    let t = Tmp::new();
    let (a, objects) = filled(&t, "a", 1);
    let u = url(&t);
    let added = json(&["--json", "obj", "remote", "add", &a, "origin", &u, "--grace", "1h"]);
    assert_eq!((added["generation"].as_u64(), added["grace_ms"].as_u64()), (Some(0), Some(3_600_000)));
    assert_eq!(code(&run(&["obj", "remote", "add", &a, "origin", &u])), 1, "a taken name is refused");
    let pushed = json(&["--json", "obj", "push", &a, "origin", "--ref", &format!("latest={}", objects[2].0)]);
    assert_eq!(pushed["objects_sent"], 3);
    assert_eq!(pushed["generation"], 1);
    let again = json(&["--json", "obj", "push", &a, "origin"]);
    assert_eq!((again["objects_sent"].as_u64(), again["generation"].as_u64()), (Some(0), Some(1)));
    let info = json(&["--json", "obj", "remote", "info", &a, "origin"]);
    assert_eq!((info["objects"].as_u64(), info["packs"].as_u64()), (Some(3), Some(1)));
    assert_eq!(info["refs"]["latest"], objects[2].0.as_str());
    let listed = json(&["--json", "obj", "remote", "ls", &a]);
    assert_eq!(listed["remotes"][0]["url"], u.as_str());

    // A lazy clone: the index only, then one object on demand.
    let b = store(&t, "b");
    ok(&["obj", "init", &b, "--chunk-min", "1K", "--chunk-avg", "4K", "--chunk-max", "16K"]);
    ok(&["obj", "remote", "add", &b, "origin", &u]);
    let lazy = json(&["--json", "obj", "pull", &b, "origin", "--lazy"]);
    assert_eq!(lazy["objects"], 3);
    assert!(lines(&["obj", "ls", &b]).is_empty());
    let got = ok(&["obj", "get", &b, &objects[2].0, "--remote", "origin"]);
    assert_eq!(got, objects[2].1);
    assert_eq!(lines(&["obj", "ls", &b]), vec![objects[2].0.clone()]);
    let o = run(&["obj", "get", &b, &objects[0].0]);
    assert_eq!(code(&o), 1, "without --remote a missing object is NOT_FOUND");
    let fetched = json(&["--json", "obj", "fetch", &b, "origin", &objects[0].0]);
    assert_eq!(fetched["objects_fetched"], 1);
    // A full pull brings the rest.
    let pulled = json(&["--json", "obj", "pull", &b, "origin"]);
    assert_eq!((pulled["objects_fetched"].as_u64(), pulled["objects_present"].as_u64()), (Some(1), Some(2)));
    for (id, data) in &objects {
        assert_eq!(&ok(&["obj", "get", &b, id, "--verify"]), data);
    }
    ok(&["obj", "validate", &b]);
    let gc = json(&["--json", "obj", "remote", "gc", &a, "origin", "--dry-run"]);
    assert_eq!(gc["dry_run"], true);
    let gc = json(&["--json", "obj", "remote", "gc", &a, "origin"]);
    assert_eq!(gc["deleted"].as_array().map(Vec::len), Some(0));
    ok(&["obj", "remote", "rm", &b, "origin"]);
    assert!(json(&["--json", "obj", "remote", "ls", &b])["remotes"].as_array().unwrap().is_empty());
    assert!(!t.path("b/remotes/origin").exists());
}

#[test]
fn pushes_from_many_processes_at_once_all_land() {
    let t = Tmp::new();
    let u = url(&t);
    let mut stores = Vec::new();
    for w in 0..6u64 {
        let (s, objects) = filled(&t, &format!("w{w}"), 100 + w);
        ok(&["obj", "remote", "add", &s, "origin", &u]);
        stores.push((s, objects));
    }
    let children: Vec<_> = stores
        .iter()
        .map(|(s, _)| {
            spawn(
                Command::new(BIN)
                    .args(["--json", "obj", "push", s, "origin"])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped()),
            )
        })
        .collect();
    let mut generations = Vec::new();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        generations.push(v["generation"].as_u64().unwrap());
    }
    generations.sort_unstable();
    assert_eq!(generations, (1..=6).collect::<Vec<_>>(), "each commit landed once, in some order");
    let r = store(&t, "reader");
    ok(&["obj", "init", &r]);
    ok(&["obj", "remote", "add", &r, "origin", &u]);
    ok(&["obj", "pull", &r, "origin"]);
    for (_, objects) in &stores {
        for (id, data) in objects {
            assert_eq!(&ok(&["obj", "get", &r, id]), data);
        }
    }
}

#[test]
fn bad_remotes_and_damaged_buckets_are_typed_failures() {
    let t = Tmp::new();
    let (a, _) = filled(&t, "a", 5);
    let o = run(&["obj", "remote", "add", &a, "origin", "ftp://example.invalid/x"]);
    assert_ne!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stderr).contains("INVALID_ARGUMENT"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["obj", "remote", "add", &a, "bad/name", &url(&t)]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("INVALID_ARGUMENT"));
    assert!(!t.path("bucket/manifest").exists(), "nothing is made for a refused name");
    let o = run(&["obj", "push", &a, "nowhere"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("NOT_FOUND"));
    assert!(
        json(&["--json", "obj", "remote", "ls", &a])["remotes"].as_array().unwrap().is_empty(),
        "a refused add leaves nothing"
    );
    ok(&["obj", "remote", "add", &a, "origin", &url(&t)]);
    ok(&["obj", "push", &a, "origin"]);
    std::fs::write(t.path("bucket/manifest"), b"\x89BALE\r\n\x1a garbage").unwrap();
    let o = run(&["obj", "push", &a, "origin"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("CORRUPT") || err.contains("CHECKSUM_MISMATCH"), "{err}");
    assert_ne!(code(&o), 0);
}
