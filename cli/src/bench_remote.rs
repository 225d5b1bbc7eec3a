//! `bale bench remote-read` and `remote-commits`: what a remote costs, on
//! the server at hand (bench/remote.sh runs them against local S3
//! servers beside restic).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bale::io::sim::SimRng;
use bale::objects::{ObjectId, ObjectOptions, ObjectStore};
use bale::remote::{Bucket, PushOptions, Remote, RemoteConfig, open_bucket};
use clap::Args;
use serde_json::json;

use crate::fail::Failure;
use crate::{Ctx, print_json};

#[derive(Args, Debug)]
pub struct RemoteReadArgs {
    /// A lazy clone: an object store with remote NAME, holding few of its objects.
    store: PathBuf,
    name: String,
    /// Objects read (each once cold, from the remote, then once warm).
    #[arg(long, default_value_t = 200)]
    samples: u64,
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[derive(Args, Debug)]
pub struct RemoteCommitsArgs {
    /// An empty remote location (s3://bucket/prefix or file:///path).
    url: String,
    #[arg(long)]
    endpoint: Option<String>,
    /// Writers pushing at once, each from its own store.
    #[arg(long, default_value_t = 4)]
    writers: u64,
    /// Commits each writer makes (one new small object each).
    #[arg(long, default_value_t = 20)]
    commits: u64,
    /// Where the writers' stores go (default: the temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

fn summary(mut d: Vec<Duration>) -> serde_json::Value {
    d.sort_unstable();
    let mean = d.iter().map(Duration::as_secs_f64).sum::<f64>() * 1000.0 / d.len().max(1) as f64;
    json!({ "p50_ms": percentile(&d, 0.5), "p99_ms": percentile(&d, 0.99), "mean_ms": mean, "n": d.len() })
}

/// Cold reads (fetched from the remote by range reads into the store, then
/// read) and warm ones (the same objects again, now local), in ms.
pub fn remote_read(ctx: &Ctx, a: RemoteReadArgs) -> Result<u8, Failure> {
    let store = ObjectStore::open(&a.store, ObjectOptions::default())?;
    let r = store.open_remote(&a.name)?;
    let (m, index) = r.known_index()?;
    let mut ids: Vec<(ObjectId, u64)> = index.objects().map(|(id, l)| (*id, l.entry.size)).collect();
    ids.sort_unstable();
    ids.retain(|(id, _)| !store.has(id).unwrap_or(true));
    if ids.is_empty() {
        return Err(Failure::invalid("every object is already in the store: use a fresh lazy clone"));
    }
    let mut rng = SimRng::new(a.seed);
    let mut picked = Vec::new();
    for _ in 0..a.samples.min(ids.len() as u64) {
        let i = rng.below(ids.len() as u64) as usize;
        picked.push(ids.swap_remove(i));
    }
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    let before = r.traffic();
    let mut bytes = 0u64;
    for (id, _) in &picked {
        let t = Instant::now();
        let data = r.get(&store, id)?;
        cold.push(t.elapsed());
        bytes += data.len() as u64;
    }
    let moved = r.traffic();
    for (id, _) in &picked {
        let t = Instant::now();
        std::hint::black_box(store.get(id)?);
        warm.push(t.elapsed());
    }
    let out = json!({
        "objects": picked.len(), "content_bytes": bytes, "generation": m.generation,
        "cold": summary(cold), "warm": summary(warm),
        "requests": moved.requests - before.requests, "bytes_received": moved.bytes_received - before.bytes_received,
    });
    if ctx.json {
        print_json(&out)?;
    } else {
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    Ok(0)
}

/// Writers racing to commit: each pushes one new object per commit.
pub fn remote_commits(ctx: &Ctx, a: RemoteCommitsArgs) -> Result<u8, Failure> {
    let config = RemoteConfig {
        url: a.url.clone(),
        endpoint: a.endpoint.clone(),
        path_style: Some(true),
        ..RemoteConfig::default()
    };
    let bucket: Arc<dyn Bucket> = open_bucket(&config)?;
    let created = Remote::new(bucket.clone()).create(bale::objects::HashKind::Blake3, 24 * 3600 * 1000)?;
    if created.generation != 0 || !created.packs.is_empty() {
        return Err(Failure::invalid(format!("{}: not an empty remote", a.url)));
    }
    let root =
        a.dir.clone().unwrap_or_else(std::env::temp_dir).join(format!("bale-bench-commits-{}", std::process::id()));
    let started = Instant::now();
    let results: Vec<Result<(u64, Vec<Duration>), bale::Error>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.writers)
            .map(|w| {
                let (bucket, root) = (bucket.clone(), &root);
                s.spawn(move || writer(bucket, &root.join(format!("w{w}")), w, a.commits))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(bale::Error::new(bale::ErrorKind::Io, "a writer panicked"))))
            .collect()
    });
    let secs = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&root);
    let mut attempts = 0;
    let mut latencies = Vec::new();
    for r in results {
        let (n, l) = r?;
        attempts += n;
        latencies.extend(l);
    }
    let commits = a.writers * a.commits;
    let (m, _) = Remote::new(bucket).manifest()?;
    let out = json!({
        "writers": a.writers, "commits": commits, "seconds": secs, "commits_per_second": commits as f64 / secs,
        "attempts_per_commit": attempts as f64 / commits as f64, "push": summary(latencies), "generation": m.generation,
    });
    if ctx.json {
        print_json(&out)?;
    } else {
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    }
    if m.generation != commits {
        return Err(Failure::invalid(format!(
            "{} commits made but the manifest is at generation {}",
            commits, m.generation
        )));
    }
    Ok(0)
}

fn writer(bucket: Arc<dyn Bucket>, dir: &Path, w: u64, commits: u64) -> Result<(u64, Vec<Duration>), bale::Error> {
    let store = ObjectStore::open(dir, ObjectOptions::create())?;
    // Each writer keeps the pack indexes it has seen, as a store's remote does.
    let cache = bale::remote::RemoteCache::open(Arc::new(bale::objects::dir::FsDir::new(dir)), "remotes/bench")?;
    let r = Remote::new(bucket).with_cache(cache);
    let mut attempts = 0;
    let mut latencies = Vec::new();
    for c in 0..commits {
        let id = store.add(format!("writer {w} commit {c}").as_bytes())?;
        let t = Instant::now();
        let rep = r.push(&store, &PushOptions { ids: Some(vec![id]), ..PushOptions::default() }, &mut |_, _| {})?;
        latencies.push(t.elapsed());
        attempts += u64::from(rep.attempts);
    }
    Ok((attempts, latencies))
}
