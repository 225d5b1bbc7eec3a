//! Runs a sweep of bad-file cases in child processes (this test binary
//! re-executed), under guards that `catch_unwind` cannot provide: the
//! parent kills a child that prints no progress for a while and records
//! its case as a hang; the child limits its own address space, so a
//! runaway allocation aborts it and the case is recorded as a failure.
//! After a child dies the parent starts a new one at the next case.
//!
//! Protocol, one line each on the child's stdout: `cases N`, then per case
//! `case I LABEL`, any `fail TEXT`, and
//! `tally CASES ERRORS CORRECT FALLBACK CAUGHT`; `all done` at the end. A
//! child keeps its files in `child_dir`, which the parent removes once the
//! child has ended, however it ended. The test binary installs
//! `counting_alloc` as its global allocator.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

use super::counting_alloc::{LIVE, PEAK};
use super::spawn::Retrying;

pub const CHILD_ENV: &str = "BALE_SWEEP_CHILD";
pub const MIB: usize = 1 << 20;

/// Counts of a sweep.
#[derive(Default)]
pub struct Tally {
    pub cases: u64,
    /// Cases that gave a typed error (at open or on some read).
    pub errors: u64,
    /// Cases that read back exactly right with a healthy check.
    pub correct: u64,
    /// Cases that read back an earlier state, as the format allows.
    pub fallback: u64,
    /// Cases `check` reported (damage it found).
    pub caught_by_check: u64,
    pub failed: u64,
    /// The first failures.
    pub failures: Vec<String>,
    /// In a child: print each failure for the parent as it happens.
    pub echo: bool,
}

impl Tally {
    pub fn fail(&mut self, s: String) {
        self.failed += 1;
        if self.echo {
            say(&format!("fail {}", s.replace('\n', " ")));
        } else if self.failures.len() < 30 {
            self.failures.push(s);
        }
    }

    /// In a child: the counts so far (a later death must not lose them).
    pub fn send(&self) {
        say(&format!(
            "tally {} {} {} {} {}",
            self.cases, self.errors, self.correct, self.fallback, self.caught_by_check
        ));
    }

    fn add(&mut self, o: &Tally) {
        self.cases += o.cases;
        self.errors += o.errors;
        self.correct += o.correct;
        self.fallback += o.fallback;
        self.caught_by_check += o.caught_by_check;
    }
}

/// A line for the parent; libtest may have printed "test NAME ... "
/// without a newline.
pub fn say(line: &str) {
    let mut out = std::io::stdout();
    writeln!(out, "\n{line}").expect("stdout");
    out.flush().expect("stdout");
}

/// In a child: the set, backend and first case the parent asked for.
pub fn child_request() -> Option<(String, String, usize)> {
    let v = std::env::var(CHILD_ENV).ok()?;
    let mut it = v.split(',');
    let set = it.next()?.to_string();
    let backend = it.next()?.to_string();
    let start = it.next()?.parse().ok()?;
    Some((set, backend, start))
}

/// The folder of the child with process id `pid` running `set` on
/// `backend`; a child uses its own.
pub fn child_dir(set: &str, backend: &str, pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("bale-sweep-{set}-{backend}-{pid}"))
}

/// Runs `f`, returning its result and its peak heap growth.
pub fn measured<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let r = f();
    (r, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

/// R7: a case's peak heap growth is at most twice the file size + 64 MiB.
pub fn heap_bound(file_len: usize) -> usize {
    2 * file_len + 64 * MIB
}

/// Writes all of `data` at `offset` (seek, then write: std's positioned
/// writes differ between Unix and Windows).
pub fn write_at(mut f: &std::fs::File, data: &[u8], offset: u64) -> std::io::Result<()> {
    use std::io::Seek;
    f.seek(std::io::SeekFrom::Start(offset))?;
    f.write_all(data)
}

/// This process's address-space size (VmSize).
#[cfg(unix)]
fn vm_size() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .expect("VmSize");
    kb * 1024
}

/// Address space a child may add to what it has before its first case:
/// R7's bound for a file of `file_len` bytes, a map of it and slack for
/// allocator arenas.
pub fn address_space_slack(file_len: usize) -> usize {
    heap_bound(file_len) + file_len + 192 * MIB
}

/// Limits this process's address space to its current size + the slack
/// for `file_len`; beyond it allocations fail and Rust aborts the process.
#[cfg(unix)]
pub fn limit_address_space(file_len: usize) -> usize {
    let lim = vm_size() + address_space_slack(file_len);
    let r = libc::rlimit { rlim_cur: lim as libc::rlim_t, rlim_max: lim as libc::rlim_t };
    // SAFETY: setrlimit only reads the struct it is given.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &r) };
    assert_eq!(rc, 0, "setrlimit(RLIMIT_AS): {}", std::io::Error::last_os_error());
    lim
}

/// Windows has no address-space limit a process sets on itself (a job
/// object's memory limit is not enforced under Wine, where these tests
/// run): the counting allocator refuses allocations past the heap in use
/// now + the slack instead, and Rust aborts the process the same way.
/// Memory maps are not counted, so the limit is on the heap only.
#[cfg(windows)]
pub fn limit_address_space(file_len: usize) -> usize {
    let cap = LIVE.load(Ordering::Relaxed) + address_space_slack(file_len);
    super::counting_alloc::CAP.store(cap, Ordering::Relaxed);
    cap
}

/// What a guarded sweep gave: the children's tallies plus one failure per
/// case that hung or killed its process.
pub struct Run {
    pub tally: Tally,
    /// Cases in the set.
    pub cases: usize,
    /// Child processes started (one more after each death).
    pub children: usize,
    /// Their process ids.
    pub pids: Vec<u32>,
}

/// Parent side: runs every case of `set` on `backend` in child processes
/// (running test `test` of this binary), starting a new child after the
/// case that hung or killed the last one.
pub fn run_guarded(test: &str, set: &str, backend: &str, hang: Duration) -> Run {
    let mut tally = Tally::default();
    let (mut start, mut total, mut pids) = (0usize, None::<usize>, Vec::new());
    loop {
        let mut child = super::child(test)
            .env(CHILD_ENV, format!("{set},{backend},{start}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn_retrying()
            .expect("run child");
        let pid = child.id();
        pids.push(pid);
        let (tx, rx) = channel();
        let out = child.stdout.take().expect("stdout");
        let pump = std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().expect("stderr");
        let errs = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let mut last: Option<(usize, String)> = None;
        let mut counts = Tally::default();
        let (mut done, mut hung) = (false, false);
        loop {
            match rx.recv_timeout(hang) {
                Ok(line) => {
                    if let Some(n) = line.strip_prefix("cases ") {
                        total = n.split(' ').next().and_then(|n| n.parse().ok());
                    } else if let Some(c) = line.strip_prefix("case ") {
                        let (i, label) = c.split_once(' ').unwrap_or((c, ""));
                        last = Some((i.parse().expect("case number"), label.to_string()));
                    } else if let Some(f) = line.strip_prefix("fail ") {
                        tally.fail(f.to_string());
                    } else if let Some(n) = line.strip_prefix("tally ") {
                        let v: Vec<u64> = n.split(' ').map(|x| x.parse().expect("tally")).collect();
                        let [cases, errors, correct, fallback, caught_by_check] = v[..] else { panic!("tally {n}") };
                        counts = Tally { cases, errors, correct, fallback, caught_by_check, ..Tally::default() };
                    } else if line == "all done" {
                        done = true;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    hung = true;
                    break;
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
        let status = child.wait().expect("wait");
        pump.join().expect("stdout pump");
        let stderr = errs.join().expect("stderr pump");
        let _ = std::fs::remove_dir_all(child_dir(set, backend, pid));
        tally.add(&counts);
        if done && status.success() {
            break;
        }
        let Some((i, label)) = last else {
            panic!("the {set} child died before running a case: {status}\n{stderr}");
        };
        tally.cases += 1;
        if hung {
            tally.fail(format!("{label}: hung (no progress for {} s, killed)", hang.as_secs()));
        } else {
            let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            tally.fail(format!("{label}: the process died ({status}): {tail}"));
        }
        start = i + 1;
        if total.is_none_or(|n| start >= n) {
            break;
        }
    }
    Run { tally, cases: total.unwrap_or(0), children: pids.len(), pids }
}
