//! Shared by weft-mpi's integration tests: installs the library, header and wrappers under a
//! fresh prefix. `cargo test` builds the crate as an rlib only, so the shared library (and
//! the `weft` binary `mpiexec` runs) are built here first, into the same target directory.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cargo profile directory of this test binary (`<target>/<profile>`).
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// `cargo build` of `packages` into this test's target directory and profile.
pub fn cargo_build(packages: &[&str]) {
    let profile = profile_dir();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.arg("build").arg("-q");
    for p in packages {
        cmd.args(["-p", p]);
    }
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let st = cmd
        .env("CARGO_TARGET_DIR", profile.parent().unwrap())
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .status()
        .unwrap();
    assert!(st.success(), "cargo build {packages:?} failed");
}

/// Builds the shared library and the weft binary, then runs install.sh into a new prefix
/// named after `tag` and this process.
pub fn install(tag: &str) -> PathBuf {
    cargo_build(&["weft-mpi", "weft-cli"]);
    let profile = profile_dir();
    let p = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{tag}-{}", std::process::id()));
    let st = Command::new("sh")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("install.sh"))
        .arg(&p)
        .arg(profile.parent().unwrap())
        .env("PROFILE", profile.file_name().unwrap())
        .status()
        .unwrap();
    assert!(st.success(), "install.sh failed");
    p
}
