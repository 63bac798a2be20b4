//! Allocations on the latency-bound path: after a warm-up, an 8-byte allreduce or bcast and
//! a barrier between two in-process ranks must not allocate a plan, scratch or request
//! lists per call (the plan cache and the schedule pools keep them); what is left is the
//! request's own box and, on a rank whose peer's eager message arrives before its receive
//! is posted, the engine's copy of that message. Counted with a global allocator that
//! counts per thread.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use weft::coll::Op;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

#[test]
fn small_collectives_allocate_at_most_their_request() {
    common::run_ranks(2, &[], |w| {
        const CALLS: u64 = 2000;
        let send = [w.rank() as u64 + 1];
        let mut out = [0u64];
        let mut b = [7u64];
        // Warm-up: plans cached, pools filled, engine queues grown.
        for _ in 0..100 {
            w.allreduce(&send, &mut out, &Op::Sum).unwrap();
            w.bcast(&mut b, 0).unwrap();
            w.barrier().unwrap();
        }
        let before = allocs();
        for _ in 0..CALLS {
            w.allreduce(&send, &mut out, &Op::Sum).unwrap();
        }
        let allreduce = allocs() - before;
        let before = allocs();
        for _ in 0..CALLS {
            w.bcast(&mut b, 0).unwrap();
        }
        let bcast = allocs() - before;
        let before = allocs();
        for _ in 0..CALLS {
            w.barrier().unwrap();
        }
        let barrier = allocs() - before;
        assert_eq!(out[0], 3);
        println!(
            "rank {}: allocations per call: allreduce {:.2}, bcast {:.2}, barrier {:.2}",
            w.rank(),
            allreduce as f64 / CALLS as f64,
            bcast as f64 / CALLS as f64,
            barrier as f64 / CALLS as f64
        );
        // The request's box and the engine's copies of early messages (one or two per
        // call, depending on timing): at most 3 per call. The plan (3 vectors, some
        // regrown while it is built), scratch and pending lists used to add 4-8 more.
        for (what, n) in [
            ("allreduce", allreduce),
            ("bcast", bcast),
            ("barrier", barrier),
        ] {
            assert!(n <= 3 * CALLS, "{what}: {n} allocations in {CALLS} calls");
        }
    });
}
