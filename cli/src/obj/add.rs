//! `bale obj add`: files, stdin, or a directory tree.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use bale::objects::{AddTreeOptions, LinkPolicy};
use clap::Args;
use indicatif::ProgressBar;
use serde_json::json;

use super::{Access, BAR_MIN_BYTES, bytes_bar, open, report_json, store_failure};
use crate::fail::{Failure, exit};
use crate::text::{grouped, human_bytes};
use crate::{Ctx, print_json, progress};

#[derive(Args, Debug)]
pub struct AddArgs {
    /// The object store.
    store: PathBuf,
    /// Files to add (`-` reads one object from stdin), or one directory.
    #[arg(required = true, value_name = "FILE|DIR")]
    inputs: Vec<PathBuf>,
    /// With a directory: record each file's path (relative to DIR) and id in
    /// this tree store, created when missing.
    #[arg(long, value_name = "TREESTORE")]
    paths: Option<PathBuf>,
    /// With a directory: leave out symbolic links and special files (listed
    /// on stderr) instead of failing on the first one.
    #[arg(long)]
    skip_links: bool,
}

/// A reader that counts the bytes it passed on.
struct Counted<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        Ok(n)
    }
}

fn is_stdin(p: &Path) -> bool {
    p.as_os_str() == "-"
}

pub fn add(ctx: &Ctx, a: AddArgs) -> Result<u8, Failure> {
    let dirs = a.inputs.iter().filter(|p| !is_stdin(p) && p.is_dir()).count();
    if dirs > 0 {
        if a.inputs.len() > 1 {
            return Err(Failure::usage("a directory is added on its own: give one DIR, or files"));
        }
        return add_tree(ctx, &a);
    }
    if a.paths.is_some() || a.skip_links {
        return Err(Failure::usage("--paths and --skip-links go with a directory"));
    }
    if a.inputs.iter().filter(|p| is_stdin(p)).count() > 1 {
        return Err(Failure::usage("`-` (stdin) may be given once"));
    }
    // Every input is looked at before the store is touched, so that a
    // mistyped path adds nothing.
    let mut total = 0u64;
    for p in a.inputs.iter().filter(|p| !is_stdin(p)) {
        total += std::fs::metadata(p).map_err(|e| Failure::io(p.display(), e))?.len();
    }
    let store = open(&a.store, Access::Write)?;
    // Files are read to their end at once: their records may go straight
    // into a pack (holding the packer lock meanwhile). Stdin may take any
    // time, so it goes through a staging file like every other writer's.
    let reads_stdin = a.inputs.iter().any(|p| is_stdin(p));
    let mut batch = if reads_stdin { store.batch()? } else { store.batch_packed()? };
    let pb = if reads_stdin {
        if ctx.json { ProgressBar::hidden() } else { progress::spinner("adding", true) }
    } else if total >= BAR_MIN_BYTES {
        bytes_bar(ctx, total, "adding")
    } else {
        ProgressBar::hidden()
    };
    let mut added = Vec::with_capacity(a.inputs.len());
    for p in &a.inputs {
        let (id, size) = if is_stdin(p) {
            let mut r = Counted { inner: pb.wrap_read(io::stdin().lock()), n: 0 };
            (batch.add_reader(&mut r)?, r.n)
        } else {
            let f = File::open(p).map_err(|e| Failure::io(p.display(), e))?;
            let mut r = Counted { inner: pb.wrap_read(f), n: 0 };
            let id = batch.add_reader(&mut r).map_err(|e| input_failure(p, e))?;
            (id, r.n)
        };
        added.push((p, id, size));
    }
    pb.set_message("committing");
    let committed = batch.commit();
    pb.finish_and_clear();
    committed?;
    store.close()?;
    if ctx.json {
        let objects: Vec<_> = added
            .iter()
            .map(|(p, id, size)| json!({ "path": p.display().to_string(), "id": id.to_hex(), "size": size }))
            .collect();
        let bytes: u64 = added.iter().map(|x| x.2).sum();
        print_json(&json!({ "objects": objects, "count": added.len(), "bytes": bytes }))?;
    } else {
        let mut out = BufWriter::new(io::stdout().lock());
        for (_, id, _) in &added {
            writeln!(out, "{id}").map_err(Failure::stdout)?;
        }
        out.flush().map_err(Failure::stdout)?;
    }
    Ok(exit::OK)
}

/// An error while adding one input, naming the input when it was its I/O.
fn input_failure(p: &Path, e: bale::Error) -> Failure {
    let mut f = Failure::from(e);
    if f.code == "IO" {
        f.message = format!("{}: {}", p.display(), f.message);
    }
    f
}

fn add_tree(ctx: &Ctx, a: &AddArgs) -> Result<u8, Failure> {
    let dir = &a.inputs[0];
    let store = open(&a.store, Access::Write)?;
    if let Some(p) = &a.paths
        && same_file(p, &a.store)
    {
        return Err(Failure::invalid(format!("--paths {}: that is the object store itself", p.display())));
    }
    let paths = match &a.paths {
        Some(p) => Some(ctx.open(p, crate::Access::Create(bale::Options::default().page_size))?),
        None => None,
    };
    let opts = AddTreeOptions { links: if a.skip_links { LinkPolicy::Skip } else { LinkPolicy::Refuse } };
    let started = Instant::now();
    let pb = if ctx.json { ProgressBar::hidden() } else { progress::spinner("adding", true) };
    let r = store.add_tree(dir, &opts, paths.as_ref(), &mut |done, _| pb.set_position(done));
    pb.finish_and_clear();
    let r = r.map_err(|e| store_failure(dir, e))?;
    store.close()?;
    let secs = started.elapsed().as_secs_f64();
    if ctx.json {
        print_json(&report_json(
            &r.fields(),
            json!({
                "dir": dir.display().to_string(),
                "skipped": r.skipped,
                "paths": a.paths.as_ref().map(|p| p.display().to_string()),
                "seconds": secs,
            }),
        ))?;
        return Ok(exit::OK);
    }
    for s in &r.skipped {
        eprintln!("bale: skipped {s}: a link or special file");
    }
    let mut line = format!(
        "added {} files ({}) from {} directories of {} in {secs:.2} s",
        grouped(r.files),
        human_bytes(r.bytes),
        grouped(r.dirs),
        dir.display()
    );
    if let Some(p) = &a.paths {
        line.push_str(&format!("; their paths and ids are in {}", p.display()));
    }
    println!("{line}");
    Ok(exit::OK)
}

/// Whether two paths name one existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
