//! Changing a held lock (io/locks): a handle's upgrade from shared to
//! exclusive and its downgrade back. A failed change keeps the lock held
//! before, and a downgrade never lets the bytes go, so no other handle
//! slips in meanwhile (the object store's maintenance relies on both:
//! FORMAT.md, "Object store locks"). fcntl changes a lock in place; on
//! Windows, whose locks do not change in place, an upgrade takes turns at
//! a gate and a downgrade locks shared before it unlocks (io/locks).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use bale::io::locks::{LockHandle, LockKind};

/// Lock bytes as the stores use them: far past any data.
const X: u64 = (1 << 61) + 1;

fn tmp(name: &str) -> PathBuf {
    let p = tmp!(name).join("lock");
    File::create(&p).expect("create");
    p
}

fn handle(path: &Path) -> LockHandle {
    LockHandle::new(OpenOptions::new().read(true).write(true).open(path).expect("open")).expect("handle")
}

#[test]
fn a_failed_upgrade_keeps_the_shared_lock() {
    let path = tmp("failed");
    let (a, b, c) = (handle(&path), handle(&path), handle(&path));
    assert!(a.set(LockKind::Shared, X, 1, false).unwrap());
    assert!(b.set(LockKind::Shared, X, 1, false).unwrap());
    assert!(!a.set(LockKind::Exclusive, X, 1, false).unwrap(), "an upgrade over another handle's shared lock");
    b.unlock(X, 1).unwrap();
    assert!(!c.set(LockKind::Exclusive, X, 1, false).unwrap(), "the failed upgrade dropped the shared lock");
    assert_eq!(c.probe(X, 1).unwrap(), Some(X));
    // It can still upgrade once alone, and a second ask changes nothing.
    assert!(a.set(LockKind::Exclusive, X, 1, false).unwrap());
    assert!(a.set(LockKind::Exclusive, X, 1, false).unwrap());
    assert!(!c.set(LockKind::Shared, X, 1, false).unwrap(), "a shared lock over an exclusive one");
    a.unlock(X, 1).unwrap();
    assert!(c.set(LockKind::Exclusive, X, 1, false).unwrap(), "an unlocked upgrade left something behind");
    drop((a, b, c));
    let _ = std::fs::remove_file(&path);
}

/// Two handles holding the bytes shared upgrade at the same moment: at
/// most one wins, and the other still holds its shared lock.
#[test]
fn racing_upgrades_never_lose_a_lock() {
    let path = tmp("race");
    let hs: Arc<[LockHandle; 2]> = Arc::new([handle(&path), handle(&path)]);
    let witness = handle(&path);
    for round in 0..300u32 {
        for h in hs.iter() {
            assert!(h.set(LockKind::Shared, X, 1, false).unwrap());
        }
        let start = Arc::new(Barrier::new(2));
        let won: Vec<bool> = (0..2)
            .map(|i| {
                let (hs, start) = (hs.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    hs[i].set(LockKind::Exclusive, X, 1, false).unwrap()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().expect("upgrader"))
            .collect();
        // Both hold shared locks, so neither upgrade can win.
        assert_eq!(won, [false, false], "an upgrade won over the other handle's shared lock");
        assert!(!witness.set(LockKind::Exclusive, X, 1, false).unwrap(), "both upgrades lost their shared locks");
        // One lets go; the other now upgrades, and then holds it alone.
        let (stay, go) = if round.is_multiple_of(2) { (0, 1) } else { (1, 0) };
        hs[go].unlock(X, 1).unwrap();
        assert!(!witness.set(LockKind::Exclusive, X, 1, false).unwrap(), "a failed upgrade dropped its shared lock");
        assert!(hs[stay].set(LockKind::Exclusive, X, 1, false).unwrap(), "an upgrade with no other holder");
        assert!(!witness.set(LockKind::Shared, X, 1, false).unwrap());
        hs[stay].unlock(X, 1).unwrap();
    }
    drop((hs, witness));
    let _ = std::fs::remove_file(&path);
}

/// While a handle downgrades, another keeps trying to take the bytes
/// exclusively: it never succeeds while the first holds them, since a
/// downgrade never lets them go.
#[test]
fn a_downgrade_never_lets_the_bytes_go() {
    let path = tmp("downgrade");
    let owner = handle(&path);
    let thief = Arc::new(handle(&path));
    // Odd while the owner holds the bytes (exclusive, then shared).
    let epoch = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // The last odd epoch throughout which the thief tried.
    let seen = Arc::new(AtomicU64::new(0));
    let t = {
        let (thief, epoch, stop, seen) = (thief.clone(), epoch.clone(), stop.clone(), seen.clone());
        std::thread::spawn(move || {
            let mut tried_while_held = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let before = epoch.load(Ordering::SeqCst);
                let got = thief.set(LockKind::Exclusive, X, 1, false).unwrap();
                let held_throughout = !before.is_multiple_of(2) && epoch.load(Ordering::SeqCst) == before;
                assert!(!(got && held_throughout), "the bytes were free while their owner changed its lock");
                if got {
                    thief.unlock(X, 1).unwrap();
                }
                if held_throughout {
                    seen.store(before, Ordering::SeqCst);
                    tried_while_held += 1;
                }
            }
            tried_while_held
        })
    };
    for _ in 0..300 {
        assert!(owner.set(LockKind::Exclusive, X, 1, true).unwrap());
        let held = epoch.fetch_add(1, Ordering::SeqCst) + 1;
        // Once the thief has tried against the exclusive lock, it is
        // trying while the downgrade runs, however threads are scheduled.
        while seen.load(Ordering::SeqCst) < held && !t.is_finished() {
            std::thread::yield_now();
        }
        assert!(owner.set(LockKind::Shared, X, 1, false).unwrap());
        std::thread::yield_now();
        epoch.fetch_add(1, Ordering::SeqCst);
        owner.unlock(X, 1).unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let tried = t.join().expect("thief");
    assert!(tried > 0, "the other handle never tried while the bytes were held");
    // A downgrade leaves a shared lock, not an exclusive one.
    assert!(owner.set(LockKind::Exclusive, X, 1, true).unwrap());
    assert!(owner.set(LockKind::Shared, X, 1, false).unwrap());
    let other = handle(&path);
    assert!(other.set(LockKind::Shared, X, 1, false).unwrap(), "a downgrade left the exclusive lock");
    assert!(!other.set(LockKind::Exclusive, X, 1, false).unwrap(), "a downgrade dropped the shared lock");
    drop((owner, thief, other));
    let _ = std::fs::remove_file(&path);
}
