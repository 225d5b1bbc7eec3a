//! The Bucket contract on a real S3 server: `make test-remote-s3` runs
//! this file against moto and against s3s-fs (tests/s3/with-server.sh
//! starts them and sets BALE_S3_ENDPOINT, BALE_S3_BUCKET, BALE_S3_SERVER
//! and dummy AWS credentials). Without a server every test fails.

use bale::ErrorKind;
use bale::remote::{
    Bucket, Condition, Fetched, Got, S3Bucket, S3Credentials, S3Location, S3Options, Written, probe_conditional_writes,
};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run these tests through `make test-remote-s3` (tests/s3/with-server.sh)")
    })
}

/// Which server: "moto" or "s3s" (s3s-fs), for what differs between them.
fn server() -> String {
    let s = env("BALE_S3_SERVER");
    assert!(s == "moto" || s == "s3s", "unknown BALE_S3_SERVER {s:?}");
    s
}

fn options() -> S3Options {
    S3Options { endpoint: Some(env("BALE_S3_ENDPOINT")), ..S3Options::default() }
}

/// A location of its own for each test (they share the bucket and run at once).
fn location(test: &str) -> S3Location {
    S3Location::parse(&format!("s3://{}/t/{test}-{:016x}", env("BALE_S3_BUCKET"), rand::random::<u64>())).unwrap()
}

/// The bucket under a fresh prefix, credentials from the environment.
fn bucket(test: &str) -> S3Bucket {
    S3Bucket::open(&location(test), &options()).unwrap()
}

fn done(w: Written) -> String {
    match w {
        Written::Done { etag } => etag,
        Written::Refused => panic!("write refused"),
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn conditional_puts_are_compare_and_swap() {
    let b = bucket("cas");
    let e1 = done(b.put("m", b"one", Condition::IfAbsent).unwrap());
    assert_eq!(b.put("m", b"two", Condition::IfAbsent).unwrap(), Written::Refused);
    assert_eq!(
        b.put("m", b"three", Condition::IfMatch("\"0123456789abcdef0123456789abcdef\"")).unwrap(),
        Written::Refused
    );
    let f = b.get("m", u64::MAX).unwrap().unwrap();
    assert_eq!((f.bytes.as_slice(), f.etag.as_str()), (&b"one"[..], e1.as_str()));

    let e2 = done(b.put("m", b"four", Condition::IfMatch(&e1)).unwrap());
    assert_ne!(e1, e2);
    // The old tag is stale now.
    assert_eq!(b.put("m", b"five", Condition::IfMatch(&e1)).unwrap(), Written::Refused);
    let f = b.get("m", u64::MAX).unwrap().unwrap();
    assert_eq!((f.bytes.as_slice(), f.etag.as_str()), (&b"four"[..], e2.as_str()));

    // If-Match on a key that does not exist is refused, not created.
    assert_eq!(b.put("absent", b"x", Condition::IfMatch(&e2)).unwrap(), Written::Refused);
    assert!(b.get("absent", u64::MAX).unwrap().is_none());

    let e3 = done(b.put("m", b"six", Condition::Overwrite).unwrap());
    assert_eq!(b.get("m", u64::MAX).unwrap().unwrap().etag, e3);
    // After a delete, a create succeeds again.
    b.delete("m").unwrap();
    done(b.put("m", b"seven", Condition::IfAbsent).unwrap());
    assert_eq!(b.get("m", u64::MAX).unwrap().unwrap().bytes, b"seven");
}

#[test]
fn a_missing_object_is_none() {
    let b = bucket("missing");
    assert!(b.get("nothing/here", u64::MAX).unwrap().is_none());
    done(b.put("empty", b"", Condition::IfAbsent).unwrap());
    assert_eq!(b.get("empty", u64::MAX).unwrap().unwrap().bytes, b"");
}

#[test]
fn conditional_reads_say_unchanged_changed_or_missing() {
    let b = bucket("ifnonematch");
    let e1 = done(b.put("m", b"one", Condition::IfAbsent).unwrap());
    assert_eq!(b.get_if_changed("m", 100, &e1).unwrap(), Got::Unchanged);
    let e2 = done(b.put("m", b"two", Condition::IfMatch(&e1)).unwrap());
    let changed = Got::Changed(Fetched { bytes: b"two".to_vec(), etag: e2.clone() });
    assert_eq!(b.get_if_changed("m", 100, &e1).unwrap(), changed);
    assert_eq!(b.get_if_changed("m", 100, &e2).unwrap(), Got::Unchanged);
    assert_eq!(b.get_if_changed("m", 2, &e1).unwrap_err().kind(), ErrorKind::Corrupt);
    assert_eq!(b.get_if_changed("absent", 100, &e1).unwrap(), Got::Missing);
}

#[test]
fn a_whole_read_past_its_limit_is_corrupt() {
    let b = bucket("limit");
    let data = pattern(100_000, 3);
    b.put("big", &data, Condition::Overwrite).unwrap();
    assert_eq!(b.get("big", 100_000).unwrap().unwrap().bytes, data);
    let e = b.get("big", 99_999).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    assert!(e.message().contains("longer than the 99999 bytes"), "{e}");
    assert_eq!(b.get("big", 0).unwrap_err().kind(), ErrorKind::Corrupt);
    assert!(b.get("absent", 0).unwrap().is_none());
}

#[test]
fn ranges_are_exact_and_never_short() {
    let b = bucket("ranges");
    let data = pattern(1000, 7);
    b.put("r", &data, Condition::Overwrite).unwrap();
    assert_eq!(b.get_range("r", 10, 100).unwrap(), &data[10..110]);
    assert_eq!(b.get_range("r", 0, 1000).unwrap(), data);
    assert_eq!(b.get_range("r", 999, 1).unwrap(), &data[999..]);
    assert_eq!(b.get_range("r", 1000, 0).unwrap(), b"");
    for (start, len) in [(990, 20), (1000, 1), (5000, 5), (1001, 0)] {
        let e = b.get_range("r", start, len).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{start}+{len}: {e}");
        assert!(e.message().contains("ends before byte") && e.message().contains("(it has 1000)"), "{e}");
    }
    let e = b.get_range("nope", 0, 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.message().contains(&format!("{}/nope", b.describe())), "{e}");
    assert_eq!(b.get_range("nope", 0, 0).unwrap_err().kind(), ErrorKind::NotFound);
}

#[test]
fn listings_are_by_prefix_in_key_order_with_sizes() {
    let loc = location("list");
    let b = S3Bucket::open(&loc, &options()).unwrap();
    for (key, size) in [("b", 5), ("a/b/3", 3), ("ab", 4), ("a/2", 2), ("a/1", 1)] {
        b.put(key, &pattern(size, 1), Condition::Overwrite).unwrap();
    }
    let keys =
        |prefix: &str| -> Vec<(String, u64)> { b.list(prefix).unwrap().into_iter().map(|l| (l.key, l.size)).collect() };
    let owned = |v: &[(&str, u64)]| v.iter().map(|(k, s)| (k.to_string(), *s)).collect::<Vec<_>>();
    assert_eq!(keys("a/"), owned(&[("a/1", 1), ("a/2", 2), ("a/b/3", 3)]));
    assert_eq!(keys("a"), owned(&[("a/1", 1), ("a/2", 2), ("a/b/3", 3), ("ab", 4)]));
    assert_eq!(keys(""), owned(&[("a/1", 1), ("a/2", 2), ("a/b/3", 3), ("ab", 4), ("b", 5)]));
    assert_eq!(keys("a/b"), owned(&[("a/b/3", 3)]));
    assert_eq!(keys("a/b/"), owned(&[("a/b/3", 3)]));
    assert!(keys("c").is_empty() && keys("a/c/").is_empty());

    // Listings carry the server's modification times (same clock, so
    // within a day of this machine's).
    let now = b.now_ms();
    for l in b.list("").unwrap() {
        assert!((l.modified_ms - now).abs() < 86_400_000, "{l:?} vs {now}");
    }

    // Another prefix of the same bucket sees none of it, and the whole
    // bucket sees it under the full keys.
    assert!(bucket("list").list("").unwrap().is_empty());
    let whole = S3Bucket::open(&S3Location::parse(&format!("s3://{}", loc.bucket())).unwrap(), &options()).unwrap();
    let under = whole.list(&format!("{}/", loc.prefix())).unwrap();
    assert_eq!(under.len(), 5);
    assert_eq!(under[0].key, format!("{}/a/1", loc.prefix()));
}

#[test]
fn keys_with_spaces_and_other_characters_round_trip() {
    let b = bucket("chars");
    let keys = ["sp ace/x", "plus+and%percent", "unicode/é-ü-✓", "q?uery&amp=1"];
    for (i, k) in keys.iter().enumerate() {
        done(b.put(k, &[i as u8], Condition::IfAbsent).unwrap());
        assert_eq!(b.get(k, u64::MAX).unwrap().unwrap().bytes, [i as u8], "{k}");
    }
    let mut sorted = keys.map(String::from).to_vec();
    sorted.sort();
    assert_eq!(b.list("").unwrap().into_iter().map(|l| l.key).collect::<Vec<_>>(), sorted);
    assert_eq!(b.list("unicode/é").unwrap().len(), 1);
}

#[test]
fn deletes_are_idempotent() {
    let b = bucket("delete");
    b.put("d", b"x", Condition::Overwrite).unwrap();
    b.delete("d").unwrap();
    assert!(b.get("d", u64::MAX).unwrap().is_none());
    b.delete("d").unwrap();
    b.delete("never/there").unwrap();
    assert!(b.list("").unwrap().is_empty());
}

#[test]
fn multipart_uploads_join_parts_in_order() {
    let b = bucket("multipart");
    const MIB: usize = 1 << 20;
    let parts = [pattern(5 * MIB, 1), pattern(5 * MIB + 3, 2), pattern(1000, 3)];
    let u = b.start_upload("big").unwrap();
    // Uploaded out of order; joined by part number.
    let t2 = b.upload_part("big", &u, 2, &parts[2]).unwrap();
    let t0 = b.upload_part("big", &u, 0, &parts[0]).unwrap();
    let t1 = b.upload_part("big", &u, 1, &parts[1]).unwrap();
    assert!(b.get("big", u64::MAX).unwrap().is_none(), "visible before it was finished");
    b.finish_upload("big", &u, &[t0, t1, t2]).unwrap();
    let whole = parts.concat();
    let got = b.get("big", u64::MAX).unwrap().unwrap();
    assert_eq!(got.bytes.len(), whole.len());
    assert!(got.bytes == whole, "the joined object differs from its parts");
    assert_eq!(b.get_range("big", 5 * MIB as u64 - 2, 4).unwrap(), &whole[5 * MIB - 2..5 * MIB + 2]);
    let listed = b.list("big").unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].size, whole.len() as u64);
    // A conditional write can follow a multipart object's tag.
    done(b.put("big", b"small", Condition::IfMatch(&got.etag)).unwrap());
}

#[test]
fn an_aborted_upload_leaves_nothing() {
    let b = bucket("abort");
    let u = b.start_upload("gone").unwrap();
    b.upload_part("gone", &u, 0, &pattern(1000, 9)).unwrap();
    b.abort_upload("gone", &u).unwrap();
    assert!(b.get("gone", u64::MAX).unwrap().is_none());
    assert!(b.list("").unwrap().is_empty());
    // Aborting again: S3 and moto say NoSuchUpload (404), which is no
    // error; s3s-fs says AccessDenied (403), which cannot be told from a
    // real denial.
    match b.abort_upload("gone", &u) {
        Ok(()) => assert_eq!(server(), "moto"),
        Err(e) => {
            assert_eq!(server(), "s3s", "{e}");
            assert_eq!(e.kind(), ErrorKind::Io);
            assert!(e.message().contains("was denied"), "{e}");
        }
    }
    // Finishing the aborted upload.
    assert!(b.finish_upload("gone", &u, &["\"x\"".to_string()]).is_err());
    assert!(b.get("gone", u64::MAX).unwrap().is_none());
}

#[test]
fn eight_threads_share_one_bucket() {
    let b = bucket("threads");
    std::thread::scope(|s| {
        for t in 0..8u8 {
            let b = &b;
            s.spawn(move || {
                for i in 0..10u8 {
                    let key = format!("t{t}/k{i}");
                    let data = pattern(100 + usize::from(i), t);
                    let e = done(b.put(&key, &data, Condition::IfAbsent).unwrap());
                    assert_eq!(b.get(&key, u64::MAX).unwrap().unwrap().bytes, data);
                    assert_eq!(b.get_range(&key, 5, 50).unwrap(), &data[5..55]);
                    done(b.put(&key, &data[..10], Condition::IfMatch(&e)).unwrap());
                }
                assert_eq!(b.list(&format!("t{t}/")).unwrap().len(), 10);
            });
        }
    });
    let all = b.list("").unwrap();
    assert_eq!(all.len(), 80);
    assert!(all.iter().all(|l| l.size == 10));
}

#[test]
fn the_probe_passes_on_moto_and_refuses_s3s_fs() {
    let b = bucket("probe");
    let result = probe_conditional_writes(&b);
    if server() == "moto" {
        result.unwrap();
    } else {
        // s3s-fs checks If-None-Match and If-Match one request at a time
        // but not atomically: of eight simultaneous conditional writes,
        // several succeed (in 39 of 40 rounds of creates and 40 of 40 of
        // replacements when measured), and the probe races three rounds.
        let e = result.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        assert!(e.message().contains("simultaneous") && e.message().contains("not atomically"), "{e}");
    }
    assert!(b.list("").unwrap().is_empty(), "the probe left its keys");
}

#[test]
fn credentials_stay_out_of_messages_and_debug_output() {
    let (key_id, secret) = (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"));
    let b = bucket("secrets");
    let shown = format!("{b:?}");
    assert!(shown.contains("S3Bucket") && shown.contains(&b.describe()), "{shown}");
    assert!(!shown.contains(&key_id) && !shown.contains(&secret), "{shown}");

    // A wrong secret: s3s-fs checks signatures and denies, moto does not check.
    let wrong = S3Credentials::new(key_id.clone(), "not-the-secret", None);
    assert!(!format!("{wrong:?}").contains("not-the-secret"));
    let bad = S3Bucket::open_with(&location("secrets"), &options(), Some(wrong)).unwrap();
    let unsigned = S3Bucket::open_with(&location("secrets"), &options(), None).unwrap();
    if server() == "s3s" {
        for b in [&bad, &unsigned] {
            let e = b.put("k", b"x", Condition::IfAbsent).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Io, "{e}");
            assert!(e.message().contains(&format!("{}/k", b.describe())), "{e}");
            assert!(e.message().contains("check the credentials"), "{e}");
            assert!(!e.message().contains(&key_id) && !e.message().contains("not-the-secret"), "{e}");
        }
    } else {
        done(bad.put("k", b"x", Condition::IfAbsent).unwrap());
        done(unsigned.put("k2", b"x", Condition::IfAbsent).unwrap());
    }
}

#[test]
fn a_missing_bucket_is_an_error_not_an_empty_remote() {
    let loc = S3Location::parse(&format!("s3://bale-missing-{:016x}/p", rand::random::<u64>())).unwrap();
    let b = S3Bucket::open(&loc, &options()).unwrap();
    let missing = |e: bale::Error| {
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        assert!(e.message().contains(&format!("the bucket {} does not exist", loc.bucket())), "{e}");
    };
    if server() == "moto" {
        missing(b.get("k", u64::MAX).unwrap_err());
        missing(b.list("").unwrap_err());
        missing(b.put("k", b"x", Condition::IfAbsent).unwrap_err());
        missing(b.start_upload("k").unwrap_err());
    } else {
        // s3s-fs answers a missing bucket as S3 does only for listings;
        // a GET says NoSuchKey, and a PUT creates the bucket's folder.
        missing(b.list("").unwrap_err());
        assert!(b.get("k", u64::MAX).unwrap().is_none());
        done(b.put("k", b"x", Condition::IfAbsent).unwrap());
        assert_eq!(b.get("k", u64::MAX).unwrap().unwrap().bytes, b"x");
    }
}
