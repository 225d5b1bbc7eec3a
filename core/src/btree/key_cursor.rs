//! A cursor that holds no borrow between its moves: it keeps the key it is
//! at and finds its place again at each move (one descent). A host that
//! cannot keep a borrow across calls (Python, Node) can keep this one, and
//! inside a write transaction it survives the transaction's changes: the
//! move after a key that was deleted goes to the key that now follows it.

use super::cursor::ValueRef;
use super::read::ReadOps;
use crate::error::Result;

/// Where a [`KeyCursor`] is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Pos {
    /// Not moved yet: `Next` goes to the first key, `Prev` to the last.
    #[default]
    Unset,
    At(Vec<u8>),
    /// Past the first key (a backward move found nothing): `Next` goes to
    /// the first key, `Prev` finds nothing.
    BeforeFirst,
    /// Past the last key: `Prev` goes to the last key, `Next` finds nothing.
    AfterLast,
}

/// A move of a [`KeyCursor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move<'k> {
    First,
    Last,
    Next,
    Prev,
    /// To the first key at or after this one (LMDB's `MDB_SET_RANGE`).
    Seek(&'k [u8]),
    /// To the last key at or before this one.
    SeekBefore(&'k [u8]),
}

/// A position in a store's keys, kept as a key (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct KeyCursor {
    pos: Pos,
}

impl KeyCursor {
    pub fn new() -> KeyCursor {
        KeyCursor::default()
    }

    /// The key the cursor is at, if it is at one.
    pub fn key(&self) -> Option<&[u8]> {
        match &self.pos {
            Pos::At(k) => Some(k),
            _ => None,
        }
    }

    /// Makes the move over `r` and hands the entry it lands on to `f`.
    /// When there is none, returns `None` and the cursor is past the end
    /// it moved towards. An error leaves the cursor where it was.
    pub fn step<R, T>(&mut self, r: &R, m: Move<'_>, f: impl FnOnce(&[u8], &ValueRef<'_>) -> T) -> Result<Option<T>>
    where
        R: ReadOps + ?Sized,
    {
        let mut c = r.cursor();
        let forward = match (m, &self.pos) {
            (Move::First, _) | (Move::Next, Pos::Unset | Pos::BeforeFirst) => {
                c.first()?;
                true
            }
            (Move::Last, _) | (Move::Prev, Pos::Unset | Pos::AfterLast) => {
                c.last()?;
                false
            }
            (Move::Next, Pos::AfterLast) => return Ok(None),
            (Move::Prev, Pos::BeforeFirst) => return Ok(None),
            (Move::Next, Pos::At(k)) => {
                if c.seek(k, false)? {
                    c.step(true)?;
                }
                true
            }
            (Move::Prev, Pos::At(k)) => {
                if c.seek(k, true)? {
                    c.step(false)?;
                }
                false
            }
            (Move::Seek(k), _) => {
                c.seek(k, false)?;
                true
            }
            (Move::SeekBefore(k), _) => {
                c.seek(k, true)?;
                false
            }
        };
        match c.current()? {
            Some((k, v)) => {
                self.pos = Pos::At(k.to_vec());
                Ok(Some(f(k, &v)))
            }
            None => {
                self.pos = if forward { Pos::AfterLast } else { Pos::BeforeFirst };
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::io::MemStorage;
    use crate::{Options, Store};

    fn store(keys: &[&[u8]]) -> Store {
        let store = Store::open_storage(Arc::new(MemStorage::new()), Options::create()).unwrap();
        let mut w = store.write().unwrap();
        for k in keys {
            w.put(k, b"v").unwrap();
        }
        w.commit().unwrap();
        store
    }

    fn go<R: ReadOps>(c: &mut KeyCursor, r: &R, m: Move<'_>) -> Option<Vec<u8>> {
        c.step(r, m, |k, _| k.to_vec()).unwrap()
    }

    #[test]
    fn moves_both_ways_and_stops_past_each_end() {
        let s = store(&[b"b", b"d", b"f"]);
        let r = s.read().unwrap();
        let mut c = KeyCursor::new();
        assert_eq!(c.key(), None);
        assert_eq!(go(&mut c, &r, Move::Next).as_deref(), Some(&b"b"[..]));
        assert_eq!(go(&mut c, &r, Move::Next).as_deref(), Some(&b"d"[..]));
        assert_eq!(go(&mut c, &r, Move::Prev).as_deref(), Some(&b"b"[..]));
        assert_eq!(go(&mut c, &r, Move::Prev), None);
        assert_eq!(go(&mut c, &r, Move::Prev), None, "stays before the first key");
        assert_eq!(go(&mut c, &r, Move::Next).as_deref(), Some(&b"b"[..]));
        assert_eq!(go(&mut c, &r, Move::Last).as_deref(), Some(&b"f"[..]));
        assert_eq!(go(&mut c, &r, Move::Next), None);
        assert_eq!(go(&mut c, &r, Move::Next), None, "stays past the last key");
        assert_eq!(c.key(), None);
        assert_eq!(go(&mut c, &r, Move::Prev).as_deref(), Some(&b"f"[..]));
        let mut fresh = KeyCursor::new();
        assert_eq!(go(&mut fresh, &r, Move::Prev).as_deref(), Some(&b"f"[..]));
    }

    #[test]
    fn seeks_land_at_or_beside_the_key() {
        let s = store(&[b"b", b"d", b"f"]);
        let r = s.read().unwrap();
        let mut c = KeyCursor::new();
        assert_eq!(go(&mut c, &r, Move::Seek(b"c")).as_deref(), Some(&b"d"[..]));
        assert_eq!(go(&mut c, &r, Move::Seek(b"d")).as_deref(), Some(&b"d"[..]));
        assert_eq!(go(&mut c, &r, Move::SeekBefore(b"e")).as_deref(), Some(&b"d"[..]));
        assert_eq!(go(&mut c, &r, Move::SeekBefore(b"f")).as_deref(), Some(&b"f"[..]));
        assert_eq!(go(&mut c, &r, Move::Seek(b"g")), None);
        assert_eq!(go(&mut c, &r, Move::Prev).as_deref(), Some(&b"f"[..]));
        assert_eq!(go(&mut c, &r, Move::SeekBefore(b"a")), None);
        assert_eq!(go(&mut c, &r, Move::Next).as_deref(), Some(&b"b"[..]));
        let empty = store(&[]);
        let r = empty.read().unwrap();
        assert_eq!(go(&mut KeyCursor::new(), &r, Move::First), None);
        assert_eq!(go(&mut KeyCursor::new(), &r, Move::Seek(b"a")), None);
    }

    #[test]
    fn a_deleted_current_key_moves_to_its_neighbours() {
        let s = store(&[b"b", b"d", b"f"]);
        let mut w = s.write().unwrap();
        let mut c = KeyCursor::new();
        assert_eq!(go(&mut c, &w, Move::Seek(b"d")).as_deref(), Some(&b"d"[..]));
        w.delete(b"d").unwrap();
        w.put(b"e", b"new").unwrap();
        assert_eq!(c.key(), Some(&b"d"[..]));
        assert_eq!(go(&mut c.clone(), &w, Move::Next).as_deref(), Some(&b"e"[..]));
        assert_eq!(go(&mut c, &w, Move::Prev).as_deref(), Some(&b"b"[..]));
    }

    #[test]
    fn many_keys_across_leaves_in_both_directions() {
        let keys: Vec<Vec<u8>> = (0..3000u32).map(|i| format!("{i:05}").into_bytes()).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let s = store(&refs);
        let r = s.read().unwrap();
        let mut c = KeyCursor::new();
        let mut seen = Vec::new();
        while let Some(k) = go(&mut c, &r, Move::Next) {
            seen.push(k);
        }
        assert_eq!(seen, keys);
        seen.clear();
        while let Some(k) = go(&mut c, &r, Move::Prev) {
            seen.push(k);
        }
        seen.reverse();
        assert_eq!(seen, keys);
    }
}
