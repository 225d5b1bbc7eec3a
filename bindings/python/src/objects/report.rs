//! The object store's reports and records, as read-only classes with
//! `to_dict()` (the same shape as the tree store's `Stat`/`CheckReport`).
//! The counts of the reports come from the core's list
//! (`bale::object_reports!`); what each class adds is written here.

use bale::objects as core;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use super::hex;
use crate::report::report;

static OBJECT_PROBLEM: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Each problem as a `bale.ObjectProblem` (a named tuple: `id`, `code`,
/// `message`, `file`).
fn problems<'py>(py: Python<'py>, ps: &[core::ObjectProblem]) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let class = OBJECT_PROBLEM.import(py, "bale._support", "ObjectProblem")?;
    ps.iter().map(|p| class.call1((p.id.as_ref().map(hex), p.code, &p.message, p.file.as_deref()))).collect()
}

/// One class per report of the core's list, its counts as `int` getters.
macro_rules! reports {
    ($(
        $(#[$doc:meta])* $name:ident [$($derive:ident)*]
        { $( $(#[$fdoc:meta])* $f:ident ),* $(,)? }
        { $($other:tt)* }
    )*) => {
        $( class!($name { $($f)* }); )*
    };
}

/// The class of one report: its docstring, what `to_dict()` shows besides
/// the counts, and its other getters.
macro_rules! class {
    (ObjectStats { $($f:ident)* }) => {
        report!(
            /// `stats()`: counts and sizes of the whole store, from one state of
            /// its index. `logical_bytes - unique_bytes` is what deduplication
            /// saved.
            ObjectStats(core::ObjectStats) { $($f: u64),* }
            shown: [] fields [];
        );
    };
    (PackReport { $($f:ident)* }) => {
        report!(
            /// `pack()` and `repack()`: files emptied and removed, records and
            /// bytes moved, and the problems left in place.
            PackReport(core::PackReport) { $($f: u64),* }
            shown: [] fields ["problems"];

            /// Files left in place (damaged), or removed (no commit names them).
            #[getter]
            fn problems<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
                problems(py, &self.0.problems)
            }
        );
    };
    (ValidateReport { $($f:ident)* }) => {
        report!(
            /// `validate()`: what was checked, and the problems found (none when
            /// `ok`).
            ValidateReport(core::ValidateReport) { $($f: u64),* }
            shown: ["ok"] fields ["problems"];

            #[getter]
            fn ok(&self) -> bool {
                self.0.is_ok()
            }

            /// Each problem; `code` is the error code a read would raise.
            #[getter]
            fn problems<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
                problems(py, &self.0.problems)
            }
        );
    };
    (RebuildReport { $($f:ident)* }) => {
        report!(
            /// `rebuild_index()`: intact records read (and the objects among them),
            /// damaged records and stretches skipped.
            RebuildReport(core::RebuildReport) { $($f: u64),* }
            shown: [] fields ["problems"];

            /// Files skipped, and objects left out because a chunk is missing.
            #[getter]
            fn problems<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
                problems(py, &self.0.problems)
            }
        );
    };
    (TransferReport { $($f:ident)* }) => {
        report!(
            /// `export_to()` / `import_from()` / `import_dos()`: objects copied and
            /// their content bytes, and objects the destination had already.
            TransferReport(core::TransferReport) { $($f: u64),* }
            shown: [] fields [];
        );
    };
    (AddTreeReport { $($f:ident)* }) => {
        report!(
            /// `add_tree()`: regular files added and their bytes, directories
            /// walked, and the links and special files left out.
            AddTreeReport(core::AddTreeReport) { $($f: u64),* }
            shown: [] fields ["skipped"];

            /// Relative paths of the links and special files left out.
            #[getter]
            fn skipped(&self) -> Vec<String> {
                self.0.skipped.clone()
            }
        );
    };
    (CleanReport { $($f:ident)* }) => {
        report!(
            /// `clean()`: files removed and bytes freed, and the index's size
            /// before and after its compaction.
            CleanReport(core::CleanReport) { $($f: u64),* }
            shown: [] fields [];
        );
    };
}

bale::object_reports!(reports);

report!(
    /// `meta(id)`: what the store knows of one object. `stored_size` is
    /// what its top record takes on disk (a chunked object's chunks are
    /// counted in `stats()`); `packed` is False while it is in a staging
    /// file.
    ObjectMeta(core::ObjectMeta) { size: u64, stored_size: u64, chunked: bool, packed: bool, compressed: bool }
    shown: ["id"] fields [];

    #[getter]
    fn id(&self) -> String {
        hex(&self.0.id)
    }
);

report!(
    /// The parameters a store was created with, and its compression policy
    /// for new records (`store.config`).
    ObjectConfig(core::Config) { chunk_min: u32, chunk_avg: u32, chunk_max: u32, fanout: u32, pack_target: u64 }
    shown: ["hash", "compression"] fields ["store_id"];

    #[getter]
    fn hash(&self) -> &'static str {
        self.0.hash.name()
    }

    /// The policy for new records: `"never"`, `"auto"` or `"always"`.
    #[getter]
    fn compression(&self) -> &'static str {
        self.0.compression.name()
    }

    /// Random at creation (hex): packs of another store are refused.
    #[getter]
    fn store_id(&self) -> String {
        self.0.store_id.iter().map(|b| format!("{b:02x}")).collect()
    }
);
