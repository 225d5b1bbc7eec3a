//! Node.js bindings of bale over Node-API.

use napi_derive::napi;

/// The tree-store format version this build reads and writes.
#[napi]
pub fn format_version() -> u32 {
    bale::btree::FORMAT_VERSION as u32
}
