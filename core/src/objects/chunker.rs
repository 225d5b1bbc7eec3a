//! Content-defined chunking of a stream in bounded memory (FastCDC 2020,
//! parameters from the store's config), on two threads beside the one
//! that reads the stream and writes the records.
//!
//! The stream arrives in blocks. A cutting thread finds the chunk
//! boundaries; a hashing thread computes each chunk's id and the whole
//! stream's id and hands the chunks back in order. Each block buffer has
//! room in front for the uncut tail of the block before it, so chunks that
//! span two blocks are cut without copying the blocks.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};

use fastcdc::v2020::FastCDC;

use super::config::Config;
use super::hash::{HashKind, Hasher, ObjectId};
use crate::error::{Error, ErrorKind, Result};

/// Stream bytes per block (at least four maximal chunks).
const BLOCK: usize = 4 << 20;
/// Block buffers in use at most: one being filled, one holding the tail
/// the cutter still needs, the rest in flight.
const BUFFERS: usize = 4;

/// A piece of a shared buffer.
pub type Piece = (Arc<Vec<u8>>, Range<usize>);

/// What the cutter hands the hashing thread, in stream order.
enum Job {
    /// Fresh stream bytes, for the whole-object hash.
    Whole(Piece),
    /// A chunk whose id is wanted.
    Chunk(Piece),
    /// A block buffer the cutter no longer needs.
    Spent(Arc<Vec<u8>>),
    End,
}

/// What comes back to the writing thread, in stream order.
enum Msg {
    Chunk(Piece, ObjectId),
    Spent(Arc<Vec<u8>>),
    Whole(ObjectId),
}

/// A chunk and its id, or the end of the stream with the whole stream's id.
pub enum Out {
    Chunk(Piece, ObjectId),
    Whole(ObjectId),
}

enum ToCutter {
    /// A buffer whose `n` bytes after the headroom are the next of the stream.
    Block(Vec<u8>, usize),
    End,
}

/// Finds cut points. Holds the latest block, whose uncut tail goes in
/// front of the next block's bytes.
struct Cutter {
    min: usize,
    avg: usize,
    max: usize,
    headroom: usize,
    cur: Option<Arc<Vec<u8>>>,
    start: usize,
    end: usize,
}

impl Cutter {
    fn new(c: &Config) -> Cutter {
        let max = c.chunk_max as usize;
        Cutter { min: c.chunk_min as usize, avg: c.chunk_avg as usize, max, headroom: max, cur: None, start: 0, end: 0 }
    }

    /// Feeds one message; `out` returns false once nobody listens.
    fn feed(&mut self, m: ToCutter, out: &mut dyn FnMut(Job) -> bool) -> bool {
        let last = match m {
            ToCutter::Block(mut buf, n) => {
                let h = self.headroom;
                let left = self.end - self.start;
                if let Some(cur) = &self.cur {
                    // Fewer than `max` bytes were left uncut, so they fit.
                    buf[h - left..h].copy_from_slice(&cur[self.start..self.end]);
                }
                let buf = Arc::new(buf);
                if n > 0 && !out(Job::Whole((buf.clone(), h..h + n))) {
                    return false;
                }
                if let Some(old) = self.cur.replace(buf)
                    && !out(Job::Spent(old))
                {
                    return false;
                }
                self.start = h - left;
                self.end = h + n;
                false
            }
            ToCutter::End => true,
        };
        if let Some(cur) = &self.cur {
            while self.end - self.start >= self.max || (last && self.end > self.start) {
                let cdc = FastCDC::new(&cur[..self.end], self.min, self.avg, self.max);
                let (_, cut) = cdc.cut(self.start, self.end - self.start);
                let cut = if cut <= self.start { self.end } else { cut };
                if !out(Job::Chunk((cur.clone(), self.start..cut))) {
                    return false;
                }
                self.start = cut;
            }
        }
        !last || out(Job::End)
    }
}

/// Hashes chunks and the whole stream.
struct Hashing {
    kind: HashKind,
    whole: Option<Hasher>,
}

impl Hashing {
    fn job(&mut self, j: Job) -> Option<Msg> {
        match j {
            Job::Whole((buf, r)) => {
                self.whole.get_or_insert_with(|| self.kind.hasher()).update(&buf[r]);
                None
            }
            Job::Chunk((buf, r)) => {
                let id = self.kind.hash(&buf[r.clone()]);
                Some(Msg::Chunk((buf, r), id))
            }
            Job::Spent(b) => Some(Msg::Spent(b)),
            Job::End => Some(Msg::Whole(self.whole.take().unwrap_or_else(|| self.kind.hasher()).finish())),
        }
    }
}

enum Stages {
    Threads {
        blocks: SyncSender<ToCutter>,
        results: Receiver<Msg>,
    },
    /// Where no thread can be started: every stage runs in `send`.
    Inline {
        cutter: Box<Cutter>,
        hashing: Hashing,
        ready: VecDeque<Msg>,
    },
}

/// Cuts and hashes one stream. The caller fills buffers from
/// [`ChunkPipe::buffer`], sends them, and takes the chunks back in order
/// with their ids; the last [`Out`] is the whole stream's id.
pub struct ChunkPipe {
    stages: Stages,
    headroom: usize,
    block: usize,
    /// Buffers handed out, and the spent ones kept for reuse.
    made: usize,
    spent: Vec<Arc<Vec<u8>>>,
}

impl ChunkPipe {
    pub fn new(c: &Config) -> ChunkPipe {
        let max = c.chunk_max as usize;
        let stages = spawn_stages(c).unwrap_or_else(|| Stages::Inline {
            cutter: Box::new(Cutter::new(c)),
            hashing: Hashing { kind: c.hash, whole: None },
            ready: VecDeque::new(),
        });
        ChunkPipe { stages, headroom: max, block: BLOCK.max(4 * max), made: 0, spent: Vec::new() }
    }

    #[cfg(test)]
    fn inline(c: &Config) -> ChunkPipe {
        let stages = Stages::Inline {
            cutter: Box::new(Cutter::new(c)),
            hashing: Hashing { kind: c.hash, whole: None },
            ready: VecDeque::new(),
        };
        ChunkPipe { stages, headroom: c.chunk_max as usize, block: BLOCK, made: 0, spent: Vec::new() }
    }

    /// Where a buffer's stream bytes start.
    pub fn headroom(&self) -> usize {
        self.headroom
    }

    /// A buffer to fill from `headroom()` on, or `None` while every buffer
    /// is in use (take results until one comes free).
    pub fn buffer(&mut self) -> Option<Vec<u8>> {
        if let Some(i) = self.spent.iter().position(|b| Arc::strong_count(b) == 1) {
            return Arc::try_unwrap(self.spent.swap_remove(i)).ok();
        }
        if self.made < BUFFERS {
            self.made += 1;
            return Some(vec![0; self.headroom + self.block]);
        }
        None
    }

    /// Sends `n` stream bytes that follow the headroom of `buf`.
    pub fn send(&mut self, buf: Vec<u8>, n: usize) -> Result<()> {
        self.push(ToCutter::Block(buf, n))
    }

    /// Ends the stream.
    pub fn end(&mut self) -> Result<()> {
        self.push(ToCutter::End)
    }

    fn push(&mut self, m: ToCutter) -> Result<()> {
        match &mut self.stages {
            Stages::Threads { blocks, .. } => blocks.send(m).map_err(|_| thread_failed()),
            Stages::Inline { cutter, hashing, ready } => {
                cutter.feed(m, &mut |j| {
                    ready.extend(hashing.job(j));
                    true
                });
                Ok(())
            }
        }
    }

    /// The next result. With `wait`, waits for the next message, and gives
    /// `None` if it only freed a buffer (a block may yield no chunk, so
    /// waiting on for one could wait for a block never sent).
    pub fn next(&mut self, wait: bool) -> Result<Option<Out>> {
        loop {
            let m = match &mut self.stages {
                Stages::Threads { results, .. } if wait => results.recv().map_err(|_| thread_failed())?,
                Stages::Threads { results, .. } => match results.try_recv() {
                    Ok(m) => m,
                    Err(TryRecvError::Empty) => return Ok(None),
                    Err(TryRecvError::Disconnected) => return Err(thread_failed()),
                },
                Stages::Inline { ready, .. } => match ready.pop_front() {
                    Some(m) => m,
                    // Nothing is in flight inline: waiting would never end.
                    None if wait => return Err(thread_failed()),
                    None => return Ok(None),
                },
            };
            match m {
                Msg::Chunk(p, id) => return Ok(Some(Out::Chunk(p, id))),
                Msg::Whole(id) => return Ok(Some(Out::Whole(id))),
                Msg::Spent(b) => {
                    self.spent.push(b);
                    if wait {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

/// Starts the cutting and hashing threads, if both can be started.
fn spawn_stages(c: &Config) -> Option<Stages> {
    // Room for every buffer and the end: sending never waits, so only
    // `next` waits, for threads that are working.
    let (block_tx, block_rx) = sync_channel::<ToCutter>(BUFFERS + 1);
    let (job_tx, job_rx) = sync_channel::<Job>(256);
    let (msg_tx, msg_rx) = sync_channel::<Msg>(256);
    let mut hashing = Hashing { kind: c.hash, whole: None };
    // Each thread ends when its input channel closes or its output is
    // dropped, so none outlives an abandoned add.
    std::thread::Builder::new()
        .name("bale-hash".into())
        .spawn(move || {
            while let Ok(j) = job_rx.recv() {
                if let Some(m) = hashing.job(j)
                    && msg_tx.send(m).is_err()
                {
                    return;
                }
            }
        })
        .ok()?;
    let mut cutter = Cutter::new(c);
    std::thread::Builder::new()
        .name("bale-cut".into())
        .spawn(move || {
            while let Ok(m) = block_rx.recv() {
                let end = matches!(m, ToCutter::End);
                if !cutter.feed(m, &mut |j| job_tx.send(j).is_ok()) || end {
                    return;
                }
            }
        })
        .ok()?;
    Some(Stages::Threads { blocks: block_tx, results: msg_rx })
}

fn thread_failed() -> Error {
    Error::new(ErrorKind::Io, "the chunking thread failed")
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

    /// Chunk lengths of `data` sent in blocks of `step` bytes; checks
    /// every chunk id and the whole id on the way.
    fn cuts_via(mut pipe: ChunkPipe, c: &Config, data: &[u8], step: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut joined = Vec::new();
        let mut take = |o: Out, out: &mut Vec<usize>| match o {
            Out::Chunk((buf, r), id) => {
                assert!(r.len() <= c.chunk_max as usize);
                assert_eq!(id, c.hash.hash(&buf[r.clone()]));
                joined.extend_from_slice(&buf[r.clone()]);
                out.push(r.len());
                None
            }
            Out::Whole(id) => Some(id),
        };
        let mut rest = data;
        while !rest.is_empty() {
            let mut buf = loop {
                if let Some(b) = pipe.buffer() {
                    break b;
                }
                if let Some(o) = pipe.next(true).unwrap() {
                    assert!(take(o, &mut out).is_none());
                }
            };
            let h = pipe.headroom();
            let n = step.min(rest.len()).min(buf.len() - h);
            buf[h..h + n].copy_from_slice(&rest[..n]);
            rest = &rest[n..];
            pipe.send(buf, n).unwrap();
        }
        pipe.end().unwrap();
        let whole = loop {
            if let Some(id) = pipe.next(true).unwrap().and_then(|o| take(o, &mut out)) {
                break id;
            }
        };
        assert_eq!(whole, c.hash.hash(data));
        assert_eq!(joined, data);
        out
    }

    fn cuts(data: &[u8], step: usize) -> Vec<usize> {
        let c = Config { chunk_min: 1024, chunk_avg: 4096, chunk_max: 16384, ..Config::default() };
        let threaded = cuts_via(ChunkPipe::new(&c), &c, data, step);
        assert_eq!(threaded, cuts_via(ChunkPipe::inline(&c), &c, data, step));
        threaded
    }

    #[test]
    fn cut_points_do_not_depend_on_how_the_stream_arrives() {
        let data = noise(12 << 20, 3);
        let a = cuts(&data, usize::MAX);
        assert_eq!(a, cuts(&data, 7777));
        assert_eq!(a, cuts(&data, 100));
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
