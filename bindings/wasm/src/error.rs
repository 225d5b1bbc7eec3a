//! Core errors as JS `Error` objects: `name` "BaleError", `code` the core's
//! stable code, `message` the core's text (which starts with the code), and
//! `page` when the error concerns one page.

use js_sys::Reflect;
use wasm_bindgen::JsValue;

/// A core error on its way to JS. Functions return `Result<T, BaleError>`
/// and wasm-bindgen throws the converted `Error`.
pub struct BaleError(pub bale::Error);

pub type Res<T> = Result<T, BaleError>;

impl From<bale::Error> for BaleError {
    fn from(e: bale::Error) -> BaleError {
        BaleError(e)
    }
}

impl From<BaleError> for JsValue {
    fn from(BaleError(e): BaleError) -> JsValue {
        let err = js_sys::Error::new(&e.to_string());
        err.set_name("BaleError");
        // Setting data properties on a fresh Error cannot fail.
        let _ = Reflect::set(&err, &JsValue::from_str("code"), &JsValue::from_str(e.code()));
        if let Some(page) = e.page() {
            let _ = Reflect::set(&err, &JsValue::from_str("page"), &JsValue::from(page as f64));
        }
        err.into()
    }
}

/// An `INVALID_ARGUMENT` error.
pub fn invalid(message: impl Into<String>) -> BaleError {
    BaleError(bale::Error::new(bale::ErrorKind::InvalidArgument, message))
}
