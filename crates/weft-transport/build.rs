//! With the `ucx` feature: checks that the UCX structures weft declares (`src/ucx/ffi.rs`)
//! have the layout of the installed `ucp.h` (Debian's libucx-dev), by compiling a file of
//! static assertions with the C compiler (`$CC`, else `cc`). Nothing is linked: libucp is
//! loaded at run time. Without the feature this does nothing.

#![allow(
    clippy::disallowed_methods,
    reason = "a build script's inputs are the variables cargo sets"
)]

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/ucx/layout_check.c");
    if std::env::var_os("CARGO_FEATURE_UCX").is_none() {
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args([
            "-fsyntax-only",
            "-Wall",
            "-Werror",
            "src/ucx/layout_check.c",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "the ucx feature needs UCX's headers (apt-get install libucx-dev) with the layout weft declares in src/ucx/ffi.rs; {cc} said:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!("the ucx feature checks UCX's headers with a C compiler ({cc}): {e}"),
    }
}
