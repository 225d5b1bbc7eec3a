//! Cursors and ranges of a [`Bitable`](crate::bitable::Bitable). Each
//! holds its own handle on the open table (the core's cursors own one),
//! and the table's closed flag, so that after `close()` they throw
//! `CLOSED` instead of reading on.

use std::cell::Cell;
use std::rc::Rc;

use bale::bitable::{self, Cursor};
use bale::btree::RangeScan;
use js_sys::{Array, Object, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::bitable::{closed, part, part_args, whole};
use crate::error::{BaleError, Res};
use crate::options;
use crate::report::iter_result;

/// A position in a bitable: on a pair, or past either end (`valid` false).
#[wasm_bindgen]
pub struct BitableCursor {
    c: Cursor,
    max_value: u64,
    closed: Rc<Cell<bool>>,
}

impl BitableCursor {
    pub fn new(c: Cursor, max_value: u64, closed: Rc<Cell<bool>>) -> BitableCursor {
        BitableCursor { c, max_value, closed }
    }

    fn open(&self) -> Res<&Cursor> {
        if self.closed.get() { Err(closed()) } else { Ok(&self.c) }
    }

    fn open_mut(&mut self) -> Res<&mut Cursor> {
        if self.closed.get() { Err(closed()) } else { Ok(&mut self.c) }
    }
}

#[wasm_bindgen]
impl BitableCursor {
    /// Whether the cursor is on a pair.
    #[wasm_bindgen(getter)]
    pub fn valid(&self) -> Result<bool, BaleError> {
        Ok(self.open()?.valid())
    }

    /// The current key, or `undefined` past either end.
    #[wasm_bindgen(getter)]
    pub fn key(&self) -> Result<Option<Uint8Array>, BaleError> {
        Ok(self.open()?.key().map(Uint8Array::from))
    }

    /// The current value whole (`TOO_LARGE` above the table's
    /// `maxValueBytes`), or `undefined` past either end.
    #[wasm_bindgen(getter)]
    pub fn value(&self) -> Result<Option<Uint8Array>, BaleError> {
        self.open()?.value()?.map(|v| whole(&v, self.max_value)).transpose()
    }

    /// The length of the current value, or `undefined` past either end.
    #[wasm_bindgen(getter, js_name = valueLength)]
    pub fn value_length(&self) -> Result<Option<f64>, BaleError> {
        Ok(self.open()?.value()?.map(|v| v.len() as f64))
    }

    /// `length` bytes of the current value from `offset` (fewer at its
    /// end), or `undefined` past either end.
    #[wasm_bindgen(js_name = getRange)]
    pub fn get_range(&self, offset: f64, length: f64) -> Result<Option<Uint8Array>, BaleError> {
        let args = part_args(offset, length)?;
        self.open()?.value()?.map(|v| part(&v, args)).transpose()
    }

    /// The ordinal of the current pair (0 for the first); the table's
    /// `count` past either end.
    #[wasm_bindgen(getter)]
    pub fn ordinal(&self) -> Result<f64, BaleError> {
        Ok(self.open()?.ordinal() as f64)
    }

    /// Moves to the next pair; false (and not `valid`) past the last.
    #[allow(clippy::should_implement_trait)] // a cursor, not an iterator: it moves both ways
    pub fn next(&mut self) -> Result<bool, BaleError> {
        Ok(self.open_mut()?.next()?)
    }

    /// Moves to the previous pair; false (and not `valid`) before the first.
    pub fn prev(&mut self) -> Result<bool, BaleError> {
        Ok(self.open_mut()?.prev()?)
    }

    /// Moves to the first pair whose key is `>= key`; whether there is one.
    pub fn seek(&mut self, #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue) -> Result<bool, BaleError> {
        let k = options::key(&key, "key")?;
        Ok(self.open_mut()?.seek(&k)?)
    }

    /// Moves to the first pair; false when the table is empty.
    pub fn first(&mut self) -> Result<bool, BaleError> {
        Ok(self.open_mut()?.first()?)
    }

    /// Moves to the last pair; false when the table is empty.
    pub fn last(&mut self) -> Result<bool, BaleError> {
        Ok(self.open_mut()?.last()?)
    }
}

/// An iterable range of a bitable; every `[Symbol.iterator]()` starts a
/// new iteration from the first pair of the range.
#[wasm_bindgen]
pub struct BitableRange {
    table: bitable::Bitable,
    scan: RangeScan,
    keys_only: bool,
    max_value: u64,
    closed: Rc<Cell<bool>>,
}

impl BitableRange {
    pub fn new(
        table: bitable::Bitable,
        scan: RangeScan,
        keys_only: bool,
        max_value: u64,
        closed: Rc<Cell<bool>>,
    ) -> BitableRange {
        BitableRange { table, scan, keys_only, max_value, closed }
    }

    /// The core's range over the request's bounds, begun `offset` pairs in
    /// (`None` when nothing is left to yield).
    fn start(&self) -> Res<Option<bitable::Range>> {
        Ok(self.table.range_for(&self.scan)?)
    }
}

#[wasm_bindgen]
impl BitableRange {
    #[wasm_bindgen(js_name = "[Symbol.iterator]")]
    pub fn iter(&self) -> Result<BitableRangeIterator, BaleError> {
        if self.closed.get() {
            return Err(closed());
        }
        let limit = self.scan.limit();
        let range = self.start()?;
        Ok(BitableRangeIterator {
            range,
            remaining: limit,
            keys_only: self.keys_only,
            max_value: self.max_value,
            closed: self.closed.clone(),
        })
    }

    /// Every item of the range in an array.
    #[wasm_bindgen(js_name = toArray)]
    pub fn to_array(&self) -> Result<Array, BaleError> {
        let mut it = self.iter()?;
        let out = Array::new();
        while let Some(v) = it.next_value()? {
            out.push(&v);
        }
        Ok(out)
    }
}

/// The iterator of a [`BitableRange`]: `next()` returns `{ done, value }`.
#[wasm_bindgen]
pub struct BitableRangeIterator {
    /// `None` once the iteration ended (done, failed or closed).
    range: Option<bitable::Range>,
    /// Items still to yield under the limit.
    remaining: Option<u64>,
    keys_only: bool,
    max_value: u64,
    closed: Rc<Cell<bool>>,
}

impl BitableRangeIterator {
    fn next_value(&mut self) -> Result<Option<JsValue>, BaleError> {
        if self.closed.get() {
            self.range = None;
            return Err(closed());
        }
        let Some(r) = &mut self.range else { return Ok(None) };
        let item = match r.next_ref() {
            Ok(Some((k, v))) => {
                let key: JsValue = Uint8Array::from(k).into();
                if self.keys_only { Ok(key) } else { whole(&v, self.max_value).map(|v| Array::of2(&key, &v).into()) }
            }
            Ok(None) => {
                self.range = None;
                return Ok(None);
            }
            Err(e) => Err(e.into()),
        };
        let out = match item {
            Ok(v) => v,
            Err(e) => {
                self.range = None;
                return Err(e);
            }
        };
        if let Some(n) = &mut self.remaining {
            *n -= 1;
            if *n == 0 {
                self.range = None;
            }
        }
        Ok(Some(out))
    }
}

#[wasm_bindgen]
impl BitableRangeIterator {
    /// The next item as `{ done: false, value }`, then `{ done: true }`.
    #[allow(clippy::should_implement_trait)] // the JS iterator protocol's method
    #[wasm_bindgen(unchecked_return_type = "IteratorResult<any>")]
    pub fn next(&mut self) -> Result<Object, BaleError> {
        Ok(iter_result(self.next_value()?))
    }
}
