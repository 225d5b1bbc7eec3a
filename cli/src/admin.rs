//! `bale stat`, `bale check` and `bale compact`.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use crate::fail::{Failure, exit};
use crate::text::{grouped, human_bytes};
use crate::{Access, Ctx, print_json, progress};

fn file_len(path: &Path) -> Result<u64, Failure> {
    std::fs::metadata(path).map(|m| m.len()).map_err(|e| Failure::io(path.display(), e))
}

pub fn stat(ctx: &Ctx, path: &Path) -> Result<u8, Failure> {
    let store = ctx.open(path, Access::Read)?;
    let s = bale::btree::stat(&store)?;
    let bytes = file_len(path)?;
    if ctx.json {
        print_json(&json!({
            "file": path.display().to_string(),
            "file_bytes": bytes,
            "txn": s.txn,
            "page_size": s.page_size,
            "file_pages": s.file_pages,
            "depth": s.depth,
            "entries": s.entries,
            "leaf_pages": s.leaf_pages,
            "branch_pages": s.branch_pages,
            "fill": s.fill,
            "inline_value_bytes": s.inline_value_bytes,
            "large_values": s.large_values,
            "large_value_bytes": s.large_value_bytes,
            "large_stored_bytes": s.large_stored_bytes,
            "large_pages": s.large_pages,
            "free_pages": s.free_pages,
            "free_list_pages": s.free_list_pages,
            "meta_slot": s.meta_slot,
            "max_key_len": store.max_key_len(),
        }))?;
        return Ok(exit::OK);
    }
    let ratio = if s.large_stored_bytes > 0 {
        format!(", {:.2}x compression", s.large_value_bytes as f64 / s.large_stored_bytes as f64)
    } else {
        String::new()
    };
    let rows = [
        ("file", format!("{} ({})", path.display(), human_bytes(bytes))),
        ("commit", format!("txn {} (meta page {})", s.txn, s.meta_slot)),
        ("entries", grouped(s.entries)),
        ("pages", format!("{} of {} bytes", grouped(s.file_pages), grouped(s.page_size))),
        ("tree depth", s.depth.to_string()),
        ("leaf pages", grouped(s.leaf_pages)),
        ("branch pages", grouped(s.branch_pages)),
        ("node fill", format!("{:.1}%", s.fill * 100.0)),
        ("inline values", human_bytes(s.inline_value_bytes)),
        (
            "large values",
            format!(
                "{}: {} written, {} stored in {} pages{ratio}",
                grouped(s.large_values),
                human_bytes(s.large_value_bytes),
                human_bytes(s.large_stored_bytes),
                grouped(s.large_pages)
            ),
        ),
        ("free pages", format!("{} ({} pages of free list)", grouped(s.free_pages), grouped(s.free_list_pages))),
        ("max key length", format!("{} bytes", store.max_key_len())),
    ];
    for (name, value) in rows {
        println!("{name:<15} {value}");
    }
    Ok(exit::OK)
}

pub fn check(ctx: &Ctx, path: &Path) -> Result<u8, Failure> {
    let store = ctx.open(path, Access::Read)?;
    let pb = progress::busy(&format!("checking {}", path.display()));
    let report = bale::btree::check(&store);
    pb.finish_and_clear();
    let report = report?;
    let problems: Vec<_> = report.problems.iter().map(|p| json!({ "page": p.page, "message": p.message })).collect();
    if ctx.json {
        print_json(&json!({
            "file": path.display().to_string(),
            "ok": report.is_ok(),
            "txn": report.txn,
            "pages": report.pages,
            "entries": report.entries,
            "free_pages": report.free_pages,
            "meta_slot": report.meta_slot,
            "problems": problems,
        }))?;
    } else if report.is_ok() {
        println!(
            "ok: {} entries in {} pages ({} free), txn {}",
            grouped(report.entries),
            grouped(report.pages),
            grouped(report.free_pages),
            report.txn
        );
    } else {
        println!(
            "{} problem(s) in {} (txn {}, {} pages):",
            report.problems.len(),
            path.display(),
            report.txn,
            grouped(report.pages)
        );
        for p in &report.problems {
            match p.page {
                Some(pg) => println!("  page {pg}: {}", p.message),
                None => println!("  {}", p.message),
            }
        }
    }
    if report.is_ok() {
        Ok(exit::OK)
    } else {
        eprintln!("bale: CORRUPT: {}: check found {} problem(s)", path.display(), report.problems.len());
        Ok(exit::CORRUPT)
    }
}

pub fn compact(ctx: &Ctx, path: &Path) -> Result<u8, Failure> {
    let store = ctx.open(path, Access::Write)?;
    let started = Instant::now();
    let pb = progress::busy(&format!("compacting {}", path.display()));
    let report = store.compact();
    pb.finish_and_clear();
    let r = report?;
    let secs = started.elapsed().as_secs_f64();
    if ctx.json {
        print_json(&json!({
            "file": path.display().to_string(),
            "bytes_before": r.bytes_before,
            "bytes_after": r.bytes_after,
            "entries": r.entries,
            "seconds": secs,
        }))?;
    } else {
        let saved = r.bytes_before.saturating_sub(r.bytes_after);
        println!(
            "compacted {}: {} -> {} ({} saved), {} entries, {secs:.2} s",
            path.display(),
            human_bytes(r.bytes_before),
            human_bytes(r.bytes_after),
            human_bytes(saved),
            grouped(r.entries)
        );
    }
    Ok(exit::OK)
}
