//! The cfg `native_fs`: the target has a file system the core opens
//! directly (Unix or Windows), as opposed to WebAssembly, where every
//! byte comes through the host.
//!
//! It also makes the core, and so every crate of the workspace above it,
//! build again when `BALE_BUILD_KEY` changes: `make` shares cargo's build
//! folder between checkouts (Makefile, BALE_CACHE) and sets it to what
//! names their sources (the hash of a clean tree, else the checkout's
//! path), because cargo judges the project's own files by their times
//! alone, and a checkout must never take a build of other sources.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(native_fs)");
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    if family.split(',').any(|f| f == "unix" || f == "windows") {
        println!("cargo::rustc-cfg=native_fs");
    }
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=BALE_BUILD_KEY");
}
