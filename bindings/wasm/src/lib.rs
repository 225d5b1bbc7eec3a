//! WebAssembly bindings of bale: read-only access to tree-store files.

use wasm_bindgen::prelude::*;

/// The tree-store format version this build reads.
#[wasm_bindgen(js_name = formatVersion)]
pub fn format_version() -> u32 {
    bale::btree::FORMAT_VERSION as u32
}
