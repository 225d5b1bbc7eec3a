//! `bale inspect [PATH]`: serves the browser inspector (embedded in the
//! binary with the `inspector` feature) on 127.0.0.1 and opens it. A file
//! given on the command line, or an object store's folder, is served beside
//! it with range requests, so the page reads only the pages it shows, as it
//! does from a web server.
//!
//! The server answers only this machine (it binds 127.0.0.1) and only
//! requests addressed to it by that name (the Host check keeps other web
//! pages from reaching it through DNS rebinding), and serves nothing but
//! the page and the one file named, or of the folder named only the files
//! an object store has (FORMAT.md, "Directory layout").

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clap::Args;

use crate::Ctx;
use crate::fail::{Failure, exit};

mod assets {
    include!(concat!(env!("OUT_DIR"), "/inspector_assets.rs"));
}

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// A store file, bitable or object store folder to open in the page
    /// (served to the page only, with range requests).
    path: Option<PathBuf>,
    /// Port on 127.0.0.1; 0 takes any free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Print the address only; do not start a browser.
    #[arg(long)]
    no_open: bool,
}

/// Longest request head accepted (request line and headers).
const MAX_HEAD: usize = 16 * 1024;
/// Connections served at once; more are closed (a browser opens a few).
const MAX_CONNECTIONS: usize = 64;
/// An idle keep-alive connection is closed after this long.
const IDLE: Duration = Duration::from_secs(60);
/// File bytes sent per write.
const SEND: usize = 256 * 1024;

/// What the command line named, and the URL path it is served under.
enum Served {
    /// `/files/<name>`.
    File { url: String, file: File, len: u64 },
    /// `/files/<name>/`, followed by the name of one of the store's files.
    Folder { url: String, dir: PathBuf },
}

impl Served {
    fn url(&self) -> &str {
        match self {
            Served::File { url, .. } | Served::Folder { url, .. } => url,
        }
    }
}

struct Server {
    port: u16,
    served: Option<Served>,
    connections: AtomicUsize,
}

pub fn run(ctx: &Ctx, args: InspectArgs) -> Result<u8, Failure> {
    if assets::ASSETS.is_empty() {
        return Err(Failure::invalid(
            "this bale was built without the browser inspector: build it with `cargo build -p bale-cli --features inspector` after `make wasm-pkg`",
        ));
    }
    let served = args.path.as_deref().map(serve_file).transpose()?;
    let listener =
        TcpListener::bind(("127.0.0.1", args.port)).map_err(|e| Failure::io("cannot listen on 127.0.0.1", e))?;
    let port = listener.local_addr().map_err(|e| Failure::io("cannot listen on 127.0.0.1", e))?.port();
    let mut url = format!("http://127.0.0.1:{port}/www/index.html");
    if let Some(s) = &served {
        url.push_str(&format!("?url={}", percent_encode(s.url())));
    }
    let mut out = std::io::stdout().lock();
    if ctx.json {
        writeln!(out, "{}", serde_json::json!({ "url": url, "port": port })).map_err(Failure::stdout)?;
    } else {
        writeln!(out, "bale inspector: {url}\n(serving on 127.0.0.1 only; Ctrl-C stops it)")
            .map_err(Failure::stdout)?;
    }
    out.flush().map_err(Failure::stdout)?;
    drop(out);
    if !args.no_open && !open_browser(&url) {
        eprintln!("bale: could not start a browser; open the address above in one");
    }
    let server = Arc::new(Server { port, served, connections: AtomicUsize::new(0) });
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if server.connections.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            server.connections.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        let server = server.clone();
        std::thread::spawn(move || {
            // A connection's errors end that connection only.
            let _ = serve_connection(&server, stream);
            server.connections.fetch_sub(1, Ordering::SeqCst);
        });
    }
    Ok(exit::OK)
}

fn serve_file(path: &Path) -> Result<Served, Failure> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("store");
    if path.is_dir() {
        if !path.join("config").is_file() {
            return Err(Failure::invalid(format!(
                "{}: a folder without a config file, so no object store; give a store file, a bitable or an object store's folder",
                path.display()
            )));
        }
        return Ok(Served::Folder { url: format!("/files/{}/", percent_encode(name)), dir: path.to_path_buf() });
    }
    let file = File::open(path).map_err(|e| Failure::io(path.display(), e))?;
    let len = file.metadata().map_err(|e| Failure::io(path.display(), e))?.len();
    Ok(Served::File { url: format!("/files/{}", percent_encode(name)), file, len })
}

/// Whether `rel` names a file an object store folder has: `config`,
/// `index`, `packs/<n>.pack` or `staging/<16 hex digits>.pack`. Nothing
/// else of the folder is served.
fn store_file(rel: &str) -> bool {
    let digits = |s: &str, hex: bool| {
        !s.is_empty() && s.bytes().all(|b| if hex { b.is_ascii_hexdigit() } else { b.is_ascii_digit() })
    };
    match rel.split_once('/') {
        None => rel == "config" || rel == "index",
        Some(("packs", f)) => f.strip_suffix(".pack").is_some_and(|n| n.len() <= 20 && digits(n, false)),
        Some(("staging", f)) => f.strip_suffix(".pack").is_some_and(|n| n.len() == 16 && digits(n, true)),
        _ => false,
    }
}

/// Percent-encodes everything but unreserved characters and `/`.
fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Starts the user's browser on `url`; false when none could be started.
fn open_browser(url: &str) -> bool {
    use std::process::{Command, Stdio};
    let mut tries: Vec<Command> = Vec::new();
    if let Some(b) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
        tries.push(Command::new(b));
    }
    if cfg!(target_os = "macos") {
        tries.push(Command::new("open"));
    } else if cfg!(windows) {
        let mut c = Command::new("rundll32");
        c.arg("url.dll,FileProtocolHandler");
        tries.push(c);
    } else {
        tries.push(Command::new("xdg-open"));
    }
    tries
        .into_iter()
        .any(|mut c| c.arg(url).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().is_ok())
}

struct Request {
    method: String,
    path: String,
    host: Option<String>,
    range: Option<String>,
    close: bool,
}

/// Reads one request head; None at a clean end of the connection.
fn read_request(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut lines = Vec::new();
    let mut total = 0;
    loop {
        let mut line = String::new();
        let n = r.by_ref().take((MAX_HEAD - total + 1) as u64).read_line(&mut line)?;
        if n == 0 {
            return if lines.is_empty() { Ok(None) } else { Err(std::io::ErrorKind::UnexpectedEof.into()) };
        }
        total += n;
        if total > MAX_HEAD {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            if lines.is_empty() {
                continue; // Stray line ends between requests.
            }
            break;
        }
        lines.push(line);
    }
    let mut first = lines[0].split(' ');
    let (Some(method), Some(target), Some(version)) = (first.next(), first.next(), first.next()) else {
        return Err(std::io::ErrorKind::InvalidData.into());
    };
    let mut req = Request {
        method: method.to_string(),
        path: target.split('?').next().unwrap_or("").to_string(),
        host: None,
        range: None,
        close: version == "HTTP/1.0",
    };
    for h in &lines[1..] {
        let Some((name, value)) = h.split_once(':') else { continue };
        let value = value.trim().to_string();
        match name.trim().to_ascii_lowercase().as_str() {
            "host" => req.host = Some(value),
            "range" => req.range = Some(value),
            "connection" => req.close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    Ok(Some(req))
}

fn serve_connection(server: &Server, stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let req = match read_request(&mut reader) {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(()),
            Err(_) => {
                let _ = respond(&mut out, 400, "Bad Request", &[], Body::Text("bad request\n"), true);
                return Ok(());
            }
        };
        answer(server, &req, &mut out)?;
        if req.close {
            return Ok(());
        }
    }
}

enum Body<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
    File(&'a File, u64, u64),
}

fn respond(
    out: &mut TcpStream,
    status: u16,
    reason: &str,
    headers: &[(&str, String)],
    body: Body<'_>,
    head_only: bool,
) -> std::io::Result<()> {
    let len = match &body {
        Body::Text(t) => t.len() as u64,
        Body::Bytes(b) => b.len() as u64,
        Body::File(_, _, n) => *n,
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Length: {len}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    if head_only {
        return out.flush();
    }
    match body {
        Body::Text(t) => out.write_all(t.as_bytes())?,
        Body::Bytes(b) => out.write_all(b)?,
        Body::File(f, start, n) => {
            let mut buf = vec![0u8; SEND.min(n as usize)];
            let mut done = 0u64;
            while done < n {
                let want = (n - done).min(SEND as u64) as usize;
                read_exact_at(f, &mut buf[..want], start + done)?;
                out.write_all(&buf[..want])?;
                done += want as u64;
            }
        }
    }
    out.flush()
}

#[cfg(unix)]
fn read_exact_at(f: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, at)
}

#[cfg(windows)]
fn read_exact_at(f: &File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(f, buf, at)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// What the page may load: itself, its worker and module, its styles, the
/// images it makes from values, and any URL the user opens.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; \
    img-src 'self' blob: data:; connect-src *; worker-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

fn answer(server: &Server, req: &Request, out: &mut TcpStream) -> std::io::Result<()> {
    let head_only = req.method == "HEAD";
    let host_ok = req
        .host
        .as_deref()
        .is_some_and(|h| h == format!("127.0.0.1:{}", server.port) || h == format!("localhost:{}", server.port));
    if !host_ok {
        return respond(
            out,
            403,
            "Forbidden",
            &[],
            Body::Text("this server answers requests to 127.0.0.1 only\n"),
            head_only,
        );
    }
    if req.method != "GET" && !head_only {
        return respond(
            out,
            405,
            "Method Not Allowed",
            &[("Allow", "GET, HEAD".into())],
            Body::Text("GET or HEAD\n"),
            false,
        );
    }
    if req.path == "/" {
        return respond(out, 302, "Found", &[("Location", "/www/index.html".into())], Body::Text(""), head_only);
    }
    if let Some((_, bytes)) = assets::ASSETS.iter().find(|(p, _)| *p == req.path) {
        let headers =
            [("Content-Type", content_type(&req.path).to_string()), ("Content-Security-Policy", CSP.to_string())];
        return respond(out, 200, "OK", &headers, Body::Bytes(bytes), head_only);
    }
    match &server.served {
        Some(Served::File { url, file, len }) if *url == req.path => serve_range(out, req, file, *len),
        Some(Served::Folder { url, dir }) => {
            let Some(rel) = req.path.strip_prefix(url.as_str()).filter(|rel| store_file(rel)) else {
                return not_found(out, head_only);
            };
            // Regular files only: a link could lead out of the folder.
            let path = dir.join(rel);
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_file() => {}
                _ => return not_found(out, head_only),
            }
            let Ok(file) = File::open(&path) else { return not_found(out, head_only) };
            let len = file.metadata()?.len();
            serve_range(out, req, &file, len)
        }
        _ => not_found(out, head_only),
    }
}

fn not_found(out: &mut TcpStream, head_only: bool) -> std::io::Result<()> {
    respond(out, 404, "Not Found", &[], Body::Text("not found\n"), head_only)
}

/// A served file: whole, or the one byte range asked for.
fn serve_range(out: &mut TcpStream, req: &Request, file: &File, len: u64) -> std::io::Result<()> {
    let head_only = req.method == "HEAD";
    let base = [("Content-Type", "application/octet-stream".to_string()), ("Accept-Ranges", "bytes".to_string())];
    match req.range.as_deref().map(|r| parse_range(r, len)) {
        None | Some(Range::Ignored) => respond(out, 200, "OK", &base, Body::File(file, 0, len), head_only),
        Some(Range::Unsatisfiable) => {
            let h = [("Content-Range", format!("bytes */{len}"))];
            respond(out, 416, "Range Not Satisfiable", &h, Body::Text(""), head_only)
        }
        Some(Range::Bytes(start, end)) => {
            let h = [base[0].clone(), base[1].clone(), ("Content-Range", format!("bytes {start}-{end}/{len}"))];
            respond(out, 206, "Partial Content", &h, Body::File(file, start, end - start + 1), head_only)
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Range {
    /// Not one byte range this server answers: the whole file is sent.
    Ignored,
    Unsatisfiable,
    /// First and last byte, inclusive.
    Bytes(u64, u64),
}

/// One `bytes=` range of a file of `len` bytes (RFC 9110 14.1.2).
fn parse_range(header: &str, len: u64) -> Range {
    let Some(spec) = header.trim().strip_prefix("bytes=") else { return Range::Ignored };
    if spec.contains(',') {
        return Range::Ignored;
    }
    let Some((a, b)) = spec.trim().split_once('-') else { return Range::Ignored };
    let num =
        |s: &str| if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) { None } else { s.parse::<u64>().ok() };
    match (a.is_empty(), num(a), num(b)) {
        // bytes=-n: the last n bytes.
        (true, _, Some(n)) if n > 0 && len > 0 => Range::Bytes(len.saturating_sub(n), len - 1),
        (true, _, Some(_)) => Range::Unsatisfiable,
        (false, Some(start), _) if start >= len => Range::Unsatisfiable,
        (false, Some(start), None) if b.is_empty() => Range::Bytes(start, len - 1),
        (false, Some(start), Some(end)) if end >= start => Range::Bytes(start, end.min(len - 1)),
        _ => Range::Ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::{Range, parse_range, percent_encode, store_file};

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=0-15", 100), Range::Bytes(0, 15));
        assert_eq!(parse_range("bytes=90-200", 100), Range::Bytes(90, 99));
        assert_eq!(parse_range("bytes=10-", 100), Range::Bytes(10, 99));
        assert_eq!(parse_range("bytes=-10", 100), Range::Bytes(90, 99));
        assert_eq!(parse_range("bytes=-200", 100), Range::Bytes(0, 99));
        assert_eq!(parse_range("bytes=100-", 100), Range::Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 100), Range::Unsatisfiable);
        assert_eq!(parse_range("bytes=0-0", 0), Range::Unsatisfiable);
        assert_eq!(parse_range("bytes=5-1", 100), Range::Ignored);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), Range::Ignored);
        assert_eq!(parse_range("items=0-1", 100), Range::Ignored);
        assert_eq!(parse_range("bytes=x-1", 100), Range::Ignored);
        assert_eq!(parse_range("bytes=+1-2", 100), Range::Ignored);
        assert_eq!(parse_range("bytes=99999999999999999999-", 100), Range::Ignored);
    }

    #[test]
    fn store_files() {
        for ok in ["config", "index", "packs/0.pack", "packs/12.pack", "staging/00000000deadbeef.pack"] {
            assert!(store_file(ok), "{ok}");
        }
        for bad in [
            "",
            "lock",
            "config/",
            "../config",
            "packs/../config",
            "packs/x.pack",
            "packs/.pack",
            "packs/1.pack/x",
            "staging/deadbeef.pack",
            "staging/00000000deadbeeg.pack",
            "packs/123456789012345678901.pack",
            "index.compact",
            "/etc/passwd",
        ] {
            assert!(!store_file(bad), "{bad}");
        }
    }

    #[test]
    fn encoding() {
        assert_eq!(percent_encode("/files/a b&c.bale"), "/files/a%20b%26c.bale");
        assert_eq!(percent_encode("é"), "%C3%A9");
    }
}
