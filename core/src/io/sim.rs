//! Test backends: a crash simulator that keeps what was synced apart from
//! what was only written, and a fault injector that fails the N-th write or
//! sync. Both hold the bytes in memory.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::lockset::{LockSet, in_process_locks};
use super::{MemStorage, Storage, eof_error};
use crate::error::{Error, Result};

/// The size of the unit a crash may keep or drop independently.
pub const SECTOR: usize = 512;

/// One write not yet made durable.
#[derive(Clone, Debug)]
pub struct PendingWrite {
    pub offset: u64,
    pub data: Vec<u8>,
}

/// The state at one `sync` call: what was durable before it and what the
/// sync was about to make durable.
#[derive(Clone, Debug)]
pub struct SyncPoint {
    pub durable: Vec<u8>,
    pub pending: Vec<PendingWrite>,
}

/// How to build a crash image from a sync point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashMode {
    /// Only what was durable: every pending write lost.
    DropAll,
    /// Each pending sector kept or lost at random, in any order.
    RandomSectors,
    /// Pending writes kept in order up to a random one, which is torn at a
    /// random sector boundary; the rest lost.
    TornPrefix,
}

/// A deterministic generator for crash choices (SplitMix64).
#[derive(Clone, Debug)]
pub struct SimRng(u64);

impl SimRng {
    pub fn new(seed: u64) -> SimRng {
        SimRng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
}

fn apply(img: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let start = offset as usize;
    let end = start + data.len();
    if img.len() < end {
        img.resize(end, 0);
    }
    img[start..end].copy_from_slice(data);
}

impl SyncPoint {
    /// Builds one crash image.
    pub fn image(&self, mode: CrashMode, rng: &mut SimRng) -> Vec<u8> {
        let mut img = self.durable.clone();
        match mode {
            CrashMode::DropAll => {}
            CrashMode::RandomSectors => {
                for w in &self.pending {
                    for (i, chunk) in w.data.chunks(SECTOR).enumerate() {
                        if rng.below(2) == 1 {
                            apply(&mut img, w.offset + (i * SECTOR) as u64, chunk);
                        }
                    }
                }
            }
            CrashMode::TornPrefix => {
                if self.pending.is_empty() {
                    return img;
                }
                let upto = rng.below(self.pending.len() as u64) as usize;
                for w in &self.pending[..upto] {
                    apply(&mut img, w.offset, &w.data);
                }
                let w = &self.pending[upto];
                let sectors = w.data.len().div_ceil(SECTOR) as u64;
                let keep = (rng.below(sectors + 1) as usize * SECTOR).min(w.data.len());
                apply(&mut img, w.offset, &w.data[..keep]);
            }
        }
        img
    }
}

struct CrashState {
    current: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<PendingWrite>,
    points: Vec<SyncPoint>,
}

/// Which operation an armed fault fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultOp {
    /// The N-th write or sync.
    Any,
    /// The N-th sync.
    Sync,
}

/// What a failed operation leaves behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultEffect {
    /// Nothing: a failed write writes nothing, a failed sync keeps the
    /// unsynced writes pending (as if the process died before the call).
    Clean,
    /// What a disk and Linux do: a failed write lands a random prefix of
    /// its sectors; a failed fsync drops every unsynced write from the
    /// disk's future while reads still return it (the page cache marks the
    /// pages clean), so no later sync makes those writes durable.
    Lossy,
}

struct Fault {
    op: FaultOp,
    effect: FaultEffect,
    countdown: u64,
    rng: SimRng,
}

/// Records every write since the last sync and every sync point; can fail
/// one write or sync on request (`arm`).
pub struct CrashStorage {
    state: Mutex<CrashState>,
    locks: LockSet,
    fault: Mutex<Option<Fault>>,
    fired: AtomicU64,
}

impl CrashStorage {
    /// Starts from `bytes`, all of them durable.
    pub fn new(bytes: Vec<u8>) -> CrashStorage {
        CrashStorage {
            state: Mutex::new(CrashState {
                current: bytes.clone(),
                durable: bytes,
                pending: Vec::new(),
                points: Vec::new(),
            }),
            locks: LockSet::default(),
            fault: Mutex::new(None),
            fired: AtomicU64::new(0),
        }
    }

    /// Fails the `nth` (from 1) operation of kind `op` from now on, once.
    pub fn arm(&self, op: FaultOp, nth: u64, effect: FaultEffect, seed: u64) {
        *self.fault.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Fault { op, effect, countdown: nth, rng: SimRng::new(seed) });
    }

    /// How many armed faults fired.
    pub fn faults_fired(&self) -> u64 {
        self.fired.load(Ordering::SeqCst)
    }

    /// The bytes a crash at this instant would leave if no pending write
    /// reached the disk.
    pub fn durable(&self) -> Vec<u8> {
        self.st().durable.clone()
    }

    /// Counts down an armed fault; `Some(effect, rng draw)` when `is_sync`
    /// (or a write) is the operation that must fail.
    fn tick(&self, is_sync: bool) -> Option<(FaultEffect, u64)> {
        let mut f = self.fault.lock().unwrap_or_else(|e| e.into_inner());
        let fault = f.as_mut()?;
        if fault.op == FaultOp::Sync && !is_sync {
            return None;
        }
        fault.countdown = fault.countdown.saturating_sub(1);
        if fault.countdown > 0 {
            return None;
        }
        let out = (fault.effect, fault.rng.next_u64());
        *f = None;
        self.fired.fetch_add(1, Ordering::SeqCst);
        Some(out)
    }

    fn st(&self) -> std::sync::MutexGuard<'_, CrashState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the sync points recorded so far.
    pub fn take_points(&self) -> Vec<SyncPoint> {
        std::mem::take(&mut self.st().points)
    }

    /// The state at this instant, as a sync point (for a crash between syncs).
    pub fn now(&self) -> SyncPoint {
        let s = self.st();
        SyncPoint { durable: s.durable.clone(), pending: s.pending.clone() }
    }

    pub fn current(&self) -> Vec<u8> {
        self.st().current.clone()
    }
}

impl Storage for CrashStorage {
    fn len(&self) -> Result<u64> {
        Ok(self.st().current.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let s = self.st();
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| s.current.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| eof_error(offset, buf.len(), s.current.len() as u64))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_all_at(&self, data: &[u8], offset: u64) -> Result<()> {
        let landed = match self.tick(false) {
            None => data.len(),
            Some((FaultEffect::Clean, _)) => return Err(injected()),
            Some((FaultEffect::Lossy, draw)) => {
                let sectors = data.len().div_ceil(SECTOR) as u64;
                (draw % sectors.max(1)) as usize * SECTOR
            }
        };
        let mut s = self.st();
        let part = data.get(..landed.min(data.len())).unwrap_or(&[]);
        apply(&mut s.current, offset, part);
        s.pending.push(PendingWrite { offset, data: part.to_vec() });
        if landed < data.len() {
            return Err(injected());
        }
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        match self.tick(true) {
            None => {}
            Some((FaultEffect::Clean, _)) => return Err(injected()),
            Some((FaultEffect::Lossy, _)) => {
                self.st().pending.clear();
                return Err(injected());
            }
        }
        let mut s = self.st();
        let point = SyncPoint { durable: s.durable.clone(), pending: std::mem::take(&mut s.pending) };
        for w in &point.pending {
            apply(&mut s.durable, w.offset, &w.data);
        }
        s.points.push(point);
        Ok(())
    }

    in_process_locks!(locks);
}

fn injected() -> Error {
    Error::io("injected fault", std::io::Error::other("injected i/o error"))
}

/// Fails exactly one operation, the N-th write or sync (counting from 1);
/// the failed operation changes nothing. Reads always work.
pub struct FaultyStorage {
    inner: MemStorage,
    countdown: AtomicU64,
    failed: AtomicU64,
}

impl FaultyStorage {
    /// `fail_at` = 0 never fails.
    pub fn new(inner: MemStorage, fail_at: u64) -> FaultyStorage {
        FaultyStorage { inner, countdown: AtomicU64::new(fail_at), failed: AtomicU64::new(0) }
    }

    /// How many operations failed so far (0 or 1).
    pub fn failures(&self) -> u64 {
        self.failed.load(Ordering::SeqCst)
    }

    pub fn inner(&self) -> &MemStorage {
        &self.inner
    }

    fn tick(&self) -> Result<()> {
        let prev = self
            .countdown
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| if c == 0 { None } else { Some(c - 1) });
        if prev == Ok(1) {
            self.failed.fetch_add(1, Ordering::SeqCst);
            return Err(injected());
        }
        Ok(())
    }
}

impl Storage for FaultyStorage {
    fn len(&self) -> Result<u64> {
        self.inner.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, data: &[u8], offset: u64) -> Result<()> {
        self.tick()?;
        self.inner.write_all_at(data, offset)
    }
    fn sync(&self) -> Result<()> {
        self.tick()?;
        self.inner.sync()
    }
    fn lock_writer(&self, wait: bool) -> Result<()> {
        self.inner.lock_writer(wait)
    }
    fn unlock_writer(&self) {
        self.inner.unlock_writer()
    }
    fn pin(&self, txn: u64) -> Result<()> {
        self.inner.pin(txn)
    }
    fn unpin(&self, txn: u64) {
        self.inner.unpin(txn)
    }
    fn release_idle_pins(&self) {
        self.inner.release_idle_pins()
    }
    fn oldest_pin(&self, below: u64) -> Result<Option<u64>> {
        self.inner.oldest_pin(below)
    }
}
