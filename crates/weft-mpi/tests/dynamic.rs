//! Process management's ports, names and joins (`itest/c/ports.c`): the halves of
//! MPI_COMM_WORLD meet on a published port (after two strangers the accept must drop),
//! trade point-to-point messages and collectives of 0, 7 and 1 MiB + 3 bytes over the
//! intercommunicator and its merge, and disconnect; two ranks join over their own socket;
//! unknown names, services and ports fail with MPI_ERR_NAME, MPI_ERR_SERVICE and
//! MPI_ERR_PORT. Jobs of 1, 2, 3, 4 and 7 ranks, on one node and on two simulated hosts
//! (ranks of both halves over TCP), and a process started without a launcher. Spawned
//! children (`itest/c/spawn.c`) talk to their parents and end with them; parents of two
//! spawns progress each of their instances from a wait in any other (`itest/c/spawn_two.c`).

use std::path::Path;

mod common;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

#[test]
fn halves_of_a_job_accept_and_connect_through_a_published_port() {
    let prog = common::build_c(prefix(), "ports");
    for n in [1, 2, 3, 4, 7] {
        let out = common::run_c(&prog, n, &[]);
        assert_eq!(
            out.exit_code,
            0,
            "ports at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The same on two simulated hosts (`a:2,b:1`: the halves' leaders on different nodes),
/// ranks dealt in order, so the intercommunicator's traffic crosses TCP.
#[test]
fn ports_connect_groups_on_two_hosts() {
    let prog = common::build_c(prefix(), "ports");
    for hosts in ["a:1,b:1", "a:2,b:1", "a:2,b:2"] {
        let out = common::run_c_hosts(prefix(), &prog, hosts, &[]);
        assert_eq!(
            out.exit_code,
            0,
            "ports on {hosts}:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Started without a launcher (a singleton: no store, no job secret), the names are the
/// process's own and the port errors are the same.
#[test]
fn a_singleton_publishes_to_itself() {
    let prog = common::build_c(prefix(), "ports");
    let out = std::process::Command::new(&prog)
        .env("LD_LIBRARY_PATH", prefix().join("lib"))
        .env_remove("WEFT_BOOT_ADDR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ports alone: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `itest/c/ports_threads.c`: under MPI_THREAD_MULTIPLE a thread waiting in
/// MPI_Comm_accept, MPI_Comm_connect or MPI_Comm_join leaves the library to the process's other threads
/// (their point-to-point and collectives on another communicator complete while it waits,
/// the order forced by the program); a process connecting to its own port from a second
/// thread gets an error on both threads, not a hang. 1 to 4 ranks.
#[test]
fn accept_and_connect_wait_without_holding_the_lock() {
    let prog = common::build_c(prefix(), "ports_threads");
    for n in [1, 2, 3, 4] {
        let out = common::run_c(&prog, n, &[]);
        assert_eq!(
            out.exit_code,
            0,
            "ports_threads at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The processes running `prog` (by their command lines), other than this one.
fn processes_of(prog: &Path) -> Vec<String> {
    let needle = prog.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(&needle) {
            found.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
        }
    }
    found
}

/// The child job's id child rank 0 printed (`child job ID`), checked to leave nothing in
/// /dev/shm.
fn child_segments_left(stdout: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stdout);
    let ids: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("child job "))
        .collect();
    assert!(!ids.is_empty(), "no child printed its job id:\n{text}");
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| ids.iter().any(|id| n.contains(id)))
        .collect()
}

/// Asserts a spawning job ended well: exit code 0, `want` on its stdout, no process of
/// `prog` left and nothing of the child jobs in /dev/shm (`text`: the job's output, for
/// the messages).
fn assert_spawn_job_clean(out: &weft_launch::JobOutcome, prog: &Path, want: &str, text: &str) {
    assert_eq!(out.exit_code, 0, "{text}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(want),
        "{text}"
    );
    let left = processes_of(prog);
    assert!(left.is_empty(), "processes left: {left:?}\n{text}");
    let segs = child_segments_left(&out.stdout);
    assert!(segs.is_empty(), "segments left: {segs:?}\n{text}");
}

/// `itest/c/spawn.c`: 1, 2 and 3 parents (the root the last of them, the arguments
/// significant only there) spawn 1, 2 and 4 copies of the program: get_parent, the
/// children's world size, MPI_APPNUM, errcodes, point-to-point both ways, a broadcast and an
/// allreduce over the intercommunicator, its merge, disconnect; then a command that does
/// not exist fails with MPI_ERR_SPAWN and every errcode set. Afterwards no process of the
/// program is left and neither job (parents', children's, their universe's) left anything
/// in /dev/shm (run_c checks the parents' and the universe's, named after the parents').
#[test]
fn parents_spawn_children_and_talk_over_the_intercommunicator() {
    let prog = common::build_c(prefix(), "spawn");
    for parents in [1, 2, 3] {
        for children in [1, 2, 4] {
            let arg = format!("n={children}");
            let out = common::run_c_args(&prog, parents, &[&arg], &[]);
            let text = format!(
                "spawn of {children} by {parents}:\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let want = format!("spawn: {parents} parents, {children} children ok");
            assert_spawn_job_clean(&out, &prog, &want, &text);
        }
    }
}

/// A child job does not outlive its parents: the parents abort while the children wait in
/// a receive from them; the children end too (the time bound only catches a hang).
#[test]
fn spawned_children_end_with_their_parents() {
    let prog = common::build_c(prefix(), "spawn");
    for parents in [1, 2] {
        let out = common::run_c_args(&prog, parents, &["n=2", "orphan"], &[]);
        let text = format!(
            "orphan at {parents}:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.exit_code, 5, "{text}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !processes_of(&prog).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "children left: {:?}\n{text}",
                processes_of(&prog)
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let segs = child_segments_left(&out.stdout);
        assert!(segs.is_empty(), "segments left: {segs:?}\n{text}");
    }
}

/// `itest/c/spawn_multiple.c`: 1, 2 and 3 parents spawn two commands as one job (1 + 2 and
/// 2 + 1 processes, the second in another working directory): each child runs its
/// command with its arguments, MPI_APPNUM 0 or 1, a world of all of them; an allreduce and
/// a merge across the intercommunicator; nothing left afterwards.
#[test]
fn spawn_multiple_starts_commands_as_one_job() {
    let prog = common::build_c(prefix(), "spawn_multiple");
    for parents in [1, 2, 3] {
        for (a, b) in [(1, 2), (2, 1)] {
            let (na, nb) = (format!("n={a}"), format!("m={b}"));
            let out = common::run_c_args(&prog, parents, &[&na, &nb], &[]);
            let text = format!(
                "spawn_multiple of {a} + {b} by {parents}:\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(out.exit_code, 0, "{text}");
            let want = format!("spawn_multiple: {parents} parents, {a} + {b} children ok");
            assert!(
                String::from_utf8_lossy(&out.stdout).contains(&want),
                "{text}"
            );
            let left = processes_of(&prog);
            assert!(left.is_empty(), "processes left: {left:?}\n{text}");
        }
    }
}

/// `itest/c/spawn_two.c`: 1 and 2 parents spawn two jobs (2 and 1 children), so each parent
/// is in three weft instances. Parent 0 waits in a blocking receive in one instance (job B's
/// universe, job A's, the parents' world) for a token that is sent only after a synchronous
/// send of 1 MiB + 3 bytes to it in another instance has completed, which needs parent 0 to
/// progress that instance from inside its wait; files order the steps, so the test hangs
/// (caught by the job's time bound) unless every wait progresses every instance. Every
/// payload is checked. Then one job is disconnected and the other keeps working (1 MiB + 3
/// both ways, an allreduce). Both drop orders, with MPI_Init and with MPI_THREAD_MULTIPLE
/// (blocking calls poll their nonblocking twins); afterwards no process of the program is
/// left and no job left anything in /dev/shm.
#[test]
fn parents_of_two_spawns_progress_every_instance_from_any_wait() {
    let prog = common::build_c(prefix(), "spawn_two");
    for parents in [1, 2] {
        for (drop, multiple) in [("A", false), ("B", false), ("A", true), ("B", true)] {
            let drop_arg = format!("drop={drop}");
            let mut args = vec![drop_arg.as_str()];
            if multiple {
                args.push("multiple");
            }
            let out = common::run_c_args(&prog, parents, &args, &[]);
            let text = format!(
                "spawn_two by {parents} ({args:?}):\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let want = format!(
                "spawn_two: {parents} parents, drop {drop}{} ok",
                if multiple { ", multiple" } else { "" }
            );
            assert_spawn_job_clean(&out, &prog, &want, &text);
        }
    }
}
