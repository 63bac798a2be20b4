//! CMake's FindMPI locates weft's MPI through the `mpicc` wrapper (`-show`) and builds
//! `itest/c/findmpi/` against it; the program then runs under our `mpiexec`. Needs cmake,
//! so it is ignored by default (CI runs it: `scripts/ci-mpi-extras.sh` installs cmake):
//! `cargo test -p weft-mpi --test findmpi -- --include-ignored` (`CMAKE` names the cmake
//! binary; default `cmake` on PATH). Without cmake it fails, saying so; it never skips.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
#[ignore = "needs cmake (apt-get install cmake; scripts/ci-mpi-extras.sh)"]
fn cmake_findmpi_builds_and_runs() {
    let cmake = std::env::var_os("CMAKE")
        .map(PathBuf::from)
        .unwrap_or_else(|| "cmake".into());
    let version = Command::new(&cmake).arg("--version").output();
    assert!(
        version.as_ref().is_ok_and(|v| v.status.success()),
        "cannot run {} --version ({:?}): install cmake (apt-get install cmake) or set CMAKE",
        cmake.display(),
        version.map(|v| v.status)
    );
    let tmp =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("findmpi-{}", std::process::id()));
    let prefix = common::install("findmpi-prefix");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../itest/c/findmpi");
    let build = tmp.join("build");
    let conf = Command::new(&cmake)
        .arg("-S")
        .arg(&src)
        .arg("-B")
        .arg(&build)
        .arg(format!(
            "-DMPI_C_COMPILER={}",
            prefix.join("bin/mpicc").display()
        ))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&conf.stdout);
    assert!(
        conf.status.success(),
        "cmake configure:\n{log}\n{}",
        String::from_utf8_lossy(&conf.stderr)
    );
    assert!(
        log.contains("Found MPI_C:") && log.contains("found version \"5.0\""),
        "{log}"
    );
    let b = Command::new(&cmake)
        .arg("--build")
        .arg(&build)
        .output()
        .unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stdout));
    let weft = prefix.join("bin/weft");
    let run = Command::new(prefix.join("bin/mpiexec"))
        .args(["-n", "3"])
        .arg(build.join("hello"))
        .env("WEFT_BIN", &weft)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success() && out.contains("hello from 3 ranks, sum 3"),
        "{out}"
    );
}
