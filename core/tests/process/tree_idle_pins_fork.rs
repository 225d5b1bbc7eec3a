//! A forked child shares its parent's open file descriptions, so its
//! copies of the parent's handles must never touch their locks. The
//! process-wide reaper of idle pins is copied with its list of handles:
//! a child that starts its own reaper must not reap the parent's handles
//! (an unlock there would drop a pin the parent holds). Its own test
//! binary: `fork` here runs with no other test thread alive.
//!
//! Unix only: Windows has no fork, so no process ever shares a handle's
//! locks with a copy of it.
#![cfg(unix)]

use bale::io::{FileOptions, FileStorage, Storage};
use bale::{Options, Store};

#[test]
fn a_forked_child_never_drops_a_pin_its_parent_holds() {
    let path = std::env::temp_dir().join(format!("bale-idle-pins-fork-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let st = Store::open(&path, Options::create()).expect("create");
    st.put(b"k", b"v").expect("put");
    let probe = FileStorage::open(&path, FileOptions { create: false, readonly: true }).expect("probe");
    for round in 0..20 {
        // An idle pin, on the reaper's list, at the moment of the fork.
        drop(st.read().expect("read"));
        // SAFETY: the child only opens a store, reads, sleeps and exits
        // with _exit (no unwinding into the parent's test harness).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = match Store::open(&path, Options::default()).and_then(|c| c.read().map(drop)) {
                Ok(()) => {
                    // Long enough for the child's reaper to look twice.
                    std::thread::sleep(std::time::Duration::from_millis(30));
                    0
                }
                Err(_) => 1,
            };
            // SAFETY: ends the child without running the parent's exit code.
            unsafe { libc::_exit(code) };
        }
        // The parent takes its idle pin back as a live snapshot.
        let held = st.read().expect("read in the parent");
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "round {round}: the child failed");
        assert_eq!(
            probe.oldest_pin(u64::MAX).expect("probe"),
            Some(held.txn_id()),
            "round {round}: the parent's snapshot lost its pin to the child"
        );
        drop(held);
    }
    let _ = std::fs::remove_file(&path);
}
