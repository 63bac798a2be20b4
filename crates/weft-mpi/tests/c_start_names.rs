//! Builds `itest/c/start_names.c` and runs it at 1 and 3 ranks: an error raised by the work
//! that starts a nonblocking or persistent collective belongs to the call the program made
//! (MPI_Bcast_init, MPI_Gatherv_init, MPI_Reduce_scatter_init, MPI_Alltoallw_init and their
//! starts, MPI_Ibcast_c, MPI_Igather_c, MPI_Iallgather_c, MPI_Igatherv), never to the
//! nonblocking call whose work weft shares with it:
//! - with MPI_ERRORS_RETURN every bad call returns its class, from the call itself or, for a
//!   persistent init that accepts its arguments, from MPI_Start / MPI_Startall;
//! - under MPI_ERRORS_ARE_FATAL the fatal message names that call and the job ends with the
//!   class;
//! - made after MPI_Finalize, the message names the call made as the one that came too late.

mod common;

/// Every case: the call the program makes, the class of its error, and the start that
/// reports it when the init accepts its arguments (MPI-4.1 §3.9).
const CASES: [(&str, i32, Option<&str>); 8] = [
    ("MPI_Bcast_init", 8, Some("MPI_Start")),
    ("MPI_Gatherv_init", 8, Some("MPI_Start")),
    ("MPI_Reduce_scatter_init", 2, Some("MPI_Startall")),
    ("MPI_Alltoallw_init", 2, Some("MPI_Start")),
    ("MPI_Ibcast_c", 8, None),
    ("MPI_Igather_c", 8, None),
    ("MPI_Iallgather_c", 3, None),
    ("MPI_Igatherv", 8, None),
];

/// MPI_ERR_OTHER, the class of a call made after MPI_Finalize.
const ERR_OTHER: i32 = 16;

fn prog() -> std::path::PathBuf {
    common::build_c(
        common::shared_prefix("mpi-prefix-start-names"),
        "start_names",
    )
}

/// The names `X` of every "X on rank " in `text` (the fatal handler's lines).
fn named_calls(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(" on rank ") {
        let before = &rest[..at];
        let start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        names.push(&before[start..]);
        rest = &rest[at + " on rank ".len()..];
    }
    names
}

#[test]
fn errors_return_their_class_from_the_call_made() {
    let prog = prog();
    for n in [1, 3] {
        let out = common::run_c(&prog, n, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.exit_code,
            0,
            "start_names at {n} ranks:\nstdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            stdout.lines().collect::<Vec<_>>(),
            [format!("start_names: {n} ranks ok")],
            "at {n} ranks"
        );
    }
}

#[test]
fn fatal_handler_names_the_call_made_or_its_start() {
    let prog = prog();
    for n in [1, 3] {
        for (call, class, start) in CASES {
            let out = common::run_c_args(&prog, n, &["fatal", call], &[]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.exit_code, class, "{call} at {n} ranks:\n{err}");
            let names = named_calls(&err);
            assert!(!names.is_empty(), "{call} at {n} ranks:\n{err}");
            assert!(
                names.iter().all(|&x| x == call || Some(x) == start),
                "{call} at {n} ranks names {names:?}:\n{err}"
            );
            assert!(!String::from_utf8_lossy(&out.stdout).contains("UNREACHABLE"));
        }
    }
}

#[test]
fn a_call_after_finalize_is_named_as_made() {
    let prog = prog();
    for n in [1, 3] {
        for (call, _, _) in CASES {
            let out = common::run_c_args(&prog, n, &["finalized", call], &[]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.exit_code, ERR_OTHER, "{call} at {n} ranks:\n{err}");
            let late = format!("{call} called before MPI_Init or after MPI_Finalize");
            let lines: Vec<&str> = err
                .lines()
                .filter(|l| l.contains(" called before MPI_Init or after MPI_Finalize"))
                .collect();
            assert!(
                !lines.is_empty() && lines.iter().all(|l| l.contains(&late)),
                "{call} at {n} ranks, want \"{late}\":\n{err}"
            );
            assert!(
                named_calls(&err).iter().all(|&x| x == call),
                "{call} at {n} ranks:\n{err}"
            );
            assert!(!String::from_utf8_lossy(&out.stdout).contains("UNREACHABLE"));
        }
    }
}
