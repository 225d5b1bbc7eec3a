//! Bitables: immutable sorted tables. Built by appending pairs in key
//! order ([`Writer`]), then read in place by any number of threads with no
//! locks and, on a memory map, no allocation or system call per lookup
//! ([`Bitable`]). FORMAT.md, "Bitable", describes the bytes.

mod check;
mod cursor;
mod large;
mod meta;
mod page;
mod table;
mod value;
mod writer;

pub use crate::objects::Compression;
pub use check::{CheckReport, Problem};
pub use cursor::{Cursor, Range, prefix_end};
pub use meta::{Completion, TableMeta};
pub use table::{Bitable, OpenOptions, Stats};
pub use value::{LargeReader, LargeValue, Value};
pub use writer::{BuildOptions, BuildSummary, Writer};
