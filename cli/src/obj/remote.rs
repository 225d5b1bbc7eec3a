//! `bale obj remote …`, `push`, `pull` and `fetch`: an object store's
//! remotes in S3-compatible buckets (or folders).

use std::path::{Path, PathBuf};
use std::time::Instant;

use bale::objects::{ObjectId, ObjectStore};
use bale::remote::{GcOptions, PushOptions, Remote, RemoteConfig, Traffic};
use clap::{Args, Subcommand};
use indicatif::ProgressBar;
use serde_json::json;

use super::{Access, open, parse_id, store_failure};
use crate::fail::{Failure, exit};
use crate::text::{grouped, human_bytes};
use crate::{Ctx, print_json, progress};

/// Default grace period of a new remote: how long gc waits before it
/// deletes a pack nothing names.
const DEFAULT_GRACE: &str = "24h";

#[derive(Subcommand, Debug)]
pub enum RemoteCommand {
    /// Record a remote (an S3 bucket prefix or a folder) and set it up.
    #[command(long_about = "Record remote NAME of STORE at URL: s3://bucket/prefix, or \
        file:///path for a folder used as a bucket. Credentials are never \
        stored: they come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY \
        (and AWS_SESSION_TOKEN), or the AWS profile (AWS_PROFILE, \
        ~/.aws/credentials). The server is first checked to honour \
        conditional writes (If-None-Match and If-Match): one that ignores \
        them is refused, since writers could then lose each other's \
        commits. Then the remote's manifest is created, or an existing \
        remote of the same hash is joined.")]
    Add(AddArgs),
    /// List the remotes of a store.
    Ls(StoreOnly),
    /// Forget a remote (the bucket is left as it is).
    Rm(NamedArgs),
    /// Show a remote's manifest: generation, packs, objects, refs.
    Info(NamedArgs),
    /// Remove packs nothing needs, a grace period after they became unneeded.
    #[command(long_about = "Run gc on remote NAME: packs whose records other packs \
        hold are tombstoned; tombstones and unnamed packs (left by pushes \
        that died) older than the grace period are deleted; multipart \
        uploads left by dead pushes are aborted. One gc runs at a time \
        (LOCKED otherwise). Needs delete permission on the bucket.")]
    Gc(GcArgs),
}

#[derive(Args, Debug)]
pub struct StoreOnly {
    store: PathBuf,
}

#[derive(Args, Debug)]
pub struct NamedArgs {
    store: PathBuf,
    name: String,
}

#[derive(Args, Debug)]
pub struct AddArgs {
    store: PathBuf,
    name: String,
    /// s3://bucket/prefix or file:///path.
    url: String,
    /// An S3-compatible endpoint (https://host:port; http:// for a local server).
    #[arg(long)]
    endpoint: Option<String>,
    #[arg(long)]
    region: Option<String>,
    /// Path-style requests (endpoint/bucket/key).
    #[arg(long, conflicts_with = "virtual_hosted")]
    path_style: bool,
    /// Virtual-hosted requests (bucket.endpoint/key).
    #[arg(long)]
    virtual_hosted: bool,
    /// Accept a server whose conditional writes do not hold, promising that
    /// only one writer ever pushes to this remote.
    #[arg(long)]
    single_writer: bool,
    /// For a new remote: how long gc keeps unneeded packs (s, m, h or d suffix).
    #[arg(long, default_value = DEFAULT_GRACE, value_parser = duration_ms)]
    grace: u64,
}

#[derive(Args, Debug)]
pub struct GcArgs {
    store: PathBuf,
    name: String,
    /// Report what would be removed; change nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args, Debug)]
pub struct PushArgs {
    store: PathBuf,
    /// The remote.
    name: String,
    /// The objects to push (hex ids); every object when none is given.
    ids: Vec<String>,
    /// Set ref NAME to object ID in the same commit (repeatable).
    #[arg(long = "ref", value_name = "NAME=ID")]
    refs: Vec<String>,
    /// Start a new pack past this size (K, M, G; at most 1G).
    #[arg(long, value_name = "BYTES", value_parser = super::size_arg)]
    pack_size: Option<u64>,
    /// Uploads at once.
    #[arg(long, default_value_t = 4)]
    jobs: usize,
}

#[derive(Args, Debug)]
pub struct PullArgs {
    store: PathBuf,
    name: String,
    /// Fetch only the manifest and pack indexes; objects come on demand
    /// (`obj fetch`, `obj get --remote`).
    #[arg(long)]
    lazy: bool,
    /// Downloads at once.
    #[arg(long, default_value_t = 4)]
    jobs: usize,
}

#[derive(Args, Debug)]
pub struct FetchArgs {
    store: PathBuf,
    name: String,
    /// The objects to fetch (hex ids).
    #[arg(required = true)]
    ids: Vec<String>,
    #[arg(long, default_value_t = 4)]
    jobs: usize,
}

/// `30s`, `15m`, `24h`, `7d`, or milliseconds without a suffix.
fn duration_ms(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits.parse().map_err(|_| format!("{s:?} is not a duration: use e.g. 30s, 15m, 24h or 7d"))?;
    let ms = match unit {
        "" | "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("{s:?} is not a duration: use e.g. 30s, 15m, 24h or 7d")),
    };
    n.checked_mul(ms).ok_or_else(|| format!("{s:?} is too long"))
}

pub fn run(ctx: &Ctx, cmd: RemoteCommand) -> Result<u8, Failure> {
    match cmd {
        RemoteCommand::Add(a) => add(ctx, a),
        RemoteCommand::Ls(a) => ls(ctx, &a.store),
        RemoteCommand::Rm(a) => {
            let store = open(&a.store, Access::Write)?;
            store.remove_remote(&a.name).map_err(|e| store_failure(&a.store, e))?;
            Ok(exit::OK)
        }
        RemoteCommand::Info(a) => info(ctx, a),
        RemoteCommand::Gc(a) => gc(ctx, a),
    }
}

/// The store's remote `name`, ready to use.
fn remote(store: &ObjectStore, path: &Path, name: &str, jobs: usize) -> Result<Remote, Failure> {
    let mut r = store.open_remote(name).map_err(|e| store_failure(path, e))?;
    r.options.threads = jobs.clamp(1, 64);
    Ok(r)
}

fn add(ctx: &Ctx, a: AddArgs) -> Result<u8, Failure> {
    bale::remote::check_remote_name(&a.name)?;
    let store = open(&a.store, Access::Write)?;
    let path_style = match (a.path_style, a.virtual_hosted) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let config = RemoteConfig {
        url: a.url.clone(),
        endpoint: a.endpoint,
        region: a.region,
        path_style,
        single_writer: a.single_writer,
    };
    let m = store.connect_remote(&a.name, &config, a.grace).map_err(|e| store_failure(&a.store, e))?;
    if ctx.json {
        print_json(&json!({
            "name": a.name, "url": a.url, "generation": m.generation, "packs": m.packs.len(),
            "grace_ms": m.grace_ms, "hash": m.hash.name(),
        }))?;
    } else {
        println!(
            "remote {} at {}: generation {}, {} packs, grace period {} s",
            a.name,
            a.url,
            m.generation,
            m.packs.len(),
            m.grace_ms / 1000
        );
    }
    Ok(exit::OK)
}

fn ls(ctx: &Ctx, path: &Path) -> Result<u8, Failure> {
    let store = open(path, Access::Read)?;
    let mut rows = Vec::new();
    for name in store.remote_names().map_err(|e| store_failure(path, e))? {
        let (c, _) = store.remote(&name).map_err(|e| store_failure(path, e))?;
        rows.push((name, c));
    }
    if ctx.json {
        let list: Vec<_> = rows
            .iter()
            .map(|(n, c)| json!({"name": n, "url": c.url, "endpoint": c.endpoint, "region": c.region, "path_style": c.path_style}))
            .collect();
        print_json(&json!({ "remotes": list }))?;
    } else {
        for (n, c) in rows {
            println!("{n}\t{}{}", c.url, c.endpoint.map(|e| format!("\t{e}")).unwrap_or_default());
        }
    }
    Ok(exit::OK)
}

fn info(ctx: &Ctx, a: NamedArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Read)?;
    let r = remote(&store, &a.store, &a.name, 4)?;
    let (m, _) = r.manifest()?;
    let index = r.index(&m)?;
    let objects = index.objects().count() as u64;
    let bytes: u64 = m.packs.iter().map(|p| p.len + p.index_len).sum();
    let dead: u64 = m.tombstones.iter().map(|t| t.pack.len + t.pack.index_len).sum();
    if ctx.json {
        let refs: serde_json::Map<String, serde_json::Value> =
            m.refs.iter().map(|(k, v)| (k.clone(), v.to_hex().into())).collect();
        print_json(&json!({
            "name": a.name, "generation": m.generation, "hash": m.hash.name(), "grace_ms": m.grace_ms,
            "packs": m.packs.len(), "tombstones": m.tombstones.len(), "objects": objects, "records": index.len(),
            "bytes": bytes, "tombstoned_bytes": dead, "refs": refs, "requests": r.traffic().requests,
        }))?;
    } else {
        println!("generation   {}", m.generation);
        println!("hash         {}", m.hash.name());
        println!("objects      {}", grouped(objects));
        println!("packs        {} ({})", m.packs.len(), human_bytes(bytes));
        println!("tombstones   {} ({})", m.tombstones.len(), human_bytes(dead));
        println!("grace        {} s", m.grace_ms / 1000);
        for (k, v) in &m.refs {
            println!("ref          {k} {v}");
        }
    }
    Ok(exit::OK)
}

fn gc(ctx: &Ctx, a: GcArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Read)?;
    let r = remote(&store, &a.store, &a.name, 4)?;
    let g = r.gc(&GcOptions { dry_run: a.dry_run, ..GcOptions::default() })?;
    if ctx.json {
        print_json(&json!({
            "tombstoned": g.tombstoned.iter().map(|p| p.to_hex()).collect::<Vec<_>>(),
            "deleted": g.deleted.iter().map(|p| p.to_hex()).collect::<Vec<_>>(),
            "orphans_deleted": g.orphans_deleted.iter().map(|p| p.to_hex()).collect::<Vec<_>>(),
            "bytes_freed": g.bytes_freed, "uploads_aborted": g.uploads_aborted,
            "generation": g.generation, "dry_run": a.dry_run, "traffic": traffic_json(r.traffic()),
        }))?;
    } else {
        let would = if a.dry_run { "would " } else { "" };
        println!(
            "{would}tombstone {} packs, {would}delete {} tombstoned and {} unnamed packs ({}), {would}abort {} uploads",
            g.tombstoned.len(),
            g.deleted.len(),
            g.orphans_deleted.len(),
            human_bytes(g.bytes_freed),
            g.uploads_aborted
        );
    }
    Ok(exit::OK)
}

fn traffic_json(t: Traffic) -> serde_json::Value {
    json!({ "requests": t.requests, "bytes_sent": t.bytes_sent, "bytes_received": t.bytes_received })
}

fn bar(ctx: &Ctx, message: &str) -> ProgressBar {
    if ctx.json { ProgressBar::hidden() } else { progress::bar(0, message, false) }
}

fn ids_of(store: &ObjectStore, ids: &[String]) -> Result<Vec<ObjectId>, Failure> {
    ids.iter().map(|s| parse_id(store, s)).collect()
}

pub fn push(ctx: &Ctx, a: PushArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Read)?;
    let mut r = remote(&store, &a.store, &a.name, a.jobs)?;
    if let Some(p) = a.pack_size {
        r.options.pack_target = p.max(1 << 20);
    }
    let ids = ids_of(&store, &a.ids)?;
    let mut refs = Vec::new();
    for spec in &a.refs {
        let (n, id) = spec.split_once('=').ok_or_else(|| Failure::usage(format!("--ref {spec:?}: use NAME=ID")))?;
        refs.push((n.to_string(), parse_id(&store, id)?));
    }
    let opts = PushOptions { ids: if ids.is_empty() { None } else { Some(ids) }, refs };
    let started = Instant::now();
    let pb = bar(ctx, "pushing packs");
    let rep = r.push(&store, &opts, &mut |done, total| {
        pb.set_length(total);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    let rep = rep?;
    let secs = started.elapsed().as_secs_f64();
    let t = r.traffic();
    if ctx.json {
        print_json(&json!({
            "objects_sent": rep.objects_sent, "objects_present": rep.objects_present, "records_sent": rep.records_sent,
            "bytes_sent": rep.bytes_sent, "packs": rep.packs.iter().map(|p| p.to_hex()).collect::<Vec<_>>(),
            "revived": rep.revived, "attempts": rep.attempts, "generation": rep.generation,
            "seconds": secs, "traffic": traffic_json(t),
        }))?;
    } else {
        println!(
            "pushed {} objects ({} in {} packs), {} already there; generation {}, {} requests, {secs:.2} s",
            grouped(rep.objects_sent),
            human_bytes(rep.bytes_sent),
            rep.packs.len(),
            grouped(rep.objects_present),
            rep.generation,
            grouped(t.requests)
        );
    }
    Ok(exit::OK)
}

pub fn pull(ctx: &Ctx, a: PullArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Write)?;
    let r = remote(&store, &a.store, &a.name, a.jobs)?;
    let started = Instant::now();
    if a.lazy {
        let (m, index) = {
            let (m, _) = r.manifest()?;
            let index = r.index(&m)?;
            (m, index)
        };
        let t = r.traffic();
        let secs = started.elapsed().as_secs_f64();
        let objects = index.objects().count() as u64;
        if ctx.json {
            print_json(&json!({
                "lazy": true, "generation": m.generation, "objects": objects, "packs": m.packs.len(),
                "seconds": secs, "traffic": traffic_json(t),
            }))?;
        } else {
            println!(
                "lazy: {} objects in {} packs known at generation {}; {} requests, {} received, {secs:.2} s",
                grouped(objects),
                m.packs.len(),
                m.generation,
                grouped(t.requests),
                human_bytes(t.bytes_received)
            );
        }
        return Ok(exit::OK);
    }
    let pb = bar(ctx, "pulling packs");
    let rep = r.pull(&store, &mut |done, total| {
        pb.set_length(total);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    let rep = rep?;
    store.close()?;
    report_pull(ctx, &rep, &r, started)
}

pub fn fetch(ctx: &Ctx, a: FetchArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Write)?;
    let r = remote(&store, &a.store, &a.name, a.jobs)?;
    let ids = ids_of(&store, &a.ids)?;
    let started = Instant::now();
    let rep = r.fetch(&store, &ids)?;
    store.close()?;
    report_pull(ctx, &rep, &r, started)
}

/// Fetches `id` from remote `name` into `store` when the store lacks it.
pub fn fetch_missing(store: &ObjectStore, path: &Path, name: &str, id: &ObjectId) -> Result<(), Failure> {
    if store.has(id)? {
        return Ok(());
    }
    let r = remote(store, path, name, 4)?;
    r.fetch(store, std::slice::from_ref(id))?;
    Ok(())
}

fn report_pull(ctx: &Ctx, rep: &bale::remote::PullReport, r: &Remote, started: Instant) -> Result<u8, Failure> {
    let secs = started.elapsed().as_secs_f64();
    let t = r.traffic();
    if ctx.json {
        print_json(&json!({
            "objects_fetched": rep.objects_fetched, "objects_present": rep.objects_present,
            "records_fetched": rep.records_fetched, "reads": rep.reads, "bytes_received": rep.bytes_received,
            "generation": rep.generation, "seconds": secs, "traffic": traffic_json(t),
        }))?;
    } else {
        println!(
            "fetched {} objects ({} records, {} in {} reads), {} already here; generation {}, {} requests, {secs:.2} s",
            grouped(rep.objects_fetched),
            grouped(rep.records_fetched),
            human_bytes(rep.bytes_received),
            grouped(rep.reads),
            grouped(rep.objects_present),
            rep.generation,
            grouped(t.requests)
        );
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_grace_period_is_the_core_s() {
        assert_eq!(duration_ms(DEFAULT_GRACE), Ok(bale::remote::DEFAULT_GRACE_MS));
    }
}
