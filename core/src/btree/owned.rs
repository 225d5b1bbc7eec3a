//! Iterators and value readers that own their snapshot (through an `Arc`),
//! for hosts that cannot hold a borrow across calls: the Python, Node and
//! WebAssembly bindings.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Bound;
use std::sync::Arc;

use super::cursor::ValueRef;
use super::page::LargeRef;
use super::range_scan::{RangeScan, Step};
use super::read::{ReadOps, ReadTxn, prefix_end};
use super::value::ValueReader;
use crate::error::{Error, ErrorKind, Result};

/// Entries fetched per refill of an [`OwnedRange`].
const BATCH: usize = 256;

/// A value of an owned iteration: inline bytes, or a large value's length
/// (read it with [`OwnedValue`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Bytes(Vec<u8>),
    Large(u64),
}

/// What an owned range yields for each entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    Keys,
    /// Values whole, large ones included.
    Values,
    /// Inline values whole; large values only as their length.
    InlineValues,
}

/// A range over an `Arc<ReadTxn>` that needs no borrow between calls: it
/// refills a small buffer by running its [`RangeScan`] once more.
pub struct OwnedRange {
    txn: Arc<ReadTxn>,
    scan: RangeScan,
    fetch: Fetch,
    buf: VecDeque<(Vec<u8>, Option<Item>)>,
}

impl OwnedRange {
    pub fn new(
        txn: Arc<ReadTxn>,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        reverse: bool,
        fetch: Fetch,
    ) -> OwnedRange {
        OwnedRange::from_scan(txn, RangeScan::new(start, end, reverse), fetch)
    }

    /// Runs a checked request (see [`RangeRequest`](super::RangeRequest)).
    pub fn from_scan(txn: Arc<ReadTxn>, scan: RangeScan, fetch: Fetch) -> OwnedRange {
        OwnedRange { txn, scan, fetch, buf: VecDeque::new() }
    }

    /// Keys starting with `prefix`, intersected with nothing else.
    pub fn prefix(txn: Arc<ReadTxn>, prefix: &[u8], reverse: bool, fetch: Fetch) -> OwnedRange {
        let end = match prefix_end(prefix) {
            Some(e) => Bound::Excluded(e),
            None => Bound::Unbounded,
        };
        OwnedRange::new(txn, Bound::Included(prefix.to_vec()), end, reverse, fetch)
    }

    /// Stops after `n` entries (for ranges made by `new` or `prefix`; it
    /// replaces a request's offset and limit).
    pub fn limit(mut self, n: u64) -> OwnedRange {
        self.scan = self.scan.slice(0, Some(n));
        self
    }

    /// The next entry: its key and, unless fetching keys only, its value.
    pub fn next_item(&mut self) -> Result<Option<(Vec<u8>, Option<Item>)>> {
        if self.buf.is_empty()
            && let Err(e) = refill(&mut self.scan, &*self.txn, self.fetch, &mut self.buf)
        {
            // Errors are sticky (the scan ends); what was read before them
            // is dropped with them.
            self.buf.clear();
            return Err(e);
        }
        Ok(self.buf.pop_front())
    }
}

/// Runs `scan` once more over `r`, buffering up to a batch of entries.
pub(crate) fn refill<R: ReadOps + ?Sized>(
    scan: &mut RangeScan,
    r: &R,
    fetch: Fetch,
    buf: &mut VecDeque<(Vec<u8>, Option<Item>)>,
) -> Result<()> {
    let mut n = 0;
    scan.run(r, |k, v| {
        let item = match fetch {
            Fetch::Keys => None,
            Fetch::Values => Some(Item::Bytes(v.to_vec()?)),
            Fetch::InlineValues => Some(match v.as_inline() {
                Some(b) => Item::Bytes(b.to_vec()),
                None => Item::Large(v.len()),
            }),
        };
        buf.push_back((k.to_vec(), item));
        n += 1;
        Ok::<_, Error>(if n < BATCH { Step::Next } else { Step::Stop })
    })
}

impl Iterator for OwnedRange {
    type Item = Result<(Vec<u8>, Option<Item>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_item().transpose()
    }
}

enum Source {
    Inline(Vec<u8>),
    Large(LargeRef),
}

/// A seekable reader over one value of an `Arc<ReadTxn>`; large values are
/// read block by block as needed.
pub struct OwnedValue {
    txn: Arc<ReadTxn>,
    src: Source,
    pos: u64,
    /// Decoded block cache of the last read (block index, bytes).
    block: Option<(u64, Vec<u8>)>,
}

impl OwnedValue {
    /// The value under `key`, or `None`.
    pub fn open(txn: Arc<ReadTxn>, key: &[u8]) -> Result<Option<OwnedValue>> {
        let src = match txn.get(key)? {
            None => return Ok(None),
            Some(v) => owned_source(&v)?,
        };
        Ok(Some(OwnedValue { txn, src, pos: 0, block: None }))
    }

    pub fn len(&self) -> u64 {
        match &self.src {
            Source::Inline(b) => b.len() as u64,
            Source::Large(r) => r.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Reads up to `buf.len()` bytes at `offset`; 0 at the end.
    pub fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        match &self.src {
            Source::Inline(b) => {
                let s = offset.min(b.len() as u64) as usize;
                let n = (b.len() - s).min(buf.len());
                buf[..n].copy_from_slice(&b[s..s + n]);
                Ok(n)
            }
            Source::Large(r) => {
                if offset >= r.len || buf.is_empty() {
                    return Ok(0);
                }
                let log2 = self.txn.block_log2();
                let b = offset >> log2;
                if self.block.as_ref().map(|(i, _)| *i) != Some(b) {
                    let mut rd = ValueReader::new(self.txn.snapshot(), *r, log2);
                    let start = b << log2;
                    let len = (r.len - start).min(1 << log2);
                    let bytes = rd.read_range(start, len)?;
                    self.block = Some((b, bytes));
                }
                let (_, bytes) = self.block.as_ref().ok_or_else(|| Error::corrupt("block cache"))?;
                let within = (offset - (b << log2)) as usize;
                let n = (bytes.len().saturating_sub(within)).min(buf.len());
                buf[..n].copy_from_slice(&bytes[within..within + n]);
                Ok(n)
            }
        }
    }

    /// `len` bytes from `offset` (fewer at the end).
    pub fn read_range(&mut self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let end = offset.saturating_add(len).min(self.len());
        let want = usize::try_from(end.saturating_sub(offset))
            .map_err(|_| Error::new(ErrorKind::TooLarge, "range too large for memory"))?;
        let mut out = Vec::with_capacity(want.min(1 << 20));
        let mut chunk = vec![0u8; want.clamp(1, 1 << 16)];
        let mut at = offset;
        while out.len() < want {
            let room = (want - out.len()).min(chunk.len());
            let n = self.read_at(at, &mut chunk[..room])?;
            if n == 0 {
                break;
            }
            out.extend_from_slice(&chunk[..n]);
            at += n as u64;
        }
        Ok(out)
    }
}

fn owned_source(v: &ValueRef<'_>) -> Result<Source> {
    Ok(match v.as_inline() {
        Some(b) => Source::Inline(b.to_vec()),
        None => Source::Large(v.large_ref().ok_or_else(|| Error::corrupt("large value without a reference"))?),
    })
}

impl Read for OwnedValue {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.read_at(self.pos, buf).map_err(std::io::Error::other)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for OwnedValue {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let next = match pos {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len().checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match next {
            Some(p) => {
                self.pos = p;
                Ok(p)
            }
            None => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start of the value")),
        }
    }
}
