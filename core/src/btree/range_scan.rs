//! Running a checked range request, in one go or in batches: a host that
//! cannot hold a borrow across calls runs the scan once per batch, and
//! each run goes on just past the last key the previous one took.

use std::ops::Bound;

use super::cursor::ValueRef;
use super::read::ReadOps;
use crate::error::Error;

/// What the callback of [`RangeScan::run`] does with the entry it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Taken; go on.
    Next,
    /// Taken; end this run.
    Stop,
    /// Not taken; end this run, and the next run starts with this entry.
    /// (On the first entry of a run this makes no progress.)
    Leave,
}

/// A range request after its checks (see
/// [`RangeRequest`](super::RangeRequest)): bounds, direction, and the
/// offset and limit still to apply.
#[derive(Debug, Clone)]
pub struct RangeScan {
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    reverse: bool,
    skip: u64,
    remaining: Option<u64>,
    done: bool,
}

/// Remembers `k` in `last`, reusing its allocation.
fn keep(last: &mut Option<Vec<u8>>, k: &[u8]) {
    let l = last.get_or_insert_with(Vec::new);
    l.clear();
    l.extend_from_slice(k);
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Every key, ascending.
impl Default for RangeScan {
    fn default() -> RangeScan {
        RangeScan::new(Bound::Unbounded, Bound::Unbounded, false)
    }
}

impl RangeScan {
    /// Every key within `start..end`, ascending or descending.
    pub fn new(start: Bound<Vec<u8>>, end: Bound<Vec<u8>>, reverse: bool) -> RangeScan {
        RangeScan { start, end, reverse, skip: 0, remaining: None, done: false }
    }

    /// Skips `offset` keys in the direction of travel, then yields at most
    /// `limit` (all when `None`).
    pub fn slice(mut self, offset: u64, limit: Option<u64>) -> RangeScan {
        self.skip = offset;
        self.remaining = limit;
        self
    }

    /// This scan as it stands once `taken` more entries were yielded, the
    /// last of them `key`: it goes on just past `key`, its offset spent and
    /// `taken` fewer entries left to yield. For hosts whose buffered entries
    /// went stale (the view they read changed) and are read again.
    pub fn resumed_after(&self, key: &[u8], taken: u64) -> RangeScan {
        let mut s = self.clone();
        if taken == 0 {
            return s;
        }
        s.skip = 0;
        s.remaining = s.remaining.map(|n| n.saturating_sub(taken));
        if s.reverse {
            s.end = Bound::Excluded(key.to_vec());
        } else {
            s.start = Bound::Excluded(key.to_vec());
        }
        s
    }

    // What the request resolved to, for hosts that run it over a table
    // other than a tree store (a bitable).

    /// The lower and upper bound.
    pub fn bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (as_ref(&self.start), as_ref(&self.end))
    }

    /// Whether the scan walks from the upper bound down.
    pub fn is_reverse(&self) -> bool {
        self.reverse
    }

    /// Keys still to skip, counted in the direction of travel.
    pub fn offset(&self) -> u64 {
        self.skip
    }

    /// Keys still to yield (`None`: all).
    pub fn limit(&self) -> Option<u64> {
        self.remaining
    }

    /// True once the range has nothing more to give (exhausted, limit
    /// reached, or failed).
    pub fn is_done(&self) -> bool {
        self.done || self.remaining == Some(0)
    }

    /// Hands the next entries of `r` to `f`, which says for each whether
    /// to take it and whether to go on (see [`Step`]); returns when `f`
    /// stops or the range is done. Skipped entries (the offset) are not
    /// handed over. An error, from the store or from `f`, ends the scan.
    pub fn run<R, E>(&mut self, r: &R, mut f: impl FnMut(&[u8], &ValueRef<'_>) -> Result<Step, E>) -> Result<(), E>
    where
        R: ReadOps + ?Sized,
        E: From<Error>,
    {
        if self.is_done() {
            return Ok(());
        }
        let mut range = r.range(as_ref(&self.start), as_ref(&self.end), self.reverse);
        // The last key taken or skipped: where the next run resumes.
        let mut last: Option<Vec<u8>> = None;
        loop {
            let (k, v) = match range.next_entry() {
                None => {
                    self.done = true;
                    break;
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Err(e.into());
                }
                Some(Ok(e)) => e,
            };
            if self.skip > 0 {
                self.skip -= 1;
                keep(&mut last, k);
                continue;
            }
            let step = match f(k, &v) {
                Ok(s) => s,
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            };
            if step == Step::Leave {
                break;
            }
            keep(&mut last, k);
            if let Some(n) = &mut self.remaining {
                *n -= 1;
                if *n == 0 {
                    break;
                }
            }
            if step == Step::Stop {
                break;
            }
        }
        drop(range);
        if let Some(k) = last {
            if self.reverse {
                self.end = Bound::Excluded(k);
            } else {
                self.start = Bound::Excluded(k);
            }
        }
        Ok(())
    }
}
