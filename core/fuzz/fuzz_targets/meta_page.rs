//! Any bytes as a meta page and as a file header.
#![no_main]

use bale::btree::meta::Meta;
use bale::format::header::{FileKind, Header};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = Meta::decode(data, 1);
    let _ = Meta::decode(data, 2);
    let _ = Header::decode(data, FileKind::Tree, 1);
});
