//! k-way merge of bitables into one, streaming: one cursor per input and
//! a heap of input numbers, so memory does not grow with the tables.

use super::cursor::Cursor;
use super::table::Bitable;
use super::value::Value;
use super::writer::Writer;
use crate::error::{Error, Result};

/// What a merge does with a key held by more than one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDuplicate {
    /// Keep the pair of the newest input (the last one given).
    #[default]
    NewestWins,
    /// Stop with `INVALID_ARGUMENT`.
    Error,
}

/// A min-heap of input numbers ordered by their cursors' keys, ties by
/// newest input first.
struct Heap {
    items: Vec<usize>,
}

impl Heap {
    fn less(cursors: &[Cursor], a: usize, b: usize) -> bool {
        match cursors[a].key().cmp(&cursors[b].key()) {
            std::cmp::Ordering::Equal => a > b,
            o => o == std::cmp::Ordering::Less,
        }
    }

    fn push(&mut self, cursors: &[Cursor], i: usize) {
        self.items.push(i);
        let mut c = self.items.len() - 1;
        while c > 0 {
            let p = (c - 1) / 2;
            if !Heap::less(cursors, self.items[c], self.items[p]) {
                break;
            }
            self.items.swap(c, p);
            c = p;
        }
    }

    fn pop(&mut self, cursors: &[Cursor]) -> Option<usize> {
        let top = *self.items.first()?;
        let last = self.items.pop()?;
        if !self.items.is_empty() {
            self.items[0] = last;
            let mut p = 0;
            loop {
                let (l, r) = (2 * p + 1, 2 * p + 2);
                let mut m = p;
                if l < self.items.len() && Heap::less(cursors, self.items[l], self.items[m]) {
                    m = l;
                }
                if r < self.items.len() && Heap::less(cursors, self.items[r], self.items[m]) {
                    m = r;
                }
                if m == p {
                    break;
                }
                self.items.swap(p, m);
                p = m;
            }
        }
        Some(top)
    }

    fn peek(&self) -> Option<usize> {
        self.items.first().copied()
    }
}

/// Merges `inputs` (oldest first) into `out` in key order; returns the
/// pairs written. Large values are streamed block by block.
pub fn merge_into(inputs: &[Bitable], out: &mut Writer, on_dup: OnDuplicate) -> Result<u64> {
    let mut cursors = inputs.iter().map(Bitable::first).collect::<Result<Vec<_>>>()?;
    let mut heap = Heap { items: Vec::with_capacity(cursors.len()) };
    for i in 0..cursors.len() {
        if cursors[i].valid() {
            heap.push(&cursors, i);
        }
    }
    let mut written = 0u64;
    while let Some(i) = heap.pop(&cursors) {
        // Older inputs holding the same key lose (or are an error).
        while let Some(j) = heap.peek().filter(|&j| cursors[j].key() == cursors[i].key()) {
            if on_dup == OnDuplicate::Error {
                return Err(Error::invalid(format!(
                    "inputs {j} and {i} both hold the key {}; merge with newest-wins to keep input {i}'s pair",
                    super::writer::show(cursors[i].key().unwrap_or(&[]))
                )));
            }
            heap.pop(&cursors);
            if cursors[j].next()? {
                heap.push(&cursors, j);
            }
        }
        copy_current(&cursors[i], out)?;
        written += 1;
        if cursors[i].next()? {
            heap.push(&cursors, i);
        }
    }
    Ok(written)
}

/// Appends the cursor's pair to `out`.
pub(crate) fn copy_current(c: &Cursor, out: &mut Writer) -> Result<()> {
    let key = c.key().unwrap_or(&[]);
    match c.value()? {
        Some(Value::Inline(v)) => out.append(key, &v),
        Some(Value::Large(v)) => out.append_reader(key, &mut v.reader()),
        None => Ok(()),
    }
}
