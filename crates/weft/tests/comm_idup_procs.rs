//! A peer that dies during MPI_Comm_idup's agreement (`Comm::idup`): the test binary starts
//! three copies of itself as ranks of a job (ranks 0 and 2 on one node, rank 1 on another,
//! so the dead rank 2 is a shared-memory peer of rank 0 and a TCP peer of rank 1). Rank 2
//! exits without starting the duplication; the others start it and their wait returns a
//! PeerDead error naming rank 2 instead of hanging.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use weft::ErrorKind;

const CHILD: &str = "WEFT_TEST_IDUP_DEAD_CHILD";

fn child() {
    let weft = weft::init().unwrap();
    let w = weft.world();
    let me = w.rank();
    w.barrier().unwrap();
    println!("rank {me}: started");
    // Rank 2 vanishes only once the others are past the barrier (its last barrier message
    // could otherwise still sit in its queues when it exits).
    match me {
        0 | 1 => w.send(&[1u8], 2, 8).unwrap(),
        _ => {
            let mut go = [0u8; 1];
            w.recv(&mut go, 0, 8).unwrap();
            w.recv(&mut go, 1, 8).unwrap();
            std::process::exit(3);
        }
    }
    let mut req = w.idup().unwrap();
    let e = req.wait().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
    assert!(e.message().contains("rank 2"), "{e}");
    println!("rank {me}: dead peer reported: {e}");
    // The request is finished: asking again is an error, not a hang.
    assert_eq!(req.test().unwrap_err().kind(), ErrorKind::InvalidRequest);
    std::process::exit(0);
}

#[test]
fn a_peer_that_dies_fails_the_idup() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let job = format!("idupdead{}", std::process::id());
    let outputs = run_ranks("a_peer_that_dies_fails_the_idup", CHILD, &job, &[0, 1, 0]);
    for (rank, (status, text, err)) in outputs.iter().enumerate() {
        assert!(
            text.contains("started"),
            "rank {rank} ({status}): {text}{err}"
        );
        if rank == 2 {
            assert_eq!(status.code(), Some(3), "rank {rank}: {text}{err}");
        } else {
            assert!(status.success(), "rank {rank} failed: {text}{err}");
            assert!(
                text.contains("dead peer reported"),
                "rank {rank}: {text}{err}"
            );
        }
    }
}

/// Starts this test binary as the ranks of a job (rank r on node `nodes[r]`) with a real
/// bootstrap store and job secret, running `test` with `child_var` set; waits up to 60 s for
/// each and returns (status, stdout, stderr) per rank; checks no segment of `job` is left.
fn run_ranks(
    test: &str,
    child_var: &str,
    job: &str,
    nodes: &[u32],
) -> Vec<(std::process::ExitStatus, String, String)> {
    let secret = b"tcp-procs-test-secret";
    let server = weft_boot::TcpStoreServer::bind("127.0.0.1:0", secret).unwrap();
    let exe = std::env::current_exe().unwrap();
    let np = nodes.len();
    let children: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(rank, node)| {
            Command::new(&exe)
                .args(["--exact", test, "--nocapture"])
                .env(child_var, "1")
                .env("WEFT_BOOT_ADDR", server.local_addr().to_string())
                .env("WEFT_JOB_SECRET", weft_boot::auth::encode_hex(secret))
                .env("WEFT_RANK", rank.to_string())
                .env("WEFT_SIZE", np.to_string())
                .env("WEFT_JOB_ID", job)
                .env("WEFT_NODE_ID", format!("node{node}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut outputs = Vec::new();
    let mut children: Vec<Option<std::process::Child>> = children.into_iter().map(Some).collect();
    for rank in 0..children.len() {
        let mut c = children[rank].take().expect("each child once");
        loop {
            if let Some(status) = c.try_wait().unwrap() {
                let out = c.wait_with_output().unwrap();
                outputs.push((
                    status,
                    String::from_utf8_lossy(&out.stdout).into_owned(),
                    String::from_utf8_lossy(&out.stderr).into_owned(),
                ));
                break;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                // The ranks not looked at yet go too: none may outlive the test.
                for other in children.iter_mut().flatten() {
                    let _ = other.kill();
                    let _ = other.wait();
                }
                let out = c.wait_with_output().unwrap();
                panic!(
                    "rank {rank} did not finish in 60 s: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let leftover: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(job))
        .collect();
    assert!(leftover.is_empty(), "segments left behind: {leftover:?}");
    outputs
}
