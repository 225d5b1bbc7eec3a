//! `bale obj`: the content-addressed object store (FORMAT.md, "Object
//! store"). This file holds the verbs, how they open a store, and `init`;
//! `obj/add.rs` adds, `obj/read.rs` reads, `obj/maint.rs` inspects and
//! maintains, `obj/transfer.rs` copies between stores.

mod add;
mod dos;
mod maint;
mod read;
mod remote;
mod transfer;

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
    /// Add files (or stdin with `-`), or a directory tree, as objects.
    #[command(
        long_about = "Add each FILE (`-` is stdin) as one object and print its id, \
            one line per input in the order given. Inputs are streamed: objects \
            larger than the store's largest chunk are split into chunks, and \
            chunks already stored are not stored again. All inputs are made \
            durable together, at the end; if one fails, none is added. Files \
            go straight into a pack unless another process is packing; stdin \
            goes to a staging file, for `obj pack`.\n\n\
            Given one directory DIR instead, every regular file below it is \
            added (committed in steps), and with --paths each file's path \
            relative to DIR is put in a tree store with its id (raw id bytes) \
            as the value. Symbolic links and special files are never followed \
            or opened: they fail the add, or with --skip-links are left out and \
            listed.\n\n\
            With --json: {\"objects\": [{\"path\", \"id\", \"size\"}], \"count\", \"bytes\"}; \
            for a directory {\"dir\", \"files\", \"bytes\", \"dirs\", \"skipped\", \"paths\", \"seconds\"}.",
        after_help = EXIT_CODES_HELP
    )]
    Add(add::AddArgs),
    /// Write an object to stdout or to a file (-o), streamed.
    #[command(
        long_about = "Write the content of object ID to stdout, or with -o to a new \
            file OUT, streamed in bounded memory. -o refuses an existing OUT \
            unless --force, and never follows a symbolic link at OUT (not even \
            with --force). A failed read removes the partial OUT.\n\n\
            An id that is not in the store is NOT_FOUND (exit code 1).",
        after_help = EXIT_CODES_HELP
    )]
    Get(read::GetArgs),
    /// Write objects to stdout, one after the other.
    #[command(after_help = EXIT_CODES_HELP)]
    Cat(read::CatArgs),
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
    Ls(read::LsArgs),
    /// Remove objects; their space is reclaimed by `obj repack`.
    #[command(
        long_about = "Remove each object ID, in one commit. Ids that are not in \
            the store are reported on stderr and are not an error. Chunks the \
            objects shared with others stay; the space is reclaimed by `obj \
            repack`. Needs the store to itself: exit code 4 (LOCKED) while \
            another process has it open for writing.",
        after_help = EXIT_CODES_HELP
    )]
    Rm(maint::RmArgs),
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
    /// Pack, remove leftovers of interrupted operations, compact the index.
    #[command(
        long_about = "Pack what no writer holds, remove files left by interrupted \
            creation, rebuild or cleaning, and compact the index. Needs the store \
            to itself: exit code 4 (LOCKED) while another process has it open \
            for writing. A single-file store only has its unused chunks dropped \
            (compact the file with `bale compact`).",
        after_help = EXIT_CODES_HELP
    )]
    Clean(StoreArg),
    /// Copy objects (all, or the ids given) into another store.
    #[command(
        long_about = "Copy the objects ID... (every object when none is given) from \
            STORE into DEST, skipping those DEST has. Each object is verified \
            against its id on the way and chunked with DEST's parameters. Both \
            stores must use the same hash. --create makes DEST with STORE's \
            parameters when it does not exist.",
        after_help = EXIT_CODES_HELP
    )]
    Export(transfer::ExportArgs),
    /// Copy objects (all, or the ids given) from another store.
    #[command(
        long_about = "Copy the objects ID... (every object when none is given) from \
            SRC into STORE, skipping those STORE has; as `obj export SRC STORE`.",
        after_help = EXIT_CODES_HELP
    )]
    Import(transfer::ImportArgs),
    /// Copy every object of a disk-objectstore container into the store.
    #[command(
        name = "import-dos",
        long_about = "Copy the objects of a disk-objectstore container (its loose \
            objects, and the packed objects its SQLite index packs.idx lists) into \
            STORE, skipping those STORE has. Each object is checked against its \
            SHA-256 key; a damaged container stops the import (CHECKSUM_MISMATCH), \
            and links inside it are refused. A SHA-256 store keeps the container's \
            ids (create it with `bale obj init STORE --hash sha256`).",
        after_help = EXIT_CODES_HELP
    )]
    ImportDos(dos::ImportDosArgs),
    /// Manage remotes: S3-compatible buckets (or folders) shared by many machines.
    #[command(subcommand)]
    Remote(remote::RemoteCommand),
    /// Send the objects a remote lacks, in new packs, in one commit.
    #[command(
        long_about = "Send to remote NAME the objects of STORE it lacks (every object, \
            or the ids given): only the records the remote does not hold (chunks \
            shared with what it has are not sent), in packs of 32 MiB, then one \
            conditional PUT of the remote's manifest. Pushes from many machines \
            at once all land: a refused commit reads the manifest again, merges \
            and retries. Needs GET and PUT permission only.\n\n\
            With --json: {\"objects_sent\", \"objects_present\", \"records_sent\", \
            \"bytes_sent\", \"packs\", \"revived\", \"attempts\", \"generation\", \
            \"seconds\", \"traffic\"}.",
        after_help = EXIT_CODES_HELP
    )]
    Push(remote::PushArgs),
    /// Copy the objects a remote has and the store lacks (--lazy: only its index).
    #[command(
        long_about = "Copy into STORE every object of remote NAME it lacks, \
            downloading each pack that holds a record it needs; every record is \
            checked against its id, and an object appears only once all its \
            chunks are stored. With --lazy, only the manifest and the pack \
            indexes are fetched (kept in STORE/remotes/NAME/); objects then come \
            on demand by range reads: `obj fetch`, or `obj get --remote NAME`.",
        after_help = EXIT_CODES_HELP
    )]
    Pull(remote::PullArgs),
    /// Fetch some objects from a remote by range reads.
    #[command(after_help = EXIT_CODES_HELP)]
    Fetch(remote::FetchArgs),
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

pub fn run(ctx: &Ctx, cmd: ObjCommand) -> Result<u8, Failure> {
    match cmd {
        ObjCommand::Init(a) => init(ctx, a),
        ObjCommand::Add(a) => add::add(ctx, a),
        ObjCommand::Get(a) => read::get(ctx, a),
        ObjCommand::Cat(a) => read::cat(ctx, a),
        ObjCommand::Ls(a) => read::ls(ctx, a),
        ObjCommand::Rm(a) => maint::rm(ctx, a),
        ObjCommand::Stat(a) => maint::stat(ctx, a),
        ObjCommand::Pack(a) => maint::pack(ctx, &a.store),
        ObjCommand::Repack(a) => maint::repack(ctx, a),
        ObjCommand::Validate(a) => maint::validate(ctx, a),
        ObjCommand::Repair(a) => maint::repair(ctx, a),
        ObjCommand::Clean(a) => maint::clean(ctx, &a.store),
        ObjCommand::Export(a) => transfer::export(ctx, a),
        ObjCommand::Import(a) => transfer::import(ctx, a),
        ObjCommand::ImportDos(a) => dos::import_dos(ctx, a),
        ObjCommand::Remote(c) => remote::run(ctx, c),
        ObjCommand::Push(a) => remote::push(ctx, a),
        ObjCommand::Pull(a) => remote::pull(ctx, a),
        ObjCommand::Fetch(a) => remote::fetch(ctx, a),
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
    let store = ObjectStore::open(path, opts).map_err(|e| store_failure(path, e))?;
    // Every command says so (on stderr, so that --json output stays whole):
    // objects may be missing from the index without any read failing.
    if let Some(w) = store.index_warning().filter(|_| access != Access::Repair) {
        eprintln!("bale: warning: {w}");
    }
    Ok(store)
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

/// Inputs of this many bytes and more get a progress bar.
const BAR_MIN_BYTES: u64 = 8 << 20;

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
            "config": config_json(&store),
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

/// The parameters of a store, as `init` and `stat` print them (the
/// compression policy is the current one: `repack` may change it).
/// A report as JSON: its counts (the core's list of them) and `more`.
fn report_json(counts: &[(&'static str, u64)], more: serde_json::Value) -> serde_json::Value {
    let mut m: serde_json::Map<String, serde_json::Value> =
        counts.iter().map(|&(k, v)| (k.to_string(), v.into())).collect();
    if let serde_json::Value::Object(more) = more {
        m.extend(more);
    }
    serde_json::Value::Object(m)
}

fn config_json(store: &ObjectStore) -> serde_json::Value {
    let c = store.config();
    json!({
        "hash": c.hash.name(),
        "compression": store.compression().name(),
        "chunk_min": c.chunk_min,
        "chunk_avg": c.chunk_avg,
        "chunk_max": c.chunk_max,
        "pack_target": c.pack_target,
        "fanout": c.fanout,
    })
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
