//! C programs of `itest/c/` for the MPI tool information interface (mpit.c) and MPI sessions
//! (session.c), built with our `mpicc` from an `install.sh` prefix and run as jobs of 1 to 4
//! ranks; each program checks its own results and error codes and exits non-zero on the first
//! wrong one. No job may leave a `/dev/shm/weft-*` segment behind.

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
    PREFIX.get_or_init(|| common::install("mpi-tools-prefix"))
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

/// Runs `itest/c/<name>.c` at 1 to 4 ranks with `env` added; every job must exit 0.
fn run_ok(name: &str, env: &[(&str, &str)]) {
    let prog = build(name);
    for n in 1..=4 {
        let mut spec = JobSpec::new(n, &prog);
        spec.output = OutputMode::Capture;
        spec.timeout = Some(Duration::from_secs(60));
        spec.env
            .extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let out = run_job(&spec).unwrap();
        let leftovers: Vec<_> = std::fs::read_dir("/dev/shm")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(&out.job_id))
            .collect();
        assert!(leftovers.is_empty(), "segments left behind: {leftovers:?}");
        assert_eq!(
            out.exit_code,
            0,
            "{name} at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// MPI_T (itest/c/mpit.c): every knob is a read-only cvar with its type and description,
/// named and indexed consistently, holding the value the job set (WEFT_SHM_EAGER_BYTES=8K,
/// WEFT_YIELD=on as enumeration item 1) or the default, before MPI_Init, while MPI runs and
/// after MPI_Finalize; writes get MPI_T_ERR_CVAR_SET_NEVER, bad indices, names, handles and
/// sessions their MPI_T_ERR_* codes, calls outside MPI_T_init_thread/finalize
/// MPI_T_ERR_NOT_INITIALIZED; categories partition the cvars; the pvar weft_idle_yields counts
/// the yields of rank 1 waiting 100 ms in a receive, resets, refuses start/stop/write, and is
/// not accessible outside MPI; no events or sources.
#[test]
fn tool_interface_control_variables() {
    run_ok(
        "mpit",
        &[("WEFT_SHM_EAGER_BYTES", "8K"), ("WEFT_YIELD", "on")],
    );
}

/// Sessions (itest/c/session.c): info objects and a session error handler made before
/// anything starts; the session's info (the thread level it got, SERIALIZED for a request of
/// MULTIPLE, and the keys it was given); the process sets mpi://WORLD and mpi://SELF (also in
/// lower case) with their names, sizes and groups; communicators from those groups; errors
/// (unknown process set, bad index, bad error handler, bad or null session) with their classes
/// through the session's handler or MPI_COMM_SELF's; MPI_Init after a session and
/// MPI_Finalize before its end with the session's communicator still working; a second
/// session after everything ended; info objects after the end.
#[test]
fn sessions() {
    run_ok("session", &[]);
}
