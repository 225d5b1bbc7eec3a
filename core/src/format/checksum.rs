//! Checksums: XXH3-64, seeded with the page (or block) number so that a page
//! written to the wrong place fails verification too.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Checksum of `bytes` as stored at page (or block start page) `seed`.
#[inline]
pub fn checksum(bytes: &[u8], seed: u64) -> u64 {
    xxh3_64_with_seed(bytes, seed)
}
