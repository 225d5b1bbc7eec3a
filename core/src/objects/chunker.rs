//! Content-defined chunking of a stream in bounded memory (FastCDC 2020,
//! parameters from the store's config).

use std::io::Read;

use fastcdc::v2020::FastCDC;

use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::config::Config;
use super::hash::{HashKind, Hasher, ObjectId};
use crate::error::{Error, ErrorKind, Result};

/// Bytes buffered ahead of the cutter: many chunks per refill, so the
/// leftover copied to the front at each refill stays small next to it.
const BUFFER: usize = 8 << 20;

pub struct Chunker<R: Read> {
    src: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    min: usize,
    avg: usize,
    max: usize,
}

impl<R: Read> Chunker<R> {
    pub fn new(src: R, c: &Config) -> Chunker<R> {
        let max = c.chunk_max as usize;
        Chunker {
            src,
            buf: vec![0u8; BUFFER.max(4 * max)],
            start: 0,
            end: 0,
            eof: false,
            min: c.chunk_min as usize,
            avg: c.chunk_avg as usize,
            max,
        }
    }

    fn fill(&mut self) -> Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        while !self.eof && self.end < self.buf.len() {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io("reading the object stream failed", e)),
            }
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

/// Hashes a stream as it is read, on a second thread where one can be
/// started (the whole-object hash then costs no time of the thread that
/// chunks, hashes chunks and writes).
pub struct WholeHash {
    inline: Option<Hasher>,
    tx: Option<SyncSender<Vec<u8>>>,
    worker: Option<JoinHandle<ObjectId>>,
    pending: Vec<u8>,
}

/// Bytes handed to the hashing thread at a time.
const HASH_PIECE: usize = 4 << 20;

impl WholeHash {
    pub fn new(kind: HashKind) -> WholeHash {
        let (tx, rx) = sync_channel::<Vec<u8>>(2);
        let worker = std::thread::Builder::new().name("bale-hash".into()).spawn(move || {
            let mut h = kind.hasher();
            while let Ok(piece) = rx.recv() {
                h.update(&piece);
            }
            h.finish()
        });
        match worker {
            Ok(w) => WholeHash { inline: None, tx: Some(tx), worker: Some(w), pending: Vec::new() },
            Err(_) => WholeHash { inline: Some(kind.hasher()), tx: None, worker: None, pending: Vec::new() },
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        if let Some(h) = &mut self.inline {
            h.update(data);
            return;
        }
        self.pending.extend_from_slice(data);
        if self.pending.len() >= HASH_PIECE {
            self.send();
        }
    }

    fn send(&mut self) {
        let piece = std::mem::take(&mut self.pending);
        if let Some(tx) = &self.tx
            && let Err(back) = tx.send(piece)
        {
            // The thread is gone (it cannot fail, but be safe): what it
            // hashed is lost, so the object cannot be named.
            self.inline = None;
            self.tx = None;
            drop(back);
        }
    }

    pub fn finish(mut self) -> Result<ObjectId> {
        if let Some(h) = self.inline.take() {
            return Ok(h.finish());
        }
        if !self.pending.is_empty() {
            self.send();
        }
        drop(self.tx.take());
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(id)) => Ok(id),
            _ => Err(Error::new(ErrorKind::Io, "the hashing thread failed")),
        }
    }
}

/// A reader that feeds everything read through it to a [`WholeHash`].
pub struct Tee<'h, R> {
    pub inner: R,
    pub hash: &'h mut WholeHash,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
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
        let mut ch = Chunker::new(Trickle(data, reader_step), &c);
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
