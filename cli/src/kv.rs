//! `bale kv`: put, get, rm, ls and load.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufRead, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::Instant;

use bale::ReadOps;
use bale::btree::{OptionValue, RangeRequest, Step};
use clap::{Args, Subcommand};
use serde_json::json;

use crate::fail::{EXIT_CODES_HELP, Failure, exit};
use crate::text::{escape, human_bytes, key_arg, show_key, to_hex};
use crate::{Access, Ctx, page_size_arg, print_json, progress};

#[derive(Subcommand, Debug)]
pub enum KvCommand {
    /// Store one value under a key (from an argument, a file or stdin).
    #[command(
        long_about = "Store one value under KEY and commit.\n\n\
            The value is the VALUE argument, or with `-` everything read from \
            stdin, or with --file the contents of a file. Stdin and files are \
            streamed: values of any size are written in bounded memory.",
        after_help = EXIT_CODES_HELP
    )]
    Put(PutArgs),
    /// Write the value of a key to stdout (raw bytes, streamed).
    #[command(
        long_about = "Write the value of KEY to stdout as raw bytes, streamed in \
            bounded memory. --offset and --length read a byte range, touching \
            only the blocks that hold it.\n\n\
            A key that is not in the store is an error: `bale: NOT_FOUND: ...` \
            on stderr and exit code 1.",
        after_help = EXIT_CODES_HELP
    )]
    Get(GetArgs),
    /// Remove keys, in one transaction.
    #[command(
        long_about = "Remove each KEY, all in one transaction. Keys that are not \
            in the store are reported on stderr and are not an error.",
        after_help = EXIT_CODES_HELP
    )]
    Rm(RmArgs),
    /// List keys in order, by prefix or between bounds.
    #[command(
        long_about = "List keys in order, one per line. --prefix, --from/--after \
            and --to narrow the range (together, they intersect); --reverse, \
            --offset and --limit apply in that order. These are the range \
            rules of every bale package (RangeRequest in the core). Keys print as \
            text, with tab, newline, backslash, control characters escaped and \
            bytes that are not UTF-8 as \\xNN; --hex prints hex instead.\n\n\
            With --values each line is KEY<TAB>VALUE, the value escaped the \
            same way. With --json the output is one JSON object \
            {\"entries\": [{\"key\", \"key_hex\", \"size\", \"large\"[, \"value\" | \"value_hex\"]}], \"count\"}.",
        after_help = EXIT_CODES_HELP
    )]
    Ls(LsArgs),
    /// Bulk-load key/value lines from stdin in one transaction.
    #[command(
        long_about = "Read lines from stdin and store them all in one transaction, \
            with a progress bar when stderr is a terminal.\n\n\
            Default format: KEY<TAB>VALUE per line; the key ends at the first \
            tab, the value is the rest of the line (without the newline). \
            Empty lines are skipped.\n\
            With --jsonl: one JSON object per line, {\"key\": \"...\", \"value\": ...}; \
            a string value is stored as its UTF-8 bytes, any other JSON value \
            as its compact JSON text.\n\
            With --hex the keys are hex.\n\n\
            A malformed line aborts the load: nothing is written.",
        after_help = EXIT_CODES_HELP
    )]
    Load(LoadArgs),
}

#[derive(Args, Debug)]
pub struct KeyFormat {
    /// KEY arguments are hex, and keys print as hex.
    #[arg(long)]
    hex: bool,
}

#[derive(Args, Debug)]
pub struct CreateArgs {
    /// Create the store when the file does not exist.
    #[arg(long)]
    create: bool,
    /// Page size of a store made by --create (power of two, 4096..=65536).
    #[arg(long, value_name = "BYTES", default_value = "4096", value_parser = page_size_arg)]
    page_size: u32,
}

impl CreateArgs {
    fn access(&self) -> Access {
        if self.create { Access::Create(self.page_size) } else { Access::Write }
    }
}

#[derive(Args, Debug)]
pub struct PutArgs {
    /// The store file.
    file: PathBuf,
    /// The key.
    key: OsString,
    /// The value; `-` reads it from stdin.
    #[arg(required_unless_present = "from_file")]
    value: Option<OsString>,
    /// Read the value from this file (streamed).
    #[arg(long = "file", value_name = "PATH", conflicts_with = "value")]
    from_file: Option<PathBuf>,
    #[command(flatten)]
    create: CreateArgs,
    #[command(flatten)]
    fmt: KeyFormat,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// The store file.
    file: PathBuf,
    /// The key.
    key: OsString,
    /// First byte of the value to print.
    #[arg(long, default_value_t = 0)]
    offset: u64,
    /// Print at most this many bytes.
    #[arg(long)]
    length: Option<u64>,
    #[command(flatten)]
    fmt: KeyFormat,
}

#[derive(Args, Debug)]
pub struct RmArgs {
    /// The store file.
    file: PathBuf,
    /// The keys to remove.
    #[arg(required = true)]
    keys: Vec<OsString>,
    #[command(flatten)]
    fmt: KeyFormat,
}

#[derive(Args, Debug)]
pub struct LsArgs {
    /// The store file.
    file: PathBuf,
    /// Only keys starting with this prefix.
    #[arg(long)]
    prefix: Option<OsString>,
    /// Only keys >= this key (the range's gte).
    #[arg(long, value_name = "KEY")]
    from: Option<OsString>,
    /// Only keys > this key (gt; to page through a listing). Not with --from.
    #[arg(long, value_name = "KEY")]
    after: Option<OsString>,
    /// Only keys < this key (lt; lte with --to-inclusive).
    #[arg(long, value_name = "KEY")]
    to: Option<OsString>,
    /// Make --to inclusive.
    #[arg(long, requires = "to")]
    to_inclusive: bool,
    /// Descending order.
    #[arg(long)]
    reverse: bool,
    /// Skip the first N keys, counted in the listing's order.
    #[arg(long, value_name = "N", default_value_t = 0)]
    offset: u64,
    /// Print at most N keys (after --offset).
    #[arg(long, value_name = "N")]
    limit: Option<u64>,
    /// Print values too (KEY<TAB>VALUE). Each value is read whole: for
    /// multi-gigabyte values use `kv get`, which streams.
    #[arg(long)]
    values: bool,
    /// Print each value's size before the key, with `L` for values stored
    /// out of line.
    #[arg(short, long)]
    long: bool,
    #[command(flatten)]
    fmt: KeyFormat,
}

#[derive(Args, Debug)]
pub struct LoadArgs {
    /// The store file.
    file: PathBuf,
    /// Lines are JSON objects {"key": ..., "value": ...} instead of KEY<TAB>VALUE.
    #[arg(long)]
    jsonl: bool,
    #[command(flatten)]
    create: CreateArgs,
    #[command(flatten)]
    fmt: KeyFormat,
}

pub fn run(ctx: &Ctx, cmd: KvCommand) -> Result<u8, Failure> {
    match cmd {
        KvCommand::Put(a) => put(ctx, a),
        KvCommand::Get(a) => get(ctx, a),
        KvCommand::Rm(a) => rm(ctx, a),
        KvCommand::Ls(a) => ls(ctx, a),
        KvCommand::Load(a) => load(ctx, a),
    }
}

/// Files at least this big get a progress bar.
const BAR_MIN_BYTES: u64 = 8 << 20;

fn put(ctx: &Ctx, a: PutArgs) -> Result<u8, Failure> {
    let key = key_arg(&a.key, a.fmt.hex)?;
    // Open the input before the store, so a bad path changes nothing.
    let input = match &a.from_file {
        Some(p) => Some(File::open(p).map_err(|e| Failure::io(p.display(), e))?),
        None => None,
    };
    let store = ctx.open(&a.file, a.create.access())?;
    let mut w = store.write()?;
    let written = match (input, &a.value) {
        (Some(f), _) => {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            let pb =
                if len >= BAR_MIN_BYTES { progress::bar(len, "put", true) } else { indicatif::ProgressBar::hidden() };
            let n = w.put_stream(&key, &mut pb.wrap_read(f));
            pb.finish_and_clear();
            n?
        }
        (None, Some(v)) if v == "-" => {
            let pb = progress::spinner("put", true);
            let n = w.put_stream(&key, &mut pb.wrap_read(io::stdin().lock()));
            pb.finish_and_clear();
            n?
        }
        (None, Some(v)) => {
            let v = v.as_encoded_bytes();
            w.put(&key, v)?;
            v.len() as u64
        }
        (None, None) => return Err(Failure::usage("give a VALUE, `-` for stdin, or --file PATH")),
    };
    w.commit()?;
    if ctx.json {
        print_json(&json!({
            "key": show_key(&key, a.fmt.hex),
            "key_hex": to_hex(&key),
            "bytes": written,
        }))?;
    }
    Ok(exit::OK)
}

fn get(ctx: &Ctx, a: GetArgs) -> Result<u8, Failure> {
    let key = key_arg(&a.key, a.fmt.hex)?;
    let store = ctx.open(&a.file, Access::Read)?;
    let r = store.read()?;
    let Some(v) = r.get(&key)? else {
        return Err(Failure::not_found(format!(
            "key \"{}\" is not in {}",
            show_key(&key, a.fmt.hex),
            a.file.display()
        )));
    };
    let mut reader = v.reader();
    if a.offset > 0 {
        reader.seek(SeekFrom::Start(a.offset.min(v.len()))).map_err(|e| Failure::io("cannot seek in the value", e))?;
    }
    let mut reader = reader.take(a.length.unwrap_or(u64::MAX));
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    copy(&mut reader, &mut out)?;
    out.flush().map_err(Failure::stdout)?;
    Ok(exit::OK)
}

/// Copies a value to an output, telling read errors (the store) from
/// write errors (stdout).
fn copy(from: &mut dyn Read, to: &mut dyn Write) -> Result<u64, Failure> {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_failure(e)),
        };
        to.write_all(&buf[..n]).map_err(Failure::stdout)?;
        total += n as u64;
    }
}

/// A read error of a value or object stream: the core's error when it
/// carries one.
pub fn read_failure(e: io::Error) -> Failure {
    let core = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<bale::Error>())
        .map(|be| Failure::new(be.code(), be.message(), crate::fail::exit_for(be.kind())));
    core.unwrap_or_else(|| Failure::io("reading the value", e))
}

fn rm(ctx: &Ctx, a: RmArgs) -> Result<u8, Failure> {
    let keys = a.keys.iter().map(|k| key_arg(k, a.fmt.hex)).collect::<Result<Vec<_>, _>>()?;
    let store = ctx.open(&a.file, Access::Write)?;
    let mut w = store.write()?;
    let mut removed = 0u64;
    let mut missing = Vec::new();
    for k in &keys {
        if w.delete(k)? {
            removed += 1;
        } else {
            missing.push(show_key(k, a.fmt.hex));
        }
    }
    w.commit()?;
    if ctx.json {
        print_json(&json!({ "removed": removed, "missing": missing }))?;
    } else {
        for m in &missing {
            eprintln!("bale: key \"{m}\" was not in the store");
        }
    }
    Ok(exit::OK)
}

fn ls(ctx: &Ctx, a: LsArgs) -> Result<u8, Failure> {
    let hex = a.fmt.hex;
    let opt = |o: &Option<OsString>| o.as_ref().map(|k| key_arg(k, hex)).transpose();
    let (to, to_name) = (opt(&a.to)?, if a.to_inclusive { "lte" } else { "lt" });
    let mut req = RangeRequest { reverse: a.reverse, limit: a.limit, offset: a.offset, ..RangeRequest::default() };
    for (name, k) in [("prefix", opt(&a.prefix)?), ("gte", opt(&a.from)?), ("gt", opt(&a.after)?), (to_name, to)] {
        if let Some(k) = k {
            req.set(name, OptionValue::Bytes(k))?;
        }
    }
    let mut scan = req.scan()?;
    let store = ctx.open(&a.file, Access::Read)?;
    let r = store.read()?;
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut count = 0u64;
    if ctx.json {
        out.write_all(b"{\"entries\":[").map_err(Failure::stdout)?;
    }
    scan.run(&r, |k, v| {
        let value = if a.values { Some(v.to_vec()?) } else { None };
        if ctx.json {
            let mut entry = json!({
                "key": show_key(k, hex),
                "key_hex": to_hex(k),
                "size": v.len(),
                "large": v.is_large(),
            });
            if let Some(val) = value {
                match String::from_utf8(val) {
                    Ok(s) => entry["value"] = json!(s),
                    Err(e) => entry["value_hex"] = json!(to_hex(e.as_bytes())),
                }
            }
            if count > 0 {
                out.write_all(b",").map_err(Failure::stdout)?;
            }
            serde_json::to_writer(&mut out, &entry).map_err(|e| Failure::stdout(e.into()))?;
        } else {
            let mut line = String::new();
            if a.long {
                let mark = if v.is_large() { "L" } else { " " };
                line.push_str(&format!("{:>12} {mark} ", v.len()));
            }
            line.push_str(&show_key(k, hex));
            if let Some(val) = value {
                line.push('\t');
                line.push_str(&escape(&val));
            }
            line.push('\n');
            out.write_all(line.as_bytes()).map_err(Failure::stdout)?;
        }
        count += 1;
        Ok::<_, Failure>(Step::Next)
    })?;
    if ctx.json {
        writeln!(out, "],\"count\":{count}}}").map_err(Failure::stdout)?;
    }
    out.flush().map_err(Failure::stdout)?;
    Ok(exit::OK)
}

/// One key/value record of a load, parsed from a line.
pub(crate) fn parse_line(line: &[u8], jsonl: bool, hex: bool, lineno: u64) -> Result<(Vec<u8>, Vec<u8>), Failure> {
    let bad = |what: String| Failure::invalid(format!("stdin line {lineno}: {what}"));
    if !jsonl {
        let Some(tab) = line.iter().position(|&b| b == b'\t') else {
            return Err(bad("no tab between key and value".into()));
        };
        let key = &line[..tab];
        let key = if hex {
            let text = std::str::from_utf8(key).unwrap_or("");
            crate::text::from_hex(text).ok_or_else(|| bad(format!("key {:?} is not hex", escape(key))))?
        } else {
            key.to_vec()
        };
        return Ok((key, line[tab + 1..].to_vec()));
    }
    let v: serde_json::Value = serde_json::from_slice(line).map_err(|e| bad(format!("not JSON: {e}")))?;
    let Some(key) = v.get("key").and_then(|k| k.as_str()) else {
        return Err(bad("no string \"key\" field".into()));
    };
    let key = if hex {
        crate::text::from_hex(key).ok_or_else(|| bad(format!("key {key:?} is not hex")))?
    } else {
        key.as_bytes().to_vec()
    };
    let value = match v.get("value") {
        Some(serde_json::Value::String(s)) => s.clone().into_bytes(),
        Some(other) => other.to_string().into_bytes(),
        None => return Err(bad("no \"value\" field".into())),
    };
    Ok((key, value))
}

fn load(ctx: &Ctx, a: LoadArgs) -> Result<u8, Failure> {
    let started = Instant::now();
    let store = ctx.open(&a.file, a.create.access())?;
    let mut w = store.write()?;
    let pb = progress::spinner("loading", false);
    let mut input = io::stdin().lock();
    let mut line = Vec::new();
    let (mut lineno, mut entries, mut bytes) = (0u64, 0u64, 0u64);
    loop {
        line.clear();
        let n = input.read_until(b'\n', &mut line).map_err(|e| Failure::io("cannot read stdin", e))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if line.is_empty() {
            continue;
        }
        let (k, v) = parse_line(&line, a.jsonl, a.fmt.hex, lineno)?;
        w.put(&k, &v)?;
        entries += 1;
        bytes += (k.len() + v.len()) as u64;
        if entries.is_multiple_of(4096) {
            pb.set_position(entries);
        }
    }
    pb.set_message("committing");
    w.commit()?;
    pb.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    if ctx.json {
        print_json(&json!({
            "file": a.file.display().to_string(),
            "entries": entries,
            "bytes": bytes,
            "seconds": secs,
        }))?;
    } else {
        println!(
            "loaded {} entries ({} of keys and values) into {} in {secs:.2} s",
            crate::text::grouped(entries),
            human_bytes(bytes),
            a.file.display()
        );
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse() {
        let (k, v) = parse_line(b"a/b\t{\"x\":\t1}", false, false, 1).unwrap();
        assert_eq!((k.as_slice(), v.as_slice()), (&b"a/b"[..], &b"{\"x\":\t1}"[..]));
        let (k, v) = parse_line(b"6162\tv", false, true, 1).unwrap();
        assert_eq!((k.as_slice(), v.as_slice()), (&b"ab"[..], &b"v"[..]));
        assert!(parse_line(b"nokey", false, false, 3).unwrap_err().message.contains("line 3"));
        let (k, v) = parse_line(br#"{"key":"k","value":{"n":1}}"#, true, false, 1).unwrap();
        assert_eq!((k.as_slice(), v.as_slice()), (&b"k"[..], &br#"{"n":1}"#[..]));
        let (_, v) = parse_line(br#"{"key":"k","value":"text"}"#, true, false, 1).unwrap();
        assert_eq!(v, b"text");
        assert!(parse_line(br#"{"value":1}"#, true, false, 1).is_err());
    }
}
