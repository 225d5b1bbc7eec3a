//! Node.js bindings of bale over Node-API (no V8 ABI: the same binary loads
//! in every Node version with Node-API 8 and in Electron without a rebuild).
//!
//! The modules mirror the core: `store` (open, snapshots, sync writes,
//! stat, check, compact), `batch` (puts and deletes in one commit), `reader` (the reads of a tree and of a
//! transaction, written once), `txn` (transaction callbacks and the queue
//! of durable async writes), `range` (batched range iteration), `value`
//! (reading a value in pieces for streams), `error` (coded errors), plus
//! `convert`, `js` and `fast` (the hottest writes as plain Node-API
//! callbacks) for the boundary itself. `index.js` adds the iterator
//! protocols, encodings and the Node streams.
//!
//! The object store (`bale::objects`) is `objects` (the `ObjectStore`
//! class), with `object_args` (its arguments), `object_reports` (what its
//! calls return), `object_work` (its handle state and pool task),
//! `object_streams` (streams in and out) and `object_remote` (its remotes,
//! with `progress` for calls that report progress or talk to a bucket);
//! lib/objects.js adds the stream calls.
//!
//! Bitables (`bale::bitable`) are `bitable` (the `Bitable` class and its
//! fast lookups), `bitable_read` (cursors, ranges, value pieces),
//! `bitable_build` (the writers) and `bitable_check`; lib/bitable.js adds
//! the iterator protocols, the slab lookups and the streams.

mod batch;
mod bitable;
mod bitable_build;
mod bitable_check;
mod bitable_read;
mod convert;
mod error;
mod fast;
mod js;
mod object_args;
mod object_reports;
mod object_streams;
mod object_work;
mod objects;

// After `objects`: its `#[napi] impl` of the class needs the class's JS
// name, which napi's type generation learns from the struct.
mod object_remote;

mod progress;
mod range;
mod reader;
mod store;
mod txn;
mod value;

use napi_derive::napi;

pub use bitable::{Bitable, bitable_fast};
pub use bitable_build::{
    BitableWriter, UnsortedBitableWriter, bitable_sink_abort, bitable_sink_end, bitable_sink_write,
};
pub use bitable_read::{BitableCursor, BitableRange, bitable_pieces_close, bitable_pieces_length, bitable_pieces_read};
pub use error::{error_codes, error_for_code};
pub use fast::fast_paths;
pub use object_streams::{
    many_close, many_next, many_next_sync, pieces_close, pieces_length, pieces_read, sink_abort, sink_end, sink_write,
};
pub use objects::Objects;
pub use range::Range;
pub use reader::reads_of;
pub use store::{CheckReport, CompactReport, Tree};
pub use txn::Txn;
pub use value::ValueReader;

/// The tree-store format version this build reads and writes.
#[napi]
pub fn format_version() -> u32 {
    bale::btree::FORMAT_VERSION as u32
}
