//! `bale obj export` and `import`: copying objects between stores.

use std::path::{Path, PathBuf};
use std::time::Instant;

use bale::objects::{ObjectOptions, ObjectStore, TransferReport};
use clap::Args;
use indicatif::ProgressBar;
use serde_json::json;

use super::{Access, open, parse_id, report_json, store_failure};
use crate::fail::{Failure, exit};
use crate::text::{grouped, human_bytes};
use crate::{Ctx, print_json, progress};

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The object store to copy from.
    store: PathBuf,
    /// The object store to copy into.
    dest: PathBuf,
    /// The objects to copy (hex ids); every object when none is given.
    ids: Vec<String>,
    /// Create DEST with STORE's parameters when it does not exist.
    #[arg(long)]
    create: bool,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The object store to copy into.
    store: PathBuf,
    /// The object store to copy from.
    src: PathBuf,
    /// The objects to copy (hex ids); every object when none is given.
    ids: Vec<String>,
}

pub fn export(ctx: &Ctx, a: ExportArgs) -> Result<u8, Failure> {
    let src = open(&a.store, Access::Read)?;
    let dest = if a.create && !a.dest.exists() {
        // The source's parameters; the new store gets an id of its own.
        let config = bale::objects::Config { compression: src.compression(), ..*src.config() };
        let opts =
            ObjectOptions { create: true, single_file: src.is_single_file(), config, ..ObjectOptions::default() };
        ObjectStore::open(&a.dest, opts).map_err(|e| store_failure(&a.dest, e))?
    } else {
        open(&a.dest, Access::Write)?
    };
    transfer(ctx, &src, &dest, &a.ids, (&a.store, &a.dest))
}

pub fn import(ctx: &Ctx, a: ImportArgs) -> Result<u8, Failure> {
    let dest = open(&a.store, Access::Write)?;
    let src = open(&a.src, Access::Read)?;
    transfer(ctx, &src, &dest, &a.ids, (&a.src, &a.store))
}

fn transfer(
    ctx: &Ctx,
    src: &ObjectStore,
    dest: &ObjectStore,
    ids: &[String],
    (from, to): (&Path, &Path),
) -> Result<u8, Failure> {
    let ids = ids.iter().map(|s| parse_id(src, s)).collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    let pb = if ctx.json { ProgressBar::hidden() } else { progress::bar(0, "copying", false) };
    let r = src.export_to(dest, if ids.is_empty() { None } else { Some(&ids) }, &mut |done, planned| {
        pb.set_length(planned);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    let r: TransferReport = r?;
    dest.close()?;
    let secs = started.elapsed().as_secs_f64();
    if ctx.json {
        print_json(&report_json(
            &r.fields(),
            json!({ "from": from.display().to_string(), "to": to.display().to_string(), "seconds": secs }),
        ))?;
    } else {
        println!(
            "copied {} objects ({}) from {} to {}, {} already there, {secs:.2} s",
            grouped(r.objects_copied),
            human_bytes(r.bytes_copied),
            from.display(),
            to.display(),
            grouped(r.objects_present)
        );
    }
    Ok(exit::OK)
}
