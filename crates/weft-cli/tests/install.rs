//! `weft install --prefix P`: a prefix with everything an MPI or OpenSHMEM user expects,
//! still working once moved (programs compiled with its mpicc, mpif77 and oshcc run with its
//! mpiexec and oshrun; pkg-config finds it), and a clear error from a binary with no
//! libraries beside it. The ignored test adds CMake's `find_package(MPI)` inside the
//! prefix's modulefile environment (needs cmake and environment-modules; CI runs it:
//! `cargo test -p weft-cli --test install -- --include-ignored`).

use std::path::{Path, PathBuf};
use std::process::Command;

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds the libraries `weft install` copies into this test's target directory (a plain
/// `cargo test` builds only rlibs).
fn build_libraries() {
    let exe = Path::new(WEFT);
    let profile = exe.parent().unwrap();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args([
        "build",
        "-q",
        "-p",
        "weft-mpi",
        "-p",
        "weft-shmem",
        "-p",
        "weft-cli",
    ]);
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let st = cmd
        .env("CARGO_TARGET_DIR", profile.parent().unwrap())
        .current_dir(repo())
        .status()
        .unwrap();
    assert!(st.success(), "cargo build of the libraries failed");
}

/// A fresh directory for this test process.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn check(out: std::process::Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what}: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Installs into `<dir>/p1`, then moves it to `<dir>/p2`; returns the moved prefix.
fn installed_then_moved(dir: &Path) -> PathBuf {
    build_libraries();
    let p1 = dir.join("p1");
    check(
        Command::new(WEFT)
            .args(["install", "--prefix"])
            .arg(&p1)
            .output()
            .unwrap(),
        "weft install",
    );
    for f in [
        "bin/weft",
        "bin/mpicc",
        "bin/mpicxx",
        "bin/mpiexec",
        "bin/mpirun",
        "bin/oshcc",
        "bin/oshrun",
        "bin/mpifort",
        "bin/mpif90",
        "bin/mpif77",
        "lib/libmpifort_abi.so",
        "include/mpif.h",
        "include/mpi.mod",
        "include/mpi_f08.mod",
        "lib/libmpi_abi.so.1",
        "lib/libmpi_abi.so",
        "lib/libmpi.so",
        "lib/libshmem.so",
        "include/mpi.h",
        "include/shmem.h",
        "include/weft/sync.h",
        "lib/pkgconfig/mpi.pc",
        "lib/pkgconfig/shmem.pc",
        "share/modulefiles/weft",
    ] {
        assert!(p1.join(f).exists(), "{f} missing from the prefix");
    }
    // Nothing written names the prefix: it can move.
    for f in [
        "bin/mpicc",
        "bin/mpiexec",
        "bin/mpifort",
        "bin/oshcc",
        "bin/oshrun",
        "lib/pkgconfig/mpi.pc",
        "share/modulefiles/weft",
    ] {
        let text = std::fs::read_to_string(p1.join(f)).unwrap();
        assert!(
            !text.contains(p1.to_str().unwrap()),
            "{f} holds the prefix's path"
        );
    }
    let p2 = dir.join("p2");
    std::fs::rename(&p1, &p2).unwrap();
    p2
}

#[test]
fn an_installed_prefix_compiles_and_runs_mpi_and_shmem_programs_after_a_move() {
    let dir = scratch("install");
    let p = installed_then_moved(&dir);
    let hello = dir.join("hello");
    check(
        Command::new(p.join("bin/mpicc"))
            .arg(repo().join("itest/c/findmpi/hello.c"))
            .arg("-o")
            .arg(&hello)
            .output()
            .unwrap(),
        "mpicc",
    );
    let out = check(
        Command::new(p.join("bin/mpiexec"))
            .args(["-n", "3"])
            .arg(&hello)
            .output()
            .unwrap(),
        "mpiexec -n 3 hello",
    );
    assert!(out.contains("hello from 3 ranks, sum 3"), "{out}");
    // A Fortran program through the moved prefix's mpif77 (mpif.h, libmpifort_abi).
    let ring = dir.join("ring");
    check(
        Command::new(p.join("bin/mpif77"))
            .arg(repo().join("itest/fortran/ring.f"))
            .arg("-o")
            .arg(&ring)
            .output()
            .unwrap(),
        "mpif77",
    );
    let out = check(
        Command::new(p.join("bin/mpiexec"))
            .args(["-n", "3"])
            .arg(&ring)
            .output()
            .unwrap(),
        "mpiexec -n 3 ring",
    );
    assert!(out.contains("ring: ok at 3 ranks"), "{out}");
    let rma = dir.join("rma");
    check(
        Command::new(p.join("bin/oshcc"))
            .arg(repo().join("crates/weft-shmem/tests/c/rma.c"))
            .arg("-o")
            .arg(&rma)
            .output()
            .unwrap(),
        "oshcc",
    );
    let out = check(
        Command::new(p.join("bin/oshrun"))
            .args(["-n", "2"])
            .arg(&rma)
            .output()
            .unwrap(),
        "oshrun -n 2 rma",
    );
    assert_eq!(out.matches("rma ok").count(), 2, "{out}");
    let pc = check(
        Command::new("pkg-config")
            .args(["--cflags", "--libs", "mpi", "shmem"])
            .env("PKG_CONFIG_PATH", p.join("lib/pkgconfig"))
            .output()
            .expect("pkg-config (apt-get install pkg-config)"),
        "pkg-config",
    );
    assert!(
        pc.contains(&format!("-I{}/lib/pkgconfig/../../include", p.display())),
        "{pc}"
    );
    assert!(pc.contains("-lmpi_abi") && pc.contains("-lshmem"), "{pc}");
    // Installing again over the prefix (from its own weft) works too.
    check(
        Command::new(p.join("bin/weft"))
            .args(["install", "--prefix"])
            .arg(&p)
            .output()
            .unwrap(),
        "reinstall from the prefix",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_weft_without_libraries_beside_it_says_how_to_build_them() {
    let dir = scratch("install-bare");
    let lone = dir.join("weft");
    std::fs::copy(WEFT, &lone).unwrap();
    let out = Command::new(&lone)
        .args(["install", "--prefix"])
        .arg(dir.join("p"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("libmpi_abi.so and libshmem.so not found"),
        "{err}"
    );
    assert!(
        err.contains("cargo build --release -p weft-cli -p weft-mpi -p weft-shmem"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs cmake and environment-modules (scripts/ci-launchers.sh)"]
fn cmake_find_package_mpi_finds_a_moved_prefix_through_its_modulefile() {
    let init = Path::new("/usr/share/modules/init/bash");
    assert!(
        init.exists(),
        "environment-modules is not installed (apt-get install environment-modules)"
    );
    let dir = scratch("install-cmake");
    let p = installed_then_moved(&dir);
    let build = dir.join("build");
    // No hint: FindMPI finds mpicc on the PATH the module set.
    let script = format!(
        ". {init}\nmodule use {mods}\nmodule load weft\n\
         test \"$(command -v mpicc)\" = {p}/bin/mpicc || {{ echo \"mpicc is $(command -v mpicc)\"; exit 1; }}\n\
         test \"$MPI_HOME\" = {p} || {{ echo \"MPI_HOME=$MPI_HOME\"; exit 1; }}\n\
         cmake -S {src} -B {build} && cmake --build {build} && mpiexec -n 3 {build}/hello\n",
        init = init.display(),
        mods = p.join("share/modulefiles").display(),
        p = p.display(),
        src = repo().join("itest/c/findmpi").display(),
        build = build.display(),
    );
    let out = check(
        Command::new("bash").args(["-c", &script]).output().unwrap(),
        "module load weft; cmake; mpiexec",
    );
    assert!(
        out.contains("Found MPI_C:") && out.contains("found version \"5.0\""),
        "{out}"
    );
    assert!(
        out.contains(&format!("{}/lib/libmpi_abi.so", p.display())),
        "{out}"
    );
    assert!(out.contains("hello from 3 ranks, sum 3"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
