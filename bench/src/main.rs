//! Peer benchmark for bale.
//!
//! usage:
//!   bale-bench kv <engine> DATA WORK     engine: bale | heed | redb | rusqlite | rusqlite-tuned
//!   bale-bench bigvalue WORK [--gib N] [--no-mmap]
//!   bale-bench percall-build DATA WORK [--gib N]
//!   bale-bench percall <engine> DATA STORE [--passes P]   engine: bale | bale-get | heed | redb
//!   bale-bench obj-w4 DATA WORK | obj-w5 FILE WORK | obj-scale N WORK   (see objects.rs)
//!
//! `kv` runs the W1-W3 workloads of the peer contract on the data that
//! `gen_data.py` writes (kv.bin: N x (16 B key + 100 B value); order.bin:
//! N x u32 LE, the W2 read order) and prints one JSON line:
//!
//! - W1: create/open -> N inserts in kv.bin order in one write transaction
//!   -> commit with the engine's default durable sync -> close.
//! - W2: reopen in the same process, N gets in order.bin order inside one
//!   read transaction, touching each value (first byte + length).
//! - W3: full ordered scan in the same read transaction, each value touched.
//!
//! The checksum is the sum of `value[0] + len(value)` over W2 and W3; it is
//! 455102678 for the default 1M data set, for every engine.
//!
//! `bigvalue` streams one large generated value (default 4 GiB) into a bale
//! store with `put_stream` + `commit`, reads it back with `ValueRef::reader`,
//! checks both sides' xxh3 digests agree, and prints throughput and the
//! process's peak resident memory for each direction.
use std::fs;
use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::exit;
use std::time::Instant;

mod bitable;
mod objects;

const KL: usize = 16;
const VL: usize = 100;
const RL: usize = KL + VL;

struct Data {
    buf: Vec<u8>,
    order: Vec<u32>,
    n: usize,
}

impl Data {
    fn load(dir: &Path) -> Data {
        let buf = fs::read(dir.join("kv.bin")).unwrap_or_else(|e| die(&format!("kv.bin: {e}")));
        let ob = fs::read(dir.join("order.bin")).unwrap_or_else(|e| die(&format!("order.bin: {e}")));
        let order: Vec<u32> = ob.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let n = buf.len() / RL;
        assert_eq!(buf.len(), n * RL, "kv.bin is not a whole number of records");
        assert_eq!(order.len(), n, "order.bin does not match kv.bin");
        Data { buf, order, n }
    }
    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        &self.buf[i * RL..i * RL + KL]
    }
    #[inline]
    fn val(&self, i: usize) -> &[u8] {
        &self.buf[i * RL + KL..(i + 1) * RL]
    }
}

fn die(msg: &str) -> ! {
    eprintln!("bale-bench: {msg}");
    exit(2)
}

/// (apparent bytes, allocated bytes) of a file or directory tree.
fn dir_size(p: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(p).unwrap();
    if m.is_file() {
        return (m.len(), m.blocks() * 512);
    }
    let (mut a, mut b) = (0, 0);
    for e in fs::read_dir(p).unwrap() {
        let (x, y) = dir_size(&e.unwrap().path());
        a += x;
        b += y;
    }
    (a, b)
}

/// A field of /proc/self/status in KiB (VmHWM, VmRSS, RssAnon, RssFile).
fn status_kb(field: &str) -> u64 {
    let s = fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| {
            let rest = l.strip_prefix(field)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(0)
}

/// User plus system CPU seconds of this process so far (all threads), from
/// /proc/self/stat in clock ticks of 1/100 s (the usual USER_HZ).
fn cpu_s() -> f64 {
    let s = fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name, which ends with the last ')'.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after ')'.
    (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / 100.0
}

/// Resets VmHWM to the current RSS (Linux >= 4.0), so phases can be measured
/// apart. Returns whether it worked.
fn reset_peak_rss() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

struct Res {
    w1: f64,
    w2: f64,
    w3: f64,
    scanned: usize,
    checksum: u64,
    /// Peak resident set at the end of W1 (KiB), input data included.
    w1_peak_kb: u64,
    /// Extra JSON fields (without braces), engine specific.
    extra: String,
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

#[inline]
fn touch(cs: u64, v: &[u8]) -> u64 {
    cs.wrapping_add(v[0] as u64 + v.len() as u64)
}

fn run_bale(d: &Data, dir: &Path) -> Res {
    use bale::{Options, ReadOps, Store};
    let path = dir.join("kv.bale");
    let t = Instant::now();
    {
        let store = Store::open(&path, Options::create()).unwrap();
        let mut w = store.write().unwrap();
        for i in 0..d.n {
            w.put(d.key(i), d.val(i)).unwrap();
        }
        w.commit().unwrap(); // durable: fsync before and after the meta page
    }
    let w1 = secs(t);
    let w1_peak_kb = status_kb("VmHWM");
    let store = Store::open(&path, Options::default()).unwrap();
    let r = store.read().unwrap();
    let t = Instant::now();
    let mut cs = 0u64;
    for &i in &d.order {
        let v = r.get(d.key(i as usize)).unwrap().unwrap();
        cs = touch(cs, v.as_inline().unwrap());
    }
    let w2 = secs(t);
    let t = Instant::now();
    let mut cnt = 0;
    let mut it = r.iter();
    while let Some(e) = it.next_entry() {
        let (k, v) = e.unwrap();
        cnt += 1;
        black_box(k);
        cs = touch(cs, v.as_inline().unwrap());
    }
    let w3 = secs(t);
    drop(it);
    drop(r);
    let s = bale::btree::stat(&store).unwrap();
    let extra = format!(
        "\"bale_stat\":{{\"page_size\":{},\"file_pages\":{},\"depth\":{},\"leaf_pages\":{},\"branch_pages\":{},\"fill\":{:.4},\"free_pages\":{}}}",
        s.page_size, s.file_pages, s.depth, s.leaf_pages, s.branch_pages, s.fill, s.free_pages
    );
    Res { w1, w2, w3, scanned: cnt, checksum: cs, w1_peak_kb, extra }
}

const RTABLE: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("kv");

fn run_redb(d: &Data, dir: &Path) -> Res {
    use redb::{ReadableDatabase, ReadableTable};
    let path = dir.join("redb.db");
    let t = Instant::now();
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut tb = txn.open_table(RTABLE).unwrap();
            for i in 0..d.n {
                tb.insert(d.key(i), d.val(i)).unwrap();
            }
        }
        txn.commit().unwrap(); // default durability: Immediate (fsync)
    }
    let w1 = secs(t);
    let w1_peak_kb = status_kb("VmHWM");
    let db = redb::Database::create(&path).unwrap();
    let rtx = db.begin_read().unwrap();
    let tb = rtx.open_table(RTABLE).unwrap();
    let t = Instant::now();
    let mut cs = 0u64;
    for &i in &d.order {
        let g = tb.get(d.key(i as usize)).unwrap().unwrap();
        cs = touch(cs, g.value());
    }
    let w2 = secs(t);
    let t = Instant::now();
    let mut cnt = 0;
    for r in tb.iter().unwrap() {
        let (k, v) = r.unwrap();
        cnt += 1;
        black_box(k.value());
        cs = touch(cs, v.value());
    }
    let w3 = secs(t);
    Res { w1, w2, w3, scanned: cnt, checksum: cs, w1_peak_kb, extra: String::new() }
}

fn run_heed(d: &Data, dir: &Path) -> Res {
    use heed::types::Bytes;
    use heed::{CommitOrAbort, Database, EnvOpenOptions};
    let path = dir.join("lmdb");
    fs::create_dir_all(&path).unwrap();
    // SAFETY: the environment is opened once per process phase and nothing
    // else maps the file.
    let open = || unsafe { EnvOpenOptions::new().map_size(4 << 30).open(&path).unwrap() };
    let t = Instant::now();
    {
        let env = open();
        let wtxn = env.write_txn().unwrap();
        let db: Database<Bytes, Bytes> = env
            .create_databases_and_commit(wtxn, |wdo, wtxn| {
                let db: Database<Bytes, Bytes> = wdo.create_database(wtxn, None)?;
                heed::Result::Ok(CommitOrAbort::<_, ()>::Commit(db))
            })
            .unwrap()
            .unwrap_commit();
        let mut wtxn = env.write_txn().unwrap();
        for i in 0..d.n {
            db.put(&mut wtxn, d.key(i), d.val(i)).unwrap();
        }
        wtxn.commit().unwrap(); // LMDB default: fsync on commit
        env.prepare_for_closing().wait();
    }
    let w1 = secs(t);
    let w1_peak_kb = status_kb("VmHWM");
    let env = open();
    let rtxn = env.read_txn().unwrap();
    let db: Database<Bytes, Bytes> = env
        .open_databases_and_commit(rtxn, |dbo, rtxn| {
            let db: Option<Database<Bytes, Bytes>> = dbo.open_database(rtxn, None)?;
            heed::Result::Ok(CommitOrAbort::<_, ()>::Commit(db.unwrap()))
        })
        .unwrap()
        .unwrap_commit();
    let rtxn = env.read_txn().unwrap();
    let t = Instant::now();
    let mut cs = 0u64;
    for &i in &d.order {
        let v = db.get(&rtxn, d.key(i as usize)).unwrap().unwrap();
        cs = touch(cs, v);
    }
    let w2 = secs(t);
    let t = Instant::now();
    let mut cnt = 0;
    for r in db.iter(&rtxn).unwrap() {
        let (k, v) = r.unwrap();
        cnt += 1;
        black_box(k);
        cs = touch(cs, v);
    }
    let w3 = secs(t);
    Res { w1, w2, w3, scanned: cnt, checksum: cs, w1_peak_kb, extra: String::new() }
}

fn run_rusqlite(d: &Data, dir: &Path, tuned: bool) -> Res {
    use rusqlite::Connection;
    let path = dir.join("sqlite.db");
    let pragmas =
        if tuned { "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-1048576;" } else { "" };
    let t = Instant::now();
    {
        let mut c = Connection::open(&path).unwrap();
        c.execute_batch(pragmas).unwrap();
        c.execute_batch("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID").unwrap();
        let tx = c.transaction().unwrap();
        {
            let mut st = tx.prepare("INSERT INTO kv (k, v) VALUES (?1, ?2)").unwrap();
            for i in 0..d.n {
                st.execute((d.key(i), d.val(i))).unwrap();
            }
        }
        tx.commit().unwrap();
        if tuned {
            c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);").unwrap();
        }
        c.close().unwrap();
    }
    let w1 = secs(t);
    let w1_peak_kb = status_kb("VmHWM");
    let c = Connection::open(&path).unwrap();
    c.execute_batch(pragmas).unwrap();
    let mut st = c.prepare("SELECT v FROM kv WHERE k = ?1").unwrap();
    c.execute_batch("BEGIN").unwrap(); // all reads in one read transaction
    let t = Instant::now();
    let mut cs = 0u64;
    for &i in &d.order {
        let mut rows = st.query([d.key(i as usize)]).unwrap();
        let row = rows.next().unwrap().unwrap();
        cs = touch(cs, row.get_ref(0).unwrap().as_blob().unwrap());
    }
    let w2 = secs(t);
    let mut st = c.prepare("SELECT k, v FROM kv ORDER BY k").unwrap();
    let t = Instant::now();
    let mut cnt = 0;
    let mut rows = st.query([]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let k = row.get_ref(0).unwrap().as_blob().unwrap();
        let v = row.get_ref(1).unwrap().as_blob().unwrap();
        cnt += 1;
        black_box(k);
        cs = touch(cs, v);
    }
    let w3 = secs(t);
    drop(rows);
    drop(st);
    c.execute_batch("COMMIT").unwrap();
    Res { w1, w2, w3, scanned: cnt, checksum: cs, w1_peak_kb, extra: String::new() }
}

fn kv(engine: &str, data: &Path, work: &Path) {
    let d = Data::load(data);
    let _ = fs::remove_dir_all(work);
    fs::create_dir_all(work).unwrap();
    let r = match engine {
        "bale" => run_bale(&d, work),
        "heed" => run_heed(&d, work),
        "redb" => run_redb(&d, work),
        "rusqlite" => run_rusqlite(&d, work, false),
        "rusqlite-tuned" => run_rusqlite(&d, work, true),
        _ => die(&format!("unknown engine {engine:?} (bale, heed, redb, rusqlite, rusqlite-tuned)")),
    };
    // Measured after the read phase: all engines are closed or idle, and
    // no engine changes the file on reads.
    let (app, alloc) = dir_size(work);
    assert_eq!(r.scanned, d.n, "scan count mismatch");
    let extra = if r.extra.is_empty() { String::new() } else { format!(",{}", r.extra) };
    println!(
        "{{\"bench\":\"kv\",\"peer\":\"{}\",\"n\":{},\"w1_s\":{:.6},\"file_bytes\":{},\"file_alloc_bytes\":{},\"w2_s\":{:.6},\"w3_s\":{:.6},\"checksum\":{},\"w1_peak_rss_kb\":{},\"peak_rss_kb\":{}{}}}",
        engine,
        d.n,
        r.w1,
        app,
        alloc,
        r.w2,
        r.w3,
        r.checksum,
        r.w1_peak_kb,
        status_kb("VmHWM"),
        extra
    );
    let _ = fs::remove_dir_all(work);
}

// ---------------------------------------------------------------------------
// Per-call reads: a fresh snapshot (read transaction) for every get.
//
// `percall-build` makes, once, the stores every host's per-call benchmark
// reads (bench/python/percall_bench.py and bench/node/percall_bench.mjs open
// the same files):
//
//   WORK/small/kv.bale, WORK/small/lmdb/, WORK/small/redb.db
//       the N records of DATA/kv.bin (16 B keys, 100 B values)
//   WORK/large/kv.bale, WORK/large/lmdb/
//       the same N records plus one value of N GiB of incompressible
//       pseudo-random bytes under the key `~large`, streamed in (bale:
//       `put_stream`; LMDB: `put_reserved` into a write map), so the file
//       has a very large page count while the keys read stay the same
//
// and writes WORK/stores.jsonl (one line per store: bytes and page count).
// A stamp file makes reruns reuse the stores while N, the size and the bale
// format version stay the same.
//
// `percall` then, in one process: opens STORE, reads all N keys once in
// order.bin order (warm-up: page cache and code), then times P passes of the
// same N gets, each get in its own snapshot that is dropped right after, and
// prints one JSON line with every pass's time.
// ---------------------------------------------------------------------------

const LARGE_KEY: &[u8] = b"~large";

fn percall_stamp(n: usize, gib: f64) -> String {
    format!("n={n} gib={gib} bale_format={} lmdb=unnamed-main-db\n", bale::btree::FORMAT_VERSION)
}

fn heed_env(path: &Path, map_size: usize, write_map: bool) -> heed::Env {
    use heed::{EnvFlags, EnvOpenOptions};
    fs::create_dir_all(path).unwrap();
    let mut o = EnvOpenOptions::new();
    o.map_size(map_size).max_readers(126);
    if write_map {
        // SAFETY: only this process opens the environment while it is built.
        unsafe { o.flags(EnvFlags::WRITE_MAP) };
    }
    // SAFETY: the environment is opened once per process.
    unsafe { o.open(path).unwrap() }
}

/// Map size for an LMDB environment holding `data` bytes: room to spare.
/// The unnamed database of a fresh environment, created and committed.
fn heed_create_db(env: &heed::Env) -> heed::Database<'_, heed::types::Bytes, heed::types::Bytes> {
    use heed::Database;
    use heed::types::Bytes;
    let wtxn = env.write_txn().unwrap();
    env.create_databases_and_commit(wtxn, |wdo, wtxn| {
        let db: Database<Bytes, Bytes> = wdo.create_database(wtxn, None)?;
        heed::Result::Ok(heed::CommitOrAbort::<_, ()>::Commit(db))
    })
    .unwrap()
    .unwrap_commit()
}

fn lmdb_map_size(data: u64) -> usize {
    (data + (1 << 30)).next_multiple_of(1 << 30) as usize
}

fn build_bale(d: &Data, path: &Path, large: u64) {
    use bale::{Options, Store};
    let _ = fs::remove_file(path);
    let store = Store::open(path, Options::create()).unwrap();
    let mut w = store.write().unwrap();
    for i in 0..d.n {
        w.put(d.key(i), d.val(i)).unwrap();
    }
    if large > 0 {
        let mut src = GenReader::incompressible(large, 0x1a7e_5eed);
        assert_eq!(w.put_stream(LARGE_KEY, &mut src).unwrap(), large);
    }
    w.commit().unwrap();
}

fn build_heed(d: &Data, path: &Path, large: u64) {
    use std::io::Write;
    let _ = fs::remove_dir_all(path);
    // A write map, so the large value goes straight into the file instead
    // of into LMDB's in-memory dirty pages.
    let env = heed_env(path, lmdb_map_size(large + (d.n * RL * 3) as u64), large > 0);
    let db = heed_create_db(&env);
    let mut wtxn = env.write_txn().unwrap();
    for i in 0..d.n {
        db.put(&mut wtxn, d.key(i), d.val(i)).unwrap();
    }
    // LMDB caps a value at 4 GiB - 1: the large content goes in as 1 GiB
    // values `~large/000`, `~large/001`, ... (one generated stream).
    let mut src = GenReader::incompressible(large, 0x1a7e_5eed);
    let mut buf = vec![0u8; 1 << 20];
    let mut left = large;
    let mut part = 0;
    while left > 0 {
        let len = left.min(1 << 30);
        let key = format!("~large/{part:03}");
        db.put_reserved(&mut wtxn, key.as_bytes(), len as usize, |space| {
            let mut todo = len as usize;
            while todo > 0 {
                let k = src.read(&mut buf[..todo.min(1 << 20)])?;
                space.write_all(&buf[..k])?;
                todo -= k;
            }
            Ok(())
        })
        .unwrap();
        left -= len;
        part += 1;
    }
    wtxn.commit().unwrap();
    env.prepare_for_closing().wait();
}

fn build_redb(d: &Data, path: &Path) {
    let _ = fs::remove_file(path);
    let db = redb::Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut tb = txn.open_table(RTABLE).unwrap();
        for i in 0..d.n {
            tb.insert(d.key(i), d.val(i)).unwrap();
        }
    }
    txn.commit().unwrap();
}

fn bale_pages(path: &Path) -> u64 {
    let store = bale::Store::open(path, bale::Options { readonly: true, ..bale::Options::default() }).unwrap();
    bale::btree::stat(&store).unwrap().file_pages
}

fn percall_build(data: &Path, work: &Path, gib: f64) {
    let d = Data::load(data);
    let large = (gib * (1u64 << 30) as f64) as u64;
    let stamp = percall_stamp(d.n, gib);
    for s in ["small", "large"] {
        fs::create_dir_all(work.join(s)).unwrap();
    }
    // Each store file has a stamp next to it: a rerun rebuilds only what is
    // missing or was built with other settings.
    // Builds `p` unless it is fresh; the seconds that took.
    let ensure = |p: &Path, build: &dyn Fn(&Path)| {
        let t = Instant::now();
        let sp = PathBuf::from(format!("{}.stamp", p.display()));
        if !(p.exists() && fs::read_to_string(&sp).ok().as_deref() == Some(stamp.as_str())) {
            eprintln!("== building {}", p.display());
            build(p);
            fs::write(&sp, &stamp).unwrap();
        }
        secs(t)
    };
    let list = work.join("stores.jsonl");
    let mut lines = String::new();
    let mut note = |store: &str, engine: &str, p: &Path, secs: f64, pages: Option<u64>| {
        let (app, alloc) = dir_size(p);
        let pages = pages.map(|n| format!(",\"file_pages\":{n}")).unwrap_or_default();
        let l = format!(
            "{{\"bench\":\"percall-store\",\"store\":\"{store}\",\"engine\":\"{engine}\",\"n\":{},\"large_value_bytes\":{},\"file_bytes\":{app},\"file_alloc_bytes\":{alloc}{pages},\"build_s\":{secs:.1}}}\n",
            d.n,
            if store == "large" { large } else { 0 },
        );
        eprint!("{l}");
        lines.push_str(&l);
    };
    for (store, big) in [("small", 0), ("large", large)] {
        let dir = work.join(store);
        let p = dir.join("kv.bale");
        let s = ensure(&p, &|p| build_bale(&d, p, big));
        note(store, "bale", &p, s, Some(bale_pages(&p)));
        let p = dir.join("lmdb");
        let s = ensure(&p, &|p| build_heed(&d, p, big));
        // LMDB's page count: its last used page + 1 (the data file itself
        // is as long as the map size when built with a write map).
        let pages = {
            let env = heed_env(&p, 0, false);
            let n = env.info().last_page_number as u64 + 1;
            env.prepare_for_closing().wait();
            n
        };
        note(store, "lmdb", &p, s, Some(pages));
        if big == 0 {
            let p = dir.join("redb.db");
            let s = ensure(&p, &|p| build_redb(&d, p));
            note(store, "redb", &p, s, None);
        }
    }
    fs::write(&list, &lines).unwrap();
    print!("{lines}");
}

fn percall(engine: &str, data: &Path, store: &Path, passes: usize) {
    let d = Data::load(data);
    let keys: Vec<&[u8]> = d.order.iter().map(|&i| d.key(i as usize)).collect();
    // One pass of N per-call gets; returns (seconds, checksum).
    let mut pass: Box<dyn FnMut() -> (f64, u64)> = match engine {
        "bale" | "bale-get" => {
            use bale::{Options, ReadOps, Store};
            let s = Store::open(store.join("kv.bale"), Options { readonly: true, ..Options::default() }).unwrap();
            let copy = engine == "bale-get";
            let keys = keys.clone();
            Box::new(move || {
                let t = Instant::now();
                let mut cs = 0u64;
                if copy {
                    // The convenience: its own snapshot, the value copied out.
                    for k in &keys {
                        let v = s.get(k).unwrap().unwrap();
                        cs = touch(cs, &v);
                    }
                } else {
                    for k in &keys {
                        let r = s.read().unwrap();
                        let v = r.get(k).unwrap().unwrap();
                        cs = touch(cs, v.as_inline().unwrap());
                    }
                }
                (secs(t), cs)
            })
        }
        "heed" => {
            use heed::Database;
            use heed::types::Bytes;
            let env = heed_env(&store.join("lmdb"), 0, false);
            let rtxn = env.read_txn().unwrap();
            let db: Database<Bytes, Bytes> = env
                .open_databases_and_commit(rtxn, |dbo, rtxn| {
                    let db: Option<Database<Bytes, Bytes>> = dbo.open_database(rtxn, None)?;
                    heed::Result::Ok(heed::CommitOrAbort::<_, ()>::Commit(db.unwrap()))
                })
                .unwrap()
                .unwrap_commit();
            let keys = keys.clone();
            Box::new(move || {
                let t = Instant::now();
                let mut cs = 0u64;
                for k in &keys {
                    let r = env.read_txn().unwrap();
                    let v = db.get(&r, k).unwrap().unwrap();
                    cs = touch(cs, v);
                }
                (secs(t), cs)
            })
        }
        "redb" => {
            use redb::ReadableDatabase;
            let db = redb::Database::open(store.join("redb.db")).unwrap();
            let keys = keys.clone();
            Box::new(move || {
                let t = Instant::now();
                let mut cs = 0u64;
                for k in &keys {
                    let r = db.begin_read().unwrap();
                    let tb = r.open_table(RTABLE).unwrap();
                    let g = tb.get(*k).unwrap().unwrap();
                    cs = touch(cs, g.value());
                }
                (secs(t), cs)
            })
        }
        _ => die(&format!("unknown percall engine {engine:?} (bale, bale-get, heed, redb)")),
    };
    let (_, want) = pass(); // warm-up
    let mut times = Vec::new();
    for _ in 0..passes {
        let (s, cs) = pass();
        assert_eq!(cs, want, "checksum changed between passes");
        times.push(s);
    }
    let best = times.iter().cloned().fold(f64::INFINITY, f64::min);
    let list: Vec<String> = times.iter().map(|t| format!("{t:.6}")).collect();
    let name = store.file_name().and_then(|s| s.to_str()).unwrap_or("?");
    println!(
        "{{\"bench\":\"percall\",\"host\":\"rust\",\"engine\":\"{engine}\",\"store\":\"{name}\",\"n\":{},\"passes_s\":[{}],\"best_ops_per_s\":{:.0},\"checksum\":{want},\"peak_rss_kb\":{}}}",
        keys.len(),
        list.join(","),
        keys.len() as f64 / best,
        status_kb("VmHWM")
    );
}

/// A fast deterministic generator of test content, yielded through `Read`.
///
/// The stream is cut into 1 MiB segments that alternate between
/// incompressible (every byte from the PRNG) and compressible: 32-byte words
/// of which three in four repeat a word from earlier in the same segment, the
/// rest fresh PRNG output (lz4 shrinks such a segment to roughly 30-40 %).
/// So about half the stream compresses and half does not.
struct GenReader {
    incompressible: bool,
    remaining: u64,
    pos: u64,
    rng: u64,
    seg: Vec<u8>,
    seg_at: usize,
}

const SEG: usize = 1 << 20;

impl GenReader {
    fn new(len: u64, seed: u64) -> GenReader {
        GenReader { incompressible: false, remaining: len, pos: 0, rng: seed, seg: vec![0; SEG], seg_at: SEG }
    }

    /// Every byte from the PRNG: nothing for lz4 to shrink.
    fn incompressible(len: u64, seed: u64) -> GenReader {
        GenReader { incompressible: true, ..GenReader::new(len, seed) }
    }

    /// wyrand: one multiply per 8 output bytes.
    #[inline]
    fn next(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0xa076_1d64_78bd_642f);
        let t = (self.rng as u128).wrapping_mul((self.rng ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) ^ t) as u64
    }

    fn fill_segment(&mut self) {
        let compressible = !self.incompressible && (self.pos / SEG as u64) % 2 == 1;
        let mut seg = std::mem::take(&mut self.seg);
        if !compressible {
            for c in seg.chunks_exact_mut(8) {
                c.copy_from_slice(&self.next().to_le_bytes());
            }
        } else {
            const W: usize = 32;
            let words = SEG / W;
            for w in 0..words {
                let r = self.next();
                let at = w * W;
                if w >= 16 && r & 3 != 0 {
                    // Repeat a word from up to 4 KiB back.
                    let back = 1 + ((r >> 8) as usize % 128.min(w));
                    seg.copy_within(at - back * W..at - back * W + W, at);
                } else {
                    for c in seg[at..at + W].chunks_exact_mut(8) {
                        c.copy_from_slice(&self.next().to_le_bytes());
                    }
                }
            }
        }
        self.seg = seg;
        self.seg_at = 0;
    }
}

impl Read for GenReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.remaining == 0 || out.is_empty() {
            return Ok(0);
        }
        if self.seg_at == SEG {
            self.fill_segment();
        }
        let n = (SEG - self.seg_at).min(out.len()).min(self.remaining as usize);
        out[..n].copy_from_slice(&self.seg[self.seg_at..self.seg_at + n]);
        self.seg_at += n;
        self.pos += n as u64;
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// Hashes everything read through it, and samples the anonymous (heap)
/// part of the resident set every 64 MiB: VmHWM also counts file pages a
/// memory map made resident, which the kernel can drop at will.
struct HashingReader<R> {
    inner: R,
    h: xxhash_rust::xxh3::Xxh3,
    done: u64,
    anon_peak_kb: u64,
}

impl<R> HashingReader<R> {
    fn new(inner: R) -> HashingReader<R> {
        HashingReader { inner, h: Default::default(), done: 0, anon_peak_kb: status_kb("RssAnon") }
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(out)?;
        self.h.update(&out[..n]);
        let before = self.done;
        self.done += n as u64;
        if before >> 26 != self.done >> 26 {
            self.anon_peak_kb = self.anon_peak_kb.max(status_kb("RssAnon"));
        }
        Ok(n)
    }
}

fn bigvalue(work: &Path, gib: f64, mmap: bool) {
    use bale::{Options, ReadOps, Store};
    let len = (gib * (1u64 << 30) as f64) as u64;
    let seed = 0x5eed_ba1e;
    let mb = len as f64 / 1e6;
    let _ = fs::remove_dir_all(work);
    fs::create_dir_all(work).unwrap();
    let path = work.join("big.bale");
    let mut buf = vec![0u8; 1 << 20];

    // Generator alone (+ hashing), to know how much of the write time it takes.
    let t = Instant::now();
    let mut g = HashingReader::new(GenReader::new(len, seed));
    while g.read(&mut buf).unwrap() > 0 {}
    let gen_s = secs(t);
    let gen_digest = g.h.digest();

    let can_reset = reset_peak_rss();
    let base_rss = status_kb("VmRSS");

    // Write: open, put_stream, commit (fsync), close.
    let opts = Options { mmap, ..Options::create() };
    let t = Instant::now();
    let mut src = HashingReader::new(GenReader::new(len, seed));
    {
        let store = Store::open(&path, opts.clone()).unwrap();
        let mut w = store.write().unwrap();
        let n = w.put_stream(b"big", &mut src).unwrap();
        assert_eq!(n, len, "put_stream stored a different length");
        w.commit().unwrap();
    }
    let write_s = secs(t);
    let write_peak = status_kb("VmHWM");
    let write_digest = src.h.digest();
    let write_anon_peak = src.anon_peak_kb.max(status_kb("RssAnon"));
    assert_eq!(write_digest, gen_digest, "generator is not deterministic");
    let (file_bytes, file_alloc) = dir_size(&path);

    // Read: reopen, stream the value out, hash it.
    reset_peak_rss();
    let t = Instant::now();
    let (read_s, read_peak, read_anon_peak, read_digest, got, large_stored) = {
        let store = Store::open(&path, Options { mmap, ..Options::default() }).unwrap();
        let r = store.read().unwrap();
        let v = r.get(b"big").unwrap().expect("the value is missing");
        assert_eq!(v.len(), len);
        let mut rd = HashingReader::new(v.reader());
        while rd.read(&mut buf).unwrap() > 0 {}
        let read_s = secs(t);
        let anon = rd.anon_peak_kb.max(status_kb("RssAnon"));
        let (digest, got) = (rd.h.digest(), rd.done);
        drop(rd);
        drop(v);
        drop(r);
        let peak = status_kb("VmHWM");
        let s = bale::btree::stat(&store).unwrap();
        (read_s, peak, anon, digest, got, s.large_stored_bytes)
    };
    let ok = got == len && read_digest == write_digest;
    println!(
        "{{\"bench\":\"bigvalue\",\"peer\":\"bale\",\"bytes\":{},\"mmap\":{},\"gen_s\":{:.3},\"write_s\":{:.3},\"write_MBps\":{:.0},\"read_s\":{:.3},\"read_MBps\":{:.0},\"file_bytes\":{},\"file_alloc_bytes\":{},\"large_stored_bytes\":{},\"base_rss_kb\":{},\"write_peak_rss_kb\":{},\"write_anon_peak_kb\":{},\"read_peak_rss_kb\":{},\"read_anon_peak_kb\":{},\"peak_reset\":{},\"xxh3\":\"{:016x}\",\"verified\":{}}}",
        len,
        mmap,
        gen_s,
        write_s,
        mb / write_s,
        read_s,
        mb / read_s,
        file_bytes,
        file_alloc,
        large_stored,
        base_rss,
        write_peak,
        write_anon_peak,
        read_peak,
        read_anon_peak,
        can_reset,
        write_digest,
        ok
    );
    let _ = fs::remove_dir_all(work);
    if !ok {
        die(&format!("read-back mismatch: {got} of {len} bytes, xxh3 {read_digest:016x} != {write_digest:016x}"));
    }
}

fn num(s: &str) -> u64 {
    s.parse().unwrap_or_else(|_| die(&format!("{s:?} is not a number")))
}

fn usage() -> ! {
    die(
        "usage: bale-bench kv <bale|heed|redb|rusqlite|rusqlite-tuned> DATA WORK\n       bale-bench bigvalue WORK [--gib N] [--no-mmap]\n       bale-bench percall-build DATA WORK [--gib N]\n       bale-bench percall <bale|bale-get|heed|redb> DATA STORE [--passes P]\n       bale-bench obj-w4 DATA WORK | obj-w5 FILE WORK | obj-scale N WORK\n       bale-bench bt-build <bale-fast|bale-durable|heed> N WORK | bt-merge K N WORK | bt-unsorted N BUDGET_MIB WORK",
    )
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    match a.first().map(String::as_str) {
        Some("kv") if a.len() == 4 => kv(&a[1], Path::new(&a[2]), Path::new(&a[3])),
        Some("bigvalue") if a.len() >= 2 => {
            let work = PathBuf::from(&a[1]);
            let mut gib = 4.0;
            let mut mmap = true;
            let mut rest = a[2..].iter();
            while let Some(f) = rest.next() {
                match f.as_str() {
                    "--gib" => {
                        gib = rest
                            .next()
                            .and_then(|s| s.parse().ok())
                            .filter(|g: &f64| *g > 0.0)
                            .unwrap_or_else(|| usage())
                    }
                    "--no-mmap" => mmap = false,
                    _ => usage(),
                }
            }
            bigvalue(&work, gib, mmap);
        }
        Some("percall-build") if a.len() == 3 || (a.len() == 5 && a[3] == "--gib") => {
            let gib =
                a.get(4).map_or(Some(8.0), |s| s.parse().ok()).filter(|g: &f64| *g >= 0.0).unwrap_or_else(|| usage());
            percall_build(Path::new(&a[1]), Path::new(&a[2]), gib)
        }
        Some("percall") if a.len() == 4 || (a.len() == 6 && a[4] == "--passes") => {
            let passes =
                a.get(5).map_or(Some(3), |s| s.parse().ok()).filter(|p: &usize| *p > 0).unwrap_or_else(|| usage());
            percall(&a[1], Path::new(&a[2]), Path::new(&a[3]), passes)
        }
        Some("bt-build") if a.len() == 4 => bitable::build(&a[1], num(&a[2]), Path::new(&a[3])),
        Some("bt-merge") if a.len() == 4 => bitable::merge(num(&a[1]), num(&a[2]), Path::new(&a[3])),
        Some("bt-unsorted") if a.len() == 4 => bitable::unsorted(num(&a[1]), num(&a[2]), Path::new(&a[3])),
        Some("obj-w4") if a.len() == 3 => objects::w4(Path::new(&a[1]), Path::new(&a[2])),
        Some("obj-w5") if a.len() == 3 => objects::w5(Path::new(&a[1]), Path::new(&a[2])),
        Some("obj-scale") if a.len() == 3 => objects::scale(a[1].parse().unwrap_or_else(|_| usage()), Path::new(&a[2])),
        _ => usage(),
    }
}
