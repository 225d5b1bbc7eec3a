//! `bale obj`: the content-addressed object store (FORMAT.md, "Object
//! store"). This file holds the verbs and the ones that add and read
//! objects; `obj/maint.rs` the ones that inspect and maintain a store.

mod maint;

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use bale::objects::{Compression, Config, HashKind, ObjectId, ObjectOptions, ObjectStore};
use clap::{Args, Subcommand};
use indicatif::ProgressBar;
use serde_json::json;

use crate::fail::{EXIT_CODES_HELP, Failure, exit};
use crate::text::human_bytes;
use crate::{Ctx, print_json, progress};

#[derive(Subcommand, Debug)]
pub enum ObjCommand {
    /// Create an object store (a directory, or one file with --single-file).
    #[command(
        long_about = "Create an object store at STORE: a directory holding an index, \
            staging files and packs, or with --single-file one bale file holding \
            everything. Its hash, compression policy, chunk sizes and pack size \
            are fixed here; the defaults are blake3, auto, 16 KiB / 64 KiB / \
            256 KiB chunks and 1 GiB packs. Sizes take a K, M or G suffix \
            (powers of 1024). An existing store is an error.",
        after_help = EXIT_CODES_HELP
    )]
    Init(InitArgs),
    /// Add files (or stdin with `-`) as objects; prints one id per input.
    #[command(
        long_about = "Add each FILE (`-` is stdin) as one object and print its id, \
            one line per input in the order given. Inputs are streamed: objects \
            larger than the store's largest chunk are split into chunks, and \
            chunks already stored are not stored again. All inputs are made \
            durable together, at the end; if one fails, none is added.\n\n\
            With --json: {\"objects\": [{\"path\", \"id\", \"size\"}], \"count\", \"bytes\"}.",
        after_help = EXIT_CODES_HELP
    )]
    Add(AddArgs),
    /// Write an object to stdout or to a file (-o), streamed.
    #[command(
        long_about = "Write the content of object ID to stdout, or with -o to a new \
            file OUT, streamed in bounded memory. -o refuses an existing OUT \
            unless --force, and never follows a symbolic link at OUT (not even \
            with --force). A failed read removes the partial OUT.\n\n\
            An id that is not in the store is NOT_FOUND (exit code 1).",
        after_help = EXIT_CODES_HELP
    )]
    Get(GetArgs),
    /// Write objects to stdout, one after the other.
    #[command(after_help = EXIT_CODES_HELP)]
    Cat(CatArgs),
    /// List the ids of the objects, in id order.
    #[command(
        long_about = "List the id of every object, one per line, in id order. \
            --long adds each object's size, the bytes its top record takes on \
            disk (a chunked object's chunks may be shared and are counted by \
            `obj stat`), and flags: c chunked, p packed, z compressed.\n\n\
            With --json: {\"objects\": [{\"id\"[, \"size\", \"stored_size\", \
            \"chunked\", \"packed\", \"compressed\"]}], \"count\"}.",
        after_help = EXIT_CODES_HELP
    )]
    Ls(LsArgs),
    /// Remove objects; their space is reclaimed by `obj repack`.
    #[command(
        long_about = "Remove each object ID, in one commit. Ids that are not in \
            the store are reported on stderr and are not an error. Chunks the \
            objects shared with others stay; the space is reclaimed by `obj \
            repack`. Needs the store to itself: exit code 4 (LOCKED) while \
            another process has it open for writing.",
        after_help = EXIT_CODES_HELP
    )]
    Rm(RmArgs),
    /// Show a store's counts and sizes, or one object's.
    #[command(
        long_about = "Without ID: the store's parameters, its objects and their \
            bytes, the bytes its records take (saved: what deduplication and \
            compression saved together), records, chunks, records still in \
            staging files, and the files and bytes it takes on disk. With ID: \
            that object's size, stored size and flags.",
        after_help = EXIT_CODES_HELP
    )]
    Stat(maint::StatArgs),
    /// Move staged records into packs (runs beside writers).
    #[command(
        long_about = "Move the records of staging files that no writer holds any \
            more into numbered packs, removing each staging file once its \
            records are committed to a pack. Runs beside writers and readers; \
            a second packer gets exit code 4 (LOCKED). Directory stores only.",
        after_help = EXIT_CODES_HELP
    )]
    Pack(StoreArg),
    /// Rewrite packs without deleted data, optionally recompressing.
    #[command(
        long_about = "Pack, drop chunks no object uses any more, then rewrite each \
            pack holding garbage into new packs. With --compression every pack \
            is rewritten with that policy. Needs the store to itself: exit code \
            4 (LOCKED) while another process has it open for writing.",
        after_help = EXIT_CODES_HELP
    )]
    Repack(maint::RepackArgs),
    /// Rehash the stored data; exits 3 when it finds problems.
    #[command(
        long_about = "Read every record the index names, rehash it against its id, \
            check that records do not overlap and that every chunk an object \
            names exists. --sample checks only that share of the objects (by \
            id), with their chunks. Exit code 3 when problems are found, each \
            listed with the error code a read would give.",
        after_help = EXIT_CODES_HELP
    )]
    Validate(maint::ValidateArgs),
    /// Recreate a lost or damaged index from the packs and staging files.
    #[command(
        long_about = "With --rebuild-index: read every pack and staging file, keep \
            each record whose checksums and hash hold, and write a new index from \
            them. Damaged stretches are skipped and counted. Objects removed \
            since the last repack come back. Needs the store to itself (exit \
            code 4 otherwise). Directory stores only.",
        after_help = EXIT_CODES_HELP
    )]
    Repair(maint::RepairArgs),
}

#[derive(Args, Debug)]
pub struct StoreArg {
    /// The object store (a directory, or a file made with --single-file).
    store: PathBuf,
}

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Where to create the store.
    store: PathBuf,
    /// The hash that names objects.
    #[arg(long, value_parser = ["blake3", "sha256", "sha1"])]
    hash: Option<String>,
    /// Keep the whole store in one bale file instead of a directory.
    #[arg(long)]
    single_file: bool,
    /// When records are LZ4-compressed.
    #[arg(long, value_parser = ["auto", "never", "always"])]
    compression: Option<String>,
    /// Smallest chunk of a split object.
    #[arg(long, value_name = "BYTES", value_parser = size_arg)]
    chunk_min: Option<u64>,
    /// Average chunk size.
    #[arg(long, value_name = "BYTES", value_parser = size_arg)]
    chunk_avg: Option<u64>,
    /// Largest chunk; larger objects are split.
    #[arg(long, value_name = "BYTES", value_parser = size_arg)]
    chunk_max: Option<u64>,
    /// A pack is closed and the next one started past this size.
    #[arg(long, value_name = "BYTES", value_parser = size_arg)]
    pack_target: Option<u64>,
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// The object store.
    store: PathBuf,
    /// Files to add; `-` reads one object from stdin.
    #[arg(required = true, value_name = "FILE")]
    inputs: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// The object store.
    store: PathBuf,
    /// The object's id (hex).
    id: String,
    /// Write to this new file instead of stdout.
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    /// Replace OUT if it exists (a symbolic link at OUT is still refused).
    #[arg(long, requires = "output")]
    force: bool,
    /// Hash what is read and fail on data that does not match its id.
    #[arg(long)]
    verify: bool,
}

#[derive(Args, Debug)]
pub struct CatArgs {
    /// The object store.
    store: PathBuf,
    /// The objects' ids (hex).
    #[arg(required = true)]
    ids: Vec<String>,
    /// Hash what is read and fail on data that does not match its id.
    #[arg(long)]
    verify: bool,
}

#[derive(Args, Debug)]
pub struct LsArgs {
    /// The object store.
    store: PathBuf,
    /// Print each object's size, stored size and flags before its id.
    #[arg(short, long)]
    long: bool,
}

#[derive(Args, Debug)]
pub struct RmArgs {
    /// The object store.
    store: PathBuf,
    /// The ids of the objects to remove (hex).
    #[arg(required = true)]
    ids: Vec<String>,
}

pub fn run(ctx: &Ctx, cmd: ObjCommand) -> Result<u8, Failure> {
    match cmd {
        ObjCommand::Init(a) => init(ctx, a),
        ObjCommand::Add(a) => add(ctx, a),
        ObjCommand::Get(a) => get(ctx, a),
        ObjCommand::Cat(a) => cat(ctx, a),
        ObjCommand::Ls(a) => ls(ctx, a),
        ObjCommand::Rm(a) => rm(ctx, a),
        ObjCommand::Stat(a) => maint::stat(ctx, a),
        ObjCommand::Pack(a) => maint::pack(ctx, &a.store),
        ObjCommand::Repack(a) => maint::repack(ctx, a),
        ObjCommand::Validate(a) => maint::validate(ctx, a),
        ObjCommand::Repair(a) => maint::repair(ctx, a),
    }
}

/// How a verb opens its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Read-only: takes no locks, never waits.
    Read,
    Write,
    /// Writable, and opens even with a missing or unreadable index.
    Repair,
}

fn open(path: &Path, access: Access) -> Result<ObjectStore, Failure> {
    if !path.exists() {
        return Err(Failure::not_found(format!(
            "{}: no such object store (`bale obj init` makes one)",
            path.display()
        )));
    }
    let opts = ObjectOptions {
        readonly: access == Access::Read,
        repair: access == Access::Repair,
        ..ObjectOptions::default()
    };
    ObjectStore::open(path, opts).map_err(|e| store_failure(path, e))
}

/// A core error, naming the store unless the message already does.
fn store_failure(path: &Path, e: bale::Error) -> Failure {
    let mut f = Failure::from(e);
    let name = path.display().to_string();
    if !f.message.contains(&name) {
        f.message = format!("{name}: {}", f.message);
    }
    f
}

/// Parses an id given on the command line; a malformed one is a usage
/// error, as a bad `--hex` key is.
fn parse_id(store: &ObjectStore, text: &str) -> Result<ObjectId, Failure> {
    ObjectId::from_hex(store.hash_kind(), text).map_err(|e| Failure::usage(e.message()))
}

/// Parses a byte count: digits with an optional K, M or G (KiB, MiB, GiB).
pub fn size_arg(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("{s:?} is not a size: use a number of bytes, optionally with K, M or G")),
    };
    let n: u64 = digits.parse().map_err(|_| format!("{s:?} is not a size: use a number of bytes"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("{s:?} is too large"))
}

/// A progress bar over bytes, or a hidden one with --json (whose readers
/// want nothing but the document).
fn bytes_bar(ctx: &Ctx, len: u64, message: &str) -> ProgressBar {
    if ctx.json { ProgressBar::hidden() } else { progress::bar(len, message, true) }
}

fn init(ctx: &Ctx, a: InitArgs) -> Result<u8, Failure> {
    let mut config = Config::default();
    if let Some(h) = &a.hash {
        config.hash = HashKind::from_name(h)?;
    }
    if let Some(c) = &a.compression {
        config.compression = Compression::from_name(c)?;
    }
    let chunk = |v: Option<u64>, default: u32, name: &str| -> Result<u32, Failure> {
        match v {
            None => Ok(default),
            Some(n) => u32::try_from(n).map_err(|_| Failure::invalid(format!("--{name} {n} is too large"))),
        }
    };
    config.chunk_min = chunk(a.chunk_min, config.chunk_min, "chunk-min")?;
    config.chunk_avg = chunk(a.chunk_avg, config.chunk_avg, "chunk-avg")?;
    config.chunk_max = chunk(a.chunk_max, config.chunk_max, "chunk-max")?;
    config.pack_target = a.pack_target.unwrap_or(config.pack_target);
    // Checked before anything is created, so a bad size leaves no trace.
    config.validate()?;

    let path = &a.store;
    if path.exists() {
        // Opening it read-only tells an existing store (refused) from an
        // empty directory or an empty bale file (used).
        if ObjectStore::open(path, ObjectOptions { readonly: true, ..ObjectOptions::default() }).is_ok() {
            return Err(Failure::invalid(format!("{}: is an object store already", path.display())));
        }
        if a.single_file && path.is_dir() {
            return Err(Failure::invalid(format!("{}: --single-file, but it is a directory", path.display())));
        }
    }
    let opts = ObjectOptions { create: true, single_file: a.single_file, config, ..ObjectOptions::default() };
    let store = ObjectStore::open(path, opts).map_err(|e| store_failure(path, e))?;
    store.close()?;
    let c = store.config();
    if ctx.json {
        print_json(&json!({
            "store": path.display().to_string(),
            "single_file": store.is_single_file(),
            "config": config_json(c),
        }))?;
    } else {
        let layout = if store.is_single_file() { "single-file" } else { "directory" };
        println!(
            "created {layout} object store {}: {}, compression {}, chunks {}/{}/{}, packs of {}",
            path.display(),
            c.hash.name(),
            c.compression.name(),
            human_bytes(c.chunk_min as u64),
            human_bytes(c.chunk_avg as u64),
            human_bytes(c.chunk_max as u64),
            human_bytes(c.pack_target)
        );
    }
    Ok(exit::OK)
}

/// The parameters of a store, as `init` and `stat` print them.
fn config_json(c: &Config) -> serde_json::Value {
    json!({
        "hash": c.hash.name(),
        "compression": c.compression.name(),
        "chunk_min": c.chunk_min,
        "chunk_avg": c.chunk_avg,
        "chunk_max": c.chunk_max,
        "pack_target": c.pack_target,
        "fanout": c.fanout,
    })
}

/// Inputs of this many bytes and more get a progress bar.
const BAR_MIN_BYTES: u64 = 8 << 20;

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

fn add(ctx: &Ctx, a: AddArgs) -> Result<u8, Failure> {
    if a.inputs.iter().filter(|p| is_stdin(p)).count() > 1 {
        return Err(Failure::usage("`-` (stdin) may be given once"));
    }
    // Every input is looked at before the store is touched, so that a
    // mistyped path adds nothing.
    let mut total = 0u64;
    for p in a.inputs.iter().filter(|p| !is_stdin(p)) {
        let m = std::fs::metadata(p).map_err(|e| Failure::io(p.display(), e))?;
        if m.is_dir() {
            return Err(Failure::invalid(format!("{}: is a directory; give the files in it", p.display())));
        }
        total += m.len();
    }
    let store = open(&a.store, Access::Write)?;
    let mut batch = store.batch()?;
    let pb = if a.inputs.iter().any(|p| is_stdin(p)) {
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

fn get(ctx: &Ctx, a: GetArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Read)?;
    let id = parse_id(&store, &a.id)?;
    // The object is looked up before OUT is created: a missing id leaves
    // no empty file behind.
    let mut reader = store.reader(&id)?;
    reader.set_verify(a.verify);
    let size = reader.len();
    let Some(out_path) = &a.output else {
        let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
        copy(&mut reader, &mut out, None)?;
        out.flush().map_err(Failure::stdout)?;
        return Ok(exit::OK);
    };
    let file = create_output(out_path, a.force)?;
    let pb = if size >= BAR_MIN_BYTES { bytes_bar(ctx, size, "get") } else { ProgressBar::hidden() };
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let written = copy(&mut pb.wrap_read(reader), &mut out, Some(out_path))
        .and_then(|n| out.flush().map(|_| n).map_err(|e| Failure::io(out_path.display(), e)));
    pb.finish_and_clear();
    let written = match written {
        Ok(n) => n,
        Err(f) => {
            // A partial object is worse than none.
            drop(out);
            let _ = std::fs::remove_file(out_path);
            return Err(f);
        }
    };
    if ctx.json {
        print_json(&json!({ "id": id.to_hex(), "size": written, "path": out_path.display().to_string() }))?;
    }
    Ok(exit::OK)
}

/// Opens OUT for writing without ever following a symbolic link there:
/// O_NOFOLLOW, and without `force` O_EXCL (which refuses any existing
/// name, dangling links included).
fn create_output(path: &Path, force: bool) -> Result<File, Failure> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = OpenOptions::new();
    o.write(true).custom_flags(libc::O_NOFOLLOW);
    if force {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    o.open(path).map_err(|e| {
        let shown = path.display();
        match e.raw_os_error() {
            Some(libc::EEXIST) => Failure::new(
                "IO",
                format!("{shown}: exists; pass --force to replace it (a symbolic link is never followed)"),
                exit::ERROR,
            ),
            Some(libc::ELOOP) => {
                Failure::new("IO", format!("{shown}: is a symbolic link; refusing to write through it"), exit::ERROR)
            }
            _ => Failure::io(shown, e),
        }
    })
}

/// Copies an object to an output, telling read errors (the store) from
/// write errors (stdout, or the file `out`).
fn copy(from: &mut dyn Read, to: &mut dyn Write, out: Option<&Path>) -> Result<u64, Failure> {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(crate::kv::read_failure(e)),
        };
        to.write_all(&buf[..n]).map_err(|e| match out {
            Some(p) => Failure::io(p.display(), e),
            None => Failure::stdout(e),
        })?;
        total += n as u64;
    }
}

fn cat(_ctx: &Ctx, a: CatArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Read)?;
    let ids = a.ids.iter().map(|s| parse_id(&store, s)).collect::<Result<Vec<_>, _>>()?;
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    for id in &ids {
        let mut reader = store.reader(id)?;
        reader.set_verify(a.verify);
        copy(&mut reader, &mut out, None)?;
    }
    out.flush().map_err(Failure::stdout)?;
    Ok(exit::OK)
}

fn ls(ctx: &Ctx, a: LsArgs) -> Result<u8, Failure> {
    let store = open(&a.store, Access::Read)?;
    let ids = store.ids()?;
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut count = 0u64;
    if ctx.json {
        out.write_all(b"{\"objects\":[").map_err(Failure::stdout)?;
    }
    for id in &ids {
        let meta = if a.long {
            match store.meta(id) {
                Ok(m) => Some(m),
                // Removed since the listing was taken.
                Err(e) if e.kind() == bale::ErrorKind::NotFound => continue,
                Err(e) => return Err(e.into()),
            }
        } else {
            None
        };
        if ctx.json {
            let mut v = json!({ "id": id.to_hex() });
            if let Some(m) = meta {
                v["size"] = json!(m.size);
                v["stored_size"] = json!(m.stored_size);
                v["chunked"] = json!(m.chunked);
                v["packed"] = json!(m.packed);
                v["compressed"] = json!(m.compressed);
            }
            if count > 0 {
                out.write_all(b",").map_err(Failure::stdout)?;
            }
            serde_json::to_writer(&mut out, &v).map_err(|e| Failure::stdout(e.into()))?;
        } else if let Some(m) = meta {
            let flag = |on: bool, c: char| if on { c } else { '-' };
            writeln!(
                out,
                "{:>14} {:>14} {}{}{} {id}",
                m.size,
                m.stored_size,
                flag(m.chunked, 'c'),
                flag(m.packed, 'p'),
                flag(m.compressed, 'z')
            )
            .map_err(Failure::stdout)?;
        } else {
            writeln!(out, "{id}").map_err(Failure::stdout)?;
        }
        count += 1;
    }
    if ctx.json {
        writeln!(out, "],\"count\":{count}}}").map_err(Failure::stdout)?;
    }
    out.flush().map_err(Failure::stdout)?;
    Ok(exit::OK)
}

fn rm(ctx: &Ctx, a: RmArgs) -> Result<u8, Failure> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(size_arg("4096"), Ok(4096));
        assert_eq!(size_arg("64K"), Ok(64 << 10));
        assert_eq!(size_arg("64KiB"), Ok(64 << 10));
        assert_eq!(size_arg("2m"), Ok(2 << 20));
        assert_eq!(size_arg("1G"), Ok(1 << 30));
        assert!(size_arg("").is_err());
        assert!(size_arg("12X").is_err());
        assert!(size_arg("K").is_err());
        assert!(size_arg("99999999999999999999G").is_err());
    }
}
