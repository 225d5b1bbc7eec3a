//! Any bytes as a bitable: a whole file as given and resealed, one leaf
//! page and one root branch page, each opened and read every way and
//! checked (tests/support/bitable_fuzz.rs, which the regression replay in
//! tests/format/fuzz_regressions.rs shares).
#![no_main]

#[path = "../../tests/support/bitable_fuzz.rs"]
mod bitable_fuzz;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bitable_fuzz::run(data));
