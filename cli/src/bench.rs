//! `bale bench kv`: a quick, self-contained benchmark of bale alone.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use bale::ReadOps;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::fail::{EXIT_CODES_HELP, Failure, exit};
use crate::text::{grouped, human_bytes};
use crate::{Access, Ctx, page_size_arg, print_json, progress};

const KEY_LEN: usize = 16;
const VALUE_LEN: usize = 100;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Insert, point-read and scan N random keys (bale only).
    #[command(
        long_about = "A quick benchmark of bale alone, on this machine:\n\n\
            W1  insert N random 16-byte keys with 100-byte values in one write \
            transaction, timed from creating the store to the durable commit;\n\
            W2  N point gets in one read transaction, in a random order, \
            touching each value;\n\
            W3  a full ordered scan, touching each value.\n\n\
            Keys and values come from a seeded PRNG (splitmix64), so runs are \
            repeatable. The store is made in a fresh file under --dir (default: \
            the temporary directory) and removed afterwards unless --keep.\n\n\
            The comparison with LMDB, redb and SQLite on the same workloads is \
            `make bench` at the top of the source tree, not this verb.",
        after_help = EXIT_CODES_HELP
    )]
    Kv(KvBenchArgs),
    /// Look the same random keys up in a tree store and in a bitable of it.
    #[command(
        long_about = "Picks --count keys of TABLE at random ordinals (with repeats), then             looks each one up in the tree store STORE (one read transaction)             and in TABLE, in the same order, touching each value, and prints             both files' sizes and lookup rates side by side. TABLE is             typically `bale bitable export STORE TABLE`; every key must be in             both.",
        after_help = EXIT_CODES_HELP
    )]
    Lookup(LookupArgs),
    /// Read objects of a lazy clone from its remote (cold), then locally (warm).
    #[command(after_help = EXIT_CODES_HELP)]
    RemoteRead(crate::bench_remote::RemoteReadArgs),
    /// Writers racing to commit to one remote: commits per second, attempts.
    #[command(after_help = EXIT_CODES_HELP)]
    RemoteCommits(crate::bench_remote::RemoteCommitsArgs),
}

#[derive(Args, Debug)]
pub struct LookupArgs {
    /// The tree store.
    store: PathBuf,
    /// The bitable.
    table: PathBuf,
    /// Number of lookups in each.
    #[arg(long, default_value_t = 1_000_000)]
    count: u64,
    /// PRNG seed for the keys picked.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[derive(Args, Debug)]
pub struct KvBenchArgs {
    /// Number of keys.
    #[arg(long, default_value_t = 1_000_000)]
    n: u64,
    /// Directory for the store file.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Page size of the store.
    #[arg(long, value_name = "BYTES", default_value = "4096", value_parser = page_size_arg)]
    page_size: u32,
    /// PRNG seed for keys, values and the read order.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Keep the store file and print its path.
    #[arg(long)]
    keep: bool,
}

pub fn run(ctx: &Ctx, cmd: BenchCommand) -> Result<u8, Failure> {
    match cmd {
        BenchCommand::Kv(a) => kv(ctx, a),
        BenchCommand::Lookup(a) => lookup(ctx, a),
        BenchCommand::RemoteRead(a) => crate::bench_remote::remote_read(ctx, a),
        BenchCommand::RemoteCommits(a) => crate::bench_remote::remote_commits(ctx, a),
    }
}

fn lookup(ctx: &Ctx, a: LookupArgs) -> Result<u8, Failure> {
    use bale::ReadOps;
    use bale::bitable::{Bitable, OpenOptions, Value};
    let table = Bitable::open(&a.table, OpenOptions { mmap: ctx.mmap })?;
    if table.is_empty() {
        return Err(Failure::invalid(format!("{} is empty: nothing to look up", a.table.display())));
    }
    let store = ctx.open(&a.store, Access::Read)?;
    let mut rng = SplitMix64(a.seed);
    let mut keys = Vec::with_capacity(a.count as usize);
    for _ in 0..a.count {
        let c = table.select(rng.below(table.len()))?;
        keys.push(c.key().unwrap_or(&[]).to_vec());
    }
    let missing = |k: &[u8], what: &str| {
        Failure::invalid(format!("key {} is not in the {what}", crate::text::show_key(k, false)))
    };
    let txn = store.read()?;
    let (mut sum_s, mut sum_t) = (0u64, 0u64);
    let t0 = Instant::now();
    for k in &keys {
        let v = txn.get(k)?.ok_or_else(|| missing(k, "tree store"))?;
        sum_s = sum_s.wrapping_add(v.len());
    }
    let tree = Timed { seconds: t0.elapsed().as_secs_f64(), ops: a.count };
    let t0 = Instant::now();
    for k in &keys {
        let v = table.get(k)?.ok_or_else(|| missing(k, "bitable"))?;
        sum_t = sum_t.wrapping_add(match &v {
            Value::Inline(b) => b.len() as u64,
            Value::Large(l) => l.len(),
        });
    }
    let bit = Timed { seconds: t0.elapsed().as_secs_f64(), ops: a.count };
    if sum_s != sum_t {
        return Err(Failure::new("CORRUPT", "the two files hold different values for the same keys", exit::CORRUPT));
    }
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).map_err(|e| Failure::io(p.display(), e));
    let (store_bytes, table_bytes) = (size(&a.store)?, size(&a.table)?);
    if ctx.json {
        print_json(&json!({
            "count": a.count,
            "store": { "file": a.store.display().to_string(), "bytes": store_bytes, "lookups": tree.json() },
            "bitable": { "file": a.table.display().to_string(), "bytes": table_bytes, "lookups": bit.json() },
        }))?;
        return Ok(exit::OK);
    }
    println!("{:<12} {:>12} {:>16} {:>10}", "", "file", "lookups/s", "µs each");
    for (name, bytes, t) in [("tree store", store_bytes, &tree), ("bitable", table_bytes, &bit)] {
        println!(
            "{name:<12} {:>12} {:>16} {:>10.2}",
            human_bytes(bytes),
            grouped(t.rate() as u64),
            t.seconds * 1e6 / t.ops as f64
        );
    }
    println!(
        "{} random lookups of the same keys; the bitable is {:.2}x the size and {:.2}x the rate",
        grouped(a.count),
        table_bytes as f64 / store_bytes as f64,
        bit.rate() / tree.rate()
    );
    Ok(exit::OK)
}

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough to
/// spread keys.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift.
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let w = self.next().to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
    }
}

/// The value stored under key `i`: a function of the key alone.
fn value_for(key: &[u8; KEY_LEN], out: &mut [u8; VALUE_LEN]) {
    let mut seed = [0u8; 8];
    seed.copy_from_slice(&key[..8]);
    SplitMix64(u64::from_le_bytes(seed)).fill(out);
}

struct Timed {
    seconds: f64,
    ops: u64,
}

impl Timed {
    fn rate(&self) -> f64 {
        if self.seconds > 0.0 { self.ops as f64 / self.seconds } else { 0.0 }
    }

    fn json(&self) -> serde_json::Value {
        json!({ "seconds": self.seconds, "ops": self.ops, "ops_per_sec": self.rate() })
    }
}

/// Removes the benchmark's files when dropped, unless kept.
struct Cleanup {
    paths: Vec<PathBuf>,
    dir: Option<PathBuf>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir(d);
        }
    }
}

fn kv(ctx: &Ctx, a: KvBenchArgs) -> Result<u8, Failure> {
    if a.n == 0 || u32::try_from(a.n).is_err() {
        return Err(Failure::usage("--n must be from 1 to 4294967295"));
    }
    let stamp = format!(
        "bale-bench-{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0)
    );
    let (dir, own_dir) = match &a.dir {
        Some(d) => (d.clone(), false),
        None => (std::env::temp_dir().join(&stamp), true),
    };
    std::fs::create_dir_all(&dir).map_err(|e| Failure::io(dir.display(), e))?;
    let path = dir.join(format!("{stamp}.bale"));
    let mut tmp = path.clone().into_os_string();
    tmp.push(".compact-tmp");
    let _cleanup =
        (!a.keep).then(|| Cleanup { paths: vec![path.clone(), tmp.into()], dir: own_dir.then(|| dir.clone()) });

    let n = a.n;
    let mut rng = SplitMix64(a.seed);
    let mut keys: Vec<[u8; KEY_LEN]> = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let mut k = [0u8; KEY_LEN];
        rng.fill(&mut k);
        keys.push(k);
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    if !ctx.json {
        println!(
            "bale bench kv: {} random {KEY_LEN}-byte keys, {VALUE_LEN}-byte values, page size {}",
            grouped(n),
            a.page_size
        );
    }

    // W1: create, insert everything in one transaction, commit durably.
    let pb = progress::bar(n, "W1 insert", false);
    let t = Instant::now();
    {
        let store = ctx.open(&path, Access::Create(a.page_size))?;
        let mut w = store.write()?;
        let mut value = [0u8; VALUE_LEN];
        for (i, k) in keys.iter().enumerate() {
            value_for(k, &mut value);
            w.put(k, &value)?;
            if i & 0x3fff == 0 {
                pb.set_position(i as u64);
            }
        }
        pb.set_message("W1 commit");
        w.commit()?;
    }
    let insert = Timed { seconds: t.elapsed().as_secs_f64(), ops: n };
    pb.finish_and_clear();
    report_line(ctx, "W1 insert, 1 txn", &insert);
    let file_bytes = std::fs::metadata(&path).map(|m| m.len()).map_err(|e| Failure::io(path.display(), e))?;

    let store = ctx.open(&path, Access::Read)?;

    // W2: point gets in a random order, touching each value.
    let pb = progress::bar(n, "W2 get", false);
    let t = Instant::now();
    let mut acc = 0u64;
    {
        let r = store.read()?;
        for (i, &j) in order.iter().enumerate() {
            let Some(v) = r.get(&keys[j as usize])? else {
                return Err(Failure::new("MISSING", format!("key {j} vanished after its commit"), exit::ERROR));
            };
            let first = v.as_inline().and_then(|b| b.first()).copied().unwrap_or(0);
            acc = acc.wrapping_add(first as u64 + v.len());
            if i & 0x3fff == 0 {
                pb.set_position(i as u64);
            }
        }
    }
    let get = Timed { seconds: t.elapsed().as_secs_f64(), ops: n };
    pb.finish_and_clear();
    black_box(acc);
    report_line(ctx, "W2 random get", &get);

    // W3: a full ordered scan, touching each value.
    let pb = progress::bar(n, "W3 scan", false);
    let t = Instant::now();
    let mut count = 0u64;
    let mut acc = 0u64;
    {
        let r = store.read()?;
        let mut range = r.iter();
        while let Some(e) = range.next_entry() {
            let (k, v) = e?;
            let first = v.as_inline().and_then(|b| b.first()).copied().unwrap_or(0);
            acc = acc.wrapping_add(k.len() as u64 + first as u64 + v.len());
            count += 1;
            if count & 0x3fff == 0 {
                pb.set_position(count);
            }
        }
    }
    let scan = Timed { seconds: t.elapsed().as_secs_f64(), ops: count };
    pb.finish_and_clear();
    black_box(acc);
    report_line(ctx, "W3 ordered scan", &scan);
    if count != n {
        return Err(Failure::new("MISMATCH", format!("the scan saw {count} entries, {n} were inserted"), exit::ERROR));
    }

    if ctx.json {
        print_json(&json!({
            "bench": "kv",
            "n": n,
            "seed": a.seed,
            "page_size": a.page_size,
            "key_bytes": KEY_LEN,
            "value_bytes": VALUE_LEN,
            "insert": insert.json(),
            "get": get.json(),
            "scan": scan.json(),
            "file_bytes": file_bytes,
            "bytes_per_entry": file_bytes as f64 / n as f64,
            "kept": a.keep.then(|| path.display().to_string()),
        }))?;
    } else {
        println!(
            "{:<18} {} ({:.0} bytes per entry)",
            "file size",
            human_bytes(file_bytes),
            file_bytes as f64 / n as f64
        );
        if a.keep {
            println!("{:<18} {}", "kept", path.display());
        }
    }
    Ok(exit::OK)
}

fn report_line(ctx: &Ctx, name: &str, t: &Timed) {
    if !ctx.json {
        println!("{name:<18} {:>9.3} s {:>14} ops/s", t.seconds, grouped(t.rate() as u64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_is_the_reference_sequence() {
        // First outputs for seed 0 of the reference implementation.
        let mut r = SplitMix64(0);
        assert_eq!(r.next(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next(), 0x6e78_9e6a_a1b9_65f4);
        let mut r = SplitMix64(7);
        for _ in 0..1000 {
            assert!(r.below(10) < 10);
        }
    }
}
