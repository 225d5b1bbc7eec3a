//! Content-defined chunking of a stream in bounded memory (FastCDC 2020,
//! parameters from the store's config).

use std::io::Read;

use fastcdc::v2020::FastCDC;

use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::config::Config;
use super::hash::{HashKind, Hasher, ObjectId};
use crate::error::{Error, ErrorKind, Result};

/// Bytes buffered ahead of the cutter: many chunks per refill, so the
/// leftover copied to the next buffer at each refill stays small next to it.
const BUFFER: usize = 8 << 20;

/// Splits a stream into chunks. Each fill goes into a shared buffer that is
/// also handed, without a copy, to an optional [`WholeHash`]: the bytes are
/// hashed whole on another thread while this one cuts and stores chunks.
pub struct Chunker<'h, R: Read> {
    src: R,
    buf: Arc<Vec<u8>>,
    /// Buffers the hashing thread has let go of, for reuse.
    spare: Vec<Arc<Vec<u8>>>,
    start: usize,
    end: usize,
    eof: bool,
    min: usize,
    avg: usize,
    max: usize,
    whole: Option<&'h mut WholeHash>,
}

impl<'h, R: Read> Chunker<'h, R> {
    pub fn new(src: R, c: &Config, whole: Option<&'h mut WholeHash>) -> Chunker<'h, R> {
        let max = c.chunk_max as usize;
        Chunker {
            src,
            buf: Arc::new(Vec::new()),
            spare: Vec::new(),
            start: 0,
            end: 0,
            eof: false,
            min: c.chunk_min as usize,
            avg: c.chunk_avg as usize,
            max,
            whole,
        }
    }

    /// Moves the unread tail to a fresh buffer and reads on after it.
    fn fill(&mut self) -> Result<()> {
        let size = BUFFER.max(4 * self.max);
        let mut next = self
            .spare
            .iter()
            .position(|b| Arc::strong_count(b) == 1)
            .map(|i| self.spare.swap_remove(i))
            .and_then(|b| Arc::try_unwrap(b).ok())
            .unwrap_or_default();
        next.clear();
        next.extend_from_slice(&self.buf[self.start..self.end]);
        let kept = next.len();
        next.resize(size, 0);
        let mut end = kept;
        while !self.eof && end < size {
            match self.src.read(&mut next[end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("reading the object stream failed", e)),
            }
        }
        let old = std::mem::replace(&mut self.buf, Arc::new(next));
        if self.spare.len() < 4 {
            self.spare.push(old);
        }
        self.start = 0;
        self.end = end;
        if let Some(w) = self.whole.as_deref_mut() {
            w.update_shared(self.buf.clone(), kept..end);
        }
        Ok(())
    }

    /// The next chunk, borrowed until the following call; `None` at the end.
    pub fn next_chunk(&mut self) -> Result<Option<&[u8]>> {
        if self.end - self.start < self.max && !self.eof {
            self.fill()?;
        }
        let remaining = self.end - self.start;
        if remaining == 0 {
            return Ok(None);
        }
        let cdc = FastCDC::new(&self.buf[..self.end], self.min, self.avg, self.max);
        let (_, cut) = cdc.cut(self.start, remaining);
        let cut = if cut <= self.start { self.end } else { cut };
        let chunk = &self.buf[self.start..cut];
        self.start = cut;
        Ok(Some(chunk))
    }
}

/// A piece of a shared buffer for the hashing thread.
type Piece = (Arc<Vec<u8>>, std::ops::Range<usize>);

/// Hashes a stream whole on a second thread where one can be started (the
/// thread that chunks, hashes chunks and writes then does not pay for it),
/// inline otherwise.
pub struct WholeHash {
    inline: Option<Hasher>,
    tx: Option<SyncSender<Piece>>,
    worker: Option<JoinHandle<ObjectId>>,
    failed: bool,
}

impl WholeHash {
    pub fn new(kind: HashKind) -> WholeHash {
        let (tx, rx) = sync_channel::<Piece>(2);
        let worker = std::thread::Builder::new().name("bale-hash".into()).spawn(move || {
            let mut h = kind.hasher();
            while let Ok((buf, range)) = rx.recv() {
                h.update(&buf[range]);
            }
            h.finish()
        });
        match worker {
            Ok(w) => WholeHash { inline: None, tx: Some(tx), worker: Some(w), failed: false },
            Err(_) => WholeHash { inline: Some(kind.hasher()), tx: None, worker: None, failed: false },
        }
    }

    pub fn update_shared(&mut self, buf: Arc<Vec<u8>>, range: std::ops::Range<usize>) {
        if let Some(h) = &mut self.inline {
            h.update(&buf[range]);
        } else if let Some(tx) = &self.tx
            && tx.send((buf, range)).is_err()
        {
            self.failed = true;
        }
    }

    pub fn finish(mut self) -> Result<ObjectId> {
        if let Some(h) = self.inline.take() {
            return Ok(h.finish());
        }
        drop(self.tx.take());
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(id)) if !self.failed => Ok(id),
            _ => Err(Error::new(ErrorKind::Io, "the hashing thread failed")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect()
    }

    fn cuts(data: &[u8], reader_step: usize) -> Vec<usize> {
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(b.len()).min(self.1);
                b[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let c = Config { chunk_min: 1024, chunk_avg: 4096, chunk_max: 16384, ..Config::default() };
        let mut ch = Chunker::new(Trickle(data, reader_step), &c, None);
        let mut out = Vec::new();
        while let Some(x) = ch.next_chunk().unwrap() {
            assert!(x.len() <= 16384);
            out.push(x.len());
        }
        out
    }

    #[test]
    fn cut_points_do_not_depend_on_how_the_stream_arrives() {
        let data = noise(20 << 20, 3);
        let a = cuts(&data, usize::MAX);
        assert_eq!(a, cuts(&data, 7777));
        assert_eq!(a.iter().sum::<usize>(), data.len());
        assert!(a.len() > 1000);
        // A change in the middle moves only nearby cut points.
        let mut b = data.clone();
        b[10 << 20] ^= 0xff;
        let bc = cuts(&b, usize::MAX);
        let same = a.iter().zip(bc.iter()).take_while(|(x, y)| x == y).count();
        assert!(same > a.len() / 3);
        assert_eq!(cuts(&[], 1), Vec::<usize>::new());
    }
}
