//! Builds `itest/c/typelarge.c` and `itest/c/large_c_forms.c` (they see only `mpi.h`) with
//! our `mpicc` from an `install.sh` prefix and runs them as jobs:
//! - typelarge at 1 and 2 ranks: the MPI-4 large-count datatype constructors build the same
//!   types as their `int` forms, take counts above 2^31, decode through
//!   MPI_Type_get_envelope_c/get_contents_c, and refuse bad arguments with the right class;
//! - large_c_forms at 1, 2, 3, 4 and 7 ranks: the `_c` forms weft runs through their `int`
//!   forms' work deliver every byte right, refuse a count above 2^31 - 1 with MPI_ERR_COUNT
//!   and bad arguments with the `int` form's class; and under MPI_ERRORS_ARE_FATAL the
//!   message of an error raised inside that work names the `_c` function the program called,
//!   never its `int` form; both again under MPI_THREAD_MULTIPLE.
//!
//! No job may leave a `/dev/shm/weft-*` segment behind (checked by `common::run_c`).

mod common;

fn prefix() -> &'static std::path::Path {
    common::shared_prefix("mpi-prefix-large")
}

#[test]
fn large_count_datatype_constructors() {
    common::run_c_ok(prefix(), "typelarge", 1..=2, &[]);
}

/// Runs large_c_forms at 1, 2, 3, 4 and 7 ranks with `env`: every job exits 0 and prints
/// rank 0's one line only.
fn forms_ok(env: &[(&str, &str)]) {
    let prog = common::build_c(prefix(), "large_c_forms");
    for n in [1, 2, 3, 4, 7] {
        let out = common::run_c(&prog, n, env);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.exit_code,
            0,
            "large_c_forms at {n} ranks:\nstdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            stdout.lines().collect::<Vec<_>>(),
            [format!("large_c_forms: {n} ranks ok")],
            "at {n} ranks"
        );
    }
}

#[test]
fn large_count_forms_over_int_work() {
    forms_ok(&[]);
}

/// The same under MPI_THREAD_MULTIPLE: the blocking `_c` forms run as their nonblocking
/// twins and a wait, every call takes the library's lock.
#[test]
fn large_count_forms_under_thread_multiple() {
    forms_ok(&[("LARGE_C_FORMS_INIT", "multiple")]);
}

/// An error raised inside the `int` form's work names the `_c` call the program made in
/// the fatal handler's message, and ends the job with the error's class; also under
/// MPI_THREAD_MULTIPLE, where the blocking calls' errors come from their twins' work.
#[test]
fn large_count_forms_errors_name_the_c_call() {
    let prog = common::build_c(prefix(), "large_c_forms");
    for (n, env) in [
        (1, None),
        (3, None),
        (3, Some(("LARGE_C_FORMS_INIT", "multiple"))),
    ] {
        let env: Vec<_> = env.into_iter().collect();
        for (case, call, class) in [
            ("bcast_init_root", "MPI_Bcast_init_c", 8),
            ("reduce_local_type", "MPI_Reduce_local_c", 3),
            ("neighbor_alltoall_topo", "MPI_Neighbor_alltoall_c", 11),
            ("alltoallw_type", "MPI_Alltoallw_c", 3),
            ("ssend_init_rank", "MPI_Ssend_init_c", 6),
        ] {
            let out = common::run_c_args(&prog, n, &[case], &env);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.exit_code, class, "{case} at {n} ranks {env:?}:\n{err}");
            assert!(
                err.lines().any(|l| l.contains(&format!("{call} on rank "))),
                "{case} at {n} ranks {env:?}:\n{err}"
            );
            let int_form = call.strip_suffix("_c").unwrap();
            assert!(
                !err.contains(&format!("{int_form} on rank ")),
                "{case} at {n} ranks {env:?} names {int_form}:\n{err}"
            );
            assert!(!String::from_utf8_lossy(&out.stdout).contains("UNREACHABLE"));
        }
    }
}
