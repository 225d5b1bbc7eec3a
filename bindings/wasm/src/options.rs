//! Arguments from JS: keys (bytes or strings) and range options.

use std::cmp::Ordering;
use std::ops::Bound;

use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};

use crate::error::{Res, invalid};

/// A key argument: a `Uint8Array` (or `ArrayBuffer`), or a string encoded
/// as UTF-8.
pub fn key(v: &JsValue, what: &str) -> Res<Vec<u8>> {
    if let Some(s) = v.as_string() {
        return Ok(s.into_bytes());
    }
    if let Some(a) = v.dyn_ref::<Uint8Array>() {
        return Ok(a.to_vec());
    }
    if v.is_instance_of::<js_sys::ArrayBuffer>() {
        return Ok(Uint8Array::new(v).to_vec());
    }
    Err(invalid(format!("{what} must be a Uint8Array or a string")))
}

/// A non-negative integer argument.
pub fn count(v: f64, what: &str) -> Res<u64> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9007199254740991.0 {
        Ok(v as u64)
    } else {
        Err(invalid(format!("{what} must be a non-negative integer, not {v}")))
    }
}

/// Parsed options of `range()` / `keys()`.
#[derive(Clone, Debug)]
pub struct RangeOptions {
    pub start: Bound<Vec<u8>>,
    pub end: Bound<Vec<u8>>,
    pub reverse: bool,
    pub limit: Option<u64>,
}

const KNOWN: [&str; 7] = ["gt", "gte", "lt", "lte", "prefix", "reverse", "limit"];

fn get(o: &JsValue, name: &str) -> Res<Option<JsValue>> {
    let v = Reflect::get(o, &JsValue::from_str(name)).map_err(|_| invalid(format!("cannot read option {name}")))?;
    Ok((!v.is_undefined()).then_some(v))
}

/// The tighter of two lower bounds.
fn max_lower(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => match x.cmp(y) {
            Ordering::Greater => a,
            Ordering::Less => b,
            Ordering::Equal => {
                if matches!(a, Bound::Excluded(_)) {
                    a
                } else {
                    b
                }
            }
        },
    }
}

/// The tighter of two upper bounds.
fn min_upper(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    match (&a, &b) {
        (Bound::Unbounded, _) => b,
        (_, Bound::Unbounded) => a,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => match x.cmp(y) {
            Ordering::Less => a,
            Ordering::Greater => b,
            Ordering::Equal => {
                if matches!(a, Bound::Excluded(_)) {
                    a
                } else {
                    b
                }
            }
        },
    }
}

impl RangeOptions {
    /// Parses `undefined`, `null` or an options object; unknown option
    /// names are refused so that a typo does not widen a range silently.
    pub fn parse(v: &JsValue) -> Res<RangeOptions> {
        let mut o = RangeOptions { start: Bound::Unbounded, end: Bound::Unbounded, reverse: false, limit: None };
        if v.is_undefined() || v.is_null() {
            return Ok(o);
        }
        if !v.is_object() {
            return Err(invalid("range options must be an object"));
        }
        for name in Object::keys(v.unchecked_ref::<Object>()).iter() {
            let name = name.as_string().unwrap_or_default();
            if !KNOWN.contains(&name.as_str()) {
                return Err(invalid(format!("unknown range option {name:?} (known: {})", KNOWN.join(", "))));
            }
        }
        let gt = get(v, "gt")?.map(|k| key(&k, "gt")).transpose()?;
        let gte = get(v, "gte")?.map(|k| key(&k, "gte")).transpose()?;
        let lt = get(v, "lt")?.map(|k| key(&k, "lt")).transpose()?;
        let lte = get(v, "lte")?.map(|k| key(&k, "lte")).transpose()?;
        o.start = match (gt, gte) {
            (Some(_), Some(_)) => return Err(invalid("give gt or gte, not both")),
            (Some(k), None) => Bound::Excluded(k),
            (None, Some(k)) => Bound::Included(k),
            (None, None) => Bound::Unbounded,
        };
        o.end = match (lt, lte) {
            (Some(_), Some(_)) => return Err(invalid("give lt or lte, not both")),
            (Some(k), None) => Bound::Excluded(k),
            (None, Some(k)) => Bound::Included(k),
            (None, None) => Bound::Unbounded,
        };
        if let Some(p) = get(v, "prefix")? {
            let p = key(&p, "prefix")?;
            let end = match bale::btree::prefix_end(&p) {
                Some(e) => Bound::Excluded(e),
                None => Bound::Unbounded,
            };
            o.start = max_lower(o.start, Bound::Included(p));
            o.end = min_upper(o.end, end);
        }
        if let Some(r) = get(v, "reverse")? {
            o.reverse = r.as_bool().ok_or_else(|| invalid("reverse must be a boolean"))?;
        }
        if let Some(l) = get(v, "limit")? {
            let n = l.as_f64().filter(|n| !n.is_nan()).ok_or_else(|| invalid("limit must be a number"))?;
            if n >= 0.0 && n.is_finite() {
                if n.fract() != 0.0 {
                    return Err(invalid(format!("limit must be an integer, not {n}")));
                }
                o.limit = Some(n as u64);
            }
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(k: &[u8]) -> Bound<Vec<u8>> {
        Bound::Included(k.to_vec())
    }
    fn exc(k: &[u8]) -> Bound<Vec<u8>> {
        Bound::Excluded(k.to_vec())
    }

    #[test]
    fn bounds_intersect() {
        assert_eq!(max_lower(inc(b"a"), exc(b"a")), exc(b"a"));
        assert_eq!(max_lower(exc(b"a"), inc(b"b")), inc(b"b"));
        assert_eq!(max_lower(Bound::Unbounded, inc(b"b")), inc(b"b"));
        assert_eq!(min_upper(inc(b"z"), exc(b"z")), exc(b"z"));
        assert_eq!(min_upper(exc(b"y"), inc(b"z")), exc(b"y"));
        assert_eq!(min_upper(inc(b"y"), Bound::Unbounded), inc(b"y"));
    }
}
