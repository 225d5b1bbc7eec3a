//! The report classes of `stat()`, `check()` and `compact()` (the object
//! store's use the same macro): read-only fields, `to_dict()`, and a repr
//! that reads like a call (`Stat(txn=3, page_size=4096, ...)`).

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `(name, value)` of each field, in `names` order.
pub(crate) fn fields<'py>(obj: &Bound<'py, PyAny>, names: &[&str]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(obj.py());
    for name in names {
        d.set_item(name, obj.getattr(*name)?)?;
    }
    Ok(d)
}

/// `Name(field=repr(value), ...)`.
pub(crate) fn call_repr(obj: &Bound<'_, PyAny>, class: &str, names: &[&str]) -> PyResult<String> {
    let mut parts = Vec::with_capacity(names.len());
    for (k, v) in fields(obj, names)?.iter() {
        parts.push(format!("{k}={}", v.repr()?));
    }
    Ok(format!("{class}({})", parts.join(", ")))
}

/// A report class over a core struct: a getter per plain field, plus
/// `extra` (computed getters). `to_dict` and the repr show the names in
/// `before`, the plain fields, then the names in `after`.
macro_rules! report {
    ($(#[$doc:meta])* $ty:ident($inner:ty) { $($f:ident: $t:ty),* $(,)? }
     shown: [$($before:literal),*] fields [$($after:literal),*]; $($extra:tt)*) => {
        $(#[$doc])*
        #[pyclass(module = "bale", frozen)]
        pub struct $ty(pub(crate) $inner);

        #[pymethods]
        impl $ty {
            $(
                #[getter]
                fn $f(&self) -> $t {
                    self.0.$f
                }
            )*

            /// Every field as a dict, in the order the repr shows them.
            fn to_dict<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
                $crate::report::fields(slf.as_any(), &[$($before,)* $(stringify!($f),)* $($after),*])
            }

            fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
                $crate::report::call_repr(slf.as_any(), stringify!($ty), &[$($before,)* $(stringify!($f),)* $($after),*])
            }

            $($extra)*
        }
    };
}

pub(crate) use report;

report!(
    /// `stat()`: page counts, depth, fill and value bytes of the latest commit.
    Stat(bale::btree::Stat) {
        txn: u64,
        page_size: u64,
        file_pages: u64,
        depth: u64,
        entries: u64,
        leaf_pages: u64,
        branch_pages: u64,
        fill: f64,
        inline_value_bytes: u64,
        large_values: u64,
        large_value_bytes: u64,
        large_stored_bytes: u64,
        large_pages: u64,
        free_pages: u64,
        free_list_pages: u64,
        meta_slot: u64,
    }
    shown: [] fields [];
);

report!(
    /// `check()`: what was verified, and the problems found (none when `ok`).
    CheckReport(bale::btree::CheckReport) {
        txn: u64, pages: u64, entries: u64, large_values: u64, free_pages: u64, meta_slot: u64
    }
    shown: ["ok"] fields ["problems"];

    #[getter]
    fn ok(&self) -> bool {
        self.0.is_ok()
    }

    /// `(page or None, message)` for each problem.
    #[getter]
    fn problems(&self) -> Vec<(Option<u64>, String)> {
        self.0.problems.iter().map(|p| (p.page, p.message.clone())).collect()
    }
);

report!(
    /// `compact()`: file bytes before and after, and entries copied.
    CompactReport(bale::btree::CompactReport) { bytes_before: u64, bytes_after: u64, entries: u64 }
    shown: [] fields [];
);
