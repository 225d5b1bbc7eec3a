//! `bale obj get`, `cat` and `ls`.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::ProgressBar;
use serde_json::json;

use super::{Access, BAR_MIN_BYTES, bytes_bar, open, parse_id};
use crate::fail::{Failure, exit};
use crate::{Ctx, print_json};

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
    /// Fetch the object from this remote first if the store lacks it.
    #[arg(long, value_name = "NAME")]
    remote: Option<String>,
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

pub fn get(ctx: &Ctx, a: GetArgs) -> Result<u8, Failure> {
    let access = if a.remote.is_some() { Access::Write } else { Access::Read };
    let store = open(&a.store, access)?;
    let id = parse_id(&store, &a.id)?;
    if let Some(name) = &a.remote {
        super::remote::fetch_missing(&store, &a.store, name, &id)?;
    }
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

/// Opens OUT for writing without ever following a symbolic link there
/// (`no_follow`), and without `force` only as a new file (which refuses any
/// existing name, dangling links included).
fn create_output(path: &Path, force: bool) -> Result<File, Failure> {
    let shown = path.display();
    let link = || Failure::new("IO", format!("{shown}: is a symbolic link; refusing to write through it"), exit::ERROR);
    let mut o = OpenOptions::new();
    o.write(true);
    no_follow(&mut o);
    if force {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    let f = o.open(path).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            return Failure::new(
                "IO",
                format!("{shown}: exists; pass --force to replace it (a symbolic link is never followed)"),
                exit::ERROR,
            );
        }
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return link();
        }
        Failure::io(path.display(), e)
    })?;
    if opened_a_link(&f) {
        return Err(link());
    }
    Ok(f)
}

/// O_NOFOLLOW: opening a link fails with ELOOP.
#[cfg(unix)]
fn no_follow(o: &mut OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    o.custom_flags(libc::O_NOFOLLOW);
}

#[cfg(unix)]
fn opened_a_link(_: &File) -> bool {
    false
}

/// FILE_FLAG_OPEN_REPARSE_POINT: a link is opened itself, never its target,
/// and then refused (what --force truncated is the link's own empty data).
#[cfg(windows)]
fn no_follow(o: &mut OpenOptions) {
    use std::os::windows::fs::OpenOptionsExt;
    o.custom_flags(windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT);
}

#[cfg(windows)]
fn opened_a_link(f: &File) -> bool {
    use std::os::windows::fs::MetadataExt;
    f.metadata()
        .is_ok_and(|m| m.file_attributes() & windows_sys::Win32::Storage::FileSystem::FILE_ATTRIBUTE_REPARSE_POINT != 0)
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

pub fn cat(_ctx: &Ctx, a: CatArgs) -> Result<u8, Failure> {
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

pub fn ls(ctx: &Ctx, a: LsArgs) -> Result<u8, Failure> {
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
