//! Arguments from JS: keys (bytes or strings), counts, and range options
//! (checked by the core's `RangeRequest`).

use bale::btree::{OptionValue, RangeRequest, RangeScan, options_not_an_object};
use bale::chunk_cache::{ChunkCache, DEFAULT_CACHE_BYTES, DEFAULT_CHUNK_BYTES};
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};

use crate::error::{Res, invalid};

/// The bytes of a `Uint8Array` or `ArrayBuffer`, or `None` for anything else.
pub fn bytes(v: &JsValue) -> Option<Vec<u8>> {
    if let Some(a) = v.dyn_ref::<Uint8Array>() {
        return Some(a.to_vec());
    }
    v.is_instance_of::<js_sys::ArrayBuffer>().then(|| Uint8Array::new(v).to_vec())
}

/// A key argument: a `Uint8Array` (or `ArrayBuffer`), or a string encoded
/// as UTF-8.
pub fn key(v: &JsValue, what: &str) -> Res<Vec<u8>> {
    if let Some(s) = v.as_string() {
        return Ok(s.into_bytes());
    }
    bytes(v).ok_or_else(|| invalid(format!("{what} must be a Uint8Array or a string")))
}

/// A non-negative integer argument.
pub fn count(v: f64, what: &str) -> Res<u64> {
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9007199254740991.0 {
        Ok(v as u64)
    } else {
        Err(invalid(format!("{what} must be a non-negative integer, not {v}")))
    }
}

/// An option's value for the core, or `None` for `undefined` and `null`
/// (the same as leaving the option out).
fn option_value(v: &JsValue) -> Option<OptionValue> {
    if v.is_undefined() || v.is_null() {
        return None;
    }
    Some(if let Some(s) = v.as_string() {
        OptionValue::Text(s)
    } else if let Some(b) = v.as_bool() {
        OptionValue::Bool(b)
    } else if let Some(n) = v.as_f64() {
        OptionValue::Number(n)
    } else if let Ok(b) = key(v, "") {
        OptionValue::Bytes(b)
    } else if v.is_function() {
        OptionValue::Other("a function".into())
    } else if v.is_object() {
        OptionValue::Other("an object".into())
    } else {
        // A bigint or a symbol.
        OptionValue::Other(format!("a {}", v.js_typeof().as_string().unwrap_or_default()))
    })
}

/// The own enumerable properties of an options object, skipping those
/// whose value is `undefined` or `null` (the same as leaving them out).
fn own_properties(v: &JsValue) -> Res<Vec<(String, JsValue)>> {
    let mut out = Vec::new();
    for name in Object::keys(v.unchecked_ref::<Object>()).iter() {
        let name = name.as_string().unwrap_or_default();
        let value =
            Reflect::get(v, &JsValue::from_str(&name)).map_err(|_| invalid(format!("cannot read option {name}")))?;
        if !value.is_undefined() && !value.is_null() {
            out.push((name, value));
        }
    }
    Ok(out)
}

/// The options of `range()` / `keys()` as the core's request: every own
/// enumerable property goes to `RangeRequest::set`, which checks its name
/// and value, so a name the core does not know fails instead of being
/// ignored.
pub fn range_request(v: &JsValue) -> Res<RangeScan> {
    range_request_with(v, None)
}

/// [`range_request`] with the prefix given apart (`Bitable.prefix()`),
/// which the options may not give again.
pub fn range_request_with(v: &JsValue, prefix: Option<Vec<u8>>) -> Res<RangeScan> {
    let mut req = RangeRequest::default();
    if let Some(got) = option_value(v) {
        if !v.is_object() || v.is_function() {
            return Err(options_not_an_object(&got.to_string()).into());
        }
        for (name, value) in own_properties(v)? {
            if let Some(value) = option_value(&value) {
                req.set(&name, value)?;
            }
        }
    }
    if let Some(p) = prefix {
        if req.prefix.is_some() {
            return Err(invalid("give the prefix once: as the argument of prefix(), not among its options"));
        }
        req.prefix = Some(p);
    }
    Ok(req.scan()?)
}

/// The options a constructor takes (`undefined` and `null`: none), each
/// name checked against `known`.
pub fn named(v: &JsValue, what: &str, known: &[&str]) -> Res<Vec<(String, JsValue)>> {
    if v.is_undefined() || v.is_null() {
        return Ok(Vec::new());
    }
    if !v.is_object() || v.is_function() || v.is_instance_of::<Uint8Array>() {
        return Err(invalid(format!("{what} options must be an object")));
    }
    let props = own_properties(v)?;
    if let Some((name, _)) = props.iter().find(|(n, _)| !known.contains(&n.as_str())) {
        return Err(invalid(format!("unknown {what} option {name:?} (known: {})", known.join(", "))));
    }
    Ok(props)
}

/// A non-negative integer option.
pub fn count_option(name: &str, v: &JsValue) -> Res<u64> {
    match v.as_f64() {
        Some(n) => count(n, name),
        None => Err(invalid(format!("{name} must be a non-negative integer"))),
    }
}

/// The chunk cache of a lazily read store, from `{ chunkBytes, cacheBytes }`.
pub fn chunk_cache(v: &JsValue) -> Res<ChunkCache> {
    cache_from(&named(v, "open", &["chunkBytes", "cacheBytes"])?)
}

/// The chunk cache from the `chunkBytes` and `cacheBytes` among options
/// already checked by [`named`] (other names are left to the caller).
pub fn cache_from(props: &[(String, JsValue)]) -> Res<ChunkCache> {
    let (mut chunk, mut cache) = (DEFAULT_CHUNK_BYTES as u64, DEFAULT_CACHE_BYTES as u64);
    for (name, value) in props {
        match name.as_str() {
            "chunkBytes" => chunk = count_option(name, value)?,
            "cacheBytes" => cache = count_option(name, value)?,
            _ => {}
        }
    }
    // Larger than memory can hold anyway: clamp instead of wrapping.
    let usize_of = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Ok(ChunkCache::new(usize_of(chunk), usize_of(cache))?)
}
