//! The unsorted builder keeps its heap within the memory budget it is
//! given (a process of its own, so that no other test's allocations count).
#![allow(clippy::unwrap_used)]

use std::sync::atomic::Ordering;

use bale::bitable::{Bitable, BuildOptions, Completion, OnDuplicate, OpenOptions, SortOptions, UnsortedWriter};

use crate::support::counting_alloc;
use counting_alloc::{LIVE, PEAK};

#[test]
fn unsorted_build_honours_its_memory_budget() {
    if !alone!("unsorted_build_honours_its_memory_budget") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("bale-bitable-budget-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("b.bitable");
    let budget = 2u64 << 20;
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut w = UnsortedWriter::create(
        &path,
        BuildOptions::default(),
        SortOptions { memory_budget: budget, on_duplicate: OnDuplicate::NewestWins },
    )
    .unwrap();
    let mut x = 12345u64;
    // About 40 MB of pairs, twenty times the budget.
    for i in 0..1_000_000u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        w.add(&x.to_le_bytes(), &i.to_le_bytes().repeat(3)).unwrap();
    }
    let runs = w.runs();
    w.finish(Completion::Fast).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - base;
    eprintln!("peak heap {peak} for a budget of {budget}, {runs} runs");
    assert!(runs >= 10, "{runs} runs");
    // The budget, plus the writers' fixed buffers (1 MiB runs, pages) and
    // the output's branch levels.
    assert!(peak as u64 <= budget + (4 << 20), "peak heap {peak} over a budget of {budget}");
    assert_eq!(Bitable::open(&path, OpenOptions::default()).unwrap().len(), 1_000_000);
    std::fs::remove_dir_all(&dir).unwrap();
}
