//! Locks, threads, processes and kills across handles of one file or
//! folder: file locks and their changes, then the tree store, the object
//! store and remotes under real processes and SIGKILL. Their tests run
//! this binary again as child processes (`support::child`).

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod lock_changes;
mod locks;
mod objects_kill;
mod objects_multiprocess;
mod objects_staging_race;
mod remote_kill;
mod tree_idle_pins;
mod tree_idle_pins_fork;
mod tree_kill;
mod tree_multiprocess;
mod tree_pin_race;
