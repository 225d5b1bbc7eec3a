//! Content-defined chunking of a stream in bounded memory (FastCDC 2020,
//! parameters from the store's config).

use std::io::Read;

use fastcdc::v2020::FastCDC;

use std::ops::Range;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use super::config::Config;
use super::hash::{HashKind, Hasher, ObjectId};
use crate::error::{Error, ErrorKind, Result};

/// Bytes buffered ahead of the cutter: many chunks per refill, so the
/// leftover copied to the next buffer at each refill stays small next to it.
const BUFFER: usize = 8 << 20;

/// A piece of a shared buffer.
pub type Piece = (Arc<Vec<u8>>, Range<usize>);

/// Splits a stream into chunks. Each fill goes into a buffer that can be
/// shared, without a copy, with a hashing thread ([`HashPipe`]).
pub struct Chunker<R: Read> {
    src: R,
    buf: Arc<Vec<u8>>,
    /// Buffers the hashing thread may still hold, for reuse once it is done.
    spare: Vec<Arc<Vec<u8>>>,
    start: usize,
    end: usize,
    eof: bool,
    min: usize,
    avg: usize,
    max: usize,
    /// The bytes the last fill read, not yet taken by `take_fill`.
    fresh: Option<Piece>,
}

impl<R: Read> Chunker<R> {
    pub fn new(src: R, c: &Config) -> Chunker<R> {
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
            fresh: None,
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
        if self.spare.len() < 8 {
            self.spare.push(old);
        }
        self.start = 0;
        self.end = end;
        self.fresh = Some((self.buf.clone(), kept..end));
        Ok(())
    }

    /// The next chunk as a piece of the shared buffer; `None` at the end.
    pub fn next_shared(&mut self) -> Result<Option<Piece>> {
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
        let piece = (self.buf.clone(), self.start..cut);
        self.start = cut;
        Ok(Some(piece))
    }

    /// The stream bytes read by the last fill, each handed out once, in
    /// stream order (for the whole-object hash).
    pub fn take_fill(&mut self) -> Option<Piece> {
        self.fresh.take()
    }
}

enum Job {
    /// Stream bytes, for the whole-object hash.
    Whole(Piece),
    /// A chunk whose id is wanted.
    Chunk(Piece),
}

/// Hashes on a second thread where one can be started: the whole object,
/// and each chunk (ids come back in the order the chunks were sent), so
/// that the thread that cuts chunks and writes records does not hash.
/// Without a thread, it hashes inline.
pub struct HashPipe {
    kind: HashKind,
    inline: Option<(Hasher, std::collections::VecDeque<ObjectId>)>,
    tx: Option<SyncSender<Job>>,
    ids: Option<Receiver<ObjectId>>,
    worker: Option<JoinHandle<ObjectId>>,
}

impl HashPipe {
    pub fn new(kind: HashKind) -> HashPipe {
        let (tx, rx) = sync_channel::<Job>(64);
        let (id_tx, id_rx) = sync_channel::<ObjectId>(1024);
        let worker = std::thread::Builder::new().name("bale-hash".into()).spawn(move || {
            let mut whole = kind.hasher();
            while let Ok(job) = rx.recv() {
                match job {
                    Job::Whole((buf, r)) => whole.update(&buf[r]),
                    Job::Chunk((buf, r)) => {
                        if id_tx.send(kind.hash(&buf[r])).is_err() {
                            break;
                        }
                    }
                }
            }
            whole.finish()
        });
        match worker {
            Ok(w) => HashPipe { kind, inline: None, tx: Some(tx), ids: Some(id_rx), worker: Some(w) },
            Err(_) => {
                HashPipe { kind, inline: Some((kind.hasher(), Default::default())), tx: None, ids: None, worker: None }
            }
        }
    }

    fn send(&mut self, job: Job) -> Result<()> {
        match &self.tx {
            Some(tx) => tx.send(job).map_err(|_| thread_failed()),
            None => Err(thread_failed()),
        }
    }

    pub fn whole(&mut self, piece: Piece) -> Result<()> {
        if let Some((h, _)) = &mut self.inline {
            h.update(&piece.0[piece.1]);
            return Ok(());
        }
        self.send(Job::Whole(piece))
    }

    pub fn chunk(&mut self, piece: Piece) -> Result<()> {
        if let Some((_, ids)) = &mut self.inline {
            ids.push_back(self.kind.hash(&piece.0[piece.1]));
            return Ok(());
        }
        self.send(Job::Chunk(piece))
    }

    /// The id of the oldest chunk sent and not yet answered.
    pub fn next_id(&mut self) -> Result<ObjectId> {
        if let Some((_, ids)) = &mut self.inline {
            return ids.pop_front().ok_or_else(thread_failed);
        }
        self.ids.as_ref().ok_or_else(thread_failed)?.recv().map_err(|_| thread_failed())
    }

    /// The whole object's id, once every chunk id has been taken.
    pub fn finish(mut self) -> Result<ObjectId> {
        if let Some((h, _)) = self.inline.take() {
            return Ok(h.finish());
        }
        drop(self.tx.take());
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(id)) => Ok(id),
            _ => Err(thread_failed()),
        }
    }
}

fn thread_failed() -> Error {
    Error::new(ErrorKind::Io, "the hashing thread failed")
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
        while let Some((_, r)) = ch.next_shared().unwrap() {
            assert!(r.len() <= 16384);
            out.push(r.len());
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
