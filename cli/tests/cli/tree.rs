//! Runs the built `bale` binary against stores in temporary directories.

use std::path::Path;

use serde_json::Value;

use crate::support::*;

/// A store holding k00..k19 with values v00..v19.
fn twenty(t: &Tmp) -> String {
    let s = t.store();
    let input: String = (0..20).map(|i| format!("k{i:02}\tv{i:02}\n")).collect();
    ok_with(&["kv", "load", &s, "--create"], input.as_bytes());
    s
}

#[test]
fn put_get_rm_round_trip() {
    let t = Tmp::new();
    let s = t.store();
    ok(&["kv", "put", &s, "greeting", "hello world", "--create"]);
    ok(&["kv", "put", &s, "empty", ""]);
    assert_eq!(ok(&["kv", "get", &s, "greeting"]), b"hello world");
    assert_eq!(ok(&["kv", "get", &s, "empty"]), b"");
    // Replacing a value.
    ok(&["kv", "put", &s, "greeting", "hi"]);
    assert_eq!(ok(&["kv", "get", &s, "greeting"]), b"hi");
    // A ranged read of an inline value.
    assert_eq!(ok(&["kv", "put", &s, "abc", "0123456789"]), b"", "put prints nothing");
    assert_eq!(ok(&["kv", "get", &s, "abc", "--offset", "3", "--length", "4"]), b"3456");
    assert_eq!(ok(&["kv", "get", &s, "abc", "--offset", "99"]), b"");

    let rm = json(&["--json", "kv", "rm", &s, "greeting", "nothere"]);
    assert_eq!(rm["removed"], 1);
    assert_eq!(rm["missing"][0], "nothere");

    let o = run(&["kv", "get", &s, "greeting"]);
    assert_eq!(code(&o), 1, "a missing key exits 1");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("bale: NOT_FOUND:"), "{err}");
    assert!(o.stdout.is_empty());

    let o = run(&["--json", "kv", "get", &s, "greeting"]);
    assert_eq!(code(&o), 1);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["code"], "NOT_FOUND");

    // Without --create a missing file is an error, not a new store.
    let o = run(&["kv", "put", &t.path("nope.bale").display().to_string(), "k", "v"]);
    assert_eq!(code(&o), 1);
    assert!(!t.path("nope.bale").exists());

    // A value from stdin.
    ok_with(&["kv", "put", &s, "piped", "-"], b"from\nstdin\x00\xff");
    assert_eq!(ok(&["kv", "get", &s, "piped"]), b"from\nstdin\x00\xff");
}

#[test]
fn ls_bounds_order_limit_prefix() {
    let t = Tmp::new();
    let s = twenty(&t);
    let all = lines(&["kv", "ls", &s]);
    assert_eq!(all.len(), 20);
    assert_eq!(all[0], "k00");
    assert_eq!(all[19], "k19");

    assert_eq!(lines(&["kv", "ls", &s, "--from", "k05", "--to", "k08"]), ["k05", "k06", "k07"]);
    assert_eq!(
        lines(&["kv", "ls", &s, "--from", "k05", "--to", "k08", "--to-inclusive"]),
        ["k05", "k06", "k07", "k08"]
    );
    assert_eq!(lines(&["kv", "ls", &s, "--after", "k05", "--to", "k08"]), ["k06", "k07"]);
    assert_eq!(lines(&["kv", "ls", &s, "--from", "k05", "--to", "k08", "--reverse"]), ["k07", "k06", "k05"]);
    assert_eq!(lines(&["kv", "ls", &s, "--reverse", "--limit", "2"]), ["k19", "k18"]);
    assert_eq!(lines(&["kv", "ls", &s, "--limit", "3"]), ["k00", "k01", "k02"]);
    assert_eq!(lines(&["kv", "ls", &s, "--prefix", "k1", "--limit", "3"]), ["k10", "k11", "k12"]);
    assert_eq!(lines(&["kv", "ls", &s, "--prefix", "k1", "--reverse", "--limit", "2"]), ["k19", "k18"]);
    // Prefix and bounds intersect.
    assert_eq!(lines(&["kv", "ls", &s, "--prefix", "k1", "--from", "k17"]), ["k17", "k18", "k19"]);
    assert_eq!(lines(&["kv", "ls", &s, "--prefix", "k0", "--from", "k17"]), Vec::<String>::new());
    assert_eq!(lines(&["kv", "ls", &s, "--prefix", "k", "--to", "k02"]), ["k00", "k01"]);
    assert_eq!(lines(&["kv", "ls", &s, "--prefix", "k0", "--values", "--limit", "2"]), ["k00\tv00", "k01\tv01"]);
    let long = lines(&["kv", "ls", &s, "-l", "--limit", "1"]);
    assert_eq!(long[0].split_whitespace().collect::<Vec<_>>(), ["3", "k00"]);
    // --to-inclusive needs --to.
    assert_eq!(code(&run(&["kv", "ls", &s, "--to-inclusive"])), 2);
    // The core's range rules: reverse, then offset, then limit; crossing
    // bounds list nothing; two lower bounds are an invalid argument.
    assert_eq!(
        lines(&["kv", "ls", &s, "--prefix", "k1", "--reverse", "--offset", "2", "--limit", "2"]),
        ["k17", "k16"]
    );
    assert_eq!(lines(&["kv", "ls", &s, "--offset", "18"]), ["k18", "k19"]);
    assert_eq!(lines(&["kv", "ls", &s, "--limit", "0"]), Vec::<String>::new());
    assert_eq!(lines(&["kv", "ls", &s, "--from", "k08", "--to", "k05"]), Vec::<String>::new());
    let both = run(&["kv", "ls", &s, "--from", "k05", "--after", "k06"]);
    assert_eq!(code(&both), 1);
    let stderr = String::from_utf8_lossy(&both.stderr);
    assert!(stderr.starts_with("bale: INVALID_ARGUMENT: a range takes one lower bound"), "{stderr}");
}

#[test]
fn hex_keys_and_escaped_output() {
    let t = Tmp::new();
    let s = t.store();
    ok(&["kv", "put", &s, "--create", "--hex", "00ff01", "binary"]);
    ok(&["kv", "put", &s, "tab\there", "x\ny"]);
    assert_eq!(lines(&["kv", "ls", &s, "--hex"]), ["00ff01", "7461620968657265"]);
    assert_eq!(lines(&["kv", "ls", &s]), ["\\x00\\xff\\x01", "tab\\there"]);
    assert_eq!(lines(&["kv", "ls", &s, "--values", "--from", "t"]), ["tab\\there\tx\\ny"]);
    assert_eq!(ok(&["kv", "get", &s, "--hex", "00FF01"]), b"binary");
    assert_eq!(lines(&["kv", "ls", &s, "--hex", "--prefix", "00"]), ["00ff01"]);
    let v = json(&["--json", "kv", "ls", &s]);
    assert_eq!(v["entries"][0]["key_hex"], "00ff01");
    assert_eq!(v["entries"][0]["key"], "\\x00\\xff\\x01");
    // Not hex: a usage error.
    let o = run(&["kv", "get", &s, "--hex", "0g"]);
    assert_eq!(code(&o), 2);
    assert_eq!(code(&run(&["kv", "get", &s, "--hex", "abc"])), 2);
}

#[test]
fn streams_a_large_value_and_reads_a_range() {
    let t = Tmp::new();
    let s = t.store();
    let data = noise(3 << 20, 0x1234_5678);
    let src = t.path("big.bin");
    std::fs::write(&src, &data).unwrap();
    let put = json(&["--json", "kv", "put", &s, "big", "--create", "--file", &src.display().to_string()]);
    assert_eq!(put["bytes"], data.len() as u64);
    let whole = ok(&["kv", "get", &s, "big"]);
    assert!(whole == data, "the value read back differs");
    let part = ok(&["kv", "get", &s, "big", "--offset", "1000000", "--length", "70000"]);
    assert!(part == data[1_000_000..1_070_000], "the range read back differs");
    let tail = ok(&["kv", "get", &s, "big", "--offset", "3145000"]);
    assert!(tail == data[3_145_000..]);

    let v = json(&["--json", "kv", "ls", &s, "--prefix", "big"]);
    assert_eq!(v["count"], 1);
    assert_eq!(v["entries"][0]["size"], data.len() as u64);
    assert_eq!(v["entries"][0]["large"], true);

    let st = json(&["--json", "stat", &s]);
    assert_eq!(st["large_values"], 1);
    assert_eq!(st["large_value_bytes"], data.len() as u64);

    // The same bytes through stdin.
    ok_with(&["kv", "put", &s, "piped", "-"], &data);
    assert!(ok(&["kv", "get", &s, "piped"]) == data);
    assert_eq!(text(&["check", &s]).lines().count(), 1);

    // Both a VALUE and --file: usage error.
    let o = run(&["kv", "put", &s, "k", "v", "--file", &src.display().to_string()]);
    assert_eq!(code(&o), 2);
}

#[test]
fn json_outputs_parse_and_carry_fields() {
    let t = Tmp::new();
    let s = twenty(&t);
    let st = json(&["--json", "stat", &s]);
    for field in [
        "txn",
        "page_size",
        "file_pages",
        "depth",
        "entries",
        "leaf_pages",
        "branch_pages",
        "fill",
        "free_pages",
        "file_bytes",
    ] {
        assert!(st.get(field).is_some(), "stat lacks {field}: {st}");
    }
    assert_eq!(st["entries"], 20);
    assert_eq!(st["page_size"], 4096);

    let ck = json(&["check", &s, "--json"]);
    assert_eq!(ck["ok"], true);
    assert_eq!(ck["entries"], 20);
    assert_eq!(ck["problems"].as_array().unwrap().len(), 0);

    let ls = json(&["--json", "kv", "ls", &s, "--values", "--limit", "2"]);
    assert_eq!(ls["count"], 2);
    assert_eq!(ls["entries"][1]["key"], "k01");
    assert_eq!(ls["entries"][1]["value"], "v01");
    assert_eq!(ls["entries"][1]["size"], 3);
    let empty = json(&["--json", "kv", "ls", &s, "--prefix", "zz"]);
    assert_eq!(empty["count"], 0);

    let Some(cp) = json_replacing(&["--json", "compact", &s]) else {
        return;
    };
    assert_eq!(cp["entries"], 20);
    assert!(cp["bytes_after"].as_u64().unwrap() > 0);

    let ld = ok_with(
        &["--json", "kv", "load", &s, "--jsonl"],
        b"{\"key\":\"j1\",\"value\":\"one\"}\n{\"key\":\"j2\",\"value\":{\"n\":2}}\n",
    );
    let ld: Value = serde_json::from_slice(&ld).unwrap();
    assert_eq!(ld["entries"], 2);
    assert_eq!(ok(&["kv", "get", &s, "j2"]), b"{\"n\":2}");

    let b = json(&["--json", "bench", "kv", "--n", "2000", "--dir", &t.0.display().to_string()]);
    assert_eq!(b["n"], 2000);
    for w in ["insert", "get", "scan"] {
        assert!(b[w]["ops_per_sec"].as_f64().unwrap() > 0.0, "{b}");
        assert_eq!(b[w]["ops"], 2000);
    }
    assert!(b["file_bytes"].as_u64().unwrap() > 2000 * 116);
    // The bench removes its store.
    let left: Vec<_> = std::fs::read_dir(&t.0)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("bale-bench"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn load_is_one_transaction() {
    let t = Tmp::new();
    let s = twenty(&t);
    // A line without a tab aborts the load; nothing of it is written.
    let o = run_with(&["kv", "load", &s], b"new1\tx\nnotab\nnew2\ty\n");
    assert_eq!(code(&o), 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 2"));
    assert_eq!(lines(&["kv", "ls", &s]).len(), 20);
    // Values may hold tabs; empty lines are skipped.
    ok_with(&["kv", "load", &s], b"t1\ta\tb\n\nt2\t\n");
    assert_eq!(ok(&["kv", "get", &s, "t1"]), b"a\tb");
    assert_eq!(ok(&["kv", "get", &s, "t2"]), b"");
}

#[test]
fn usage_errors_exit_2() {
    let t = Tmp::new();
    let s = t.store();
    assert_eq!(code(&run(&[])), 2);
    assert_eq!(code(&run(&["frobnicate"])), 2);
    assert_eq!(code(&run(&["kv", "put"])), 2);
    assert_eq!(code(&run(&["kv", "put", &s, "key-without-value"])), 2);
    assert_eq!(code(&run(&["stat", &s, "--bogus"])), 2);
    assert_eq!(code(&run(&["kv", "ls", &s, "--limit", "many"])), 2);
    assert_eq!(code(&run(&["kv", "put", &s, "k", "v", "--create", "--page-size", "5000"])), 2);
    assert!(!t.path("store.bale").exists(), "a usage error creates nothing");
    let o = run(&["--json", "kv", "ls"]);
    assert_eq!(code(&o), 2);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["code"], "USAGE");
    assert_eq!(code(&run(&["--help"])), 0);
    let help = String::from_utf8(run(&["--help"]).stdout).unwrap();
    assert!(help.contains("Exit codes:"), "{help}");
    let bench_help = String::from_utf8(run(&["bench", "kv", "--help"]).stdout).unwrap();
    assert!(bench_help.contains("make bench"), "{bench_help}");
}

#[test]
fn not_a_bale_file_exits_5() {
    let t = Tmp::new();
    let f = t.path("notes.txt");
    std::fs::write(&f, "just some text, long enough to not be a header at all\n".repeat(200)).unwrap();
    let f = f.display().to_string();
    for args in [
        vec!["stat", &f],
        vec!["check", &f],
        vec!["kv", "get", &f, "k"],
        vec!["kv", "ls", &f],
        vec!["kv", "put", &f, "k", "v", "--create"],
    ] {
        let o = run(&args);
        assert_eq!(code(&o), 5, "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stderr).contains("NOT_A_BALE_FILE"));
    }
    let o = run(&["--json", "stat", &f]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["code"], "NOT_A_BALE_FILE");
}

/// Flips a byte in the middle of every page from `first` on.
fn corrupt_pages(path: &Path, page_size: usize, first: usize) {
    let mut b = std::fs::read(path).unwrap();
    let pages = b.len() / page_size;
    assert!(pages > first, "the store has only {pages} pages");
    for p in first..pages {
        b[p * page_size + page_size / 2] ^= 0x5a;
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn check_finds_a_corrupt_leaf_and_exits_3() {
    let t = Tmp::new();
    let s = twenty(&t);
    assert_eq!(code(&run(&["check", &s])), 0);
    corrupt_pages(Path::new(&s), 4096, 3);
    let o = run(&["check", &s]);
    assert_eq!(code(&o), 3, "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).contains("problem"));
    let o = run(&["--json", "check", &s]);
    assert_eq!(code(&o), 3);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert!(!v["problems"].as_array().unwrap().is_empty());
    // Reading through the damaged page is a corruption error too.
    let o = run(&["kv", "get", &s, "k03"]);
    assert_eq!(code(&o), 3, "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(code(&run(&["kv", "ls", &s])), 3);
}

#[test]
fn check_reports_a_damaged_newest_meta_and_exits_3() {
    let t = Tmp::new();
    let s = twenty(&t);
    ok(&["kv", "put", &s, "again", "1"]);
    let st = json(&["stat", &s, "--json"]);
    let slot = st["meta_slot"].as_u64().unwrap() as usize;
    let mut b = std::fs::read(&s).unwrap();
    b[slot * 4096 + 300] ^= 0x04;
    std::fs::write(&s, b).unwrap();
    // The store still opens, at the commit before ...
    assert_eq!(json(&["stat", &s, "--json"])["meta_slot"].as_u64(), Some(3 - slot as u64));
    // ... but check says what was lost.
    let o = run(&["--json", "check", &s]);
    assert_eq!(code(&o), 3, "{}", String::from_utf8_lossy(&o.stdout));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["problems"][0]["page"].as_u64(), Some(slot as u64));
    assert!(v["problems"][0]["message"].as_str().unwrap().contains("lost"), "{v}");
}

#[test]
fn a_held_writer_lock_exits_4() {
    let t = Tmp::new();
    let s = twenty(&t);
    let store = bale::Store::open(&s, bale::Options::default()).unwrap();
    let w = store.write().unwrap();
    let o = run(&["kv", "put", &s, "k", "v"]);
    assert_eq!(code(&o), 4, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("LOCKED"));
    let o = run(&["--json", "kv", "rm", &s, "k00"]);
    assert_eq!(code(&o), 4);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["code"], "LOCKED");
    assert_eq!(code(&run(&["compact", &s])), 4);
    // Readers are not blocked by the writer.
    assert_eq!(ok(&["kv", "get", &s, "k00"]), b"v00");
    drop(w);
    ok(&["kv", "put", &s, "k", "v"]);
}

#[test]
fn compact_shrinks_after_deletes() {
    let t = Tmp::new();
    let s = t.store();
    let input: String = (0..3000).map(|i| format!("item/{i:05}\t{}\n", "x".repeat(200))).collect();
    ok_with(&["kv", "load", &s, "--create"], input.as_bytes());
    let big = t.path("big.bin");
    std::fs::write(&big, noise(1 << 20, 99)).unwrap();
    ok(&["kv", "put", &s, "blob", "--file", &big.display().to_string()]);
    let doomed: Vec<String> = (0..3000).filter(|i| i % 10 != 0).map(|i| format!("item/{i:05}")).collect();
    let mut args = vec!["kv", "rm", s.as_str(), "blob"];
    args.extend(doomed.iter().map(String::as_str));
    ok(&args);
    let before = std::fs::metadata(&s).unwrap().len();
    let Some(r) = json_replacing(&["--json", "compact", &s]) else {
        return;
    };
    let after = std::fs::metadata(&s).unwrap().len();
    assert_eq!(r["bytes_before"], before);
    assert_eq!(r["bytes_after"], after);
    assert_eq!(r["entries"], 300);
    assert!(after * 3 < before, "{before} -> {after}");
    assert_eq!(lines(&["kv", "ls", &s]).len(), 300);
    assert_eq!(ok(&["kv", "get", &s, "item/00010"]), "x".repeat(200).as_bytes());
    assert_eq!(code(&run(&["check", &s])), 0);
}

/// `bale --json inspect --no-open PATH`, once it printed its address (which
/// must end with `url_end`): the child and its port.
fn inspect_server(path: &str, url_end: &str) -> (std::process::Child, u16) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_bale"))
        .args(["--json", "inspect", "--no-open", path])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert!(v["url"].as_str().unwrap().ends_with(url_end), "{v}");
    (child, v["port"].as_u64().unwrap() as u16)
}

/// The whole answer to a request `head` (request line and headers) sent to 127.0.0.1:`port`.
fn http(port: u16, head: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(format!("{head}\r\n\r\n").as_bytes()).unwrap();
    let mut out = Vec::new();
    c.read_to_end(&mut out).unwrap();
    out
}

/// Built without the `inspector` feature, `bale inspect` says how to get
/// it; built with it, it serves the page and the named file on 127.0.0.1,
/// with byte ranges, and refuses requests addressed to other host names.
#[test]
fn inspect_serves_the_page_and_the_file_or_says_how_to_build_it() {
    let t = Tmp::new();
    let s = t.store();
    ok(&["kv", "put", &s, "--create", "k", "v"]);
    if !cfg!(feature = "inspector") {
        let o = run(&["inspect", "--no-open", &s]);
        assert_eq!(code(&o), 1);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("built without the browser inspector"), "{stderr}");
        return;
    }
    let (mut child, port) = inspect_server(&s, "/www/index.html?url=/files/store.bale");
    let get = |head: &str| http(port, &format!("{head}\r\nConnection: close"));
    let host = format!("Host: 127.0.0.1:{port}");
    let page = get(&format!("GET /www/index.html HTTP/1.1\r\n{host}"));
    assert!(page.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(String::from_utf8_lossy(&page).contains("<title>bale inspector</title>"));
    let file = std::fs::read(&s).unwrap();
    let part = get(&format!("GET /files/store.bale HTTP/1.1\r\n{host}\r\nRange: bytes=8-11"));
    let text = String::from_utf8_lossy(&part);
    assert!(text.starts_with("HTTP/1.1 206 Partial Content\r\n"), "{text}");
    assert!(text.contains(&format!("Content-Range: bytes 8-11/{}", file.len())), "{text}");
    assert!(part.ends_with(b"TREE"));
    let head = get(&format!("HEAD /files/store.bale HTTP/1.1\r\n{host}"));
    assert!(String::from_utf8_lossy(&head).contains(&format!("Content-Length: {}\r\n", file.len())));
    assert!(head.ends_with(b"\r\n\r\n"), "HEAD sends no body");
    assert!(get(&format!("GET /etc/passwd HTTP/1.1\r\n{host}")).starts_with(b"HTTP/1.1 404 "));
    assert!(
        get(&format!("GET /files/store.bale HTTP/1.1\r\nHost: rebound.example:{port}")).starts_with(b"HTTP/1.1 403 ")
    );
    assert!(get("GET /www/index.html HTTP/1.1").starts_with(b"HTTP/1.1 403 "));
    assert!(get(&format!("POST /www/index.html HTTP/1.1\r\n{host}")).starts_with(b"HTTP/1.1 405 "));
    child.kill().unwrap();
    child.wait().unwrap();
    // A folder that is no object store is refused.
    let o = run(&["inspect", "--no-open", t.0.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    assert!(String::from_utf8_lossy(&o.stderr).contains("no object store"), "{}", String::from_utf8_lossy(&o.stderr));
    // An object store's folder: its files, and nothing else of the folder.
    let objects = t.0.join("objects");
    let objects = objects.to_str().unwrap();
    ok(&["obj", "init", objects]);
    std::fs::write(t.0.join("objects/notes.txt"), "private").unwrap();
    let (mut child, port) = inspect_server(objects, "/www/index.html?url=/files/objects/");
    let get = |head: &str| http(port, &format!("{head}\r\nHost: 127.0.0.1:{port}\r\nConnection: close"));
    let config = std::fs::read(t.0.join("objects/config")).unwrap();
    let part = get("GET /files/objects/config HTTP/1.1\r\nRange: bytes=0-7");
    assert!(part.starts_with(b"HTTP/1.1 206 Partial Content\r\n"), "{}", String::from_utf8_lossy(&part));
    assert!(part.ends_with(&config[..8]));
    assert!(get("HEAD /files/objects/index HTTP/1.1").starts_with(b"HTTP/1.1 200 OK\r\n"));
    for refused in [
        "/files/objects/notes.txt",
        "/files/objects/lock",
        "/files/objects/../store.bale",
        "/files/objects/packs/0.pack",
    ] {
        assert!(get(&format!("GET {refused} HTTP/1.1")).starts_with(b"HTTP/1.1 404 "), "{refused}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
