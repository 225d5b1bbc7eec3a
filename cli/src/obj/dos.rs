//! `bale obj import-dos`: migrating a disk-objectstore container. The
//! container's SQLite index (`packs.idx`) is read here and its rows handed
//! to the core, which reads, checks and adds the objects.

use std::path::PathBuf;
use std::time::Instant;

use bale::objects::{DosContainer, DosPacked};
use bale::{Error, ErrorKind};
use clap::Args;
use indicatif::ProgressBar;
use serde_json::{Value, json};

use super::{Access, open};
use crate::fail::{Failure, exit};
use crate::text::{grouped, human_bytes};
use crate::{Ctx, print_json, progress};

#[derive(Args, Debug)]
pub struct ImportDosArgs {
    /// The object store to copy into (a SHA-256 store keeps the ids).
    store: PathBuf,
    /// The disk-objectstore container directory (with config.json).
    container: PathBuf,
}

fn corrupt(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Corrupt, format!("disk-objectstore container: {what}"))
}

/// The container's layout from its config.json.
fn container(root: &std::path::Path) -> Result<DosContainer, Failure> {
    let path = root.join("config.json");
    let text = std::fs::read(&path).map_err(|e| Failure::io(format!("cannot read {}", path.display()), e))?;
    let v: Value = serde_json::from_slice(&text).map_err(|e| corrupt(format!("config.json is not JSON: {e}")))?;
    let field = |name: &str| v.get(name).ok_or_else(|| corrupt(format!("config.json has no {name}")));
    Ok(DosContainer {
        root: root.to_path_buf(),
        hash_type: field("hash_type")?.as_str().ok_or_else(|| corrupt("hash_type is not a string"))?.to_string(),
        loose_prefix_len: field("loose_prefix_len")?
            .as_u64()
            .filter(|n| *n <= 64)
            .ok_or_else(|| corrupt("loose_prefix_len is not a small number"))? as usize,
        compression: field("compression_algorithm")?
            .as_str()
            .ok_or_else(|| corrupt("compression_algorithm is not a string"))?
            .to_string(),
    })
}

fn sql(e: rusqlite::Error) -> Error {
    corrupt(format!("packs.idx: {e}"))
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DosPacked> {
    let n = |i: usize| -> rusqlite::Result<u64> {
        let v: i64 = r.get(i)?;
        u64::try_from(v).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(i, v))
    };
    Ok(DosPacked {
        hashkey: r.get(0)?,
        compressed: r.get(1)?,
        size: n(2)?,
        offset: n(3)?,
        length: n(4)?,
        pack_id: n(5)?,
    })
}

pub fn import_dos(ctx: &Ctx, a: ImportDosArgs) -> Result<u8, Failure> {
    let c = container(&a.container)?;
    let store = open(&a.store, Access::Write)?;
    let idx = a.container.join("packs.idx");
    let db = rusqlite::Connection::open_with_flags(
        &idx,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql)?;
    // Pack by pack, in offset order: the packs are read front to back.
    let mut stmt = db
        .prepare("SELECT hashkey, compressed, size, offset, length, pack_id FROM db_object ORDER BY pack_id, offset")
        .map_err(sql)?;
    let mut rows = stmt.query_map([], row).map_err(sql)?.map(|r| r.map_err(sql));
    let started = Instant::now();
    let pb = if ctx.json { ProgressBar::hidden() } else { progress::bar(0, "importing", false) };
    let r = store.import_disk_objectstore(&c, &mut rows, &mut |done, _| pb.set_position(done));
    pb.finish_and_clear();
    let r = r?;
    store.close()?;
    let secs = started.elapsed().as_secs_f64();
    if ctx.json {
        print_json(&json!({
            "container": a.container.display().to_string(),
            "store": a.store.display().to_string(),
            "objects_copied": r.objects_copied,
            "bytes_copied": r.bytes_copied,
            "objects_present": r.objects_present,
            "seconds": secs,
        }))?;
    } else {
        println!(
            "imported {} objects ({}) from {}, {} already there, {secs:.2} s",
            grouped(r.objects_copied),
            human_bytes(r.bytes_copied),
            a.container.display(),
            grouped(r.objects_present)
        );
    }
    Ok(exit::OK)
}
