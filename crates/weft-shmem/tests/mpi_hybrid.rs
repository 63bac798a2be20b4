//! MPI and OpenSHMEM in one process (OpenSHMEM 1.5 Annex D): libmpi_abi (weft-mpi) and
//! libshmem each start their own weft instance, in either order; PE numbers are MPI ranks,
//! and both finalize in either order. Includes the specification's two interoperability
//! examples.

mod common;

use common::*;
use std::path::PathBuf;
use std::process::Command;

/// `cargo test` builds weft-mpi as an rlib only: builds its shared library into this test's
/// target directory and profile, and returns a directory where it is found under its
/// soname too (`libmpi_abi.so.1`, as install.sh links it).
fn build_libmpi() -> PathBuf {
    let profile = lib_dir();
    let profile = if profile.file_name().is_some_and(|n| n == "deps") {
        profile.parent().unwrap().to_path_buf()
    } else {
        profile
    };
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q", "-p", "weft-mpi"]);
    // The same transports as this test's build (a forced UCX lane needs them in libmpi too;
    // a build without them would also replace the one the other suites use).
    if cfg!(feature = "ucx") {
        cmd.args(["--features", "weft/ucx"]);
    }
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let st = cmd
        .env("CARGO_TARGET_DIR", profile.parent().unwrap())
        .current_dir(crate_dir().join("../.."))
        .status()
        .unwrap();
    assert!(st.success(), "cargo build -p weft-mpi failed");
    let lib = profile.join("libmpi_abi.so");
    assert!(lib.exists());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "weft-shmem-mpi-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["libmpi_abi.so", "libmpi_abi.so.1"] {
        std::os::unix::fs::symlink(&lib, dir.join(name)).unwrap();
    }
    dir
}

fn compile_hybrid(name: &str, source: &str, mpi: &std::path::Path) -> PathBuf {
    let include = format!("-I{}", crate_dir().join("../weft-mpi/include").display());
    let libdir = format!("-L{}", mpi.display());
    let rpath = format!("-Wl,-rpath,{}", mpi.display());
    compile_sources(
        name,
        &[source],
        &[
            "-std=c11",
            "-Wall",
            "-O2",
            &include,
            &libdir,
            &rpath,
            "-lmpi_abi",
        ],
    )
}

#[test]
fn mpi_and_shmem_in_either_order_at_1_2_4_processes() {
    let mpi = build_libmpi();
    let exe = compile_hybrid("mpi_hybrid", "tests/c/mpi_hybrid.c", &mpi);
    for (first, finalize_first) in [
        ("mpi", "shmem"),
        ("shmem", "mpi"),
        ("mpi", "mpi"),
        ("shmem", "shmem"),
    ] {
        for n in [1, 2, 4] {
            let out = job(&exe, n, &[first, finalize_first], &[]);
            assert_eq!(
                out.exit_code,
                0,
                "{first} first, {n} processes: {}",
                describe(&out)
            );
            let lines = rank_lines(&out);
            assert_eq!(
                lines.iter().filter(|(_, l)| l == "hybrid ok").count(),
                n as usize,
                "{}",
                describe(&out)
            );
        }
    }
    let _ = std::fs::remove_file(exe);
    let _ = std::fs::remove_dir_all(mpi);
}

#[test]
fn specification_interoperability_examples() {
    let mpi = build_libmpi();
    let exe = compile_hybrid("hybrid_id", "tests/spec/hybrid_mpi_mapping_id.c", &mpi);
    for n in [2, 4] {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let want: Vec<(u32, String)> = (0..n)
            .map(|i| (0, format!("PE {i}'s MPI rank is {i}")))
            .collect();
        assert_eq!(rank_lines(&out), want, "{}", describe(&out));
    }
    let _ = std::fs::remove_file(exe);
    let exe = compile_hybrid(
        "hybrid_comm",
        "tests/spec/hybrid_mpi_mapping_id_shmem_comm.c",
        &mpi,
    );
    for n in [2, 4] {
        let out = job(&exe, n, &[], &[]);
        assert_eq!(out.exit_code, 0, "{}", describe(&out));
        let mut lines = rank_lines(&out);
        lines.sort();
        let want: Vec<(u32, String)> = (0..n)
            .map(|i| (i, format!("PE {i}'s MPI rank is {i}")))
            .collect();
        assert_eq!(lines, want, "{}", describe(&out));
    }
    let _ = std::fs::remove_file(exe);
    let _ = std::fs::remove_dir_all(mpi);
}
