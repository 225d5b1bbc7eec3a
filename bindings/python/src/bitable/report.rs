//! What bitable calls report, as read-only classes with `to_dict()` (the
//! same shape as the tree store's `Stat` and `CheckReport`).

use bale::bitable as core;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::report::report;

static BITABLE_PROBLEM: PyOnceLock<Py<PyType>> = PyOnceLock::new();

report!(
    /// `stats()`: the size, shape and fill of a table. `level_pages` counts
    /// the pages of each level, leaves first; `completion` is how the table
    /// was finished: `"durable"`, `"fast"` or `"unknown"`.
    BitableStats(core::Stats) {
        entries: u64,
        page_size: u32,
        align: u32,
        depth: u8,
        leaf_pages: u64,
        branch_pages: u64,
        large_values: u64,
        value_region_bytes: u64,
        file_bytes: u64,
        key_bytes: u64,
        value_bytes: u64,
        longest_key: u64,
        leaf_fill: f64,
        branch_fill: f64,
    }
    shown: [] fields ["level_pages", "completion"];

    #[getter]
    fn level_pages(&self) -> Vec<u64> {
        self.0.level_pages.clone()
    }

    #[getter]
    fn completion(&self) -> &'static str {
        self.0.completion
    }
);

report!(
    /// `check()`: what was verified, and the problems found (none when
    /// `ok`). `problems` lists the first 1000; `problem_count` counts all.
    BitableCheckReport(core::CheckReport) {
        pages_checked: u64, entries_checked: u64, large_values_checked: u64, problem_count: u64
    }
    shown: ["ok"] fields ["problems"];

    #[getter]
    fn ok(&self) -> bool {
        self.0.is_ok()
    }

    /// Each problem as a `bale.BitableProblem` (`page`, `code`, `message`);
    /// `code` is the error code a read of it would raise.
    #[getter]
    fn problems<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let class = BITABLE_PROBLEM.import(py, "bale._support", "BitableProblem")?;
        self.0.problems.iter().map(|p| class.call1((p.page, p.code, &p.message))).collect()
    }
);

report!(
    /// What `finish()` of a writer reports: the pairs, the file's size and
    /// the depth of its index.
    BitableSummary(core::BuildSummary) { entries: u64, file_bytes: u64, depth: u8 }
    shown: [] fields [];
);
