//! Per-pair buffer modes of the shared-memory rings through the runtime: every pair starts on
//! a small ring, the busiest peers (at most `WEFT_MAX_FAST_PEERS`) move to large rings, and
//! messages of every protocol arrive intact and in order across the move.

mod common;

use common::run_job;
use weft_transport::shm::ring::ring_footprint;

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(131) ^ seed) as u8)
        .collect()
}

/// Rank 0 and four peers exchange more than the threshold both ways with sizes that are
/// eager on both rings (100, 8000), eager only on a large ring (12000 > a quarter of the
/// small ring), and rendezvous (100000: CMA, or fragments through the ring when CMA is off).
fn exchange(cma: &'static str) {
    const SMALL: usize = 32 << 10;
    const LARGE: usize = 256 << 10;
    let vars = [
        ("WEFT_MAX_FAST_PEERS", "2"),
        ("WEFT_FAST_PEER_BYTES", "64K"),
        ("WEFT_SHM_SMALL_RING_BYTES", "32K"),
        ("WEFT_SHM_RING_BYTES", "256K"),
        ("WEFT_SHM_CMA", cma),
    ];
    run_job(
        5,
        &vars,
        |_| 0,
        move |rank, weft, _| {
            let w = weft.world();
            let (small_mem, fast) = weft.shm_peer_memory();
            assert_eq!(fast, 0, "nobody starts fast");
            assert_eq!(small_mem, 4 * ring_footprint(SMALL));
            let sizes = [100usize, 8000, 12000, 100000];
            for round in 0..12 {
                for &len in &sizes {
                    if rank == 0 {
                        for p in 1..5 {
                            w.send(&pattern(len, p * 7 + round + len), p as u32, 1)
                                .unwrap();
                        }
                        for p in 1..5 {
                            let mut buf = vec![0u8; len];
                            w.recv(&mut buf, p, 2).unwrap();
                            assert!(
                                buf == pattern(len, p as usize * 11 + round + len),
                                "from {p}"
                            );
                        }
                    } else {
                        let mut buf = vec![0u8; len];
                        w.recv(&mut buf, 0, 1).unwrap();
                        assert!(
                            buf == pattern(len, rank as usize * 7 + round + len),
                            "rank {rank} round {round} len {len}"
                        );
                        w.send(&pattern(len, rank as usize * 11 + round + len), 0, 2)
                            .unwrap();
                    }
                }
            }
            w.barrier().unwrap();
            let (mem, fast) = weft.shm_peer_memory();
            if rank == 0 {
                assert_eq!(
                    fast, 2,
                    "rank 0 sent past the threshold to 4 peers: the cap switches"
                );
                // Small rings stay (the switch is one way); two large ones were added.
                assert_eq!(mem, 4 * ring_footprint(SMALL) + 2 * ring_footprint(LARGE));
            } else {
                assert_eq!(fast, 1, "rank {rank} sent past the threshold to rank 0");
                assert_eq!(mem, 4 * ring_footprint(SMALL) + ring_footprint(LARGE));
            }
            assert!(weft.peer_memory_bytes() >= mem);
            weft.finalize().unwrap();
        },
    );
}

#[test]
fn cap_holds_and_data_survives_the_switch_with_cma() {
    exchange("auto");
}

#[test]
fn cap_holds_and_data_survives_the_switch_through_the_rings() {
    exchange("off");
}
