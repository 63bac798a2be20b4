//! Per-pair buffer modes of the shared-memory rings through the runtime: every pair starts on
//! a small ring, the busiest peers (at most `WEFT_MAX_FAST_PEERS`) move to large rings, and
//! messages of every protocol arrive intact and in order across the move.
//!
//! Memory is checked against bounds the test derives from the knobs' values alone (not the
//! transport's formulas): the rings a rank reserves, the rings its traffic touched, and the
//! length of the node segment as mapped (from /proc/self/maps).

mod common;

use common::run_job;

const PAGE: usize = 4096;

/// Length of the mapping of this job's node segment, from /proc/self/maps.
fn segment_mapping_bytes(job: &str) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let line = maps
        .lines()
        .find(|l| l.contains(&format!("/weft-{job}-")))
        .unwrap_or_else(|| panic!("no mapping of job {job}'s segment in /proc/self/maps"));
    let (start, end) = line
        .split_whitespace()
        .next()
        .unwrap()
        .split_once('-')
        .unwrap();
    usize::from_str_radix(end, 16).unwrap() - usize::from_str_radix(start, 16).unwrap()
}

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
        // CMA, where allowed, for every rendezvous (by default it starts far above these).
        ("WEFT_SHM_CMA_MIN_BYTES", "0"),
    ];
    run_job(
        5,
        &vars,
        |_| 0,
        move |rank, weft, _| {
            let w = weft.world();
            let (reserved, fast) = weft.shm_peer_memory();
            assert_eq!(fast, 0, "nobody starts fast");
            // A small ring per peer (and a little control space each), nothing large.
            assert!(
                (4 * SMALL..=4 * (SMALL + PAGE)).contains(&reserved),
                "rank {rank}: {reserved} reserved at start"
            );
            assert_eq!(
                weft.shm_peer_touched_bytes(),
                0,
                "nothing sent, nothing touched"
            );
            // Five ranks' small rings to four peers and pools of two large rings, the 4 MiB
            // collective area, with at most a page of slack per ring.
            let seg = segment_mapping_bytes(weft.job_id());
            let least = 5 * 4 * SMALL + 5 * 2 * LARGE + (4 << 20);
            let most = 5 * 5 * (SMALL + PAGE) + 5 * 2 * (LARGE + PAGE) + (4 << 20) + 16 * PAGE;
            assert!((least..=most).contains(&seg), "segment of {seg} bytes");
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
            let touched = weft.shm_peer_touched_bytes();
            // Every rank sent each peer it talked to 12 rounds of at least 8100 bytes through
            // the rings: past the 64K threshold, so each such small ring (32K) wrapped. A
            // pair switches within 9 rounds; the rounds after it (12000 is eager there too)
            // put at least 16K into its large ring.
            if rank == 0 {
                assert_eq!(
                    fast, 2,
                    "rank 0 sent past the threshold to 4 peers: the cap switches"
                );
                // Small rings stay (the switch is one way); two large ones were added.
                let least = 4 * SMALL + 2 * LARGE;
                assert!(
                    (least..=least + 6 * PAGE).contains(&mem),
                    "rank 0: {mem} reserved"
                );
                assert!(
                    touched >= 4 * SMALL + 2 * (16 << 10) && touched <= mem,
                    "rank 0: touched {touched} of {mem}"
                );
            } else {
                assert_eq!(fast, 1, "rank {rank} sent past the threshold to rank 0");
                let least = 4 * SMALL + LARGE;
                assert!(
                    (least..=least + 5 * PAGE).contains(&mem),
                    "rank {rank}: {mem} reserved"
                );
                // The rings to the three peers it never talked to (a barrier aside) were
                // reserved but barely touched.
                assert!(
                    (SMALL + (16 << 10)..=SMALL + LARGE + 5 * PAGE).contains(&touched),
                    "rank {rank}: touched {touched} of {mem}"
                );
                assert!(touched + 3 * (SMALL - PAGE) <= mem, "rank {rank}");
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
