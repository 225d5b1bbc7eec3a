//! `bale obj stat`, `pack`, `repack`, `validate` and `repair`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use bale::objects::{Compression, ObjectProblem, ObjectStats, ObjectStore};
use clap::Args;
use serde_json::{Value, json};

use super::{Access, bytes_bar, config_json, open, parse_id, report_json};
use crate::fail::{Failure, exit};
use crate::text::{grouped, human_bytes};
use crate::{Ctx, print_json};

#[derive(Args, Debug)]
pub struct StatArgs {
    /// The object store.
    store: PathBuf,
    /// One object's id (hex): show that object instead of the store.
    id: Option<String>,
}

#[derive(Args, Debug)]
pub struct RmArgs {
    /// The object store.
    store: PathBuf,
    /// The ids of the objects to remove (hex).
    #[arg(required = true)]
    ids: Vec<String>,
}

#[derive(Args, Debug)]
pub struct RepackArgs {
    /// The object store.
    store: PathBuf,
    /// Rewrite every pack with this compression policy.
    #[arg(long, value_parser = ["auto", "never", "always"])]
    compression: Option<String>,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// The object store.
    store: PathBuf,
    /// Check only this percentage of the objects (chosen by id), 0 to 100.
    #[arg(long, value_name = "PERCENT", value_parser = percent_arg)]
    sample: Option<f64>,
}

#[derive(Args, Debug)]
pub struct RepairArgs {
    /// The object store.
    store: PathBuf,
    /// Recreate the index from the records in the packs and staging files.
    #[arg(long, required = true)]
    rebuild_index: bool,
}

/// Parses `--sample`: a percentage from 0 to 100, with or without `%`.
fn percent_arg(s: &str) -> Result<f64, String> {
    let n: f64 = s.strip_suffix('%').unwrap_or(s).parse().map_err(|_| format!("{s:?} is not a percentage"))?;
    if (0.0..=100.0).contains(&n) { Ok(n) } else { Err(format!("{n} is not a percentage from 0 to 100")) }
}

/// Files under `path` (or `path` itself) and their bytes, without
/// following symbolic links.
fn disk_usage(path: &Path) -> std::io::Result<(u64, u64)> {
    let m = std::fs::symlink_metadata(path)?;
    if !m.is_dir() {
        return Ok(if m.is_file() { (1, m.len()) } else { (0, 0) });
    }
    let (mut files, mut bytes) = (0, 0);
    for entry in std::fs::read_dir(path)? {
        match disk_usage(&entry?.path()) {
            Ok((f, b)) => {
                files += f;
                bytes += b;
            }
            // Removed by a packer while we looked.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok((files, bytes))
}

pub fn stat(ctx: &Ctx, a: StatArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Read)?;
    if let Some(text) = &a.id {
        return stat_object(ctx, &store, text);
    }
    let s = store.stats()?;
    let (files, bytes) = disk_usage(&a.store).map_err(|e| Failure::io(a.store.display(), e))?;
    let saved = s.logical_bytes as i128 - s.stored_bytes as i128;
    if ctx.json {
        print_json(&json!({
            "store": a.store.display().to_string(),
            "single_file": store.is_single_file(),
            "format_version": store.format_version(),
            "config": config_json(&store),
            "objects": s.objects,
            "logical_bytes": s.logical_bytes,
            "stored_bytes": s.stored_bytes,
            "saved_bytes": saved as i64,
            "records": s.records,
            "chunked_objects": s.chunked_objects,
            "chunks": s.chunks,
            "compressed_records": s.compressed_records,
            "staged_records": s.staged_records,
            "disk_files": files,
            "disk_bytes": bytes,
        }))?;
        return Ok(exit::OK);
    }
    print_stats(&a.store, &store, &s, files, bytes, saved);
    Ok(exit::OK)
}

fn print_stats(path: &Path, store: &ObjectStore, s: &ObjectStats, files: u64, bytes: u64, saved: i128) {
    let c = store.config();
    let layout = if store.is_single_file() { "single file" } else { "directory" };
    let saved = if saved >= 0 {
        let pct = if s.logical_bytes > 0 { saved as f64 * 100.0 / s.logical_bytes as f64 } else { 0.0 };
        format!("{} ({pct:.1}%) by deduplication and compression", human_bytes(saved as u64))
    } else {
        format!("none ({} of record headers over the content)", human_bytes((-saved) as u64))
    };
    let rows = [
        ("store", format!("{} ({layout}, format version {})", path.display(), store.format_version())),
        (
            "config",
            format!(
                "{}, compression {}, chunks {}/{}/{}, packs of {}",
                c.hash.name(),
                store.compression().name(),
                human_bytes(c.chunk_min as u64),
                human_bytes(c.chunk_avg as u64),
                human_bytes(c.chunk_max as u64),
                human_bytes(c.pack_target)
            ),
        ),
        ("objects", format!("{} holding {}", grouped(s.objects), human_bytes(s.logical_bytes))),
        ("stored", format!("{} in {} records", human_bytes(s.stored_bytes), grouped(s.records))),
        ("saved", saved),
        ("chunked", format!("{} objects in {} chunks", grouped(s.chunked_objects), grouped(s.chunks))),
        ("compressed", format!("{} records", grouped(s.compressed_records))),
        ("staged", format!("{} records not yet packed", grouped(s.staged_records))),
        ("on disk", format!("{} in {} files", human_bytes(bytes), grouped(files))),
    ];
    for (name, value) in rows {
        println!("{name:<11} {value}");
    }
}

fn stat_object(ctx: &Ctx, store: &ObjectStore, text: &str) -> Result<u8, Failure> {
    let id = parse_id(store, text)?;
    let m = store.meta(&id)?;
    if ctx.json {
        print_json(&json!({
            "id": id.to_hex(),
            "size": m.size,
            "stored_size": m.stored_size,
            "chunked": m.chunked,
            "packed": m.packed,
            "compressed": m.compressed,
        }))?;
    } else {
        let yes = |b: bool| if b { "yes" } else { "no" };
        let rows = [
            ("id", id.to_hex()),
            ("size", format!("{} ({} bytes)", human_bytes(m.size), grouped(m.size))),
            ("stored", format!("{} in its top record", human_bytes(m.stored_size))),
            ("chunked", yes(m.chunked).to_string()),
            ("packed", yes(m.packed).to_string()),
            ("compressed", yes(m.compressed).to_string()),
        ];
        for (name, value) in rows {
            println!("{name:<11} {value}");
        }
    }
    Ok(exit::OK)
}

/// A report's problems as JSON: `{ id, file, code, message }` each (`id`
/// and `file` null when the problem concerns none).
fn problems_json(problems: &[ObjectProblem]) -> Value {
    problems
        .iter()
        .map(|p| json!({ "id": p.id.map(|id| id.to_hex()), "file": p.file, "code": p.code, "message": p.message }))
        .collect()
}

/// A report's problems as warnings on stderr.
fn warn(problems: &[ObjectProblem]) {
    for p in problems {
        eprintln!("bale: warning: {}: {}", p.code, p.message);
    }
}

/// What pack and repack did, as JSON or a line of text.
fn pack_report(ctx: &Ctx, verb: &str, path: &Path, r: &bale::objects::PackReport, secs: f64) -> Result<(), Failure> {
    if ctx.json {
        return print_json(&report_json(
            &r.fields(),
            json!({ "store": path.display().to_string(), "problems": problems_json(&r.problems), "seconds": secs }),
        ));
    }
    let what = if verb == "packed" { "staging files" } else { "files" };
    let mut line = format!(
        "{verb} {}: {} records ({}) moved, {} {what} removed, {} freed",
        path.display(),
        grouped(r.records_moved),
        human_bytes(r.bytes_moved),
        grouped(r.files_removed),
        human_bytes(r.bytes_freed)
    );
    if r.entries_dropped > 0 {
        line.push_str(&format!(", {} unused chunk entries dropped", grouped(r.entries_dropped)));
    }
    if r.files_kept > 0 {
        line.push_str(&format!(
            "; {} staging files kept until the index is rebuilt (it may have fallen back)",
            grouped(r.files_kept)
        ));
    }
    if r.files_in_use > 0 {
        line.push_str(&format!("; {} staging files still in use, left for later", grouped(r.files_in_use)));
    }
    println!("{line}, {secs:.2} s");
    warn(&r.problems);
    Ok(())
}

pub fn rm(ctx: &Ctx, a: RmArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Write)?;
    let ids = a.ids.iter().map(|s| parse_id(&store, s)).collect::<Result<Vec<_>, _>>()?;
    let present = store.has_many(&ids)?;
    let missing: Vec<String> = ids.iter().zip(&present).filter(|(_, p)| !**p).map(|(id, _)| id.to_hex()).collect();
    let removed = store.delete(&ids)?;
    store.close()?;
    if ctx.json {
        print_json(&json!({ "removed": removed, "missing": missing }))?;
    } else {
        for m in &missing {
            eprintln!("bale: object {m} was not in the store");
        }
    }
    Ok(exit::OK)
}

pub fn pack(ctx: &Ctx, path: &Path) -> Result<u8, Failure> {
    let store = open(path, Access::Write)?;
    let started = Instant::now();
    let pb = bytes_bar(ctx, 0, "packing");
    let r = store.pack_with(&mut |done, planned| {
        pb.set_length(planned);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    let r = r?;
    store.close()?;
    pack_report(ctx, "packed", path, &r, started.elapsed().as_secs_f64())?;
    Ok(exit::OK)
}

pub fn repack(ctx: &Ctx, a: RepackArgs) -> Result<u8, Failure> {
    let compression = a.compression.as_deref().map(Compression::from_name).transpose()?;
    let store = open(&a.store, Access::Write)?;
    let started = Instant::now();
    let pb = bytes_bar(ctx, 0, "repacking");
    let r = store.repack(compression, &mut |done, planned| {
        pb.set_length(planned);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    let r = r?;
    store.close()?;
    pack_report(ctx, "repacked", &a.store, &r, started.elapsed().as_secs_f64())?;
    Ok(exit::OK)
}

pub fn clean(ctx: &Ctx, path: &Path) -> Result<u8, Failure> {
    let store = open(path, Access::Write)?;
    let started = Instant::now();
    let pb = if ctx.json { indicatif::ProgressBar::hidden() } else { crate::progress::busy("cleaning") };
    let r = store.clean();
    pb.finish_and_clear();
    let r = r?;
    store.close()?;
    let secs = started.elapsed().as_secs_f64();
    if ctx.json {
        print_json(&report_json(&r.fields(), json!({ "store": path.display().to_string(), "seconds": secs })))?;
    } else {
        println!(
            "cleaned {}: {} files removed, {} freed, index {} -> {}, {secs:.2} s",
            path.display(),
            grouped(r.files_removed),
            human_bytes(r.bytes_freed),
            human_bytes(r.index_bytes_before),
            human_bytes(r.index_bytes_after)
        );
    }
    Ok(exit::OK)
}

pub fn validate(ctx: &Ctx, a: ValidateArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Read)?;
    let sample = a.sample.unwrap_or(100.0);
    let started = Instant::now();
    let pb = bytes_bar(ctx, 0, "validating");
    let r = store.validate(sample, &mut |done, planned| {
        pb.set_length(planned);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    let r = r?;
    let secs = started.elapsed().as_secs_f64();
    if ctx.json {
        print_json(&report_json(
            &r.fields(),
            json!({
                "store": a.store.display().to_string(),
                "ok": r.is_ok(),
                "sample_percent": sample,
                "problems": problems_json(&r.problems),
                "seconds": secs,
            }),
        ))?;
    } else if r.is_ok() {
        println!(
            "ok: {} objects, {} records, {} checked in {secs:.2} s",
            grouped(r.objects_checked),
            grouped(r.records_checked),
            human_bytes(r.bytes_checked)
        );
        if r.unindexed_records > 0 {
            println!(
                "{} records ({} of them objects) in packs or staging files have no index entry: garbage of \
                 uncommitted batches or deleted objects (pack and repack drop it), or objects a damaged index \
                 lost (`bale obj repair --rebuild-index` brings them back)",
                grouped(r.unindexed_records),
                grouped(r.unindexed_objects)
            );
        }
    } else {
        println!("{} problem(s) in {}:", r.problems.len(), a.store.display());
        for p in &r.problems {
            match p.id {
                Some(id) => println!("  {id}: {}: {}", p.code, p.message),
                None => println!("  {}: {}", p.code, p.message),
            }
        }
    }
    if r.is_ok() {
        Ok(exit::OK)
    } else {
        eprintln!("bale: CORRUPT: {}: validate found {} problem(s)", a.store.display(), r.problems.len());
        Ok(exit::CORRUPT)
    }
}

pub fn repair(ctx: &Ctx, a: RepairArgs) -> Result<u8, Failure> {
    // --rebuild-index is the one repair there is; clap requires it, so
    // that a later repair cannot change what a bare `repair` does.
    debug_assert!(a.rebuild_index);
    let store = open(&a.store, Access::Repair)?;
    let started = Instant::now();
    let pb = bytes_bar(ctx, 0, "rebuilding the index");
    let r = store.rebuild_index(&mut |done, planned| {
        pb.set_length(planned);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    let r = r?;
    store.close()?;
    let secs = started.elapsed().as_secs_f64();
    if ctx.json {
        print_json(&report_json(
            &r.fields(),
            json!({
                "store": a.store.display().to_string(),
                "problems": problems_json(&r.problems),
                "seconds": secs,
            }),
        ))?;
    } else {
        println!(
            "rebuilt the index of {}: {} objects from {} records in {secs:.2} s",
            a.store.display(),
            grouped(r.objects),
            grouped(r.records)
        );
        if r.bad_records > 0 || r.skipped_ranges > 0 {
            eprintln!(
                "bale: warning: {} damaged records and {} damaged stretches were skipped",
                grouped(r.bad_records),
                grouped(r.skipped_ranges)
            );
        }
        warn(&r.problems);
    }
    Ok(exit::OK)
}
