//! A bitable from a tree store: one snapshot, in key order, large values
//! streamed.

use super::writer::Writer;
use crate::btree::{ReadOps, Store};
use crate::error::Result;

/// Writes every pair of `store`'s latest commit into `out`.
pub fn export_tree_into(store: &Store, out: &mut Writer) -> Result<u64> {
    let txn = store.read()?;
    let mut range = txn.iter();
    let mut n = 0u64;
    while let Some(entry) = range.next_entry() {
        let (key, value) = entry?;
        match value.as_inline() {
            Some(v) => out.append(key, v)?,
            None => out.append_reader(key, &mut value.reader())?,
        }
        n += 1;
    }
    Ok(n)
}

/// Exports `store` to a new table named `path`.
#[cfg(native_fs)]
pub fn export_tree(
    store: &Store,
    path: &std::path::Path,
    opts: super::writer::BuildOptions,
    completion: super::meta::Completion,
) -> Result<super::writer::BuildSummary> {
    let mut w = Writer::create(path, opts)?;
    export_tree_into(store, &mut w)?;
    w.finish(completion)
}
