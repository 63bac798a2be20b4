//! MPI-IO (MPI-4.1 chapter 14) with real jobs: `itest/c/fileio.c` checks open modes and
//! their error classes, views with derived datatypes, explicit offsets, individual and
//! shared file pointers, blocking, nonblocking and split collective accesses, atomic mode
//! and the data representations byte for byte, at 1, 2, 3, 4 and 7 ranks; then again with
//! collective buffering forced on (with a collective buffer small enough that every
//! collective access takes several windows) and forced off, so that both the two-phase
//! path and the direct path are run whatever the automatic choice would be.

mod common;

fn prefix() -> &'static std::path::Path {
    common::shared_prefix("io-prefix")
}

fn run(ranks: &[u32], env: &[(&str, &str)]) {
    let prog = common::build_c(prefix(), "fileio");
    for &n in ranks {
        let out = common::run_c(&prog, n, env);
        assert_eq!(
            out.exit_code,
            0,
            "fileio at {n} ranks with {env:?}:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn file_io_at_1_2_3_4_and_7_ranks() {
    run(&[1, 2, 3, 4, 7], &[]);
}

#[test]
fn file_io_through_aggregators_in_small_windows() {
    run(
        &[2, 3, 7],
        &[
            ("WEFT_IO_CB", "enable"),
            ("WEFT_IO_CB_BUFFER_BYTES", "512"),
            ("WEFT_IO_AGGREGATORS_PER_NODE", "2"),
        ],
    );
}

#[test]
fn file_io_without_aggregation_or_sieving() {
    run(
        &[3, 4],
        &[("WEFT_IO_CB", "disable"), ("WEFT_IO_SIEVE_BYTES", "0")],
    );
}
