//! In-process multi-rank tests: one thread per rank, a shared in-memory bootstrap store and a
//! real shared-memory segment, so matching, protocols and communicators run fast under
//! `cargo test`. Multi-process behaviour is covered by `weft-itest`.

mod common;

use common::run_ranks;
use weft::{ErrorKind, ANY_SOURCE, ANY_TAG};

fn pattern(len: usize, seed: u32) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2654435761).wrapping_add(seed) as u8 ^ (i >> 8) as u8)
        .collect()
}

const SIZES: &[usize] = &[
    0,
    1,
    7,
    31,
    32,
    33,
    63,
    64,
    65,
    1000,
    4095,
    16383,
    16384,
    16385,
    65536 + 3,
    1 << 20,
    (3 << 20) + 5,
];

#[test]
fn ring_of_all_sizes_at_several_rank_counts() {
    for n in [1u32, 2, 3, 4, 7] {
        run_ranks(n, &[], move |world| {
            let me = world.rank();
            let size = world.size();
            for (i, &len) in SIZES.iter().enumerate() {
                let out = pattern(len, me * 1000 + i as u32);
                let mut inp = vec![0u8; len];
                let right = (me + 1) % size;
                let left = (me + size - 1) % size;
                let st = world
                    .sendrecv(&out, right, i as i32, &mut inp, left as i32, i as i32)
                    .unwrap();
                assert_eq!(st.bytes, len);
                assert_eq!(st.source, left as i32);
                assert_eq!(
                    inp,
                    pattern(len, left * 1000 + i as u32),
                    "n={size} len={len}"
                );
            }
        });
    }
}

#[test]
fn fallback_copy_path_moves_large_messages() {
    run_ranks(
        3,
        &[("WEFT_SHM_CMA", "off"), ("WEFT_SHM_FRAGMENT_BYTES", "8K")],
        |world| {
            let me = world.rank();
            for &len in SIZES {
                if me == 0 {
                    for peer in 1..world.size() {
                        world.send(&pattern(len, peer), peer, 5).unwrap();
                    }
                } else {
                    let mut buf = vec![0u8; len];
                    world.recv(&mut buf, 0, 5).unwrap();
                    assert_eq!(buf, pattern(len, me));
                }
            }
        },
    );
}

#[test]
fn wildcards_and_non_overtaking_order() {
    run_ranks(4, &[], |world| {
        let me = world.rank();
        if me == 0 {
            // Collect 3 × 50 messages from anyone; per sender they must arrive in order.
            let mut next = [0u32; 4];
            let mut v = vec![0u32; 100_000];
            for _ in 0..150 {
                let st = world.recv(&mut v, ANY_SOURCE, ANY_TAG).unwrap();
                let expect_len = if v[1] % 7 == 3 { 100_000 } else { 2 };
                assert_eq!(st.count::<u32>(), expect_len);
                assert_eq!(v[0], st.source as u32);
                assert_eq!(v[1], next[st.source as usize], "overtaken");
                assert_eq!(st.tag, (v[1] % 3) as i32);
                next[st.source as usize] += 1;
            }
        } else {
            for i in 0..50u32 {
                // Alternate small and large so eager and rendezvous interleave.
                if i % 7 == 3 {
                    let mut big = vec![0u32; 100_000];
                    big[0] = me;
                    big[1] = i;
                    world.send(&big[..], 0, (i % 3) as i32).unwrap();
                } else {
                    world.send(&[me, i], 0, (i % 3) as i32).unwrap();
                }
            }
        }
    });
}

#[test]
fn bad_arguments_are_errors() {
    run_ranks(2, &[], |world| {
        let me = world.rank();
        let e = world.send(&[1u8], 2, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidRank);
        assert!(e.message().contains("rank 2"), "{e}");
        assert_eq!(
            world.send(&[1u8], 0, -5).unwrap_err().kind(),
            ErrorKind::InvalidTag
        );
        assert_eq!(
            world.recv(&mut [0u8], 0, -7).unwrap_err().kind(),
            ErrorKind::InvalidTag
        );
        assert_eq!(
            world.recv(&mut [0u8], 9, 0).unwrap_err().kind(),
            ErrorKind::InvalidRank
        );
        // Truncation names both sizes, for eager and rendezvous messages.
        for len in [10usize, 100_000] {
            if me == 0 {
                world.send(&vec![3u8; len], 1, 1).unwrap();
            } else {
                let mut small = vec![0u8; 4];
                let e = world.recv(&mut small, 0, 1).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Truncate);
                assert!(
                    e.message().contains(&len.to_string()) && e.message().contains(" 4"),
                    "{e}"
                );
            }
        }
        // A freed communicator refuses use through every handle.
        let d = world.dup().unwrap();
        let d2 = d.clone();
        d.free().unwrap();
        assert_eq!(
            d2.send(&[1u8], 0, 0).unwrap_err().kind(),
            ErrorKind::InvalidComm
        );
        assert_eq!(d2.free().unwrap_err().kind(), ErrorKind::InvalidComm);
        assert_eq!(world.free().unwrap_err().kind(), ErrorKind::InvalidComm);
    });
}

#[test]
fn communicators_keep_traffic_apart() {
    run_ranks(7, &[], |world| {
        let me = world.rank();
        let dup = world.dup().unwrap();
        assert_ne!(dup.context_id(), world.context_id());
        // Same peer, same tag, different communicators: each receive gets its own message
        // even though they are posted in the opposite order of arrival.
        if me == 0 {
            world.send(&[1u32], 1, 9).unwrap();
            dup.send(&[2u32], 1, 9).unwrap();
        } else if me == 1 {
            let mut a = [0u32];
            dup.recv(&mut a, 0, 9).unwrap();
            assert_eq!(a[0], 2);
            world.recv(&mut a, 0, 9).unwrap();
            assert_eq!(a[0], 1);
        }
        // Split by parity, ordered by descending key.
        let sub = world.split((me % 2) as i32, -(me as i32)).unwrap().unwrap();
        let expected_size = if me % 2 == 0 { 4 } else { 3 };
        assert_eq!(sub.size(), expected_size);
        let members: Vec<u32> = (0..sub.size())
            .map(|r| sub.world_rank(r).unwrap())
            .collect();
        let mut sorted = members.clone();
        sorted.sort_by(|a, b| b.cmp(a));
        assert_eq!(members, sorted);
        assert_eq!(sub.translate_rank(sub.rank(), &world).unwrap(), Some(me));
        // A ring inside the split communicator.
        let right = (sub.rank() + 1) % sub.size();
        let left = (sub.rank() + sub.size() - 1) % sub.size();
        let mut got = [0u32];
        sub.sendrecv(&[me], right, 0, &mut got, left as i32, 0)
            .unwrap();
        assert_eq!(got[0], sub.world_rank(left).unwrap());
        // UNDEFINED leaves a rank out.
        let some = world
            .split(if me == 3 { weft::UNDEFINED } else { 0 }, 0)
            .unwrap();
        assert_eq!(some.is_none(), me == 3);
        if let Some(c) = some {
            assert_eq!(c.size(), 6);
            assert_eq!(c.translate_rank(c.rank(), &world).unwrap(), Some(me));
        }
    });
}

#[test]
fn nonblocking_probe_and_self_sends() {
    run_ranks(3, &[], |world| {
        let me = world.rank();
        let n = world.size();
        // Self sends of every size, received after sending (buffered).
        for &len in SIZES {
            world.send(&pattern(len, 77), me, 3).unwrap();
            let mut b = vec![0u8; len];
            world.recv(&mut b, me as i32, 3).unwrap();
            assert_eq!(b, pattern(len, 77));
        }
        // Nonblocking all-to-all of odd sizes with wait_all, wait_any and test.
        let len = 50_001;
        let outs: Vec<Vec<u8>> = (0..n).map(|p| pattern(len, me * 10 + p)).collect();
        let mut ins: Vec<Vec<u8>> = (0..n).map(|_| vec![0u8; len]).collect();
        world.scope(|s| {
            let mut recvs = Vec::new();
            for (p, buf) in ins.iter_mut().enumerate() {
                recvs.push(world.irecv(s, buf, p as i32, 4).unwrap());
            }
            let mut sends = Vec::new();
            for (p, buf) in outs.iter().enumerate() {
                sends.push(world.isend(s, buf, p as u32, 4).unwrap());
            }
            let (_, st) = s.wait_any(&mut recvs).unwrap();
            assert_eq!(st.bytes, len);
            s.wait_all(recvs).unwrap();
            for mut r in sends {
                while r.test().unwrap().is_none() {}
            }
        });
        for (p, buf) in ins.iter().enumerate() {
            assert_eq!(*buf, pattern(len, p as u32 * 10 + me));
        }
        // Probe then receive exactly the probed size.
        let right = (me + 1) % n;
        world.send(&vec![5u16; 33 + me as usize], right, 8).unwrap();
        let st = world.probe(ANY_SOURCE, 8).unwrap();
        let mut b = vec![0u16; st.count::<u16>()];
        world.recv(&mut b, st.source, 8).unwrap();
        assert_eq!(b.len(), 33 + st.source as usize);
        assert!(world.iprobe(ANY_SOURCE, 8).unwrap().is_none());
        // An unmatched receive is cancelled when its scope ends; cancel reports it.
        let mut never = [0u8; 4];
        world.scope(|s| {
            let r = world.irecv(s, &mut never, ANY_SOURCE, 999).unwrap();
            assert!(r.cancel());
            assert!(r.wait().unwrap().cancelled);
        });
    });
}

#[test]
fn send_buffer_is_free_only_after_the_receiver_has_it() {
    // A completed send may reuse its buffer at once: overwrite it right after each send and
    // check the receiver never sees the new bytes (cooperative and plain rendezvous sizes).
    run_ranks(2, &[], |world| {
        for &len in &[300_000usize, 1 << 20] {
            let mut buf = vec![0u8; len];
            for round in 0..60u8 {
                if world.rank() == 0 {
                    buf.fill(round);
                    world.send(&buf, 1, 0).unwrap();
                    buf.fill(0xEE);
                } else {
                    world.recv(&mut buf, 0, 0).unwrap();
                    assert!(
                        buf.iter().all(|&b| b == round),
                        "round {round}: the receiver saw bytes written after the send completed"
                    );
                }
            }
        }
    });
}
