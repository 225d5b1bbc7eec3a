//! `bale`: the command line of the bale store. Reads and writes keys,
//! bulk-loads, inspects, checks and compacts store files, works with object
//! stores (`bale obj`) and bitables (`bale bitable`), and runs quick
//! benchmarks. See `bale --help` for
//! the verbs and the exit codes.

mod admin;
mod bench;
mod bench_remote;
mod bitable;
mod fail;
mod inspect;
mod kv;
mod obj;
mod progress;
mod text;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use fail::{EXIT_CODES_HELP, Failure, exit};

#[derive(Parser, Debug)]
#[command(
    name = "bale",
    version,
    about = "Read, write, inspect, check and compact bale store files and object stores",
    long_about = "Read, write, inspect, check and compact bale store files and object stores.\n\n\
        A bale store is one file holding an ordered map of byte keys to byte \
        values (values may be many gigabytes; they are streamed). Every change \
        is one crash-safe transaction. An object store (`bale obj`) holds \
        immutable objects named by the hash of their content, deduplicated \
        in chunks and compressed. A bitable (`bale bitable`) is an immutable \
        sorted table, built once and read without locks.",
    after_help = EXIT_CODES_HELP,
    arg_required_else_help = true
)]
struct Cli {
    /// Print machine-readable JSON on stdout instead of text (errors too).
    #[arg(long, global = true)]
    json: bool,
    /// When another process is writing the store, wait for it instead of
    /// failing with exit code 4.
    #[arg(long, global = true)]
    wait: bool,
    /// Read with positioned reads instead of a memory map (for files that
    /// something else may truncate).
    #[arg(long, global = true)]
    no_mmap: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Put, get, remove, list and bulk-load keys.
    #[command(subcommand, after_help = EXIT_CODES_HELP)]
    Kv(kv::KvCommand),
    /// Add, get, list, remove, pack and validate objects of an object store.
    #[command(subcommand, after_help = EXIT_CODES_HELP)]
    Obj(obj::ObjCommand),
    /// Build, read, merge and check bitables (immutable sorted tables).
    #[command(subcommand, after_help = EXIT_CODES_HELP)]
    Bitable(bitable::BitableCommand),
    /// Show the size, shape and fill of a store.
    #[command(after_help = EXIT_CODES_HELP)]
    Stat(FileArg),
    /// Verify every page of a store; exits 3 when it finds problems.
    #[command(after_help = EXIT_CODES_HELP)]
    Check(FileArg),
    /// Rewrite a store without free space, shrinking the file.
    #[command(
        long_about = "Rewrite a store into a new file holding only live data, \
            then atomically replace the old file. The file shrinks after \
            deletes. Needs the writer lock (exit code 4 while another process \
            writes).",
        after_help = EXIT_CODES_HELP
    )]
    Compact(FileArg),
    /// Quick benchmarks of bale on this machine.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Open a store, bitable or object store in the browser inspector
    /// (served on 127.0.0.1; the file is read by the page, never uploaded).
    #[command(after_help = EXIT_CODES_HELP)]
    Inspect(inspect::InspectArgs),
}

#[derive(Args, Debug)]
struct FileArg {
    /// The store file.
    file: PathBuf,
}

/// Flags every verb sees.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    pub json: bool,
    pub wait: bool,
    pub mmap: bool,
}

/// How a verb opens its store.
#[derive(Debug, Clone, Copy)]
pub enum Access {
    Read,
    Write,
    /// Write, creating the file with this page size when it does not exist.
    Create(u32),
}

impl Ctx {
    pub fn open(&self, path: &Path, access: Access) -> Result<bale::Store, Failure> {
        let (create, readonly, page_size) = match access {
            Access::Read => (false, true, bale::Options::default().page_size),
            Access::Write => (false, false, bale::Options::default().page_size),
            Access::Create(ps) => (true, false, ps),
        };
        if !create && !path.exists() {
            return Err(Failure::not_found(format!(
                "{}: no such file (`bale kv put --create` or `bale kv load --create` makes one)",
                path.display()
            )));
        }
        let opts = bale::Options {
            create,
            readonly,
            page_size,
            mmap: self.mmap,
            wait_for_writer: self.wait,
            ..bale::Options::default()
        };
        bale::Store::open(path, opts).map_err(|e| {
            let mut f = Failure::from(e);
            f.message = format!("{}: {}", path.display(), f.message);
            f
        })
    }
}

/// Writes one JSON document as a line on stdout.
pub fn print_json(v: &serde_json::Value) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, v).map_err(|e| Failure::stdout(e.into()))?;
    out.write_all(b"\n").map_err(Failure::stdout)?;
    out.flush().map_err(Failure::stdout)
}

/// Parses `--page-size`: a power of two from 4096 to 65536.
pub fn page_size_arg(s: &str) -> Result<u32, String> {
    let n: u32 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if n.is_power_of_two() && (4096..=65536).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{n} is not a power of two from 4096 to 65536 (e.g. 4096, 16384, 65536)"))
    }
}

fn run(cli: Cli) -> Result<u8, Failure> {
    let ctx = Ctx { json: cli.json, wait: cli.wait, mmap: !cli.no_mmap };
    match cli.command {
        Command::Kv(cmd) => kv::run(&ctx, cmd),
        Command::Obj(cmd) => obj::run(&ctx, cmd),
        Command::Bitable(cmd) => bitable::run(&ctx, cmd),
        Command::Stat(a) => admin::stat(&ctx, &a.file),
        Command::Check(a) => admin::check(&ctx, &a.file),
        Command::Compact(a) => admin::compact(&ctx, &a.file),
        Command::Bench(cmd) => bench::run(&ctx, cmd),
        Command::Inspect(a) => inspect::run(&ctx, a),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // clap's code is 0 for --help and --version, 2 for usage errors.
            if e.exit_code() == 0 {
                return ExitCode::from(exit::OK);
            }
            if std::env::args_os().any(|a| a == "--json") {
                let rendered = e.to_string();
                let first = rendered.lines().next().unwrap_or("");
                let message = first.strip_prefix("error: ").unwrap_or(first);
                let _ = print_json(&serde_json::json!({
                    "error": { "code": "USAGE", "message": message, "exit": exit::USAGE }
                }));
            }
            return ExitCode::from(exit::USAGE);
        }
    };
    let json = cli.json;
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(f) if f.broken_pipe => ExitCode::from(exit::OK),
        Err(f) => {
            eprintln!("bale: {}: {}", f.code, f.message);
            if json {
                let v = serde_json::json!({
                    "error": { "code": f.code, "message": f.message, "exit": f.exit }
                });
                let _ = print_json(&v);
            }
            ExitCode::from(f.exit)
        }
    }
}
