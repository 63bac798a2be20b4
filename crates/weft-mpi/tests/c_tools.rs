//! C programs of `itest/c/` for the MPI tool information interface (mpit.c) and MPI sessions
//! (session.c), built with our `mpicc` from an `install.sh` prefix and run as jobs of 1 to 4
//! ranks; each program checks its own results and error codes and exits non-zero on the first
//! wrong one. No job may leave a `/dev/shm/weft-*` segment behind.

mod common;

/// Runs `itest/c/<name>.c` at 1 to 4 ranks with `env` added; every job must exit 0.
fn run_ok(name: &str, env: &[(&str, &str)]) {
    common::run_c_ok(common::shared_prefix("mpi-tools-prefix"), name, 1..=4, env);
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
/// anything starts; the session's info (the thread level it got, MULTIPLE as asked, and the
/// keys it was given); the process sets mpi://WORLD and mpi://SELF (also in lower case) with their names, sizes and groups; communicators from those groups; errors
/// (unknown process set, bad index, bad error handler, bad or null session) with their classes
/// through the session's handler or MPI_COMM_SELF's; MPI_Init after a session and
/// MPI_Finalize before its end with the session's communicator still working; a second
/// session after everything ended; info objects after the end.
#[test]
fn sessions() {
    run_ok("session", &[]);
}
