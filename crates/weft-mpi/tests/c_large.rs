//! Builds `itest/c/typelarge.c` (it sees only `mpi.h`) with our `mpicc` from an `install.sh`
//! prefix and runs it at 1 and 2 ranks: the MPI-4 large-count datatype constructors build
//! the same types as their `int` forms, take counts above 2^31, decode through
//! MPI_Type_get_envelope_c/get_contents_c, and refuse bad arguments with the right class.
//! No job may leave a `/dev/shm/weft-*` segment behind.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use weft_launch::{run_job, JobSpec, OutputMode};

mod common;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Installs into a fresh prefix under the target's temp directory, once per test process.
fn prefix() -> &'static Path {
    static PREFIX: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| {
        let p = common::install("mpi-prefix-large");
        for f in [
            "lib/libmpi_abi.so.1",
            "lib/libmpi.so",
            "lib/libmpi_abi.so",
            "include/mpi.h",
            "include/mpi_proto.h",
            "bin/mpicc",
            "bin/mpicxx",
            "bin/mpiexec",
            "bin/mpirun",
            "bin/weft",
            "lib/pkgconfig/mpi.pc",
        ] {
            assert!(p.join(f).exists(), "{f} missing from the prefix");
        }
        p
    })
}

/// Compiles `itest/c/<name>.c` with our mpicc; returns the program.
fn build(name: &str) -> PathBuf {
    let out = prefix().join(format!("t-{name}"));
    let src = repo_root().join(format!("itest/c/{name}.c"));
    let o = Command::new(prefix().join("bin/mpicc"))
        .args(["-O1", "-Wall", "-Wextra", "-Werror"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "mpicc {name}.c failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn run(program: &Path, n: u32) -> weft_launch::JobOutcome {
    let mut spec = JobSpec::new(n, program);
    spec.output = OutputMode::Capture;
    spec.timeout = Some(Duration::from_secs(60));
    let out = run_job(&spec).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(&out.job_id))
        .collect();
    assert!(leftovers.is_empty(), "segments left behind: {leftovers:?}");
    out
}

fn run_ok(name: &str, ranks: std::ops::RangeInclusive<u32>) {
    let prog = build(name);
    for n in ranks {
        let out = run(&prog, n);
        assert_eq!(
            out.exit_code,
            0,
            "{name} at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn large_count_datatype_constructors() {
    run_ok("typelarge", 1..=2);
}
