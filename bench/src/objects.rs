//! Object store workloads (the peers' W4 and W5, and the scale run), each
//! printing one JSON line.
//!
//! - `obj-w4 DATA WORK`: the 100,000 objects of objs.bin (sizes 0..1000 B)
//!   added with one `add_many` (durable on return) and packed; then one
//!   bulk read in a shuffled order (`get_many_in_disk_order`) and 100,000
//!   single `get`s in that order.
//! - `obj-w5 FILE WORK`: FILE added with `add_path` (durable on return),
//!   then a copy with 1 MiB changed in the middle, then read back whole.
//! - `obj-scale N WORK`: N files of 1 KiB written to a directory, then
//!   synced to disk and dropped from the page cache (when root), read once
//!   by a plain walk (the baseline), dropped again, then added with
//!   `add_tree`; reports wall and CPU time per file of both and the
//!   store's files.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use bale::objects::{AddTreeOptions, ObjectOptions, ObjectStore};

use crate::{cpu_s, dir_size, reset_peak_rss, secs, status_kb};

fn load_objects(data: &Path) -> Vec<Vec<u8>> {
    let raw = fs::read(data.join("objs.bin")).unwrap_or_else(|e| crate::die(&format!("objs.bin: {e}")));
    let n = u32::from_le_bytes(raw[0..4].try_into().unwrap()) as usize;
    let mut off = 4 + 2 * n;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let s = u16::from_le_bytes(raw[4 + 2 * i..6 + 2 * i].try_into().unwrap()) as usize;
        out.push(raw[off..off + s].to_vec());
        off += s;
    }
    out
}

/// A fixed shuffle (xorshift), the same every run.
fn shuffled<T: Copy>(v: &[T]) -> Vec<T> {
    let mut out = v.to_vec();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in (1..out.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.swap(i, (x % (i as u64 + 1)) as usize);
    }
    out
}

pub fn w4(data: &Path, work: &Path) {
    let objs = load_objects(data);
    let total: usize = objs.iter().map(Vec::len).sum();
    let _ = fs::remove_dir_all(work);
    let path = work.join("store");
    let t = Instant::now();
    let s = ObjectStore::open(&path, ObjectOptions::create()).unwrap();
    let ids = s.add_many(objs.iter().map(Vec::as_slice)).unwrap();
    let add_s = secs(t);
    let t = Instant::now();
    let packed = s.pack().unwrap();
    let pack_s = secs(t);
    let write_s = add_s + pack_s;
    let (disk, alloc) = dir_size(&path);
    let files =
        fs::read_dir(path.join("packs")).unwrap().count() + fs::read_dir(path.join("staging")).unwrap().count() + 3;
    let order = shuffled(&ids);
    let t = Instant::now();
    let got = s.get_many_in_disk_order(&order).unwrap();
    let mut bulk_bytes = 0;
    for (_, v) in &got {
        bulk_bytes += v.as_ref().unwrap().len();
    }
    let bulk_s = secs(t);
    let t = Instant::now();
    let mut single_bytes = 0;
    for id in &order {
        single_bytes += s.get(id).unwrap().len();
    }
    let single_s = secs(t);
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(got.len(), unique.len());
    assert_eq!(single_bytes, total);
    println!(
        "{{\"engine\":\"bale-rust\",\"workload\":\"w4\",\"objects\":{},\"unique\":{},\"bytes\":{total},\"add_s\":{add_s:.4},\"pack_s\":{pack_s:.4},\"write_s\":{write_s:.4},\"records_packed\":{},\"disk_bytes\":{disk},\"disk_alloc_bytes\":{alloc},\"files\":{files},\"read_bulk_s\":{bulk_s:.4},\"bulk_bytes\":{bulk_bytes},\"read_single_s\":{single_s:.4}}}",
        objs.len(),
        unique.len(),
        packed.records_moved
    );
    drop(s);
    let _ = fs::remove_dir_all(work);
}

pub fn w5(file: &Path, work: &Path) {
    let _ = fs::remove_dir_all(work);
    let path = work.join("store");
    let len = fs::metadata(file).unwrap().len();
    let can_reset = reset_peak_rss();
    let base = status_kb("VmRSS");
    let t = Instant::now();
    let s = ObjectStore::open(&path, ObjectOptions::create()).unwrap();
    let id = s.add_path(file).unwrap();
    let add_s = secs(t);
    let add_peak = status_kb("VmHWM");
    let before = s.stats().unwrap();

    // A second version: 1 MiB changed in the middle.
    let copy = work.join("v2.bin");
    fs::copy(file, &copy).unwrap();
    {
        use std::os::unix::fs::FileExt;
        let f = fs::OpenOptions::new().write(true).open(&copy).unwrap();
        let patch: Vec<u8> = (0..1u32 << 20).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
        f.write_all_at(&patch, len / 2).unwrap();
    }
    let t = Instant::now();
    let id2 = s.add_path(&copy).unwrap();
    let readd_s = secs(t);
    let after = s.stats().unwrap();
    fs::remove_file(&copy).unwrap();

    let t = Instant::now();
    let mut r = s.reader(&id).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = r.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        n += k as u64;
    }
    let read_s = secs(t);
    assert_eq!(n, len);
    assert_ne!(id, id2);
    let peak = if can_reset { add_peak.saturating_sub(0) } else { add_peak };
    println!(
        "{{\"engine\":\"bale-rust\",\"workload\":\"w5\",\"bytes\":{len},\"add_s\":{add_s:.4},\"add_mb_s\":{:.0},\"peak_rss_kb\":{peak},\"base_rss_kb\":{base},\"chunks\":{},\"readd_s\":{readd_s:.4},\"readd_new_bytes\":{},\"read_s\":{read_s:.4},\"read_mb_s\":{:.0}}}",
        len as f64 / 1e6 / add_s,
        before.chunks,
        after.stored_bytes - before.stored_bytes,
        len as f64 / 1e6 / read_s
    );
    drop(s);
    let _ = fs::remove_dir_all(work);
}

/// Writes dirty pages out and, where allowed (root), drops the page cache,
/// so that every size starts from the disk: otherwise how much of the tree
/// is still cached depends on its size and on the machine's reclaim (this
/// VM reclaims cold page cache on its own). Returns whether it dropped.
fn cold_cache() -> bool {
    std::process::Command::new("sync").status().unwrap();
    fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// Reads every file below `dir` in the order `add_tree` does; returns
/// how many.
fn walk_and_read(dir: &Path) -> usize {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
    entries.sort_by_key(|e| e.file_name());
    let mut n = 0;
    let mut buf = Vec::new();
    for e in entries {
        if e.file_type().unwrap().is_dir() {
            n += walk_and_read(&e.path());
        } else {
            buf.clear();
            fs::File::open(e.path()).unwrap().read_to_end(&mut buf).unwrap();
            n += 1;
        }
    }
    n
}

pub fn scale(n: usize, work: &Path) {
    let _ = fs::remove_dir_all(work);
    let src = work.join("files");
    for i in 0..n {
        let d = src.join(format!("{:03}", i % 1000));
        if i < 1000 {
            fs::create_dir_all(&d).unwrap();
        }
        let mut content = format!("file {i} ").into_bytes();
        content.resize(1024, b'a' + (i % 26) as u8);
        fs::write(d.join(format!("{i}.txt")), &content).unwrap();
    }
    // The baseline: the same walk reading every file, storing nothing.
    let cold = cold_cache();
    let (t, cpu) = (Instant::now(), cpu_s());
    let walked = walk_and_read(&src);
    let (walk_s, walk_cpu) = (secs(t), cpu_s() - cpu);
    assert_eq!(walked, n);
    cold_cache();
    let path = work.join("store");
    let (t, cpu) = (Instant::now(), cpu_s());
    let s = ObjectStore::open(&path, ObjectOptions::create()).unwrap();
    let r = s.add_tree(&src, &AddTreeOptions::default(), None, &mut |_, _| {}).unwrap();
    let add_s = secs(t);
    let add_cpu = cpu_s() - cpu;
    let t = Instant::now();
    s.pack().unwrap();
    let pack_s = secs(t);
    let count = |p: &Path| fs::read_dir(p).map(|d| d.count()).unwrap_or(0);
    let store_files = count(&path.join("packs")) + count(&path.join("staging")) + 3;
    let (disk, _) = dir_size(&path);
    println!(
        "{{\"engine\":\"bale-rust\",\"workload\":\"scale\",\"files\":{},\"add_s\":{add_s:.4},\"us_per_file\":{:.2},\"cpu_us_per_file\":{:.2},\"walk_us_per_file\":{:.2},\"walk_cpu_us_per_file\":{:.2},\"cold\":{cold},\"pack_s\":{pack_s:.4},\"store_files\":{store_files},\"store_bytes\":{disk}}}",
        r.files,
        add_s * 1e6 / r.files as f64,
        add_cpu * 1e6 / r.files as f64,
        walk_s * 1e6 / n as f64,
        walk_cpu * 1e6 / n as f64
    );
    drop(s);
    let _ = fs::remove_dir_all(work);
}
