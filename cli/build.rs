//! With the `inspector` feature, embeds the browser inspector (the wasm
//! package's `www/` page and its built `pkg/` module) so that `bale
//! inspect` serves it from the binary alone. The files come from
//! `BALE_INSPECTOR_DIR` or `bindings/wasm` beside this crate; `make
//! wasm-pkg` builds `pkg/`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The module files the page imports, under `pkg/`.
const PKG_FILES: [&str; 2] = ["bale_wasm.js", "bale_wasm_bg.wasm"];

fn main() {
    println!("cargo:rerun-if-env-changed=BALE_INSPECTOR_DIR");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let mut code = String::from(
        "/// (URL path, bytes) of every file of the embedded inspector.\npub static ASSETS: &[(&str, &[u8])] = &[\n",
    );
    if std::env::var_os("CARGO_FEATURE_INSPECTOR").is_some() {
        let dir = std::env::var_os("BALE_INSPECTOR_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../bindings/wasm"));
        let dir = dir.canonicalize().unwrap_or_else(|e| panic!("the inspector's folder {}: {e}", dir.display()));
        let mut files = Vec::new();
        let www = dir.join("www");
        println!("cargo:rerun-if-changed={}", www.display());
        for e in std::fs::read_dir(&www).unwrap_or_else(|e| panic!("{}: {e}", www.display())) {
            let p = e.expect("a www entry").path();
            if p.is_file() {
                let name = p.file_name().and_then(|n| n.to_str()).expect("a UTF-8 file name").to_string();
                files.push((format!("/www/{name}"), p));
            }
        }
        for name in PKG_FILES {
            let p = dir.join("pkg").join(name);
            assert!(p.is_file(), "{} is missing: build the wasm package first (make wasm-pkg)", p.display());
            files.push((format!("/pkg/{name}"), p));
        }
        files.sort();
        for (url, p) in files {
            println!("cargo:rerun-if-changed={}", p.display());
            writeln!(code, "    ({url:?}, include_bytes!({:?})),", p.display().to_string()).expect("write to a String");
        }
    }
    code.push_str("];\n");
    std::fs::write(out.join("inspector_assets.rs"), code).expect("write inspector_assets.rs");
}
