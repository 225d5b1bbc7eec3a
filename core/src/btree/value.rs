//! Large values: stored out of line as independent blocks (LZ4-compressed
//! when that saves a page) under a small block index, written and read as
//! streams so that a value larger than memory passes in bounded memory
//! (FORMAT.md, "Large values").
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::io::{self, Read, Seek, SeekFrom};

use super::page::{KIND_VINDEX, LargeRef, PAGE_HDR, TRAILER, page_count_field, page_level, seal, write_header};
use super::snapshot::Snapshot;
use crate::error::{Error, ErrorKind, Result};
use crate::format::bytes::{put_u32, put_u64, u32_at, u64_at};
use crate::format::checksum::checksum;

pub const CODEC_RAW: u8 = 0;
pub const CODEC_LZ4: u8 = 1;
/// Bytes of one level-0 index entry: start page, stored length, codec,
/// three zero bytes, checksum of the stored bytes.
pub const BLOCK_ENTRY: usize = 24;
pub const MAX_INDEX_DEPTH: u8 = 8;
/// Bytes of a block tried first when the block before did not compress.
const SAMPLE: usize = 4096;

/// Blocks listed by one level-0 index page.
pub fn blocks_per_page(page_size: usize) -> u64 {
    ((page_size - PAGE_HDR - TRAILER) / BLOCK_ENTRY) as u64
}

/// Children listed by one upper-level index page.
pub fn children_per_page(page_size: usize) -> u64 {
    ((page_size - PAGE_HDR - TRAILER) / 8) as u64
}

/// Blocks an index of `depth` levels can address.
pub fn index_capacity(page_size: usize, depth: u8) -> u64 {
    let mut c = blocks_per_page(page_size);
    for _ in 1..depth {
        c = c.saturating_mul(children_per_page(page_size));
    }
    c
}

/// What a large-value writer needs from its transaction.
pub trait PageSink {
    fn alloc(&mut self, pages: u64) -> Result<u64>;
    /// Returns pages from `alloc` that ended up unused.
    fn release(&mut self, start: u64, pages: u64);
    fn write(&mut self, page: u64, data: &[u8]) -> Result<()>;
    fn txn_id(&self) -> u64;
    fn page_size(&self) -> usize;
}

struct Level {
    buf: Vec<u8>,
    count: u64,
    flushed: u64,
}

fn write_index_page(sink: &mut dyn PageSink, level: u8, lv: &mut Level) -> Result<u64> {
    let ps = sink.page_size();
    let pn = sink.alloc(1)?;
    let mut p = vec![0u8; ps];
    write_header(&mut p, KIND_VINDEX, level, lv.count as u16, sink.txn_id());
    if let Some(dst) = p.get_mut(PAGE_HDR..PAGE_HDR + lv.buf.len()) {
        dst.copy_from_slice(&lv.buf);
    }
    seal(&mut p, pn);
    sink.write(pn, &p)?;
    lv.buf.clear();
    lv.count = 0;
    lv.flushed += 1;
    Ok(pn)
}

/// Appends an entry to `level`, first flushing its page when full: a page
/// is written only once a later entry needs room, so the last page of the
/// top level is always still open and becomes the root.
fn push_entry(sink: &mut dyn PageSink, levels: &mut Vec<Level>, level: usize, entry: &[u8]) -> Result<()> {
    if levels.len() <= level {
        levels.push(Level { buf: Vec::new(), count: 0, flushed: 0 });
    }
    let ps = sink.page_size();
    let cap = if level == 0 { blocks_per_page(ps) } else { children_per_page(ps) };
    let lv = levels.get_mut(level).ok_or_else(|| Error::corrupt("index level missing"))?;
    if lv.count == cap {
        let pn = write_index_page(sink, level as u8, lv)?;
        push_entry(sink, levels, level + 1, &pn.to_le_bytes())?;
    }
    let lv = levels.get_mut(level).ok_or_else(|| Error::corrupt("index level missing"))?;
    lv.buf.extend_from_slice(entry);
    lv.count += 1;
    Ok(())
}

/// Reads up to `buf.len()` bytes, stopping early only at end of input.
fn fill(r: &mut dyn Read, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(buf.get_mut(n..).unwrap_or(&mut [])) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io("reading the value stream failed", e)),
        }
    }
    Ok(n)
}

/// Records what a failed write allocated, to give it back.
struct Tracked<'a> {
    sink: &'a mut dyn PageSink,
    got: super::freelist::Extents,
}

impl PageSink for Tracked<'_> {
    fn alloc(&mut self, pages: u64) -> Result<u64> {
        let p = self.sink.alloc(pages)?;
        self.got.insert(p, pages);
        Ok(p)
    }
    fn release(&mut self, start: u64, pages: u64) {
        self.sink.release(start, pages)
    }
    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        self.sink.write(page, data)
    }
    fn txn_id(&self) -> u64 {
        self.sink.txn_id()
    }
    fn page_size(&self) -> usize {
        self.sink.page_size()
    }
}

/// Writes the whole of `prefix` followed by everything `rest` yields as a
/// large value; returns its reference. Memory use is a few blocks (and a
/// list of allocated runs, one run when pages come from the file's end).
/// On failure every page it took is given back.
/// Also returns every run of pages the value took, so that a caller whose
/// next step fails can give them back.
pub fn write_large(
    sink: &mut dyn PageSink,
    block_log2: u8,
    prefix: &[u8],
    rest: &mut dyn Read,
) -> Result<(LargeRef, super::freelist::Extents)> {
    let mut t = Tracked { sink, got: super::freelist::Extents::default() };
    match write_blocks(&mut t, block_log2, prefix, rest) {
        Ok(r) => Ok((r, t.got)),
        Err(e) => {
            let runs: Vec<(u64, u64)> = t.got.runs().collect();
            for (s, n) in runs {
                t.sink.release(s, n);
            }
            Err(e)
        }
    }
}

fn write_blocks(sink: &mut dyn PageSink, block_log2: u8, prefix: &[u8], rest: &mut dyn Read) -> Result<LargeRef> {
    let ps = sink.page_size();
    let block = 1usize << block_log2;
    let mut raw = vec![0u8; block];
    let mut packed = vec![0u8; lz4_flex::block::get_maximum_output_size(block)];
    let mut levels: Vec<Level> = vec![Level { buf: Vec::new(), count: 0, flushed: 0 }];
    let mut total: u64 = 0;
    let mut last_missed = false;
    let mut pre = prefix;
    loop {
        let take = pre.len().min(block);
        let (head, tail) = pre.split_at(take);
        raw.get_mut(..take).ok_or_else(|| Error::invalid("block buffer"))?.copy_from_slice(head);
        pre = tail;
        let n = take + fill(rest, raw.get_mut(take..).unwrap_or(&mut []))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total >= crate::btree::MAX_VALUE_LEN {
            return Err(Error::new(ErrorKind::TooLarge, "value exceeds 2^48 bytes"));
        }
        let data = raw.get(..n).unwrap_or(&[]);
        let pages_of = |len: usize| len.div_ceil(ps);
        // After a block that did not compress, first try a 4 KiB sample:
        // incompressible data then costs little, and data that turns
        // compressible again is noticed at the next block.
        let worth_trying = !last_missed || {
            let sample = data.get(..SAMPLE.min(data.len())).unwrap_or(&[]);
            let c = lz4_flex::block::compress_into(sample, &mut packed).unwrap_or(usize::MAX);
            c < sample.len() - sample.len() / 8
        };
        let c = if worth_trying {
            lz4_flex::block::compress_into(data, &mut packed).unwrap_or(usize::MAX)
        } else {
            usize::MAX
        };
        // Compress only when it saves at least one page on disk.
        let (codec, stored) = match packed.get(..c) {
            Some(p) if pages_of(c) < pages_of(n) => (CODEC_LZ4, p),
            _ => (CODEC_RAW, data),
        };
        last_missed = codec == CODEC_RAW;
        let npages = pages_of(stored.len()) as u64;
        let start = sink.alloc(npages)?;
        let mut out = Vec::with_capacity(npages as usize * ps);
        out.extend_from_slice(stored);
        out.resize(npages as usize * ps, 0);
        sink.write(start, &out)?;
        let mut e = [0u8; BLOCK_ENTRY];
        put_u64(&mut e, 0, start);
        put_u32(&mut e, 8, stored.len() as u32);
        if let Some(b) = e.get_mut(12) {
            *b = codec;
        }
        put_u64(&mut e, 16, checksum(stored, start));
        push_entry(sink, &mut levels, 0, &e)?;
        if n < block {
            break;
        }
    }
    if total == 0 {
        return Err(Error::invalid("a large value cannot be empty"));
    }
    // Close the index bottom-up: a level that never flushed a page and has
    // nothing above it holds the root.
    let mut level = 0usize;
    loop {
        let top = level + 1 == levels.len();
        let lv = levels.get_mut(level).ok_or_else(|| Error::corrupt("index level missing"))?;
        if top && lv.flushed == 0 {
            let root = write_index_page(sink, level as u8, lv)?;
            return Ok(LargeRef { len: total, root, depth: level as u8 + 1 });
        }
        if lv.count > 0 {
            let pn = write_index_page(sink, level as u8, lv)?;
            push_entry(sink, &mut levels, level + 1, &pn.to_le_bytes())?;
        }
        level += 1;
    }
}

/// Location of one stored block.
#[derive(Debug, Clone, Copy)]
pub struct BlockLoc {
    pub start: u64,
    pub stored: u32,
    pub codec: u8,
    pub sum: u64,
}

impl BlockLoc {
    pub fn pages(&self, ps: usize) -> u64 {
        (self.stored as usize).div_ceil(ps) as u64
    }
}

fn check_shape(r: &LargeRef, ps: usize, block_log2: u8) -> Result<u64> {
    let blocks = r.len.div_ceil(1u64 << block_log2);
    let fits = index_capacity(ps, r.depth) >= blocks;
    let minimal = r.depth == 1 || index_capacity(ps, r.depth - 1) < blocks;
    if r.depth > MAX_INDEX_DEPTH || !fits || !minimal {
        return Err(Error::corrupt_page(r.root, "large value index depth does not match its length"));
    }
    Ok(blocks)
}

fn index_page<'s>(snap: &'s Snapshot, pn: u64, level: u8) -> Result<super::snapshot::PageBuf<'s>> {
    let p = snap.page(pn, KIND_VINDEX)?;
    if page_level(&p) != level {
        return Err(Error::corrupt_page(pn, "value index page at the wrong level"));
    }
    Ok(p)
}

/// Finds block `b` of a large value.
pub fn locate(snap: &Snapshot, r: &LargeRef, block_log2: u8, b: u64) -> Result<BlockLoc> {
    let ps = snap.geo.page_size;
    let blocks = check_shape(r, ps, block_log2)?;
    if b >= blocks {
        return Err(Error::invalid("block index past the end of the value"));
    }
    let mut pn = r.root;
    let mut rem = b;
    for level in (1..r.depth).rev() {
        let span = index_capacity(ps, level);
        let p = index_page(snap, pn, level)?;
        let i = rem / span;
        rem %= span;
        if i >= page_count_field(&p) as u64 {
            return Err(Error::corrupt_page(pn, "value index entry missing"));
        }
        pn = u64_at(&p, PAGE_HDR + i as usize * 8).ok_or_else(|| Error::corrupt_page(pn, "short index page"))?;
    }
    let p = index_page(snap, pn, 0)?;
    if rem >= page_count_field(&p) as u64 {
        return Err(Error::corrupt_page(pn, "value block entry missing"));
    }
    block_entry(&p, pn, rem as usize)
}

/// Entry `i` of level-0 index page `p` (page number `pn`).
fn block_entry(p: &[u8], pn: u64, i: usize) -> Result<BlockLoc> {
    let off = PAGE_HDR + i * BLOCK_ENTRY;
    let short = || Error::corrupt_page(pn, "short index page");
    Ok(BlockLoc {
        start: u64_at(p, off).ok_or_else(short)?,
        stored: u32_at(p, off + 8).ok_or_else(short)?,
        codec: p.get(off + 12).copied().ok_or_else(short)?,
        sum: u64_at(p, off + 16).ok_or_else(short)?,
    })
}

/// Reads, verifies and decodes block `b` into `out` (resized to its raw length).
pub fn read_block(
    snap: &Snapshot,
    r: &LargeRef,
    block_log2: u8,
    b: u64,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let block = 1u64 << block_log2;
    let raw_len = (r.len - b * block).min(block) as usize;
    let loc = locate(snap, r, block_log2, b)?;
    let max_stored = lz4_flex::block::get_maximum_output_size(block as usize);
    if loc.stored == 0 || loc.stored as usize > max_stored || (loc.codec == CODEC_RAW && loc.stored as usize != raw_len)
    {
        return Err(Error::corrupt_page(loc.start, "value block length is impossible"));
    }
    // Blocks are read with positioned reads even when the tree is mapped:
    // streaming a huge value must not make the whole of it resident.
    let ps = snap.geo.page_size;
    let stored_len = loc.stored as usize;
    let buf = if loc.codec == CODEC_RAW { &mut *out } else { &mut *scratch };
    snap.read_run(loc.start, loc.pages(ps), stored_len, buf)?;
    if checksum(buf, loc.start) != loc.sum {
        return Err(Error::new(
            ErrorKind::ChecksumMismatch,
            format!("value block at page {}: checksum mismatch; the file is damaged", loc.start),
        )
        .at_page(loc.start));
    }
    match loc.codec {
        CODEC_RAW => {}
        CODEC_LZ4 => {
            out.clear();
            out.resize(raw_len, 0);
            let n = lz4_flex::block::decompress_into(scratch, out)
                .map_err(|_| Error::corrupt_page(loc.start, "value block does not decompress"))?;
            if n != raw_len {
                return Err(Error::corrupt_page(loc.start, "value block decompresses to the wrong length"));
            }
        }
        _ => return Err(Error::corrupt_page(loc.start, "unknown value block codec")),
    }
    Ok(())
}

/// Called with (first page, page count, the block when the run is one).
pub type RunVisitor<'a> = dyn FnMut(u64, u64, Option<&BlockLoc>) -> Result<()> + 'a;

/// Visits every page run a large value occupies (blocks and index pages),
/// e.g. to free them; returns the stored bytes of its blocks.
pub fn for_each_run(snap: &Snapshot, r: &LargeRef, block_log2: u8, f: &mut RunVisitor<'_>) -> Result<u64> {
    let ps = snap.geo.page_size;
    check_shape(r, ps, block_log2)?;
    let mut stored = 0u64;
    // Iterative walk: (page, level); depth is bounded by MAX_INDEX_DEPTH.
    let mut stack = vec![(r.root, r.depth - 1)];
    while let Some((pn, level)) = stack.pop() {
        let p = index_page(snap, pn, level)?;
        let n = page_count_field(&p);
        f(pn, 1, None)?;
        if level == 0 {
            if n as u64 > blocks_per_page(ps) {
                return Err(Error::corrupt_page(pn, "too many block entries"));
            }
            for i in 0..n {
                let loc = block_entry(&p, pn, i)?;
                stored += loc.stored as u64;
                f(loc.start, loc.pages(ps).max(1), Some(&loc))?;
            }
        } else {
            if n as u64 > children_per_page(ps) {
                return Err(Error::corrupt_page(pn, "too many index children"));
            }
            for i in 0..n {
                let c = u64_at(&p, PAGE_HDR + i * 8).ok_or_else(|| Error::corrupt_page(pn, "short index page"))?;
                stack.push((c, level - 1));
            }
        }
    }
    Ok(stored)
}

/// A seekable reader over a large value of one snapshot.
pub struct ValueReader<'s> {
    snap: &'s Snapshot,
    r: LargeRef,
    block_log2: u8,
    pos: u64,
    cur: Option<u64>,
    buf: Vec<u8>,
    scratch: Vec<u8>,
}

impl<'s> ValueReader<'s> {
    pub(crate) fn new(snap: &'s Snapshot, r: LargeRef, block_log2: u8) -> ValueReader<'s> {
        ValueReader { snap, r, block_log2, pos: 0, cur: None, buf: Vec::new(), scratch: Vec::new() }
    }

    pub fn len(&self) -> u64 {
        self.r.len
    }

    pub fn is_empty(&self) -> bool {
        self.r.len == 0
    }

    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Reads up to `buf.len()` bytes at the current position.
    pub fn read_some(&mut self, out: &mut [u8]) -> Result<usize> {
        if self.pos >= self.r.len || out.is_empty() {
            return Ok(0);
        }
        let b = self.pos >> self.block_log2;
        if self.cur != Some(b) {
            self.cur = None;
            read_block(self.snap, &self.r, self.block_log2, b, &mut self.buf, &mut self.scratch)?;
            self.cur = Some(b);
        }
        let within = (self.pos - (b << self.block_log2)) as usize;
        let src = self.buf.get(within..).unwrap_or(&[]);
        let n = src.len().min(out.len());
        if let (Some(d), Some(s)) = (out.get_mut(..n), src.get(..n)) {
            d.copy_from_slice(s);
        }
        self.pos += n as u64;
        Ok(n)
    }

    /// Reads exactly `len` bytes at `offset` (clamped to the value's end).
    pub fn read_range(&mut self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let end = offset.saturating_add(len).min(self.r.len);
        let want = usize::try_from(end.saturating_sub(offset))
            .map_err(|_| Error::new(ErrorKind::TooLarge, "range too large for memory"))?;
        // Grow with the blocks actually read: a damaged reference must not
        // make one huge allocation up front.
        let mut v = Vec::with_capacity(want.min(1 << 20));
        let mut chunk = vec![0u8; (1usize << self.block_log2).min(want.max(1))];
        self.pos = offset;
        while v.len() < want {
            let room = (want - v.len()).min(chunk.len());
            let n = self.read_some(chunk.get_mut(..room).unwrap_or(&mut []))?;
            if n == 0 {
                break;
            }
            v.extend_from_slice(chunk.get(..n).unwrap_or(&[]));
        }
        Ok(v)
    }
}

impl Read for ValueReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_some(buf).map_err(io::Error::other)
    }
}

impl Seek for ValueReader<'_> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let next = match pos {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.r.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match next {
            Some(p) => {
                self.pos = p;
                Ok(p)
            }
            None => Err(io::Error::new(io::ErrorKind::InvalidInput, "seek before the start of the value")),
        }
    }
}
