//! `bale obj import-dos`: migrating a disk-objectstore container. The core
//! reads the container (its config.json and SQLite index) and checks and
//! adds the objects.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use indicatif::ProgressBar;
use serde_json::json;

use super::{Access, open, report_json};
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

pub fn import_dos(ctx: &Ctx, a: ImportDosArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Write)?;
    let started = Instant::now();
    let pb = if ctx.json { ProgressBar::hidden() } else { progress::bar(0, "importing", false) };
    let r = store.import_dos_container(&a.container, &mut |done, _| pb.set_position(done));
    pb.finish_and_clear();
    let r = r?;
    store.close()?;
    let secs = started.elapsed().as_secs_f64();
    if ctx.json {
        print_json(&report_json(
            &r.fields(),
            json!({
                "container": a.container.display().to_string(),
                "store": a.store.display().to_string(),
                "seconds": secs,
            }),
        ))?;
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
