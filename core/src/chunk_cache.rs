//! A read cache for slow immutable sources (a browser `File`, a read
//! callback, later HTTP ranges): the file is cut into fixed-size aligned
//! chunks, the most recently used ones are kept up to a byte budget, and a
//! reader that goes through the file in order gets growing read-ahead, so a
//! scan costs a few large source reads instead of one per page.
//!
//! The cache does not know its source: [`ChunkCache::read`] takes the fetch
//! function, so one cache type serves every backend and its tests can count
//! fetches.

use std::num::NonZeroUsize;

use lru::LruCache;

use crate::error::{Error, Result};

/// Chunk size when the caller does not choose one: four pages of the
/// default size. Larger chunks waste more on scattered reads (branch pages,
/// a large value's index pages); sequential reads get read-ahead anyway.
pub const DEFAULT_CHUNK_BYTES: usize = 16 << 10;
/// Cache budget when the caller does not choose one.
pub const DEFAULT_CACHE_BYTES: usize = 8 << 20;
const MIN_CHUNK_BYTES: usize = 512;
const MAX_CHUNK_BYTES: usize = 16 << 20;
/// The cache holds at least this many chunks, so that read-ahead and the
/// pages every lookup touches (header, metas, upper tree levels) fit at once.
const MIN_CHUNKS: usize = 8;
/// Read-ahead starts at this many chunks and doubles on each sequential
/// miss, up to a quarter of the cache and at most `MAX_AHEAD_BYTES`.
const FIRST_AHEAD: u64 = 2;
const MAX_AHEAD_BYTES: u64 = 1 << 20;
/// Sequential readers followed at once. A tree scan reads leaves in order
/// but, in a deep tree, misses on branch pages elsewhere in between: those
/// start streams of their own instead of ending the leaves' stream.
/// Streams not reading ahead yet are dropped first.
const STREAMS: usize = 4;

/// A reader going through the file in order.
#[derive(Debug, Clone, Copy)]
struct Stream {
    /// The chunk right after the last one this stream fetched: a miss
    /// starting there continues it.
    next: u64,
    /// Chunks of read-ahead its next miss fetches.
    ahead: u64,
}

/// What a cache did since it was made (or its counters were reset).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Reads asked of the cache.
    pub requests: u64,
    /// Reads served from cached chunks alone.
    pub hits: u64,
    /// Chunks fetched beyond what a read needed (read-ahead).
    pub ahead_chunks: u64,
    /// Reads larger than a quarter of the cache, passed to the source
    /// without caching (so that one huge read does not empty the cache).
    pub bypassed: u64,
}

/// Fixed-size aligned chunks of an immutable source, least recently used
/// evicted first, with read-ahead for sequential readers.
pub struct ChunkCache {
    chunk: u64,
    capacity: usize,
    max_ahead: u64,
    chunks: LruCache<u64, Box<[u8]>>,
    held: usize,
    /// Recent streams, the most recently continued first.
    streams: Vec<Stream>,
    stats: CacheStats,
}

impl ChunkCache {
    /// A cache of `chunk_bytes` chunks (a power of two from 512 bytes to
    /// 16 MiB) holding at most `cache_bytes` (at least eight chunks).
    pub fn new(chunk_bytes: usize, cache_bytes: usize) -> Result<ChunkCache> {
        if !chunk_bytes.is_power_of_two() || !(MIN_CHUNK_BYTES..=MAX_CHUNK_BYTES).contains(&chunk_bytes) {
            return Err(Error::invalid(format!(
                "chunk size {chunk_bytes} is not a power of two from {MIN_CHUNK_BYTES} to {MAX_CHUNK_BYTES} bytes"
            )));
        }
        let capacity = cache_bytes / chunk_bytes;
        let Some(cap) = NonZeroUsize::new(capacity).filter(|c| c.get() >= MIN_CHUNKS) else {
            return Err(Error::invalid(format!(
                "a cache of {cache_bytes} bytes holds fewer than {MIN_CHUNKS} chunks of {chunk_bytes} bytes; \
                 give at least {} bytes",
                MIN_CHUNKS * chunk_bytes
            )));
        };
        let chunk = chunk_bytes as u64;
        let max_ahead = (capacity as u64 / 4).min((MAX_AHEAD_BYTES / chunk).max(1));
        Ok(ChunkCache {
            chunk,
            capacity,
            max_ahead,
            chunks: LruCache::new(cap),
            held: 0,
            streams: Vec::with_capacity(STREAMS),
            stats: CacheStats::default(),
        })
    }

    pub fn chunk_bytes(&self) -> usize {
        self.chunk as usize
    }

    /// The most bytes the cache holds.
    pub fn capacity_bytes(&self) -> usize {
        self.capacity * self.chunk as usize
    }

    /// The bytes of the chunks it holds now.
    pub fn cached_bytes(&self) -> usize {
        self.held
    }

    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    pub fn reset_stats(&mut self) {
        self.stats = CacheStats::default();
    }

    /// Fills `buf` from `offset` of a source of `size` bytes, from cached
    /// chunks where it can and otherwise with one call of `fetch(buf,
    /// offset)` for the chunks missing (and, when the reads go through the
    /// file in order, the ones after them). The caller has checked that the
    /// read lies inside `size`.
    pub fn read(
        &mut self,
        size: u64,
        buf: &mut [u8],
        offset: u64,
        fetch: &mut dyn FnMut(&mut [u8], u64) -> Result<()>,
    ) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        self.stats.requests += 1;
        let first = offset / self.chunk;
        let last = (offset + buf.len() as u64 - 1) / self.chunk;
        if (first..=last).all(|c| self.chunks.contains(&c)) {
            self.stats.hits += 1;
            return self.copy_out(buf, offset, first, last);
        }
        let span = last - first + 1;
        if span > self.capacity as u64 / 4 {
            self.stats.bypassed += 1;
            return fetch(buf, offset);
        }
        // Chunks at the start of the read that are held need no fetch; keep
        // them (most recently used) through the inserts below.
        let from = (first..=last).find(|c| !self.chunks.contains(c)).unwrap_or(first);
        for c in first..from {
            self.chunks.get(&c);
        }
        // A miss where a stream goes on reads further ahead than the last
        // time; any other miss starts a stream, without read-ahead.
        let ahead = match self.streams.iter().position(|s| s.next == from) {
            Some(i) => {
                let s = self.streams.remove(i);
                if s.ahead == 0 { FIRST_AHEAD } else { s.ahead * 2 }.min(self.max_ahead)
            }
            None => {
                // Room for the new stream: the oldest one not reading ahead
                // goes first, so misses scattered between a scan's reads
                // replace each other, not the scan.
                if self.streams.len() == STREAMS {
                    let idle = self.streams.iter().rposition(|s| s.ahead == 0);
                    self.streams.remove(idle.unwrap_or(STREAMS - 1));
                }
                0
            }
        };
        let end_chunk = size.div_ceil(self.chunk);
        // Read-ahead stops at the end of the file and at the first chunk
        // already held.
        let mut to = last + 1;
        while to < end_chunk && to <= last + ahead && !self.chunks.contains(&to) {
            to += 1;
        }
        let start = from * self.chunk;
        let mut run = vec![0u8; ((to * self.chunk).min(size) - start) as usize];
        fetch(&mut run, start)?;
        self.stats.ahead_chunks += to - last - 1;
        self.streams.insert(0, Stream { next: to, ahead });
        for (i, bytes) in run.chunks(self.chunk as usize).enumerate() {
            self.insert(from + i as u64, bytes.into());
        }
        // At most half the cache was inserted, after the held chunks of
        // this read were used: all of them are still there.
        self.copy_out(buf, offset, first, last)
    }

    fn insert(&mut self, chunk: u64, bytes: Box<[u8]>) {
        self.held += bytes.len();
        if let Some((_, old)) = self.chunks.push(chunk, bytes) {
            self.held -= old.len();
        }
    }

    fn copy_out(&mut self, buf: &mut [u8], offset: u64, first: u64, last: u64) -> Result<()> {
        let mut at = 0;
        for c in first..=last {
            let bytes = self.chunks.get(&c).ok_or_else(|| Error::corrupt("a cached chunk went missing"))?;
            let from = if c == first { (offset - c * self.chunk) as usize } else { 0 };
            let n = (bytes.len() - from).min(buf.len() - at);
            buf[at..at + n].copy_from_slice(&bytes[from..from + n]);
            at += n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    /// A source of `size` bytes where byte `i` is `i % 251`, recording
    /// every fetch as (offset, length).
    struct Counted {
        size: u64,
        fetches: Vec<(u64, usize)>,
    }

    impl Counted {
        fn new(size: u64) -> Counted {
            Counted { size, fetches: Vec::new() }
        }

        fn read(&mut self, cache: &mut ChunkCache, offset: u64, len: usize) -> Vec<u8> {
            let mut buf = vec![0u8; len];
            let size = self.size;
            let fetches = &mut self.fetches;
            cache
                .read(size, &mut buf, offset, &mut |b, off| {
                    fetches.push((off, b.len()));
                    for (i, x) in b.iter_mut().enumerate() {
                        *x = ((off + i as u64) % 251) as u8;
                    }
                    Ok(())
                })
                .unwrap();
            let want: Vec<u8> = (offset..offset + len as u64).map(|i| (i % 251) as u8).collect();
            assert_eq!(buf, want, "bytes at {offset}+{len}");
            buf
        }
    }

    const K: u64 = 1024;

    /// A source of `kib` KiB and a cache of `chunks` chunks of 4 KiB.
    fn setup(kib: u64, chunks: usize) -> (Counted, ChunkCache) {
        (Counted::new(kib * K), ChunkCache::new(4096, chunks * 4096).unwrap())
    }

    #[test]
    fn sizes_are_checked() {
        for (chunk, cache) in [(1000, 1 << 20), (256, 1 << 20), (32 << 20, 1 << 30), (4096, 7 * 4096)] {
            let e = ChunkCache::new(chunk, cache).err().unwrap();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{chunk} {cache}");
        }
        let c = ChunkCache::new(4096, 8 * 4096 + 100).unwrap();
        assert_eq!(c.capacity_bytes(), 8 * 4096);
    }

    #[test]
    fn reads_are_served_from_aligned_chunks() {
        let size = 100 * K + 100;
        let mut src = Counted::new(size);
        let mut c = ChunkCache::new(4096, 64 * 4096).unwrap();
        src.read(&mut c, 5000, 100);
        assert_eq!(src.fetches, vec![(4096, 4096)]);
        // The same chunk again, and a read within it: no fetch.
        src.read(&mut c, 4096, 4096);
        src.read(&mut c, 8000, 192);
        assert_eq!(src.fetches.len(), 1);
        // Reads elsewhere, enough that chunk 1's reader is forgotten.
        for chunk in [20, 12, 16, 8] {
            src.read(&mut c, chunk * 4096, 10);
        }
        // A read across a chunk boundary fetches only what is missing.
        src.read(&mut c, 8000, 300);
        assert_eq!(src.fetches[5], (8192, 4096));
        // The last chunk of the file is short.
        src.read(&mut c, size - 10, 10);
        assert_eq!(src.fetches[6], (25 * 4096, 100));
        assert_eq!(c.stats().hits, 2);
        assert_eq!(c.stats().requests, 9);
        assert_eq!(c.stats().ahead_chunks, 0);
        assert_eq!(c.cached_bytes(), 6 * 4096 + 100);
    }

    #[test]
    fn sequential_reads_read_ahead_more_and_more() {
        let (mut src, mut c) = setup(4096, 256);
        // Page by page through 2 MiB (512 pages), going back to one other
        // page between them as a tree scan goes back to a branch page.
        src.read(&mut c, 1000 * 4096, 4096);
        for p in 0..512 {
            src.read(&mut c, p * 4096, 4096);
            src.read(&mut c, 1000 * 4096, 4096);
        }
        let sizes: Vec<usize> = src.fetches[1..].iter().map(|f| f.1 / 4096).collect();
        // One chunk, then a sequential miss with 2 ahead, 4, 8, ... capped at
        // a quarter of the cache (64 chunks).
        assert_eq!(&sizes[..6], &[1, 3, 5, 9, 17, 33]);
        assert!(sizes[6..].iter().all(|n| *n == 65), "{sizes:?}");
        assert!(src.fetches.len() < 20, "{} fetches for 512 pages", src.fetches.len());
        assert_eq!(c.stats().requests, 1 + 2 * 512);
        assert_eq!(c.stats().hits, 1 + 2 * 512 - src.fetches.len() as u64);
    }

    #[test]
    fn interleaved_sequential_readers_each_read_ahead() {
        let (mut src, mut c) = setup(16384, 256);
        // Leaves from chunk 0 on, with a miss on a branch page far away
        // between each two, as in a deep tree: the leaves' stream goes on.
        for p in 0..200 {
            src.read(&mut c, p * 4096, 4096);
            src.read(&mut c, (1000 + p * 7) * 4096, 100);
        }
        let leaf_fetches = src.fetches.iter().filter(|f| f.0 < 1000 * 4096).count();
        assert!(leaf_fetches < 12, "{leaf_fetches} fetches for 200 leaves");
        assert!(c.stats().ahead_chunks >= 190);
    }

    #[test]
    fn random_reads_do_not_read_ahead() {
        let (mut src, mut c) = setup(4096, 64);
        // Pages far apart, never the one after the last miss.
        let mut p = 7u64;
        for _ in 0..300 {
            p = (p * 1103 + 17) % 1024;
            src.read(&mut c, p * 4096 + 100, 200);
        }
        assert_eq!(c.stats().ahead_chunks, 0);
        assert!(src.fetches.iter().all(|f| f.1 == 4096), "{:?}", src.fetches);
    }

    #[test]
    fn memory_stays_within_the_budget() {
        let (mut src, mut c) = setup(8192, 16);
        for p in 0..2048 {
            src.read(&mut c, p * 4096, 4096);
            assert!(c.cached_bytes() <= c.capacity_bytes());
        }
        assert_eq!(c.cached_bytes(), 16 * 4096);
        // A read larger than a quarter of the cache goes straight to the
        // source and leaves the cache as it was.
        let n = src.fetches.len();
        src.read(&mut c, 0, 5 * 4096);
        assert_eq!(src.fetches.len(), n + 1);
        assert_eq!(src.fetches[n], (0, 5 * 4096));
        assert_eq!(c.stats().bypassed, 1);
        assert_eq!(c.cached_bytes(), 16 * 4096);
    }

    #[test]
    fn least_recently_used_chunks_go_first() {
        let (mut src, mut c) = setup(1024, 8);
        // Chunk 0 is used between every other read, so it stays.
        for p in [10, 20, 30, 40, 50, 60, 70, 80, 90, 100] {
            src.read(&mut c, 0, 10);
            src.read(&mut c, p * 4096, 10);
        }
        let n = src.fetches.len();
        src.read(&mut c, 0, 10);
        assert_eq!(src.fetches.len(), n, "chunk 0 was evicted");
        src.read(&mut c, 10 * 4096, 10);
        assert_eq!(src.fetches.len(), n + 1, "chunk 10 was not evicted");
    }

    #[test]
    fn a_failed_fetch_caches_nothing() {
        let mut c = ChunkCache::new(4096, 8 * 4096).unwrap();
        let mut buf = [0u8; 10];
        let e = c.read(1 << 20, &mut buf, 0, &mut |_, _| Err(Error::new(ErrorKind::Io, "disk on fire"))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io);
        assert_eq!(c.cached_bytes(), 0);
        let mut src = Counted::new(1 << 20);
        src.read(&mut c, 0, 10);
        assert_eq!(src.fetches.len(), 1);
    }
}
