//! Values read from a bitable: inline bytes borrowed from the page, or a
//! handle on a large value that streams its blocks.

use std::borrow::Cow;
use std::io::Read;

use super::large::{BLOCK, GROUP, GroupTable, LargeRef, read_block};
use super::table::Bitable;
use crate::error::{Error, ErrorKind, Result};

/// A value: small ones are bytes (borrowed from the page on native
/// reads), large ones a handle that reads blocks on demand.
pub enum Value<'a> {
    Inline(Cow<'a, [u8]>),
    Large(LargeValue),
}

impl Value<'_> {
    pub fn len(&self) -> u64 {
        match self {
            Value::Inline(b) => b.len() as u64,
            Value::Large(l) => l.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole value in memory. Refuses (`TOO_LARGE`) a value of more
    /// than `limit` bytes: large values are meant to be streamed.
    pub fn to_vec(&self, limit: u64) -> Result<Vec<u8>> {
        match self {
            Value::Inline(b) => Ok(b.to_vec()),
            Value::Large(l) => l.to_vec(limit),
        }
    }

    /// The same value, no longer borrowing the page.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Inline(b) => Value::Inline(Cow::Owned(b.into_owned())),
            Value::Large(l) => Value::Large(l),
        }
    }

    /// A reader over the value.
    pub fn reader(self) -> Box<dyn Read + Send + 'static> {
        match self {
            Value::Inline(b) => Box::new(std::io::Cursor::new(b.into_owned())),
            Value::Large(l) => Box::new(l.reader()),
        }
    }
}

/// A large value of an open table.
#[derive(Clone)]
pub struct LargeValue {
    t: Bitable,
    r: LargeRef,
}

impl LargeValue {
    pub(crate) fn new(t: Bitable, r: LargeRef) -> LargeValue {
        LargeValue { t, r }
    }

    pub fn len(&self) -> u64 {
        self.r.len
    }

    pub fn is_empty(&self) -> bool {
        self.r.len == 0
    }

    /// A reader from the value's start.
    pub fn reader(&self) -> LargeReader {
        LargeReader { v: self.clone(), pos: 0, table: None, block: None, buf: Vec::new() }
    }

    /// Fills `buf` from `offset` on; returns the bytes read (fewer only at
    /// the value's end).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut r = self.reader();
        r.pos = offset.min(self.r.len);
        r.fill(buf)
    }

    pub fn to_vec(&self, limit: u64) -> Result<Vec<u8>> {
        if self.r.len > limit {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("value of {} bytes is above the limit of {limit}; stream it instead", self.r.len),
            ));
        }
        let mut out = vec![0u8; self.r.len as usize];
        let n = self.read_at(0, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// The value's bytes in place in the map, when it is stored raw in one
    /// run (every block checked first); `None` otherwise.
    pub fn as_slice(&self) -> Result<Option<&[u8]>> {
        if !self.t.is_mapped() || self.r.depth != 1 {
            return Ok(None);
        }
        let table = GroupTable::load(&self.t, &self.r, 0)?;
        let first = table.entry(0).offset;
        for b in 0..self.r.blocks() {
            let e = table.entry(b);
            if e.codec != super::large::CODEC_RAW || e.offset != first + b * BLOCK as u64 {
                return Ok(None);
            }
            let mut scratch = Vec::new();
            read_block(&self.t, &self.r, &table, b, &mut scratch)?;
        }
        match super::large::Region::region_bytes(&self.t, first, self.r.len as usize)? {
            Cow::Borrowed(s) => Ok(Some(s)),
            Cow::Owned(_) => Ok(None),
        }
    }
}

/// Streams a large value block by block; each block table is verified
/// once and each block when it is read.
pub struct LargeReader {
    v: LargeValue,
    pos: u64,
    table: Option<GroupTable>,
    /// The decoded block `block`.
    block: Option<u64>,
    buf: Vec<u8>,
}

impl LargeReader {
    fn fill(&mut self, out: &mut [u8]) -> Result<usize> {
        let mut done = 0;
        while done < out.len() && self.pos < self.v.r.len {
            let b = self.pos / BLOCK as u64;
            if self.block != Some(b) {
                if self.table.as_ref().is_none_or(|t| t.group != b / GROUP) {
                    self.table = Some(GroupTable::load(&self.v.t, &self.v.r, b / GROUP)?);
                }
                let Some(table) = &self.table else { break };
                let mut scratch = std::mem::take(&mut self.buf);
                let bytes = read_block(&self.v.t, &self.v.r, table, b, &mut scratch)?.into_owned();
                self.buf = bytes;
                self.block = Some(b);
            }
            let within = (self.pos % BLOCK as u64) as usize;
            let src = self.buf.get(within..).unwrap_or(&[]);
            let n = src.len().min(out.len() - done);
            if n == 0 {
                break;
            }
            out[done..done + n].copy_from_slice(&src[..n]);
            done += n;
            self.pos += n as u64;
        }
        Ok(done)
    }

    pub fn position(&self) -> u64 {
        self.pos
    }
}

impl Read for LargeReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        self.fill(out).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}

impl std::io::Seek for LargeReader {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        let len = self.v.r.len as i128;
        let target = match to {
            std::io::SeekFrom::Start(p) => p as i128,
            std::io::SeekFrom::End(d) => len + d as i128,
            std::io::SeekFrom::Current(d) => self.pos as i128 + d as i128,
        };
        if target < 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the value's start"));
        }
        self.pos = target.min(len) as u64;
        Ok(self.pos)
    }
}
