//! Bitables: immutable sorted tables. Built by appending pairs in key
//! order ([`Writer`]), then read in place by any number of threads with no
//! locks and, on a memory map, no allocation or system call per lookup
//! ([`Bitable`]). FORMAT.md, "Bitable", describes the bytes.

mod check;
mod cursor;
mod export;
mod large;
mod merge;
mod meta;
mod page;
// Unsorted builds spill runs to files beside the output: native only.
#[cfg(native_fs)]
mod sort;
mod table;
mod value;
mod writer;

pub use crate::objects::Compression;
/// The bitable format version this build writes (and the newest it reads).
pub const FORMAT_VERSION: u16 = meta::VERSION;
pub use crate::btree::prefix_end;
pub use check::{CheckReport, Problem};
pub use cursor::{Cursor, Range};
#[cfg(native_fs)]
pub use export::export_tree;
pub use export::export_tree_into;
pub use merge::{OnDuplicate, merge_into};
pub use meta::{Completion, TableMeta};
#[cfg(native_fs)]
pub use sort::{SortOptions, UnsortedWriter};
pub use table::{Bitable, OpenOptions, Stats};
pub use value::{LargeReader, LargeValue, Value};
pub use writer::{BuildOptions, BuildSummary, Writer};
