//! The symmetric heap with one thread per PE (in-process jobs): symmetric allocation, puts
//! and gets into mapped peers' heaps, CPU atomics from many threads, globals through CMA,
//! and the errors for bad PEs, non-symmetric addresses and heap exhaustion. The C interface
//! is tested through real processes in weft-shmem.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use weft::rma::SymmetricHeap;
use weft::{ErrorKind, Weft};

fn run(n: u32, body: impl Fn(&Weft, SymmetricHeap) + Send + Sync + 'static) {
    common::run_job(
        n,
        &[],
        |_| 0,
        move |_, weft, _| {
            let heap = SymmetricHeap::with_size(&weft, 1 << 20).unwrap();
            body(&weft, heap);
            weft.finalize().unwrap();
        },
    );
}

static GLOBAL: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

#[test]
fn put_get_atomics_at_1_2_3_4_pes() {
    for n in 1..=4u32 {
        run(n, move |w, h| {
            let world = w.world();
            let me = h.pe();
            assert_eq!(h.npes(), n);
            let a = h.malloc(800).unwrap();
            let b = h.align(4096, 100).unwrap();
            assert_eq!(b % 4096, 0);
            let base = h.base() as u64;
            let right = (me + 1) % n;
            let data: Vec<u8> = (0..800).map(|i| (i as u32 * 7 + me) as u8).collect();
            h.put(right, base + a as u64, &data).unwrap();
            h.quiet();
            world.barrier().unwrap();
            let left = (me + n - 1) % n;
            let mut mine = vec![0u8; 800];
            h.get(me, base + a as u64, &mut mine).unwrap();
            assert!(mine
                .iter()
                .enumerate()
                .all(|(i, &x)| x == (i as u32 * 7 + left) as u8));
            let mut theirs = vec![0u8; 800];
            h.get(right, base + a as u64, &mut theirs).unwrap();
            assert_eq!(theirs, data);
            // Every PE adds to PE 0's counter from two threads at once.
            let c = h.malloc(8).unwrap() as u64 + base;
            world.barrier().unwrap();
            std::thread::scope(|s| {
                for _ in 0..2 {
                    s.spawn(|| {
                        for _ in 0..1000 {
                            h.atomic_u64(0, c).unwrap().fetch_add(1, Ordering::SeqCst);
                        }
                    });
                }
            });
            world.barrier().unwrap();
            assert_eq!(
                h.atomic_u64(0, c).unwrap().load(Ordering::SeqCst),
                2000 * n as u64
            );
            assert!(h.ptr(right, base + a as u64).is_some());
            assert!(h.accessible(right));
            // Globals: threads of one process share them, so a put to "PE right" lands in
            // the same static; what is checked is the CMA path and its address rule.
            let g = &GLOBAL[me as usize] as *const AtomicU64 as u64;
            h.put(right, g, &(me as u64 + 10).to_ne_bytes()).unwrap();
            let mut back = [0u8; 8];
            h.get(right, g, &mut back).unwrap();
            assert_eq!(u64::from_ne_bytes(back), me as u64 + 10);
            world.barrier().unwrap();
            h.free(a).unwrap();
            h.free(b).unwrap();
            // A second heap in the same job is a separate symmetric space.
            let h2 = SymmetricHeap::with_size(w, 8192).unwrap();
            let o = h2.malloc(8).unwrap() as u64 + h2.base() as u64;
            h2.put(right, o, &[9u8; 8]).unwrap();
            world.barrier().unwrap();
            let mut nine = [0u8; 8];
            h2.get(me, o, &mut nine).unwrap();
            assert_eq!(nine, [9u8; 8]);
            world.barrier().unwrap();
        });
    }
}

#[test]
fn bad_pe_address_and_exhaustion_are_errors_naming_pe_and_address() {
    run(2, |w, h| {
        let a = h.malloc(64).unwrap() as u64 + h.base() as u64;
        let e = h.put(5, a, b"x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidRank);
        assert!(
            e.message().contains("PE 5") && e.message().contains(&format!("{a:#x}")),
            "{e}"
        );
        let local = 3u64;
        let e = h.put(0, &local as *const u64 as u64, b"x").unwrap_err();
        assert!(e.message().contains("not symmetric"), "{e}");
        let end = h.base() as u64 + h.heap_bytes() as u64;
        let e = h.put(1, end - 8, &[0u8; 100]).unwrap_err();
        assert!(
            e.message().contains("past the end") || e.message().contains("outside"),
            "{e}"
        );
        let e = h.malloc(2 << 20).unwrap_err();
        assert!(
            e.message().contains("exhausted") && e.message().contains(&format!("PE {}", h.pe())),
            "{e}"
        );
        assert!(h.atomic_u64(1, a + 4).is_err(), "misaligned atomic");
        // A peer's global, not shared (no libshmem here): reached through CMA, so no atomic;
        // this PE's own global is its own memory.
        let g = &GLOBAL[0] as *const AtomicU64 as u64;
        let e = h.atomic_u64(1 - h.pe(), g).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.message().contains("WEFT_SYMMETRIC_GLOBALS"), "{e}");
        h.atomic_u64(h.pe(), g).unwrap();
        assert_eq!(h.ptr(h.pe(), g), Some(g as *mut u8));
        assert!(h.free(12345).is_err());
        w.world().barrier().unwrap();
    });
}
