//! The UCX lane between ranks of an in-process job whose ranks claim different nodes:
//! point-to-point at 2, 3 and 4 ranks over every size class, ANY_SOURCE across shared memory
//! and UCX, forced UCX inside a node, truncation, a peer that vanishes, a message without
//! the job's token refused while the job goes on, collectives across nodes; and, with or
//! without the `ucx` feature, a UCX library that does not load is a clear error naming it.

mod common;

use weft::ErrorKind;

/// The lane's own tests: they need a weft built with the `ucx` feature.
#[cfg(feature = "ucx")]
mod over_ucx {
    use super::common::run_job as job;
    use weft::{Comm, ErrorKind, Op, ANY_SOURCE};

    fn own_node(r: u32) -> u32 {
        r
    }

    fn pairs(r: u32) -> u32 {
        r / 2
    }

    fn pattern(len: usize, seed: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i.wrapping_mul(131) ^ seed) as u8)
            .collect()
    }

    /// Every rank sends every size to every other rank and checks what it gets.
    fn all_pairs(w: &Comm, sizes: &[usize]) {
        let (me, n) = (w.rank() as usize, w.size() as usize);
        for &len in sizes {
            let send: Vec<Vec<u8>> = (0..n)
                .map(|d| pattern(len, me * 31 + d * 7 + len))
                .collect();
            let mut recv: Vec<Vec<u8>> = (0..n).map(|_| vec![0u8; len]).collect();
            w.scope(|s| {
                let mut reqs = Vec::new();
                for (src, buf) in recv.iter_mut().enumerate() {
                    if src != me {
                        reqs.push(w.irecv(s, buf, src as i32, 5).unwrap());
                    }
                }
                for (dst, buf) in send.iter().enumerate() {
                    if dst != me {
                        reqs.push(w.isend(s, buf, dst as u32, 5).unwrap());
                    }
                }
                for st in s.wait_all(reqs).unwrap() {
                    assert!(!st.cancelled);
                }
            });
            for (src, got) in recv.iter().enumerate() {
                if src != me {
                    assert!(
                        *got == pattern(len, src * 31 + me * 7 + len),
                        "rank {me}: {len} bytes from {src} differ"
                    );
                }
            }
        }
    }

    /// 0, 1, odd, the UCX copy limit (8 KiB) and one more (sent from the sender's buffer),
    /// the UCX eager limit (64 KiB) ± 1, 4 MiB + 13.
    const SIZES: &[usize] = &[
        0,
        1,
        1001,
        8192,
        8193,
        65_535,
        65_536,
        65_537,
        (4 << 20) + 13,
    ];

    const SHM_UCX: &[(&str, &str)] = &[("WEFT_TRANSPORTS", "shm,ucx")];

    #[test]
    fn p2p_every_size_at_2_3_4_ranks_each_on_its_own_node() {
        for n in [2, 3, 4] {
            job(n, SHM_UCX, own_node, |_, weft, _| {
                assert_eq!(weft.network_transport(), Some("ucx"));
                all_pairs(&weft.world(), SIZES);
                weft.finalize().unwrap();
            });
        }
    }

    #[test]
    fn two_nodes_of_two_mix_shm_and_ucx_with_any_source() {
        job(4, SHM_UCX, pairs, |rank, weft, _| {
            let w = weft.world();
            all_pairs(&w, &[0, 7, 65537, 300_000]);
            // Rank 0 takes one message from each of the others in arrival order: rank 1 over
            // shared memory, ranks 2 and 3 over UCX.
            if rank == 0 {
                let mut seen = [false; 4];
                for _ in 0..3 {
                    let mut buf = [0u64; 2];
                    let st = w.recv(&mut buf, ANY_SOURCE, 9).unwrap();
                    assert_eq!(buf, [st.source as u64, 99]);
                    assert!(!seen[st.source as usize]);
                    seen[st.source as usize] = true;
                }
                assert_eq!(seen, [false, true, true, true]);
            } else {
                w.send(&[rank as u64, 99], 0, 9).unwrap();
            }
            weft.finalize().unwrap();
        });
    }

    #[test]
    fn forced_ucx_inside_one_node_keeps_per_sender_order() {
        job(
            3,
            &[("WEFT_TRANSPORTS", "ucx")],
            |_| 0,
            |rank, weft, _| {
                let w = weft.world();
                assert_eq!(weft.network_transport(), Some("ucx"));
                all_pairs(&w, &[0, 1, 8193, (1 << 20) + 3]);
                // Eager messages (copied, and sent from the sender's buffer) and rendezvous
                // messages from one sender, sent back to back without waiting for the
                // receiver, match in the order sent.
                let len = |i: u64| [50_000, 16, 4_000][(i % 3) as usize];
                if rank == 0 {
                    w.barrier().unwrap();
                    for src in [1i32, 2] {
                        for i in 0..20u64 {
                            let mut b = vec![0u64; 50_000];
                            let st = w.recv(&mut b, src, 8).unwrap();
                            assert_eq!(st.count::<u64>(), len(i), "message {i} from {src}");
                            assert_eq!(b[0], i, "message {i} from {src}");
                        }
                    }
                } else {
                    let bufs: Vec<Vec<u64>> = (0..20u64).map(|i| vec![i; len(i)]).collect();
                    w.scope(|s| {
                        let reqs: Vec<_> =
                            bufs.iter().map(|b| w.isend(s, b, 0, 8).unwrap()).collect();
                        w.barrier().unwrap();
                        s.wait_all(reqs).unwrap();
                    });
                }
                weft.finalize().unwrap();
            },
        );
    }

    #[test]
    fn a_send_between_the_copy_and_eager_limits_completes_before_its_receive() {
        // 32 KiB is above the copy limit (8 KiB) and below the eager limit (64 KiB): it goes
        // eagerly from the sender's buffer, so the send completes once UCX has sent it, before
        // the receiver has even posted its receive (by rendezvous it could not: the data
        // would wait for the match). That synchronous sends still wait: tests/ssend.rs.
        job(2, SHM_UCX, own_node, |rank, weft, _| {
            let w = weft.world();
            let len = 32 << 10;
            if rank == 0 {
                let data = pattern(len, 5);
                let mut completed = false;
                w.scope(|s| {
                    let mut r = w.isend(s, &data, 1, 4).unwrap();
                    let until = std::time::Instant::now() + crate::common::STEP_WAIT;
                    while std::time::Instant::now() < until {
                        if r.test().unwrap().is_some() {
                            completed = true;
                            break;
                        }
                    }
                    // Only now may rank 1 post its receive.
                    w.send(&[u8::from(completed)], 1, 6).unwrap();
                    if !completed {
                        r.wait().unwrap();
                    }
                });
                assert!(completed, "a 32 KiB send waited for its receive");
            } else {
                let mut go = [0u8; 1];
                w.recv(&mut go, 0, 6).unwrap();
                let mut got = vec![0u8; len];
                w.recv(&mut got, 0, 4).unwrap();
                assert!(got == pattern(len, 5));
            }
            weft.finalize().unwrap();
        });
    }

    #[test]
    fn truncation_over_ucx_fails_the_receive_only() {
        job(2, SHM_UCX, own_node, |rank, weft, _| {
            let w = weft.world();
            for len in [100usize, 200_000] {
                if rank == 0 {
                    w.send(&pattern(len, 1), 1, 3).unwrap();
                } else {
                    let mut small = vec![0u8; len / 2];
                    let e = w.recv(&mut small, 0, 3).unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::Truncate, "{e}");
                }
            }
            // The endpoint still works.
            all_pairs(&w, &[65537]);
            weft.finalize().unwrap();
        });
    }

    #[test]
    fn a_vanished_peer_fails_operations_with_peer_dead_naming_it() {
        job(3, SHM_UCX, own_node, |rank, weft, _| {
            let w = weft.world();
            all_pairs(&w, &[8]);
            if rank != 2 {
                w.send(&[0u8], 2, 6).unwrap();
            }
            match rank {
                2 => {
                    w.recv(&mut [0u8], 0, 6).unwrap();
                    w.recv(&mut [0u8], 1, 6).unwrap();
                    drop(w);
                    drop(weft)
                }
                0 => {
                    let mut b = [0u8; 4];
                    let e = w.recv(&mut b, 2, 1).unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
                    assert!(e.message().contains("rank 2"), "{e}");
                    assert!(e.message().contains("UCX"), "the UCX status: {e}");
                    let e = w.recv(&mut b, ANY_SOURCE, 1).unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
                    // The living peer is still reachable.
                    w.send(&[1u8], 1, 4).unwrap();
                }
                _ => {
                    let mut b = [0u8; 1];
                    w.recv(&mut b, 0, 4).unwrap();
                    assert_eq!(b, [1]);
                }
            }
        });
    }

    #[test]
    fn a_message_without_the_job_token_is_refused_and_the_job_goes_on() {
        use weft_transport::net::NetEndpoint;
        use weft_transport::ucx::link::{UcxConfig, UcxLink};
        job(2, SHM_UCX, own_node, |rank, weft, store| {
            let w = weft.world();
            all_pairs(&w, &[8]);
            if rank == 0 {
                // A stranger with its own key sends rank 1 an eager message and a rendezvous
                // one, straight to its worker.
                use weft_boot::Store;
                let rec = store
                    .get("ucx/1", std::time::Duration::from_secs(10))
                    .unwrap();
                // One address per rail, comma-separated: rail 0's.
                let first = rec.split(|&b| b == b',').next().unwrap();
                let addr: Vec<u8> = first
                    .chunks(2)
                    .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
                    .collect();
                let mut stranger = UcxLink::open(&UcxConfig {
                    rank: 0,
                    size: 2,
                    key: vec![9; 32],
                    eager_bytes: 8192,
                    copy_bytes: 8192,
                    library: "libucp.so.0".into(),
                    rails: vec![None],
                    stripe_bytes: 1 << 20,
                })
                .unwrap();
                stranger.set_peer_addresses(1, vec![addr]);
                let h = weft_transport::shm::Header {
                    tag: 1,
                    ..Default::default()
                };
                assert_ne!(
                    stranger.try_send(1, &h, &[&666u64.to_le_bytes()], 0),
                    weft_transport::net::Sent::NotNow
                );
                struct Nothing;
                impl weft_transport::net::NetSink for Nothing {
                    fn eager(&mut self, _: u32, _: &weft_transport::shm::Header, _: &[u8]) {}
                    fn rendezvous(
                        &mut self,
                        _: u32,
                        _: &weft_transport::shm::Header,
                        _: usize,
                        _: u64,
                    ) {
                    }
                    fn done(&mut self, _: u32, _: Result<(), weft_transport::net::NetFailure>) {}
                }
                // Until UCX has sent it (connecting first).
                let start = std::time::Instant::now();
                while stranger.unsent() && start.elapsed() < crate::common::STEP_WAIT {
                    stranger.poll(&mut Nothing);
                }
                assert!(!stranger.unsent(), "the stranger's message did not leave");
                // Then a rendezvous message: its announcement is refused, and its data (a
                // UCX tag message under the stranger's tag) must not land in the first
                // rendezvous message rank 0 sends rank 1 below, which has the same sequence
                // number and sender rank.
                let forged = vec![0xeeu8; 70_000];
                // SAFETY: `forged` outlives the stranger, dropped below before it.
                assert!(unsafe {
                    stranger.start_rendezvous(1, &h, weft_transport::buf::RawBuf::new(&forged), 1)
                });
                w.send(&[1u64], 1, 2).unwrap();
                // Keep the stranger (polled: it must send) until rank 1 has refused both.
                let mut ok = [0u8];
                w.scope(|s| {
                    let mut r = w.irecv(s, &mut ok, 1, 7).unwrap();
                    while r.test().unwrap().is_none() {
                        stranger.poll(&mut Nothing);
                    }
                });
                drop(stranger);
            } else {
                let start = std::time::Instant::now();
                while weft.tcp_refused() < 2 && start.elapsed() < crate::common::STEP_WAIT {
                    assert!(
                        w.iprobe(ANY_SOURCE, 1).unwrap().is_none(),
                        "a stranger's message was delivered"
                    );
                }
                assert_eq!(weft.tcp_refused(), 2, "the stranger's messages are counted");
                let mut b = [0u64; 1];
                w.recv(&mut b, 0, 2).unwrap();
                assert_eq!(b, [1]);
                assert!(w.iprobe(ANY_SOURCE, 1).unwrap().is_none());
                w.send(&[0u8], 0, 7).unwrap();
            }
            all_pairs(&w, &[3, 70_000]);
            weft.finalize().unwrap();
        });
    }

    #[test]
    fn collectives_across_nodes_over_ucx() {
        job(4, SHM_UCX, pairs, move |rank, weft, _| {
            let w = weft.world();
            let (r, np) = (rank as u64, 4u64);
            w.barrier().unwrap();
            for count in [1usize, 5000, 70_000] {
                let mut b: Vec<u64> = if rank == 1 {
                    (0..count as u64).collect()
                } else {
                    vec![0; count]
                };
                w.bcast(&mut b, 1).unwrap();
                assert!(b.iter().enumerate().all(|(i, &x)| x == i as u64));
                let send: Vec<u64> = (0..count as u64).map(|i| i + r).collect();
                let mut out = vec![0u64; count];
                w.allreduce(&send, &mut out, &Op::Sum).unwrap();
                let base = np * (np - 1) / 2;
                assert!(out
                    .iter()
                    .enumerate()
                    .all(|(i, &x)| x == i as u64 * np + base));
                let mut all = vec![0u64; count * 4];
                w.allgather(&send, &mut all).unwrap();
                for (src, chunk) in all.chunks(count).enumerate() {
                    assert!(chunk
                        .iter()
                        .enumerate()
                        .all(|(i, &x)| x == i as u64 + src as u64));
                }
                let a2a_send: Vec<u64> = (0..count * 4).map(|i| r * 1_000_000 + i as u64).collect();
                let mut a2a = vec![0u64; count * 4];
                w.alltoall(&a2a_send, &mut a2a).unwrap();
                for (src, chunk) in a2a.chunks(count).enumerate() {
                    let first = src as u64 * 1_000_000 + rank as u64 * count as u64;
                    assert!(chunk
                        .iter()
                        .enumerate()
                        .all(|(i, &x)| x == first + i as u64));
                }
            }
            w.barrier().unwrap();
            weft.finalize().unwrap();
        });
    }
}

/// A UCX library that does not load: the lane is not offered, and a job that names it fails
/// at init saying why (the library, the loader's reason), not with a hang or a crash.
#[test]
fn a_ucx_library_that_does_not_load_is_a_clear_error() {
    let vars = [
        ("WEFT_TRANSPORTS", "shm,ucx"),
        ("WEFT_UCX_LIB", "/nonexistent/libucp.so.0"),
    ];
    let config = weft::Config::from_vars(&vars).unwrap();
    let ucx = weft::lanes::transports(&config)
        .into_iter()
        .find(|t| t.name == "ucx")
        .unwrap();
    let why = ucx.offered.unwrap_err();
    if cfg!(feature = "ucx") {
        assert!(why.contains("/nonexistent/libucp.so.0"), "{why}");
    } else {
        assert!(why.contains("ucx cargo feature"), "{why}");
    }
    let lanes = weft::lanes::candidates(&config, false).unwrap();
    assert!(lanes.iter().all(|l| l.transport != "ucx"), "{lanes:?}");
    let errors = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let store = weft_boot::MemStore::new();
    let handles: Vec<_> = (0..2u32)
        .map(|rank| {
            let (store, errors) = (store.clone(), errors.clone());
            let config = weft::Config::from_vars(&vars).unwrap();
            std::thread::spawn(move || {
                let launch = weft::Launch {
                    rank,
                    size: 2,
                    job_id: format!("nolib{}", std::process::id()),
                    node_id: format!("node{rank}"),
                    store: Some(store as std::sync::Arc<dyn weft_boot::Store>),
                };
                let e = weft::init_with(launch, config)
                    .err()
                    .expect("init must fail");
                errors.lock().unwrap().push(e);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    for e in errors.lock().unwrap().iter() {
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(e.message().contains("ucx"), "{e}");
        assert!(e.message().contains("not offered"), "{e}");
    }
}
