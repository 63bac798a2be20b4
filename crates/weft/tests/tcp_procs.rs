//! TCP across real processes: the test binary starts four copies of itself as ranks of a job
//! with a real bootstrap store and job secret, claiming two nodes of two ranks
//! (`WEFT_NODE_ID`), so ranks of a node talk over shared memory and across nodes over TCP
//! with the job secret as the handshake key. Point-to-point and collectives are checked, then
//! rank 3 exits: rank 0 (other node, TCP) and rank 2 (its node) report it dead. Each rank
//! also checks that init took the job secret out of its environment.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use weft::coll::Op;
use weft::ErrorKind;

const CHILD: &str = "WEFT_TEST_TCP_CHILD";
const NP: u32 = 4;

fn child() {
    assert!(std::env::var_os("WEFT_JOB_SECRET").is_some());
    let weft = weft::init().unwrap();
    // Read by init, then gone: a program this rank starts does not inherit it.
    assert!(std::env::var_os("WEFT_JOB_SECRET").is_none());
    let inherited = Command::new("sh")
        .args(["-c", "echo ${WEFT_JOB_SECRET-none}"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&inherited.stdout).trim(), "none");
    let w = weft.world();
    let me = w.rank() as u32;
    // A ring of 1 MiB + 5 bytes (rendezvous over TCP between ranks 1-2 and 3-0).
    let len = (1 << 20) + 5;
    let send: Vec<u8> = (0..len).map(|i| (i * 7 + me as usize) as u8).collect();
    let mut recv = vec![0u8; len];
    let prev = (me + NP - 1) % NP;
    w.sendrecv(&send, (me + 1) % NP, 1, &mut recv, prev as i32, 1)
        .unwrap();
    assert!(recv
        .iter()
        .enumerate()
        .all(|(i, &b)| b == (i * 7 + prev as usize) as u8));
    let mut out = [0u64; 3];
    w.allreduce(&[me as u64, 1, 2], &mut out, &Op::Sum).unwrap();
    assert_eq!(out, [6, 4, 8]);
    w.barrier().unwrap();
    println!("rank {me}: traffic checked");
    // Rank 3 vanishes only once ranks 0 and 2 are past the barrier: its last barrier message
    // could otherwise still sit in its queues when it exits without finalizing (flaky).
    match me {
        0 | 2 => w.send(&[1u8], 3, 8).unwrap(),
        3 => {
            let mut go = [0u8; 1];
            w.recv(&mut go, 0, 8).unwrap();
            w.recv(&mut go, 2, 8).unwrap();
        }
        _ => {}
    }
    match me {
        3 => std::process::exit(3),
        0 | 2 => {
            let mut b = [0u8; 1];
            let e = w.recv(&mut b, 3, 7).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
            assert!(e.message().contains("rank 3"), "{e}");
            println!("rank {me}: dead peer reported: {e}");
        }
        _ => {}
    }
    std::process::exit(0);
}

#[test]
fn tcp_between_processes_on_two_nodes_and_a_dead_peer() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let secret = b"tcp-procs-test-secret";
    let server = weft_boot::TcpStoreServer::bind("127.0.0.1:0", secret).unwrap();
    let exe = std::env::current_exe().unwrap();
    let job = format!("tcpp{}", std::process::id());
    let children: Vec<_> = (0..NP)
        .map(|rank| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "tcp_between_processes_on_two_nodes_and_a_dead_peer",
                    "--nocapture",
                ])
                .env(CHILD, "1")
                .env("WEFT_BOOT_ADDR", server.local_addr().to_string())
                .env("WEFT_JOB_SECRET", weft_boot::auth::encode_hex(secret))
                .env("WEFT_RANK", rank.to_string())
                .env("WEFT_SIZE", NP.to_string())
                .env("WEFT_JOB_ID", &job)
                .env("WEFT_NODE_ID", format!("node{}", rank / 2))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    for (rank, mut c) in children.into_iter().enumerate() {
        loop {
            if let Some(status) = c.try_wait().unwrap() {
                let out = c.wait_with_output().unwrap();
                let text = String::from_utf8_lossy(&out.stdout);
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(
                    text.contains("traffic checked"),
                    "rank {rank} ({status}): {text}{err}"
                );
                if rank == 3 {
                    assert_eq!(status.code(), Some(3), "rank {rank}: {text}{err}");
                } else {
                    assert!(status.success(), "rank {rank} failed: {text}{err}");
                }
                if rank == 0 || rank == 2 {
                    assert!(
                        text.contains("dead peer reported"),
                        "rank {rank}: {text}{err}"
                    );
                }
                break;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let out = c.wait_with_output().unwrap();
                panic!(
                    "rank {rank} did not finish in 30 s: {}{}",
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
        .filter(|e| e.file_name().to_string_lossy().contains(&job))
        .collect();
    assert!(leftover.is_empty(), "segments left behind: {leftover:?}");
}
