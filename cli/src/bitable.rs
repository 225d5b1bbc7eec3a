//! `bale bitable`: build, get, scan, merge, export, stat and check
//! immutable sorted tables.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bale::bitable::{
    Bitable, BuildOptions, BuildSummary, Completion, Compression, OnDuplicate, OpenOptions, SortOptions,
    UnsortedWriter, Value, Writer, export_tree_into, merge_into,
};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

use crate::fail::{EXIT_CODES_HELP, Failure, exit};
use crate::text::{escape, grouped, human_bytes, key_arg, show_key, to_hex};
use crate::{Access, Ctx, page_size_arg, print_json, progress};

#[derive(Subcommand, Debug)]
pub enum BitableCommand {
    /// Build a table from key/value records (sorted, or any order with --unsorted).
    #[command(
        long_about = "Build a table at OUT from records read from INPUT (or stdin with `-` \
            or no INPUT), with a progress display when stderr is a terminal.\n\n\
            Formats (--format):\n  \
            tsv     KEY<TAB>VALUE per line; the value is the rest of the line\n  \
            jsonl   {\"key\": \"...\", \"value\": ...} per line; a string value is \
            stored as its UTF-8 bytes, any other JSON value as its compact JSON text\n  \
            binary  records of a 4-byte little-endian key length, the key, an \
            8-byte little-endian value length and the value (values of any size, \
            streamed)\n\
            With --hex, tsv and jsonl keys are hex.\n\n\
            Keys must come in strictly ascending byte order unless --unsorted is \
            given: then records are sorted in runs of at most --memory bytes \
            and merged. OUT appears only when the build is complete (it is \
            written beside OUT and renamed); --fast skips the syncs (for tables \
            used within one boot).",
        after_help = EXIT_CODES_HELP
    )]
    Build(BuildArgs),
    /// Write the value of a key (or of the pair at an ordinal) to stdout, streamed.
    #[command(after_help = EXIT_CODES_HELP)]
    Get(GetArgs),
    /// List pairs in order, by prefix, between bounds or from an ordinal.
    #[command(
        long_about = "List keys in key order, one per line: --prefix, --from/--after and \
            --to narrow the range, --ordinal starts at the pair with that rank, \
            --reverse walks backwards, --limit stops after N. With --values each \
            line is KEY<TAB>VALUE (escaped as in `kv ls`); with --ranks each \
            line starts with the pair's ordinal. With --json the output is \
            {\"entries\": [{\"key\", \"key_hex\", \"ordinal\", \"size\", \"large\"[, \"value\" | \"value_hex\"]}], \"count\"}.",
        after_help = EXIT_CODES_HELP
    )]
    Scan(ScanArgs),
    /// Merge tables into one; of equal keys the last table's pair wins (or an error).
    #[command(after_help = EXIT_CODES_HELP)]
    Merge(MergeArgs),
    /// Write every pair of a tree store into a new table.
    #[command(after_help = EXIT_CODES_HELP)]
    Export(ExportArgs),
    /// Show the size, levels and fill of a table.
    #[command(after_help = EXIT_CODES_HELP)]
    Stat(TableArg),
    /// Verify every page, key order, the index and every large value; exits 3 on problems.
    #[command(after_help = EXIT_CODES_HELP)]
    Check(TableArg),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    Tsv,
    Jsonl,
    Binary,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Duplicates {
    /// The pair added (or the table given) last is kept.
    Newest,
    /// A key seen twice is an error.
    Error,
}

impl Duplicates {
    fn policy(self) -> OnDuplicate {
        match self {
            Duplicates::Newest => OnDuplicate::NewestWins,
            Duplicates::Error => OnDuplicate::Error,
        }
    }
}

#[derive(Args, Debug)]
pub struct LayoutArgs {
    /// Page size of the table (power of two, 4096..=65536); keys may be a quarter of it.
    #[arg(long, value_name = "BYTES", default_value = "4096", value_parser = page_size_arg)]
    page_size: u32,
    /// Start keys and values at multiples of this (power of two, 1..=256).
    #[arg(long, value_name = "BYTES", default_value = "1")]
    align: u32,
    /// Skip the syncs: a crash of the machine may lose the table (it never opens damaged).
    #[arg(long)]
    fast: bool,
}

impl LayoutArgs {
    fn options(&self) -> BuildOptions {
        BuildOptions { page_size: self.page_size, align: self.align, compression: Compression::Auto }
    }

    fn completion(&self) -> Completion {
        if self.fast { Completion::Fast } else { Completion::Durable }
    }
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The table to write (replaced when it exists).
    out: PathBuf,
    /// The records; `-` or nothing reads stdin.
    input: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "tsv")]
    format: Format,
    /// Tsv and jsonl keys are hex.
    #[arg(long)]
    hex: bool,
    /// Records come in any order: sort them in bounded memory.
    #[arg(long)]
    unsorted: bool,
    /// Memory for sorting with --unsorted (K, M or G suffix).
    #[arg(long, value_name = "BYTES", default_value = "64M", value_parser = size_arg)]
    memory: u64,
    /// With --unsorted, what a key given twice means.
    #[arg(long, value_enum, default_value = "newest")]
    duplicates: Duplicates,
    #[command(flatten)]
    layout: LayoutArgs,
}

#[derive(Args, Debug)]
pub struct TableArg {
    /// The table file.
    table: PathBuf,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// The table file.
    table: PathBuf,
    /// The key.
    #[arg(required_unless_present = "ordinal")]
    key: Option<OsString>,
    /// The pair at this ordinal (0 is the first key) instead of a key.
    #[arg(long, conflicts_with = "key")]
    ordinal: Option<u64>,
    /// Write the value to this file instead of stdout.
    #[arg(short, long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// KEY is hex.
    #[arg(long)]
    hex: bool,
}

#[derive(Args, Debug)]
pub struct ScanArgs {
    /// The table file.
    table: PathBuf,
    #[arg(long)]
    prefix: Option<OsString>,
    /// Start at this key (inclusive).
    #[arg(long, conflicts_with_all = ["after", "ordinal"])]
    from: Option<OsString>,
    /// Start after this key.
    #[arg(long, conflicts_with = "ordinal")]
    after: Option<OsString>,
    /// Stop before this key.
    #[arg(long)]
    to: Option<OsString>,
    /// Start at the pair with this ordinal.
    #[arg(long)]
    ordinal: Option<u64>,
    #[arg(long)]
    reverse: bool,
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
    /// Print values too.
    #[arg(long)]
    values: bool,
    /// Start each line with the pair's ordinal.
    #[arg(long)]
    ranks: bool,
    /// Keys (arguments and output) are hex.
    #[arg(long)]
    hex: bool,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The table to write.
    out: PathBuf,
    /// The tables to merge, oldest first.
    #[arg(required = true, num_args = 1..)]
    inputs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "newest")]
    duplicates: Duplicates,
    #[command(flatten)]
    layout: LayoutArgs,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The tree store to read.
    tree: PathBuf,
    /// The table to write.
    out: PathBuf,
    #[command(flatten)]
    layout: LayoutArgs,
}

/// Parses a size with an optional K, M or G suffix (powers of 1024).
pub fn size_arg(s: &str) -> Result<u64, String> {
    let (num, shift) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 10),
        Some((i, 'm' | 'M')) => (&s[..i], 20),
        Some((i, 'g' | 'G')) => (&s[..i], 30),
        _ => (s, 0),
    };
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size (e.g. 64M)"))?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("{s} is too large"))
}

pub fn run(ctx: &Ctx, cmd: BitableCommand) -> Result<u8, Failure> {
    match cmd {
        BitableCommand::Build(a) => build(ctx, a),
        BitableCommand::Get(a) => get(ctx, a),
        BitableCommand::Scan(a) => scan(ctx, a),
        BitableCommand::Merge(a) => merge(ctx, a),
        BitableCommand::Export(a) => export(ctx, a),
        BitableCommand::Stat(a) => stat(ctx, &a.table),
        BitableCommand::Check(a) => check(ctx, &a.table),
    }
}

fn open(ctx: &Ctx, path: &Path) -> Result<Bitable, Failure> {
    Bitable::open(path, OpenOptions { mmap: ctx.mmap }).map_err(|e| {
        let mut f = Failure::from(e);
        f.message = format!("{}: {}", path.display(), f.message);
        f
    })
}

/// Where a build's records go.
enum Sink {
    Sorted(Box<Writer>),
    Unsorted(UnsortedWriter),
}

impl Sink {
    fn add(&mut self, key: &[u8], value: &[u8]) -> bale::Result<()> {
        match self {
            Sink::Sorted(w) => w.append(key, value),
            Sink::Unsorted(w) => w.add(key, value),
        }
    }

    fn add_reader(&mut self, key: &[u8], value: &mut dyn Read) -> bale::Result<()> {
        match self {
            Sink::Sorted(w) => w.append_reader(key, value),
            Sink::Unsorted(w) => w.add_reader(key, value),
        }
    }

    fn finish(self, c: Completion) -> bale::Result<BuildSummary> {
        match self {
            Sink::Sorted(w) => w.finish(c),
            Sink::Unsorted(w) => w.finish(c),
        }
    }
}

fn input(path: &Option<PathBuf>) -> Result<Box<dyn BufRead>, Failure> {
    match path {
        Some(p) if p.as_os_str() != "-" => {
            let f = File::open(p).map_err(|e| Failure::io(p.display(), e))?;
            Ok(Box::new(BufReader::with_capacity(1 << 20, f)))
        }
        _ => Ok(Box::new(BufReader::with_capacity(1 << 20, io::stdin()))),
    }
}

/// Reads one binary record's key; `None` at a clean end of input.
fn binary_key(r: &mut dyn BufRead, n: u64) -> Result<Option<(Vec<u8>, u64)>, Failure> {
    let bad = |what: &str| Failure::invalid(format!("record {n}: {what}"));
    let mut len4 = [0u8; 4];
    match r.read(&mut len4[..1]).map_err(|e| Failure::io("cannot read the input", e))? {
        0 => return Ok(None),
        _ => r.read_exact(&mut len4[1..]).map_err(|_| bad("the input ends inside a key length"))?,
    }
    let klen = u32::from_le_bytes(len4) as usize;
    if klen > 65536 {
        return Err(bad(&format!("key length {klen} is above any table's limit")));
    }
    let mut key = vec![0u8; klen];
    r.read_exact(&mut key).map_err(|_| bad("the input ends inside a key"))?;
    let mut len8 = [0u8; 8];
    r.read_exact(&mut len8).map_err(|_| bad("the input ends inside a value length"))?;
    Ok(Some((key, u64::from_le_bytes(len8))))
}

fn build(ctx: &Ctx, a: BuildArgs) -> Result<u8, Failure> {
    let started = Instant::now();
    let opts = a.layout.options();
    let mut sink = if a.unsorted {
        let sort = SortOptions { memory_budget: a.memory, on_duplicate: a.duplicates.policy() };
        Sink::Unsorted(UnsortedWriter::create(&a.out, opts, sort)?)
    } else {
        Sink::Sorted(Box::new(Writer::create(&a.out, opts)?))
    };
    let mut r = input(&a.input)?;
    let pb = progress::spinner("building", false);
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut line = Vec::new();
    let hint = |e: bale::Error| {
        let mut f = Failure::from(e);
        if !a.unsorted && f.message.contains("ascending") {
            f.message.push_str(" (pass --unsorted for input in any order)");
        }
        f
    };
    loop {
        match a.format {
            Format::Binary => {
                let Some((key, vlen)) = binary_key(&mut *r, n + 1)? else { break };
                let mut value = (&mut *r).take(vlen);
                sink.add_reader(&key, &mut value).map_err(hint)?;
                if value.limit() > 0 {
                    return Err(Failure::invalid(format!("record {}: the input ends inside a value", n + 1)));
                }
                bytes += key.len() as u64 + vlen;
            }
            Format::Tsv | Format::Jsonl => {
                line.clear();
                if r.read_until(b'\n', &mut line).map_err(|e| Failure::io("cannot read the input", e))? == 0 {
                    break;
                }
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if line.is_empty() {
                    continue;
                }
                let (k, v) = crate::kv::parse_line(&line, matches!(a.format, Format::Jsonl), a.hex, n + 1)?;
                sink.add(&k, &v).map_err(hint)?;
                bytes += (k.len() + v.len()) as u64;
            }
        }
        n += 1;
        if n.is_multiple_of(16384) {
            pb.set_position(n);
        }
    }
    pb.set_message(if a.unsorted { "merging" } else { "finishing" });
    let s = sink.finish(a.layout.completion())?;
    let json = json!({
        "table": a.out.display().to_string(),
        "records": n,
        "entries": s.entries,
        "bytes": bytes,
        "file_bytes": s.file_bytes,
        "depth": s.depth,
        "durable": !a.layout.fast,
    });
    report_written(ctx, pb, started, json, |secs| {
        format!(
            "built {} with {} pairs from {} records ({} of keys and values, {} on disk) in {secs:.2} s",
            a.out.display(),
            grouped(s.entries),
            grouped(n),
            human_bytes(bytes),
            human_bytes(s.file_bytes)
        )
    })
}

/// The end of a command that wrote a table: the progress bar cleared, then
/// `json` (with the seconds taken) under `--json`, else `text(seconds)`.
fn report_written(
    ctx: &Ctx,
    pb: indicatif::ProgressBar,
    started: Instant,
    mut json: serde_json::Value,
    text: impl FnOnce(f64) -> String,
) -> Result<u8, Failure> {
    pb.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    if ctx.json {
        json["seconds"] = json!(secs);
        print_json(&json)?;
    } else {
        println!("{}", text(secs));
    }
    Ok(exit::OK)
}

fn get(ctx: &Ctx, a: GetArgs) -> Result<u8, Failure> {
    let t = open(ctx, &a.table)?;
    let cursor = match (&a.key, a.ordinal) {
        (_, Some(n)) => Some(t.select(n)?).filter(|c| c.valid()),
        (Some(k), None) => t.find(&key_arg(k, a.hex)?)?,
        (None, None) => return Err(Failure::usage("give a KEY or --ordinal")),
    };
    let Some(c) = cursor else {
        return Err(match (&a.key, a.ordinal) {
            (_, Some(n)) => Failure::not_found(format!("no pair at ordinal {n}: the table holds {}", t.len())),
            (Some(k), _) => {
                Failure::not_found(format!("key {} is not in the table", show_key(&key_arg(k, a.hex)?, a.hex)))
            }
            _ => Failure::usage("give a KEY or --ordinal"),
        });
    };
    let Some(value) = c.value()? else { return Err(Failure::not_found("no such pair")) };
    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(BufWriter::new(File::create(p).map_err(|e| Failure::io(p.display(), e))?)),
        None => Box::new(BufWriter::new(io::stdout().lock())),
    };
    let n = match value {
        Value::Inline(v) => {
            out.write_all(&v).map_err(Failure::stdout)?;
            v.len() as u64
        }
        Value::Large(v) => io::copy(&mut v.reader(), &mut out).map_err(|e| match e.into_inner() {
            Some(inner) => match inner.downcast::<bale::Error>() {
                Ok(be) => Failure::from(*be),
                Err(other) => Failure::io("cannot write the value", io::Error::other(other)),
            },
            None => Failure::io("cannot write the value", io::Error::other("write failed")),
        })?,
    };
    out.flush().map_err(Failure::stdout)?;
    drop(out);
    if ctx.json && a.output.is_some() {
        print_json(&json!({ "ordinal": c.ordinal(), "bytes": n }))?;
    }
    Ok(exit::OK)
}

fn scan(ctx: &Ctx, a: ScanArgs) -> Result<u8, Failure> {
    let t = open(ctx, &a.table)?;
    let arg = |k: &Option<OsString>| k.as_ref().map(|k| key_arg(k, a.hex)).transpose();
    let (prefix, from, after, to) = (arg(&a.prefix)?, arg(&a.from)?, arg(&a.after)?, arg(&a.to)?);
    // The range: the tighter of each bound.
    let mut lo: Bound<Vec<u8>> = match (&from, &after) {
        (Some(k), _) => Bound::Included(k.clone()),
        (None, Some(k)) => Bound::Excluded(k.clone()),
        _ => Bound::Unbounded,
    };
    let mut hi: Bound<Vec<u8>> = to.map(Bound::Excluded).unwrap_or(Bound::Unbounded);
    if let Some(p) = &prefix {
        let above = |b: &Bound<Vec<u8>>| match b {
            Bound::Included(k) | Bound::Excluded(k) => k < p,
            Bound::Unbounded => true,
        };
        if above(&lo) {
            lo = Bound::Included(p.clone());
        }
        if let Some(end) = bale::bitable::prefix_end(p) {
            let below = match &hi {
                Bound::Excluded(k) | Bound::Included(k) => *k > end,
                Bound::Unbounded => true,
            };
            if below {
                hi = Bound::Excluded(end);
            }
        }
    }
    let mut empty = false;
    if let Some(n) = a.ordinal {
        match t.select(n)?.key() {
            Some(k) if a.reverse => hi = Bound::Included(k.to_vec()),
            Some(k) => lo = Bound::Included(k.to_vec()),
            None => empty = true,
        }
    }
    let (l, h) = (lo.as_ref().map(Vec::as_slice), hi.as_ref().map(Vec::as_slice));
    let mut range = if a.reverse { t.range_rev(l, h)? } else { t.range(l, h)? };
    let mut out = BufWriter::new(io::stdout().lock());
    if ctx.json {
        write!(out, "{{\"entries\":[").map_err(Failure::stdout)?;
    }
    let mut count = 0u64;
    while !empty && a.limit.is_none_or(|l| count < l) {
        let Some((ordinal, key, value)) = range.next_with_ordinal()? else { break };
        let (size, large) = (value.len(), matches!(value, Value::Large(_)));
        let bytes = if a.values { Some(value.to_vec(64 << 20)?) } else { None };
        if ctx.json {
            let mut e = json!({
                "key": String::from_utf8_lossy(key),
                "key_hex": to_hex(key),
                "ordinal": ordinal,
                "size": size,
                "large": large,
            });
            if let Some(v) = &bytes {
                match std::str::from_utf8(v) {
                    Ok(s) => e["value"] = json!(s),
                    Err(_) => e["value_hex"] = json!(to_hex(v)),
                }
            }
            let sep = if count == 0 { "" } else { "," };
            write!(out, "{sep}{e}").map_err(Failure::stdout)?;
        } else {
            if a.ranks {
                write!(out, "{ordinal}\t").map_err(Failure::stdout)?;
            }
            write!(out, "{}", show_key(key, a.hex)).map_err(Failure::stdout)?;
            if let Some(v) = &bytes {
                write!(out, "\t{}", escape(v)).map_err(Failure::stdout)?;
            }
            writeln!(out).map_err(Failure::stdout)?;
        }
        count += 1;
    }
    if ctx.json {
        writeln!(out, "],\"count\":{count}}}").map_err(Failure::stdout)?;
    }
    out.flush().map_err(Failure::stdout)?;
    Ok(exit::OK)
}

fn merge(ctx: &Ctx, a: MergeArgs) -> Result<u8, Failure> {
    let started = Instant::now();
    let inputs = a.inputs.iter().map(|p| open(ctx, p)).collect::<Result<Vec<_>, _>>()?;
    let total: u64 = inputs.iter().map(Bitable::len).sum();
    let mut w = Writer::create(&a.out, a.layout.options())?;
    let pb = progress::busy(&format!("merging {} pairs", grouped(total)));
    merge_into(&inputs, &mut w, a.duplicates.policy())?;
    let s = w.finish(a.layout.completion())?;
    let json = json!({
        "table": a.out.display().to_string(),
        "inputs": a.inputs.len(),
        "input_pairs": total,
        "entries": s.entries,
        "file_bytes": s.file_bytes,
    });
    report_written(ctx, pb, started, json, |secs| {
        format!(
            "merged {} tables ({} pairs) into {} with {} pairs in {secs:.2} s",
            a.inputs.len(),
            grouped(total),
            a.out.display(),
            grouped(s.entries)
        )
    })
}

fn export(ctx: &Ctx, a: ExportArgs) -> Result<u8, Failure> {
    let started = Instant::now();
    let store = ctx.open(&a.tree, Access::Read)?;
    let mut w = Writer::create(&a.out, a.layout.options())?;
    let pb = progress::busy("exporting");
    export_tree_into(&store, &mut w).map_err(|e| {
        let mut f = Failure::from(e);
        if f.code == "TOO_LARGE" {
            f.message.push_str(" (a larger --page-size allows longer keys)");
        }
        f
    })?;
    let s = w.finish(a.layout.completion())?;
    let json = json!({
        "table": a.out.display().to_string(),
        "entries": s.entries,
        "file_bytes": s.file_bytes,
        "depth": s.depth,
    });
    report_written(ctx, pb, started, json, |secs| {
        format!(
            "exported {} pairs of {} into {} ({}) in {secs:.2} s",
            grouped(s.entries),
            a.tree.display(),
            a.out.display(),
            human_bytes(s.file_bytes)
        )
    })
}

fn stat(ctx: &Ctx, path: &Path) -> Result<u8, Failure> {
    let t = open(ctx, path)?;
    let s = t.stats()?;
    if ctx.json {
        print_json(&json!({
            "table": path.display().to_string(),
            "entries": s.entries,
            "page_size": s.page_size,
            "align": s.align,
            "depth": s.depth,
            "leaf_pages": s.leaf_pages,
            "branch_pages": s.branch_pages,
            "level_pages": s.level_pages,
            "leaf_fill": s.leaf_fill,
            "branch_fill": s.branch_fill,
            "large_values": s.large_values,
            "value_region_bytes": s.value_region_bytes,
            "file_bytes": s.file_bytes,
            "key_bytes": s.key_bytes,
            "value_bytes": s.value_bytes,
            "longest_key": s.longest_key,
            "completion": s.completion,
        }))?;
        return Ok(exit::OK);
    }
    let levels: Vec<String> = s.level_pages.iter().map(|n| grouped(*n)).collect();
    let rows = [
        ("table", format!("{} ({})", path.display(), human_bytes(s.file_bytes))),
        ("pairs", grouped(s.entries)),
        ("pages", format!("{} bytes, keys and values aligned to {}", grouped(u64::from(s.page_size)), s.align)),
        ("depth", s.depth.to_string()),
        (
            "pages per level",
            if levels.is_empty() { "-".into() } else { format!("{} (leaves first)", levels.join(", ")) },
        ),
        ("leaf fill", format!("{:.1}%", s.leaf_fill * 100.0)),
        ("branch fill", format!("{:.1}%", s.branch_fill * 100.0)),
        ("keys", format!("{} (longest {} bytes)", human_bytes(s.key_bytes), s.longest_key)),
        ("values", human_bytes(s.value_bytes)),
        ("large values", format!("{} in {}", grouped(s.large_values), human_bytes(s.value_region_bytes))),
        ("completion", s.completion.to_string()),
    ];
    for (k, v) in rows {
        println!("{k:<16} {v}");
    }
    Ok(exit::OK)
}

fn check(ctx: &Ctx, path: &Path) -> Result<u8, Failure> {
    let started = Instant::now();
    let t = open(ctx, path)?;
    let pb = progress::bar(0, "checking", false);
    let report = t.check(&mut |done, all| {
        pb.set_length(all);
        pb.set_position(done);
    })?;
    pb.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    let code = if report.is_ok() { exit::OK } else { exit::CORRUPT };
    if ctx.json {
        let problems: Vec<_> =
            report.problems.iter().map(|p| json!({ "page": p.page, "code": p.code, "message": p.message })).collect();
        print_json(&json!({
            "table": path.display().to_string(),
            "ok": report.is_ok(),
            "pages_checked": report.pages_checked,
            "entries_checked": report.entries_checked,
            "large_values_checked": report.large_values_checked,
            "problem_count": report.problem_count,
            "problems": problems,
            "seconds": secs,
        }))?;
        return Ok(code);
    }
    for p in &report.problems {
        match p.page {
            Some(page) => println!("page {page}: {}: {}", p.code, p.message),
            None => println!("{}: {}", p.code, p.message),
        }
    }
    if report.is_ok() {
        println!(
            "ok: {} pages, {} pairs, {} large values checked in {secs:.2} s",
            grouped(report.pages_checked),
            grouped(report.entries_checked),
            grouped(report.large_values_checked)
        );
    } else {
        println!("{} problems found in {}", grouped(report.problem_count), path.display());
    }
    Ok(code)
}
