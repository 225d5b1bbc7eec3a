//! The tree store: a crash-safe, copy-on-write B+-tree in one file.

mod batch;
mod check;
mod compact;
mod cursor;
mod estimate;
mod freelist;
mod key_cursor;
mod live_range;
pub mod meta;
mod node;
mod owned;
pub mod page;
mod page_map;
mod range_request;
mod range_scan;
mod read;
mod snapshot;
mod stat;
mod store;
mod value;
mod walk;
mod write;

pub use batch::{BatchOp, WriteBatch, check_key};
pub use check::{CheckOptions, CheckReport, Problem, check, check_txn, check_with};
pub use compact::{CompactReport, compact_into};
pub use estimate::{DEFAULT_ESTIMATE_SAMPLES, Estimate, MAX_ESTIMATE_SAMPLES, estimate};
pub use page_map::{PageKind, PageMap};
pub use stat::{Stat, camel_case, stat};

pub use cursor::{Cursor, Range, ValueRef, ValueStream};
pub use key_cursor::{KeyCursor, Move};
pub use live_range::LiveRange;
pub use owned::{Fetch, Item, OwnedRange, OwnedValue};
pub use range_request::{OptionValue, RangeRequest, options_not_an_object};
pub use range_scan::{RangeScan, Step};
pub use read::{ReadOps, ReadTxn, prefix_end};
pub use store::{Options, Store};
pub use value::ValueReader;
pub use write::WriteTxn;

/// Format version of tree-store files this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;
/// Values must be shorter than 2^48 bytes.
pub const MAX_VALUE_LEN: u64 = 1 << 48;
