//! Ranges: iterable any number of times, each iteration from the start. An
//! iteration reads a batch of entries at a time (the core's `LiveRange`):
//! over a read-only store it reads the snapshot taken at open; over a
//! writable store it reads what the store's reads see at each step, and a
//! change to the store drops the entries read ahead, so that the iteration
//! goes on from just past the last key it yielded (like a JS `Map`: what
//! is deleted before the iteration reaches it is not yielded, what is added
//! ahead of it is).

use std::cell::Cell;
use std::rc::Rc;

use bale::ErrorKind;
use bale::btree::{Fetch, Item, LiveRange, RangeScan};
use js_sys::{Array, Object, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::error::BaleError;
use crate::report::iter_result;
use crate::store::closed;
use crate::view::View;

/// An iterable range of a store; every `[Symbol.iterator]()` starts a new
/// iteration from the first entry.
#[wasm_bindgen]
pub struct Range {
    view: View,
    scan: RangeScan,
    fetch: Fetch,
    closed: Rc<Cell<bool>>,
}

impl Range {
    pub fn new(view: View, scan: RangeScan, fetch: Fetch, closed: Rc<Cell<bool>>) -> Range {
        Range { view, scan, fetch, closed }
    }
}

#[wasm_bindgen]
impl Range {
    #[wasm_bindgen(js_name = "[Symbol.iterator]")]
    pub fn iter(&self) -> Result<RangeIterator, BaleError> {
        if self.closed.get() {
            return Err(closed());
        }
        Ok(RangeIterator {
            range: Some(LiveRange::new(self.scan.clone(), self.fetch)),
            generation: self.view.generation(),
            view: self.view.clone(),
            keys_only: self.fetch == Fetch::Keys,
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

/// The iterator of a [`Range`]: `next()` returns `{ done, value }`.
#[wasm_bindgen]
pub struct RangeIterator {
    /// `None` once the iteration ended (done, failed or closed).
    range: Option<LiveRange>,
    view: View,
    /// The view's generation the buffered entries were read at.
    generation: u64,
    keys_only: bool,
    closed: Rc<Cell<bool>>,
}

impl RangeIterator {
    fn next_value(&mut self) -> Result<Option<JsValue>, BaleError> {
        if self.closed.get() {
            self.range = None;
            return Err(closed());
        }
        let Some(r) = &mut self.range else { return Ok(None) };
        let now = self.view.generation();
        if now != self.generation {
            r.invalidate();
            self.generation = now;
        }
        let (k, v) = match self.view.read(|view| r.next_item(view)) {
            Ok(Some(item)) => item,
            Ok(None) => {
                self.range = None;
                return Ok(None);
            }
            Err(e) => {
                self.range = None;
                return Err(e.into());
            }
        };
        let key: JsValue = Uint8Array::from(&k[..]).into();
        if self.keys_only {
            return Ok(Some(key));
        }
        let value: JsValue = match v {
            Some(Item::Bytes(b)) => Uint8Array::from(&b[..]).into(),
            // Fetch::Values never yields a length alone.
            Some(Item::Large(_)) | None => {
                return Err(bale::Error::new(ErrorKind::Corrupt, "a value was not read whole").into());
            }
        };
        Ok(Some(Array::of2(&key, &value).into()))
    }
}

#[wasm_bindgen]
impl RangeIterator {
    /// The next entry as `{ done: false, value }`, then `{ done: true }`.
    #[allow(clippy::should_implement_trait)] // the JS iterator protocol's method
    #[wasm_bindgen(unchecked_return_type = "IteratorResult<any>")]
    pub fn next(&mut self) -> Result<Object, BaleError> {
        Ok(iter_result(self.next_value()?))
    }
}
