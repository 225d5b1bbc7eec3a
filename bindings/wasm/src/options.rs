//! Arguments from JS: keys (bytes or strings), counts, and range options
//! (checked by the core's `RangeRequest`).

use bale::btree::{OptionValue, RangeRequest, RangeScan, options_not_an_object};
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

/// The options of `range()` / `keys()` as the core's request: every own
/// enumerable property goes to `RangeRequest::set`, which checks its name
/// and value, so a name the core does not know fails instead of being
/// ignored.
pub fn range_request(v: &JsValue) -> Res<RangeScan> {
    let mut req = RangeRequest::default();
    if let Some(got) = option_value(v) {
        if !v.is_object() || v.is_function() {
            return Err(options_not_an_object(&got.to_string()).into());
        }
        for name in Object::keys(v.unchecked_ref::<Object>()).iter() {
            let name = name.as_string().unwrap_or_default();
            let value = Reflect::get(v, &JsValue::from_str(&name))
                .map_err(|_| invalid(format!("cannot read range option {name}")))?;
            if let Some(value) = option_value(&value) {
                req.set(&name, value)?;
            }
        }
    }
    Ok(req.scan()?)
}
