//! `bale obj`: object stores driven through the built binary.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bale::objects::HashKind;
use serde_json::Value;

use crate::support::*;

/// The object store path of a test as an argument.
fn store(t: &Tmp) -> String {
    t.path("objects").display().to_string()
}

/// Writes `data` to a file of the test directory; returns its path.
fn file(t: &Tmp, name: &str, data: &[u8]) -> String {
    let p = t.path(name);
    std::fs::write(&p, data).unwrap();
    p.display().to_string()
}

/// Runs with `stdin`, asserts success and returns stdout as text.
fn text_with(args: &[&str], stdin: &[u8]) -> String {
    String::from_utf8(ok_with(args, stdin)).unwrap()
}

/// Runs and returns the exit code, stdout as JSON (if any) and stderr.
fn fails(args: &[&str]) -> (i32, Option<Value>, String) {
    let o = run(args);
    let v = serde_json::from_slice(&o.stdout).ok();
    (code(&o), v, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Text that compresses: numbered lines.
fn lines_of_text(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| format!("{i:08} frame={} layer=beauty note=the quick brown fox\n", i % 240))
        .collect::<String>()
        .into()
}

#[test]
fn add_get_ls_stat_rm_round_trip() {
    let t = Tmp::new();
    let s = store(&t);
    let init = text(&["obj", "init", &s]);
    assert!(init.starts_with("created directory object store"), "{init}");

    let small = b"hello object store\n".to_vec();
    let big = noise(1 << 20, 7);
    let (a, b) = (file(&t, "a.txt", &small), file(&t, "b.bin", &big));
    let ids = lines(&["obj", "add", &s, &a, &b]);
    assert_eq!(ids, [HashKind::Blake3.hash(&small).to_hex(), HashKind::Blake3.hash(&big).to_hex()]);
    // stdin, and an input that is already stored: the same id again.
    let piped = b"from stdin\x00\xff".to_vec();
    let more = lines_of_text(1000);
    let mid = file(&t, "mid.txt", &more);
    let ids2 = String::from_utf8(ok_with(&["obj", "add", &s, &a, "-", &mid], &piped)).unwrap();
    let ids2: Vec<&str> = ids2.lines().collect();
    assert_eq!(ids2[0], ids[0]);
    assert_eq!(ids2[1], HashKind::Blake3.hash(&piped).to_hex());

    assert_eq!(ok(&["obj", "get", &s, &ids[0]]), small);
    assert!(ok(&["obj", "get", &s, &ids[1]]) == big, "the chunked object read back differs");
    assert_eq!(ok(&["obj", "cat", &s, &ids[0], ids2[1], &ids[0]]), [&small[..], &piped, &small].concat());
    // Upper-case hex names the same object; --verify rehashes on the way.
    assert_eq!(ok(&["obj", "get", &s, &ids[0].to_uppercase(), "--verify"]), small);

    let mut want: Vec<String> = vec![ids[0].clone(), ids[1].clone(), ids2[1].to_string(), ids2[2].to_string()];
    want.sort();
    assert_eq!(lines(&["obj", "ls", &s]), want);
    let long = lines(&["obj", "ls", &s, "--long"]);
    let cols = |id: &str| -> Vec<String> {
        let row = long.iter().find(|l| l.ends_with(id)).unwrap();
        row.split_whitespace().map(str::to_string).collect()
    };
    assert_eq!(cols(&ids[1])[0], (1 << 20).to_string());
    assert!(cols(&ids[1])[2].starts_with("cp"), "files go straight into a pack: {long:?}");
    assert!(cols(ids2[1])[2].starts_with("--"), "stdin goes to a staging file: {long:?}");

    let st = text(&["obj", "stat", &s]);
    assert!(st.contains("objects     4 holding"), "{st}");
    let one = text(&["obj", "stat", &s, &ids[0]]);
    assert!(one.contains("size        19 B"), "{one}");

    ok(&["obj", "rm", &s, &ids[0]]);
    let o = run(&["obj", "get", &s, &ids[0]]);
    assert_eq!(code(&o), 1);
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("bale: NOT_FOUND: "));
    assert!(o.stdout.is_empty());
    assert_eq!(lines(&["obj", "ls", &s]).len(), 3);
    // Removing it again is not an error; it is reported.
    let o = run(&["obj", "rm", &s, &ids[0]]);
    assert_eq!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stderr).contains("was not in the store"));
}

#[test]
fn json_outputs_have_stable_fields() {
    let t = Tmp::new();
    let s = store(&t);
    let init =
        json(&["--json", "obj", "init", &s, "--hash", "sha256", "--compression", "always", "--chunk-max", "64K"]);
    assert_eq!(init["single_file"], false);
    assert_eq!(init["config"]["hash"], "sha256");
    assert_eq!(init["config"]["compression"], "always");
    assert_eq!(init["config"]["chunk_max"], 65536);
    assert_eq!(init["config"]["chunk_avg"], 65536, "the default average, as the core has it");

    let text_data = lines_of_text(5000);
    let x = file(&t, "x.txt", &text_data);
    let add = json(&["--json", "obj", "add", &s, &x, "-"]);
    assert_eq!(add["count"], 2);
    assert_eq!(add["bytes"], text_data.len() as u64);
    assert_eq!(add["objects"][0]["path"], x.as_str());
    assert_eq!(add["objects"][0]["id"], HashKind::Sha256.hash(&text_data).to_hex());
    assert_eq!(add["objects"][0]["size"], text_data.len() as u64);
    assert_eq!(add["objects"][1]["path"], "-");
    assert_eq!(add["objects"][1]["size"], 0);
    let id = add["objects"][0]["id"].as_str().unwrap().to_string();

    let ls = json(&["--json", "obj", "ls", &s]);
    assert_eq!(ls["count"], 2);
    assert!(ls["objects"][0].get("size").is_none(), "{ls}");
    let ls = json(&["--json", "obj", "ls", &s, "-l"]);
    let entry = ls["objects"].as_array().unwrap().iter().find(|o| o["id"] == id.as_str()).unwrap();
    assert_eq!(entry["size"], text_data.len() as u64);
    assert_eq!(entry["chunked"], true);
    assert_eq!(entry["packed"], false);
    assert_eq!(entry["compressed"], true);
    assert!(entry["stored_size"].as_u64().unwrap() > 0);

    let st = json(&["--json", "obj", "stat", &s]);
    for field in [
        "objects",
        "logical_bytes",
        "stored_bytes",
        "saved_bytes",
        "records",
        "chunked_objects",
        "chunks",
        "compressed_records",
        "staged_records",
        "disk_files",
        "disk_bytes",
        "format_version",
    ] {
        assert!(st[field].is_number(), "stat lacks {field}: {st}");
    }
    assert_eq!(st["objects"], 2);
    assert_eq!(st["logical_bytes"], text_data.len() as u64);
    assert_eq!(st["config"]["hash"], "sha256");
    assert!(st["saved_bytes"].as_i64().unwrap() > text_data.len() as i64 / 2, "text compresses: {st}");
    assert!(st["staged_records"].as_u64().unwrap() > 0);
    let one = json(&["--json", "obj", "stat", &s, &id]);
    assert_eq!(one["id"], id.as_str());
    assert_eq!(one["size"], text_data.len() as u64);
    assert_eq!(one["chunked"], true);

    let out = t.path("out.txt").display().to_string();
    let get = json(&["--json", "obj", "get", &s, &id, "-o", &out]);
    assert_eq!(get["size"], text_data.len() as u64);
    assert_eq!(get["path"], out.as_str());
    assert!(std::fs::read(&out).unwrap() == text_data);

    let pack = json(&["--json", "obj", "pack", &s]);
    for field in ["files_removed", "records_moved", "bytes_moved", "files_in_use", "entries_dropped", "bytes_freed"] {
        assert!(pack[field].is_u64(), "pack lacks {field}: {pack}");
    }
    assert_eq!(pack["files_removed"], 1);
    assert_eq!(pack["problems"].as_array().unwrap().len(), 0);
    assert_eq!(json(&["--json", "obj", "stat", &s])["staged_records"], 0);

    let v = json(&["--json", "obj", "validate", &s]);
    assert_eq!(v["ok"], true);
    assert_eq!(v["sample_percent"], 100.0);
    assert_eq!(v["objects_checked"], 2);
    assert!(v["records_checked"].as_u64().unwrap() > 2);
    assert!(v["bytes_checked"].as_u64().unwrap() > 0);
    assert_eq!(v["problems"].as_array().unwrap().len(), 0);
    assert_eq!(json(&["--json", "obj", "validate", &s, "--sample", "0"])["objects_checked"], 0);

    let rm = json(&["--json", "obj", "rm", &s, &id, &HashKind::Sha256.hash(b"never added").to_hex()]);
    assert_eq!(rm["removed"], 1);
    assert_eq!(rm["missing"][0], HashKind::Sha256.hash(b"never added").to_hex());

    let repack = json(&["--json", "obj", "repack", &s, "--compression", "never"]);
    assert!(repack["entries_dropped"].as_u64().unwrap() > 0, "the removed object's chunks: {repack}");
    assert!(repack["files_removed"].as_u64().unwrap() >= 1);
    let st = json(&["--json", "obj", "stat", &s]);
    assert_eq!(st["objects"], 1);
    assert_eq!(st["compressed_records"], 0);
    assert_eq!(st["config"]["compression"], "never", "the policy for new records too");

    let Some(r) = json_replacing(&["--json", "obj", "repair", &s, "--rebuild-index"]) else {
        return;
    };
    assert_eq!(r["objects"], 1);
    for field in ["records", "bad_records", "skipped_ranges"] {
        assert!(r[field].is_u64(), "repair lacks {field}: {r}");
    }
}

#[test]
fn a_modified_copy_is_mostly_deduplicated() {
    let t = Tmp::new();
    let s = store(&t);
    ok(&["obj", "init", &s, "--chunk-min", "4K", "--chunk-avg", "16K", "--chunk-max", "64K"]);
    let mut data = noise(2 << 20, 11);
    let a = file(&t, "a.bin", &data);
    ok(&["obj", "add", &s, &a]);
    let before = json(&["--json", "obj", "stat", &s]);
    data[1 << 20..(1 << 20) + 100].fill(0);
    let b = file(&t, "b.bin", &data);
    let id = text(&["obj", "add", &s, &b]);
    let after = json(&["--json", "obj", "stat", &s]);
    let grew = after["stored_bytes"].as_u64().unwrap() - before["stored_bytes"].as_u64().unwrap();
    assert_eq!(after["logical_bytes"], 2 * data.len() as u64);
    assert!(grew < data.len() as u64 / 8, "a 100-byte change stored {grew} new bytes");
    assert_eq!(after["chunked_objects"], 2);
    assert!(ok(&["obj", "get", &s, id.trim()]) == data);
}

#[test]
fn single_file_stores() {
    let t = Tmp::new();
    let s = t.path("objects.bale").display().to_string();
    let init = json(&["--json", "obj", "init", &s, "--single-file", "--hash", "sha1"]);
    assert_eq!(init["single_file"], true);
    assert!(Path::new(&s).is_file());
    let data = lines_of_text(300);
    let id = text(&["obj", "add", &s, "-"]);
    assert_eq!(id.trim(), HashKind::Sha1.hash(b"").to_hex());
    let x = file(&t, "x", &data);
    let id = text(&["obj", "add", &s, &x]);
    assert_eq!(ok(&["obj", "get", &s, id.trim()]), data);
    let st = json(&["--json", "obj", "stat", &s]);
    assert_eq!(st["single_file"], true);
    assert_eq!(st["objects"], 2);
    assert_eq!(st["disk_files"], 1);
    assert_eq!(st["disk_bytes"], std::fs::metadata(&s).unwrap().len());
    assert_eq!(code(&run(&["obj", "validate", &s])), 0);
    // Nothing to pack in one file: the core says so.
    let (c, _, err) = fails(&["obj", "pack", &s]);
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("INVALID_ARGUMENT"), "{err}");
    // It is a tree store too, which `bale check` reads.
    assert_eq!(code(&run(&["check", &s])), 0);
    // --single-file on an existing directory is refused.
    std::fs::create_dir(t.path("d")).unwrap();
    let d = t.path("d").display().to_string();
    assert_eq!(code(&run(&["obj", "init", &d, "--single-file"])), 1);
}

#[test]
fn get_output_never_follows_a_link_nor_overwrites() {
    let t = Tmp::new();
    let s = store(&t);
    ok(&["obj", "init", &s]);
    let data = b"secret-free content".to_vec();
    let x = file(&t, "x", &data);
    let id = text(&["obj", "add", &s, &x]).trim().to_string();

    let out = file(&t, "existing", b"keep me");
    let (c, _, err) = fails(&["obj", "get", &s, &id, "-o", &out]);
    assert_eq!(c, 1);
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    ok(&["obj", "get", &s, &id, "-o", &out, "--force"]);
    assert_eq!(std::fs::read(&out).unwrap(), data);

    // Links (Unix only: on Windows creating one needs a privilege, and
    // Wine, where the Windows tests run, makes none).
    #[cfg(unix)]
    {
        // A link to an existing file: refused with and without --force, and
        // the file it points at is untouched.
        let target = file(&t, "target", b"not yours");
        let link = t.path("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let link = link.display().to_string();
        for force in [false, true] {
            let mut args = vec!["obj", "get", s.as_str(), id.as_str(), "-o", link.as_str()];
            if force {
                args.push("--force");
            }
            let (c, _, err) = fails(&args);
            assert_eq!(c, 1, "{err}");
            assert_eq!(std::fs::read(&target).unwrap(), b"not yours");
            assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        }
        // A dangling link: its target is not created.
        let nowhere = t.path("nowhere");
        let dangling = t.path("dangling");
        std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
        let dangling = dangling.display().to_string();
        assert_eq!(code(&run(&["obj", "get", &s, &id, "-o", &dangling])), 1);
        assert_eq!(code(&run(&["obj", "get", &s, &id, "-o", &dangling, "--force"])), 1);
        assert!(!nowhere.exists());
    }

    // A missing object leaves no file behind.
    let fresh = t.path("fresh").display().to_string();
    let missing = HashKind::Blake3.hash(b"absent").to_hex();
    assert_eq!(code(&run(&["obj", "get", &s, &missing, "-o", &fresh])), 1);
    assert!(!Path::new(&fresh).exists());
    // --force without -o is a usage error.
    assert_eq!(code(&run(&["obj", "get", &s, &id, "--force"])), 2);
}

#[test]
fn exit_codes_for_missing_invalid_and_foreign_stores() {
    let t = Tmp::new();
    let s = store(&t);
    // No store there.
    let (c, v, err) = fails(&["--json", "obj", "ls", &s]);
    assert_eq!(c, 1);
    assert_eq!(v.unwrap()["error"]["code"], "NOT_FOUND");
    assert!(err.contains("bale obj init"), "{err}");
    assert!(!Path::new(&s).exists(), "reading creates nothing");

    // Invalid parameters create nothing.
    let (c, v, _) = fails(&["--json", "obj", "init", &s, "--chunk-min", "1M", "--chunk-max", "64K"]);
    assert_eq!(c, 1);
    assert_eq!(v.unwrap()["error"]["code"], "INVALID_ARGUMENT");
    assert!(!Path::new(&s).exists());
    assert_eq!(code(&run(&["obj", "init", &s, "--hash", "md5"])), 2);
    assert_eq!(code(&run(&["obj", "init", &s, "--chunk-avg", "lots"])), 2);
    assert!(!Path::new(&s).exists());

    ok(&["obj", "init", &s]);
    let (c, _, err) = fails(&["obj", "init", &s]);
    assert_eq!(c, 1, "an existing store is not created again: {err}");
    let x = file(&t, "x", b"x");
    let id = text(&["obj", "add", &s, &x]).trim().to_string();

    // Malformed ids are usage errors; unknown ones NOT_FOUND.
    let (c, v, _) = fails(&["--json", "obj", "get", &s, "xyz"]);
    assert_eq!(c, 2);
    assert_eq!(v.unwrap()["error"]["code"], "USAGE");
    assert_eq!(code(&run(&["obj", "get", &s, &id[..40]])), 2, "a SHA-1 length id in a BLAKE3 store");
    assert_eq!(code(&run(&["obj", "stat", &s, "00"])), 2);
    assert_eq!(code(&run(&["obj", "rm", &s, &id, "nothex"])), 2);
    assert_eq!(lines(&["obj", "ls", &s]), std::slice::from_ref(&id), "a bad id in the list removes nothing");
    let missing = HashKind::Blake3.hash(b"absent").to_hex();
    let (c, v, _) = fails(&["--json", "obj", "stat", &s, &missing]);
    assert_eq!(c, 1);
    assert_eq!(v.unwrap()["error"]["code"], "NOT_FOUND");
    assert_eq!(code(&run(&["obj", "cat", &s, &id, &missing])), 1);

    // Other usage errors.
    assert_eq!(code(&run(&["obj", "validate", &s, "--sample", "150"])), 2);
    assert_eq!(code(&run(&["obj", "validate", &s, "--sample", "half"])), 2);
    assert_eq!(code(&run(&["obj", "repair", &s])), 2, "repair says what to repair");
    assert_eq!(code(&run(&["obj", "repack", &s, "--compression", "zstd"])), 2);
    assert_eq!(code(&run(&["obj", "add", &s])), 2);
    assert_eq!(code(&run(&["obj", "add", &s, "-", "-"])), 2);

    // A missing input adds nothing, not even the inputs before it; a
    // directory goes alone.
    let y = file(&t, "y", b"y");
    let nope = t.path("nope").display().to_string();
    let (c, v, _) = fails(&["--json", "obj", "add", &s, &y, &nope]);
    assert_eq!(c, 1);
    assert_eq!(v.unwrap()["error"]["code"], "IO");
    let (c, v, _) = fails(&["--json", "obj", "add", &s, &y, &t.0.display().to_string()]);
    assert_eq!(c, 2);
    assert_eq!(v.unwrap()["error"]["code"], "USAGE");
    assert_eq!(lines(&["obj", "ls", &s]).len(), 1);

    // Not a bale file: exit code 5; a tree store is not an object store.
    let notes = file(&t, "notes.txt", &b"plain text, not a store\n".repeat(300));
    let (c, _, err) = fails(&["obj", "ls", &notes]);
    assert_eq!(c, 5, "{err}");
    assert!(err.contains("NOT_A_BALE_FILE"));
    let tree = t.store();
    ok(&["kv", "put", &tree, "k", "v", "--create"]);
    let (c, _, err) = fails(&["obj", "stat", &tree]);
    assert_eq!(c, 1);
    assert!(err.contains("INVALID_ARGUMENT"), "{err}");
}

/// Flips bytes in the middle of every record payload of the only pack.
fn damage_pack(store: &str) {
    let pack = Path::new(store).join("packs").join("0.pack");
    let mut b = std::fs::read(&pack).unwrap();
    let len = b.len();
    for i in [len / 3, len / 2, 2 * len / 3] {
        b[i] ^= 0x55;
    }
    std::fs::write(&pack, b).unwrap();
}

#[test]
fn pack_lists_a_damaged_staging_file_as_a_typed_problem() {
    let t = Tmp::new();
    let s = store(&t);
    ok(&["obj", "init", &s]);
    // A one-by-one add through the library leaves a staging file (the
    // command's adds go straight into packs).
    let lib = bale::objects::ObjectStore::open(&s, bale::objects::ObjectOptions::default()).unwrap();
    lib.add(b"staged").unwrap();
    lib.close().unwrap();
    let staging = std::fs::read_dir(Path::new(&s).join("staging")).unwrap().next().unwrap().unwrap().path();
    let mut b = std::fs::read(&staging).unwrap();
    b[30] ^= 4; // inside the file header
    std::fs::write(&staging, b).unwrap();
    let r = json(&["--json", "obj", "pack", &s]);
    let problems = r["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{r}");
    let name = format!("staging/{}", staging.file_name().unwrap().to_str().unwrap());
    assert_eq!(problems[0]["file"], name.as_str(), "{r}");
    assert!(problems[0]["id"].is_null() && problems[0]["code"].is_string(), "{r}");
    assert!(problems[0]["message"].as_str().unwrap().contains("left in place"), "{r}");
    let o = run(&["obj", "pack", &s]);
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains(&format!("bale: warning: {}", problems[0]["code"].as_str().unwrap()))
    );
}

#[test]
fn damage_is_found_and_exits_3() {
    let t = Tmp::new();
    let s = store(&t);
    ok(&["obj", "init", &s, "--compression", "never"]);
    let data = noise(600 << 10, 5);
    let x = file(&t, "x", &data);
    let id = text(&["obj", "add", &s, &x]).trim().to_string();
    ok(&["obj", "pack", &s]);
    assert_eq!(code(&run(&["obj", "validate", &s])), 0);
    damage_pack(&s);

    let o = run(&["obj", "validate", &s]);
    assert_eq!(code(&o), 3, "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stderr).contains("CORRUPT"));
    assert!(String::from_utf8_lossy(&o.stdout).contains("problem"));
    let (c, v, _) = fails(&["--json", "obj", "validate", &s]);
    assert_eq!(c, 3);
    let v = v.unwrap();
    assert_eq!(v["ok"], false);
    let problems = v["problems"].as_array().unwrap();
    assert!(!problems.is_empty());
    assert!(problems.iter().all(|p| p["code"].is_string() && p["message"].is_string()), "{v}");
    // Each names the record and the pack file holding it.
    assert!(
        problems.iter().any(|p| p["id"].is_string() && p["file"].as_str().is_some_and(|f| f.starts_with("packs/"))),
        "{v}"
    );
    // Reading the damaged object is a corruption error too.
    let (c, _, err) = fails(&["obj", "get", &s, &id]);
    assert_eq!(c, 3, "{err}");

    // Rebuilding the index skips the damaged records and says so.
    let Some(r) = json_replacing(&["--json", "obj", "repair", &s, "--rebuild-index"]) else {
        return;
    };
    assert!(r["bad_records"].as_u64().unwrap() + r["skipped_ranges"].as_u64().unwrap() > 0, "{r}");
}

#[test]
fn repair_rebuilds_a_lost_index() {
    let t = Tmp::new();
    let s = store(&t);
    ok(&["obj", "init", &s]);
    let inputs: Vec<String> = (0..5).map(|i| file(&t, &format!("f{i}"), &lines_of_text(100 + i))).collect();
    let mut args = vec!["obj", "add", s.as_str()];
    args.extend(inputs.iter().map(String::as_str));
    let mut ids = lines(&args);
    ok(&["obj", "pack", &s]);
    // One object left in a staging file: stdin goes there.
    ids.push(text_with(&["obj", "add", &s, "-"], &noise(400 << 10, 3)).trim().to_string());
    assert!(json(&["--json", "obj", "stat", &s])["staged_records"].as_u64().unwrap() > 0);
    ids.sort();

    std::fs::remove_file(Path::new(&s).join("index")).unwrap();
    assert_ne!(code(&run(&["obj", "ls", &s])), 0);
    let Some(out) = replacing(&["obj", "repair", &s, "--rebuild-index"]).map(|o| String::from_utf8(o).unwrap()) else {
        return;
    };
    assert!(out.starts_with("rebuilt the index"), "{out}");
    assert_eq!(lines(&["obj", "ls", &s]), ids);
    assert_eq!(code(&run(&["obj", "validate", &s])), 0);
    assert!(!ok(&["obj", "get", &s, &ids[0]]).is_empty());
}

/// What a pending add reads before it waits.
fn pending_input() -> Vec<u8> {
    noise(10 << 20, 9)
}

/// A `bale obj add STORE -` that has opened the store and is waiting for
/// the rest of its stdin.
struct PendingAdd {
    child: Child,
}

impl PendingAdd {
    fn start(store: &str) -> PendingAdd {
        let mut child = spawn(
            Command::new(BIN)
                .args(["obj", "add", store, "-"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        );
        // More than the core's chunking buffer (8 MiB): the writer chunks
        // the first part and appends its records to a staging file, which
        // shows that it has the store open, while it waits for the rest.
        use std::io::Write;
        child.stdin.as_mut().unwrap().write_all(&pending_input()).unwrap();
        let staging = Path::new(store).join("staging");
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let written =
                std::fs::read_dir(&staging).unwrap().filter_map(|e| e.ok()?.metadata().ok()).any(|m| m.len() > 64);
            if written {
                break;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("the writer ended early: {status}");
            }
            // Not a timing assertion: only a guard against waiting forever.
            assert!(Instant::now() < deadline, "the writer never wrote its staging file");
            std::thread::sleep(Duration::from_millis(20));
        }
        PendingAdd { child }
    }

    /// Ends the input; returns what the add printed.
    fn finish(mut self) -> String {
        drop(self.child.stdin.take());
        let o = self.child.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    }
}

#[test]
fn maintenance_is_locked_while_another_process_writes() {
    let t = Tmp::new();
    let s = store(&t);
    ok(&["obj", "init", &s]);
    let x = file(&t, "x", b"an object");
    let id = text(&["obj", "add", &s, &x]).trim().to_string();
    ok(&["obj", "pack", &s]);

    let writer = PendingAdd::start(&s);
    for args in [
        vec!["obj", "rm", s.as_str(), id.as_str()],
        vec!["obj", "repack", s.as_str()],
        vec!["obj", "repair", s.as_str(), "--rebuild-index"],
        vec!["obj", "clean", s.as_str()],
    ] {
        let (c, _, err) = fails(&args);
        assert_eq!(c, 4, "{args:?}: {err}");
        assert!(err.starts_with("bale: LOCKED: "), "{err}");
    }
    let (c, v, _) = fails(&["--json", "obj", "rm", &s, &id]);
    assert_eq!(c, 4);
    assert_eq!(v.unwrap()["error"]["code"], "LOCKED");
    // Readers, other writers and the packer run beside it; the packer
    // leaves the writer's staging file alone.
    assert_eq!(ok(&["obj", "get", &s, &id]), b"an object");
    let y = file(&t, "y", b"another object");
    ok(&["obj", "add", &s, &y]);
    let pack = json(&["--json", "obj", "pack", &s]);
    assert!(pack["files_in_use"].as_u64().unwrap() >= 1, "{pack}");
    assert_eq!(code(&run(&["obj", "validate", &s])), 0);

    let added = writer.finish();
    assert_eq!(added.trim(), HashKind::Blake3.hash(&pending_input()).to_hex());
    ok(&["obj", "rm", &s, &id]);
    assert_eq!(lines(&["obj", "ls", &s]).len(), 2);
}

#[test]
fn help_lists_the_verbs() {
    let help = String::from_utf8(run(&["obj", "--help"]).stdout).unwrap();
    for verb in [
        "init", "add", "get", "cat", "ls", "rm", "stat", "pack", "repack", "validate", "repair", "clean", "export",
        "import",
    ] {
        assert!(help.contains(&format!("  {verb} ")), "{verb} missing from: {help}");
    }
    let top = String::from_utf8(run(&["--help"]).stdout).unwrap();
    assert!(top.contains("obj"), "{top}");
}

/// Unix only: the tree holds a symbolic link (see the links in
/// get_output_never_follows_a_link_nor_overwrites).
#[cfg(unix)]
#[test]
fn adds_a_directory_tree_and_records_paths() {
    let t = Tmp::new();
    let s = store(&t);
    ok(&["obj", "init", &s]);
    let root = t.path("assets");
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("top.txt"), b"top").unwrap();
    std::fs::write(root.join("a/dup.txt"), b"top").unwrap();
    std::fs::write(root.join("a/one.json"), b"{\"x\": 1}").unwrap();
    let big = noise(700 << 10, 21);
    std::fs::write(root.join("a/b/big.bin"), &big).unwrap();
    let secret = file(&t, "secret", b"outside the tree");
    std::os::unix::fs::symlink(&secret, root.join("a/link")).unwrap();
    let dir = root.display().to_string();
    let paths = t.path("paths.bale").display().to_string();

    // A link in the tree fails the add before anything is committed.
    let (c, v, err) = fails(&["--json", "obj", "add", &s, &dir]);
    assert_eq!(c, 1, "{err}");
    assert_eq!(v.unwrap()["error"]["code"], "INVALID_ARGUMENT");
    assert!(err.contains("a/link"), "{err}");
    assert!(lines(&["obj", "ls", &s]).is_empty());

    let r = json(&["--json", "obj", "add", &s, &dir, "--skip-links", "--paths", &paths]);
    assert_eq!(r["files"], 4);
    assert_eq!(r["bytes"], 3 + 3 + 8 + big.len() as u64);
    assert_eq!(r["dirs"], 3);
    assert_eq!(r["skipped"], serde_json::json!(["a/link"]));
    assert_eq!(r["paths"], paths.as_str());
    assert_eq!(lines(&["obj", "ls", &s]).len(), 3, "the two copies of \"top\" are one object");
    assert!(!lines(&["obj", "ls", &s]).contains(&HashKind::Blake3.hash(b"outside the tree").to_hex()));

    // The paths are a tree store: relative path -> raw id bytes.
    assert_eq!(lines(&["kv", "ls", &paths]), ["a/b/big.bin", "a/dup.txt", "a/one.json", "top.txt"]);
    let id = ok(&["kv", "get", &paths, "a/b/big.bin"]);
    assert_eq!(id, HashKind::Blake3.hash(&big).as_bytes());
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    assert!(ok(&["obj", "get", &s, &hex]) == big);

    let out = text(&["obj", "add", &s, &dir, "--skip-links"]);
    assert!(out.starts_with("added 4 files"), "{out}");
    // A directory goes alone; --paths and --skip-links need one.
    assert_eq!(code(&run(&["obj", "add", &s, &dir, &secret])), 2);
    assert_eq!(code(&run(&["obj", "add", &s, &secret, "--paths", &paths])), 2);
    // The object store cannot hold its own paths.
    let single = t.path("one.bale").display().to_string();
    ok(&["obj", "init", &single, "--single-file"]);
    assert_eq!(code(&run(&["obj", "add", &single, &dir, "--skip-links", "--paths", &single])), 1);
}

#[test]
fn export_import_and_clean() {
    let t = Tmp::new();
    let s = store(&t);
    ok(&["obj", "init", &s]);
    let inputs: Vec<String> = (0..3).map(|i| file(&t, &format!("f{i}"), &lines_of_text(200 * (i + 1)))).collect();
    let mut args = vec!["obj", "add", s.as_str()];
    args.extend(inputs.iter().map(String::as_str));
    let mut ids = lines(&args);
    // The last one through stdin, which leaves it in a staging file.
    ids.push(text_with(&["obj", "add", &s, "-"], &lines_of_text(800)).trim().to_string());

    // Into a store that does not exist yet: --create makes it alike.
    let dest = t.path("copy").display().to_string();
    assert_eq!(code(&run(&["obj", "export", &s, &dest, &ids[0]])), 1, "no DEST without --create");
    let r = json(&["--json", "obj", "export", &s, &dest, "--create", &ids[0], &ids[1]]);
    assert_eq!(r["objects_copied"], 2);
    assert_eq!(r["objects_present"], 0);
    assert_eq!(r["bytes_copied"], (lines_of_text(200).len() + lines_of_text(400).len()) as u64);
    assert_eq!(r["from"], s.as_str());
    assert_eq!(r["to"], dest.as_str());
    // Everything: only what is missing moves.
    let r = json(&["--json", "obj", "export", &s, &dest]);
    assert_eq!((r["objects_copied"].as_u64(), r["objects_present"].as_u64()), (Some(2), Some(2)));
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(lines(&["obj", "ls", &dest]), sorted);

    // Import into a single-file store.
    let single = t.path("one.bale").display().to_string();
    ok(&["obj", "init", &single, "--single-file"]);
    let r = json(&["--json", "obj", "import", &single, &s, &ids[3]]);
    assert_eq!(r["objects_copied"], 1);
    assert_eq!(ok(&["obj", "get", &single, &ids[3]]), lines_of_text(800));
    let out = text(&["obj", "import", &single, &dest]);
    assert!(out.starts_with("copied 3 objects"), "{out}");
    // Unknown ids fail; a store of another hash is refused.
    let missing = HashKind::Blake3.hash(b"absent").to_hex();
    let (c, v, _) = fails(&["--json", "obj", "export", &s, &dest, &missing]);
    assert_eq!(c, 1);
    assert_eq!(v.unwrap()["error"]["code"], "NOT_FOUND");
    let sha = t.path("sha").display().to_string();
    ok(&["obj", "init", &sha, "--hash", "sha256"]);
    let (c, v, _) = fails(&["--json", "obj", "export", &s, &sha]);
    assert_eq!(c, 1);
    assert_eq!(v.unwrap()["error"]["code"], "INVALID_ARGUMENT");

    // Clean packs and compacts; the objects stay.
    std::fs::write(Path::new(&s).join("index.compact"), b"left by a crash").unwrap();
    let Some(r) = json_replacing(&["--json", "obj", "clean", &s]) else {
        return;
    };
    for field in ["files_removed", "bytes_freed", "index_bytes_before", "index_bytes_after"] {
        assert!(r[field].is_u64(), "clean lacks {field}: {r}");
    }
    assert!(r["files_removed"].as_u64().unwrap() >= 2, "the staging file and the leftover: {r}");
    assert!(!Path::new(&s).join("index.compact").exists());
    assert_eq!(json(&["--json", "obj", "stat", &s])["staged_records"], 0);
    assert_eq!(lines(&["obj", "ls", &s]), sorted);
    assert_eq!(code(&run(&["obj", "validate", &s])), 0);
    if let Some(out) = replacing(&["obj", "clean", &single]) {
        assert!(String::from_utf8(out).unwrap().starts_with("cleaned"));
    }
}
