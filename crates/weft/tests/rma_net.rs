//! One-sided communication between PEs on different nodes (rank threads claiming different
//! node ids, so every operation goes through the target's service over TCP): put/get of many
//! sizes, every atomic from several initiators on one word, put-with-signal and waiting,
//! concurrent initiating threads, quiet and contexts, the single-proxy mode, globals, and the
//! errors for bad PEs, bad addresses and a dead PE.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use weft::rma::net::Amo;
use weft::rma::SymmetricHeap;
use weft::{ErrorKind, Weft};

fn run(
    n: u32,
    vars: &[(&str, &str)],
    node_of: fn(u32) -> u32,
    body: impl Fn(&Weft, SymmetricHeap) + Send + Sync + 'static,
) {
    common::run_job(n, vars, node_of, move |_, weft, _| {
        let heap = SymmetricHeap::with_size(&weft, 4 << 20).unwrap();
        body(&weft, heap);
        weft.finalize().unwrap();
    });
}

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seed)
                .to_le_bytes()[1]
        })
        .collect()
}

/// Waits (spinning politely) until the 8-byte word at `addr` of this PE's heap is `want`.
fn wait_word(addr: u64, want: u64) {
    // SAFETY: addr is an 8-byte aligned word of this PE's heap, updated atomically.
    let w = unsafe { AtomicU64::from_ptr(addr as *mut u64) };
    let start = Instant::now();
    while w.load(Ordering::SeqCst) != want {
        assert!(
            start.elapsed() < common::STEP_WAIT,
            "word never became {want}"
        );
        std::thread::yield_now();
    }
}

fn put_get_sizes(vars: &'static [(&'static str, &'static str)]) {
    // Whether contiguous puts travel as one request (the proxy mode merges on its own terms:
    // not checked there).
    let has = |kv: (&str, &str)| vars.contains(&kv);
    let coalescing = if has(("WEFT_RMA_PROXY", "1")) {
        None
    } else {
        Some(!has(("WEFT_RMA_COALESCE", "0")))
    };
    run(
        3,
        vars,
        |r| r,
        move |w, h| {
            let world = w.world();
            let (me, n) = (h.pe(), h.npes());
            assert!(
                !h.accessible((me + 1) % n),
                "other node: not load/store accessible"
            );
            assert!(h.reachable((me + 1) % n));
            let base = h.base() as u64;
            for len in [0usize, 1, 1001, 64 * 1024 + 1, 1 << 20] {
                let off = h.malloc(len.max(1)).unwrap() as u64;
                let right = (me + 1) % n;
                let data = pattern(len, me);
                h.put(right, base + off, &data).unwrap();
                h.try_quiet().unwrap();
                world.barrier().unwrap();
                let left = (me + n - 1) % n;
                // SAFETY: this PE's own heap block of len bytes, written by the left PE before the barrier.
                let mine = unsafe { std::slice::from_raw_parts((base + off) as *const u8, len) };
                assert!(
                    mine == pattern(len, left).as_slice(),
                    "{len} bytes from PE {left}"
                );
                let mut back = vec![0u8; len];
                h.get(right, base + off, &mut back).unwrap();
                assert!(back == data, "get of {len} bytes");
                world.barrier().unwrap();
                h.free(off as usize).unwrap();
            }
            // Many small contiguous puts (coalesced when enabled), then one get sees all of them.
            let off = h.malloc(8 * 1000).unwrap() as u64;
            let right = (me + 1) % n;
            world.barrier().unwrap();
            let served_before = h.requests_served();
            world.barrier().unwrap();
            for i in 0..1000u64 {
                h.put(
                    right,
                    base + off + 8 * i,
                    &(i * 3 + me as u64).to_ne_bytes(),
                )
                .unwrap();
            }
            let mut back = vec![0u8; 8000];
            h.get(right, base + off, &mut back).unwrap();
            for i in 0..1000usize {
                let v = u64::from_ne_bytes(back[8 * i..8 * i + 8].try_into().unwrap());
                assert_eq!(v, i as u64 * 3 + me as u64);
            }
            world.barrier().unwrap();
            // What this PE's service applied for its left neighbour's 1000 puts (and 1 get):
            // a handful of frames when coalescing, one per put without.
            let served = h.requests_served() - served_before;
            match coalescing {
                Some(true) => assert!(served <= 20, "{served} requests for 1000 contiguous puts"),
                Some(false) => {
                    assert!(
                        served >= 1000,
                        "{served} requests for 1000 uncoalesced puts"
                    )
                }
                None => {}
            }
        },
    );
}

#[test]
fn put_get_of_many_sizes_across_three_nodes() {
    put_get_sizes(&[]);
}

#[test]
fn put_get_without_coalescing_and_through_the_single_proxy() {
    put_get_sizes(&[("WEFT_RMA_COALESCE", "0"), ("WEFT_RMA_FLUSH_BYTES", "256")]);
    put_get_sizes(&[("WEFT_RMA_PROXY", "1")]);
}

#[test]
fn every_atomic_from_three_initiators_on_one_word() {
    // PE 0 and 1 share node 0 (CPU atomics), PE 2 is on node 1 (the service's atomics).
    run(
        3,
        &[],
        |r| r / 2,
        |w, h| {
            let world = w.world();
            let me = h.pe() as u64;
            let base = h.base() as u64;
            let word = base + h.malloc(8).unwrap() as u64;
            let word32 = base + h.malloc(8).unwrap() as u64;
            let bits = base + h.malloc(8).unwrap() as u64;
            world.barrier().unwrap();
            for i in 0..300u64 {
                h.atomic(0, 0, word, 8, Amo::Add, me + 1, 0, i % 2 == 0)
                    .unwrap();
                h.atomic(0, 0, word32, 4, Amo::Add, 1, 0, false).unwrap();
            }
            // Compare-and-swap loops: each success adds exactly 1000.
            for _ in 0..50 {
                loop {
                    let old = h.atomic(0, 0, word, 8, Amo::Fetch, 0, 0, true).unwrap();
                    if h.atomic(0, 0, word, 8, Amo::CompareSwap, old, old + 1000, true)
                        .unwrap()
                        == old
                    {
                        break;
                    }
                }
            }
            // Bitwise: set my bit with or, clear my bit 8 higher with and, flip bit 16 higher twice.
            h.atomic(0, 0, bits, 8, Amo::Or, 1 << me, 0, false).unwrap();
            h.atomic(0, 0, bits, 8, Amo::And, !(1u64 << (me + 8)), 0, true)
                .unwrap();
            h.atomic(0, 0, bits, 8, Amo::Xor, 1 << (me + 16), 0, false)
                .unwrap();
            h.atomic(0, 0, bits, 8, Amo::Xor, 1 << (me + 16), 0, true)
                .unwrap();
            h.try_quiet().unwrap();
            world.barrier().unwrap();
            let total = h.atomic(0, 0, word, 8, Amo::Fetch, 0, 0, true).unwrap();
            assert_eq!(total, 300 * (1 + 2 + 3) + 3 * 50 * 1000);
            assert_eq!(
                h.atomic(0, 0, word32, 4, Amo::Fetch, 0, 0, true).unwrap(),
                900
            );
            // PE 0 had set bits 8..11 before the others cleared them.
            world.barrier().unwrap();
            let b = h.atomic(0, 0, bits, 8, Amo::Fetch, 0, 0, true).unwrap();
            assert_eq!(b, 0b111, "bits {b:#x}");
            world.barrier().unwrap();
            // Swap: every value swapped in comes out exactly once (from a swap or at the end).
            if me == 0 {
                h.atomic(0, 0, word, 8, Amo::Set, 100, 0, true).unwrap();
            }
            world.barrier().unwrap();
            let mut got: Vec<u64> = (0..20)
                .map(|i| {
                    h.atomic(0, 0, word, 8, Amo::Swap, 1000 * (me + 1) + i, 0, true)
                        .unwrap()
                })
                .collect();
            let mut all = vec![0u64; 60];
            world.allgather(&got, &mut all).unwrap();
            got = all;
            got.push(h.atomic(0, 0, word, 8, Amo::Fetch, 0, 0, true).unwrap());
            got.sort();
            let mut want: Vec<u64> = (0..3)
                .flat_map(|p| (0..20).map(move |i| 1000 * (p + 1) + i))
                .collect();
            want.push(100);
            want.sort();
            assert_eq!(got, want);
            world.barrier().unwrap();
            // A misaligned or odd-width atomic is refused before anything is sent.
            assert_eq!(
                h.atomic(0, 2, word + 4, 8, Amo::Add, 1, 0, true)
                    .unwrap_err()
                    .kind(),
                ErrorKind::InvalidArgument
            );
            assert_eq!(
                h.atomic(0, 2, word, 2, Amo::Add, 1, 0, true)
                    .unwrap_err()
                    .kind(),
                ErrorKind::InvalidType
            );
            world.barrier().unwrap();
        },
    );
}

#[test]
fn put_signal_and_remote_puts_wake_a_waiting_pe() {
    run(
        2,
        &[],
        |r| r,
        |w, h| {
            let world = w.world();
            let base = h.base() as u64;
            let data = base + h.malloc(4096).unwrap() as u64;
            let sig = base + h.malloc(8).unwrap() as u64;
            let flag = base + h.malloc(8).unwrap() as u64;
            world.barrier().unwrap();
            for round in 1..=20u64 {
                if h.pe() == 1 {
                    let bytes = pattern(4096, round as u32);
                    h.put_signal(0, 0, data, &bytes, sig, round, Amo::Set)
                        .unwrap();
                    // The answer: PE 0 puts the round into our flag with a plain put.
                    wait_word(flag, round);
                } else {
                    wait_word(sig, round);
                    // SAFETY: our own heap; PE 1's data arrived before its signal.
                    let got = unsafe { std::slice::from_raw_parts(data as *const u8, 4096) };
                    assert!(
                        got == pattern(4096, round as u32).as_slice(),
                        "round {round}"
                    );
                    h.put(1, flag, &round.to_ne_bytes()).unwrap();
                    h.flush().unwrap();
                }
            }
            world.barrier().unwrap();
            // Signal by addition, from both PEs onto PE 0's word.
            h.put_signal(0, 0, data, &[7u8; 16], sig, 5, Amo::Add)
                .unwrap();
            if h.pe() == 0 {
                wait_word(sig, 20 + 10);
            }
            assert_eq!(
                h.put_signal(0, 0, data, &[], sig, 1, Amo::Xor)
                    .unwrap_err()
                    .kind(),
                ErrorKind::InvalidOp
            );
            world.barrier().unwrap();
        },
    );
}

#[test]
fn another_threads_quiet_racing_with_the_owners_puts_loses_nothing() {
    // A thread's puts go to its own lane without a lock; another thread's quiet takes the
    // lane from under it (cell.rs's handshake). Two threads put small values (many of them
    // coalesced, buffers flushed often) while a third quiets in a loop: every put must land
    // exactly once, in order per slot, and the lane buffers must never be corrupted (a lost
    // exclusion shows as wrong values, a protocol error or a crash).
    run(
        2,
        &[("WEFT_RMA_FLUSH_BYTES", "256")],
        |r| r,
        |w, h| {
            let world = w.world();
            let base = h.base() as u64;
            let per = 200_000u64;
            let slots = 512u64;
            let off = base + h.malloc((2 * slots * 8) as usize).unwrap() as u64;
            if h.pe() == 0 {
                let done = std::sync::atomic::AtomicUsize::new(0);
                let mut quiets = 0u64;
                std::thread::scope(|s| {
                    for t in 0..2u64 {
                        let (h, done) = (&h, &done);
                        s.spawn(move || {
                            for i in 0..per {
                                let at = off + 8 * (t * slots + i % slots);
                                h.put(1, at, &(t << 32 | i).to_ne_bytes()).unwrap();
                            }
                            done.fetch_add(1, Ordering::SeqCst);
                        });
                    }
                    while done.load(Ordering::SeqCst) < 2 {
                        h.try_quiet().unwrap();
                        quiets += 1;
                    }
                });
                h.try_quiet().unwrap();
                assert!(quiets > 0);
            }
            world.barrier().unwrap();
            if h.pe() == 1 {
                for t in 0..2u64 {
                    for slot in 0..slots {
                        // The last put to each slot wins (one ordered lane per thread).
                        let last = (per - 1) - (per - 1 - slot) % slots;
                        // SAFETY: our own heap, written and completed before the barrier.
                        let v = unsafe { *((off + 8 * (t * slots + slot)) as *const u64) };
                        assert_eq!(v, t << 32 | last, "thread {t} slot {slot}");
                    }
                }
            }
            world.barrier().unwrap();
        },
    );
}

#[test]
fn four_threads_put_concurrently_and_quiet_completes_them_all() {
    run(
        2,
        &[],
        |r| r,
        |w, h| {
            let world = w.world();
            let base = h.base() as u64;
            let per = 2000u64;
            let off = base + h.malloc((4 * per * 8) as usize).unwrap() as u64;
            if h.pe() == 0 {
                std::thread::scope(|s| {
                    for t in 0..4u64 {
                        let h = &h;
                        s.spawn(move || {
                            for i in 0..per {
                                // Alternate directions so that some puts coalesce and some do not.
                                let slot = if i % 2 == 0 { i } else { per - i };
                                let at = off + 8 * (t * per + slot);
                                h.put(1, at, &(t << 32 | slot).to_ne_bytes()).unwrap();
                            }
                        });
                    }
                });
                // The default context's quiet completes every thread's lanes.
                h.try_quiet().unwrap();
                // An exited thread's lanes close at a quiet once its thread-locals are gone
                // (which may be just after the scope returns).
                let deadline = Instant::now() + common::STEP_WAIT;
                while h.open_lanes() > 0 {
                    assert!(
                        Instant::now() < deadline,
                        "{} lanes still open",
                        h.open_lanes()
                    );
                    std::thread::sleep(Duration::from_millis(5));
                    h.try_quiet().unwrap();
                }
            }
            world.barrier().unwrap();
            if h.pe() == 1 {
                for t in 0..4u64 {
                    for slot in 0..per {
                        // SAFETY: our own heap, written before the barrier.
                        let v = unsafe { *((off + 8 * (t * per + slot)) as *const u64) };
                        assert_eq!(v, t << 32 | slot, "thread {t} slot {slot}");
                    }
                }
            }
            world.barrier().unwrap();
        },
    );
}

#[test]
fn contexts_have_their_own_lanes_and_quiet() {
    run(
        2,
        &[],
        |r| r,
        |w, h| {
            let world = w.world();
            let base = h.base() as u64;
            let a = base + h.malloc(8 * 64).unwrap() as u64;
            if h.pe() == 0 {
                let c1 = h.ctx_create();
                let c2 = h.ctx_create();
                assert_ne!(c1, c2);
                for i in 0..64u64 {
                    let c = if i % 2 == 0 { c1 } else { c2 };
                    h.put_ctx(c, 1, a + 8 * i, &(i + 1).to_ne_bytes()).unwrap();
                }
                h.quiet_ctx(c1).unwrap();
                h.ctx_destroy(c2).unwrap();
                h.quiet_ctx(c1).unwrap();
                let mut v = [0u8; 8];
                h.get_ctx(c1, 1, a + 8 * 63, &mut v).unwrap();
                assert_eq!(u64::from_ne_bytes(v), 64);
                h.ctx_destroy(c1).unwrap();
            }
            world.barrier().unwrap();
            if h.pe() == 1 {
                for i in 0..64u64 {
                    // SAFETY: our own heap, written and completed before the barrier.
                    assert_eq!(unsafe { *((a + 8 * i) as *const u64) }, i + 1);
                }
            }
            world.barrier().unwrap();
        },
    );
}

#[test]
fn destroying_a_context_closes_its_lanes_in_every_thread() {
    run(
        2,
        &[],
        |r| r,
        |w, h| {
            let world = w.world();
            let base = h.base() as u64;
            let a = base + h.malloc(64).unwrap() as u64;
            if h.pe() == 0 {
                let before = h.open_lanes();
                let c = h.ctx_create();
                let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
                let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
                std::thread::scope(|s| {
                    let h = &h;
                    let t = s.spawn(move || {
                        // This thread caches the context's lane, then outlives its destruction.
                        h.put_ctx(c, 1, a, &7u64.to_ne_bytes()).unwrap();
                        h.quiet_ctx(c).unwrap();
                        done_tx.send(()).unwrap();
                        go_rx.recv().unwrap();
                        h.put_ctx(c, 1, a + 8, &8u64.to_ne_bytes())
                    });
                    done_rx.recv().unwrap();
                    h.put_ctx(c, 1, a + 16, &9u64.to_ne_bytes()).unwrap();
                    assert_eq!(h.open_lanes(), before + 1, "one lane per (context, PE)");
                    h.ctx_destroy(c).unwrap();
                    assert_eq!(h.open_lanes(), before);
                    // The other thread's cached lane is closed too: its put is refused (it
                    // would otherwise go to a lane no quiet ever completes).
                    go_tx.send(()).unwrap();
                    let e = t.join().unwrap().unwrap_err();
                    assert!(e.message().contains("destroyed"), "{e}");
                    // So is a use from this thread and from a thread that never used it.
                    let e = h.put_ctx(c, 1, a, &[0u8; 8]).unwrap_err();
                    assert!(e.message().contains("destroyed"), "{e}");
                    let e = s
                        .spawn(move || h.put_ctx(c, 1, a, &[0u8; 8]))
                        .join()
                        .unwrap()
                        .unwrap_err();
                    assert!(e.message().contains("destroyed"), "{e}");
                });
            }
            world.barrier().unwrap();
            if h.pe() == 1 {
                // SAFETY: our own heap, written and completed before the barrier.
                let v = |i: u64| unsafe { *((a + 8 * i) as *const u64) };
                assert_eq!((v(0), v(1), v(2)), (7, 0, 9));
            }
            world.barrier().unwrap();
        },
    );
}

#[test]
fn a_destroyed_context_is_refused_in_proxy_mode_too() {
    // The single proxy has no per-context lanes to close; uses of a destroyed context are
    // refused all the same, and the default context keeps working.
    run(
        2,
        &[("WEFT_RMA_PROXY", "1")],
        |r| r,
        |w, h| {
            let world = w.world();
            let base = h.base() as u64;
            let a = base + h.malloc(64).unwrap() as u64;
            if h.pe() == 0 {
                let c = h.ctx_create();
                h.put_ctx(c, 1, a, &5u64.to_ne_bytes()).unwrap();
                h.ctx_destroy(c).unwrap();
                let e = h.put_ctx(c, 1, a + 8, &[1u8; 8]).unwrap_err();
                assert!(e.message().contains("destroyed"), "{e}");
                h.put(1, a + 16, &6u64.to_ne_bytes()).unwrap();
                h.quiet();
            }
            world.barrier().unwrap();
            if h.pe() == 1 {
                // SAFETY: our own heap, written and completed before the barrier.
                let v = |i: u64| unsafe { *((a + 8 * i) as *const u64) };
                assert_eq!((v(0), v(1), v(2)), (5, 0, 6));
            }
            world.barrier().unwrap();
        },
    );
}

#[test]
fn context_bookkeeping_is_bounded_by_the_live_contexts() {
    // Creating and destroying many contexts leaves nothing behind: the heap keeps only the
    // live ones (a set of destroyed ids would grow with every create/destroy pair), and an
    // id that was never created is refused like a destroyed one. Both lane modes.
    for proxy in ["0", "1"] {
        run(
            2,
            &[("WEFT_RMA_PROXY", proxy)],
            |r| r,
            |w, h| {
                let world = w.world();
                let base = h.base() as u64;
                let a = base + h.malloc(64).unwrap() as u64;
                if h.pe() == 0 {
                    let keep = h.ctx_create();
                    let mut last = 0;
                    for i in 0..200u64 {
                        let c = h.ctx_create();
                        h.put_ctx(c, 1, a + 8, &(i + 1).to_ne_bytes()).unwrap();
                        h.ctx_destroy(c).unwrap();
                        assert_eq!(h.live_contexts(), 1, "after destroying context {c}");
                        last = c;
                    }
                    let e = h.put_ctx(last + 1000, 1, a, &[1u8; 8]).unwrap_err();
                    assert!(e.message().contains("never created"), "{e}");
                    h.put_ctx(keep, 1, a, &3u64.to_ne_bytes()).unwrap();
                    h.ctx_destroy(keep).unwrap();
                    assert_eq!(h.live_contexts(), 0);
                }
                world.barrier().unwrap();
                if h.pe() == 1 {
                    // SAFETY: our own heap, written and completed before the barrier.
                    let v = |i: u64| unsafe { *((a + 8 * i) as *const u64) };
                    assert_eq!((v(0), v(1)), (3, 200));
                }
                world.barrier().unwrap();
            },
        );
    }
}

static REMOTE_GLOBAL: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

#[test]
fn globals_of_a_remote_pe_and_bad_input() {
    run(
        2,
        &[],
        |r| r,
        |w, h| {
            let world = w.world();
            let me = h.pe();
            // Rank threads share one process, so "PE 1's copy" is the same static: what is
            // checked is the offset-from-load-base path through the service, atomics included.
            let g = &REMOTE_GLOBAL[me as usize] as *const AtomicU64 as u64;
            h.put(1 - me, g, &(me as u64 + 40).to_ne_bytes()).unwrap();
            let mut back = [0u8; 8];
            h.get(1 - me, g, &mut back).unwrap();
            assert_eq!(u64::from_ne_bytes(back), me as u64 + 40);
            assert_eq!(
                h.atomic(0, 1 - me, g, 8, Amo::Add, 2, 0, true).unwrap(),
                me as u64 + 40
            );
            assert_eq!(
                REMOTE_GLOBAL[me as usize].load(Ordering::SeqCst),
                me as u64 + 42
            );
            let e = h.put(7, g, &[1]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidRank);
            assert!(e.message().contains("PE 7"), "{e}");
            let local = 5u64;
            let e = h
                .get(1 - me, &local as *const u64 as u64, &mut back)
                .unwrap_err();
            assert!(e.message().contains("not symmetric"), "{e}");
            let e = h
                .put(1 - me, h.base() as u64 + (4 << 20) - 4, &[0u8; 8])
                .unwrap_err();
            assert!(e.message().contains("past the end"), "{e}");
            assert!(
                h.ptr(1 - me, h.base() as u64).is_none(),
                "no pointer to another node's heap"
            );
            assert!(h.atomic_u64(1 - me, h.base() as u64).is_err());
            world.barrier().unwrap();
        },
    );
}

#[test]
fn a_dead_pe_makes_calls_fail_naming_it() {
    run(
        2,
        &[("WEFT_RMA_TIMEOUT_S", "5")],
        |r| r,
        |w, h| {
            let world = w.world();
            let base = h.base() as u64;
            let a = base + h.malloc(64).unwrap() as u64;
            h.put(1 - h.pe(), a, &[1u8; 64]).unwrap();
            h.try_quiet().unwrap();
            world.barrier().unwrap();
            if h.pe() == 1 {
                // PE 1 "dies": its service stops and its connections close.
                drop(h);
                world.barrier().unwrap();
                world.barrier().unwrap();
                return;
            }
            world.barrier().unwrap();
            let mut v = [0u8; 8];
            let e = h.get(1, a, &mut v).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::PeerDead | ErrorKind::Io),
                "{e}"
            );
            assert!(e.message().contains("PE 1"), "{e}");
            let e = h.atomic(0, 1, a, 8, Amo::Add, 1, 0, true).unwrap_err();
            assert!(e.message().contains("PE 1"), "{e}");
            world.barrier().unwrap();
        },
    );
}
