//! bale: embedded storage for large binary assets and the indexes over them.
//!
//! This crate is the core every binding wraps. [`Store`] is the tree store,
//! a crash-safe single-file B+-tree; [`objects::ObjectStore`] the
//! content-addressed object store. FORMAT.md describes their bytes.
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod bitable;
pub mod btree;
pub mod chunk_cache;
pub mod error;
pub mod format;
pub mod io;
pub mod objects;
pub mod remote;

pub use btree::{Options, ReadOps, ReadTxn, Store, WriteTxn};
pub use error::{Error, ErrorKind, Result};
