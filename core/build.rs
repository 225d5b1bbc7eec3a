//! The cfg `native_fs`: the target has a file system the core opens
//! directly (Unix or Windows), as opposed to WebAssembly, where every
//! byte comes through the host.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(native_fs)");
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    if family.split(',').any(|f| f == "unix" || f == "windows") {
        println!("cargo::rustc-cfg=native_fs");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
