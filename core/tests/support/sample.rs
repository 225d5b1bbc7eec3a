//! Which cases of a long sweep a run takes: all of them (or, where every
//! case would take days, a far larger set: bitable bit flips) under
//! `BALE_TEST_LONG=1` (`make test-long`; `BALE_BADFILES_FULL=1` too),
//! otherwise a sample drawn from `BALE_TEST_SEED`. `make test` sets the
//! seed from the commit id, so that each commit tries other cases and
//! coverage grows over commits; a failure names the seed to replay it.

use bale::io::sim::SimRng;
use std::collections::BTreeSet;

/// Every case, not a sample.
pub fn long() -> bool {
    std::env::var_os("BALE_TEST_LONG").is_some() || std::env::var_os("BALE_BADFILES_FULL").is_some()
}

/// The run's seed: `BALE_TEST_SEED` as hex digits (its first 16), or a
/// fixed one when unset.
pub fn seed() -> u64 {
    let text = std::env::var("BALE_TEST_SEED").unwrap_or_default();
    let hex: String = text.chars().filter(char::is_ascii_hexdigit).take(16).collect();
    u64::from_str_radix(&hex, 16).unwrap_or(0x5EED_CA5E)
}

/// How to run `test` (a full name) of the test binary `binary` again with
/// this run's cases.
pub fn replay(binary: &str, test: &str) -> String {
    format!("replay: BALE_TEST_SEED={:x} cargo test -p bale --test {binary} -- --exact {test}", seed())
}

/// `n` values of `0..total`, ascending, drawn from the seed and `salt`
/// (one per sweep, so that sweeps draw differently), plus every value of
/// `always` below `total`; all of `0..total` when [`long`] or when
/// `total` is not above `n`.
pub fn pick(total: usize, n: usize, salt: u64, always: impl IntoIterator<Item = usize>) -> Vec<usize> {
    if long() || total <= n {
        return (0..total).collect();
    }
    let mut rng = SimRng::new(seed() ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut out: BTreeSet<usize> = always.into_iter().filter(|&v| v < total).collect();
    for _ in 0..n {
        out.insert(rng.below(total as u64) as usize);
    }
    out.into_iter().collect()
}
