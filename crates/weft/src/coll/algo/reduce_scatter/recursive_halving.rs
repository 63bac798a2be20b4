//! Recursive-halving reduce-scatter (commutative operations, a power-of-two number of
//! ranks): in the step of distance d = n/2, n/4, …, 1 a rank and its partner `r xor d` split
//! the blocks they are still responsible for in halves; each sends the half it gives up and
//! combines the half it keeps with the partner's. log2 n steps moving (n−1)/n of the buffer
//! in all, against the ring's n − 1 steps; blocks may differ in length.

use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// `blocks[i]`: (offset, length) of rank i's block in the send buffer of `total` bytes.
pub(crate) fn plan(rank: u32, size: u32, blocks: &[(usize, usize)], total: usize) -> Plan {
    let mut p = Plan::new();
    let n = size as usize;
    let r = rank as usize;
    let mine = blocks[r];
    if n == 1 {
        p.step();
        p.copy(
            Region::new(Buf::Send, mine.0, mine.1),
            Region::new(Buf::Recv, 0, mine.1),
        );
        return p;
    }
    // Bytes of blocks lo..hi (contiguous, in rank order).
    let span = |lo: usize, hi: usize| -> (usize, usize) {
        let start = blocks[lo].0;
        let end = blocks[hi - 1].0 + blocks[hi - 1].1;
        (start, end - start)
    };
    let acc = p.tmp(total);
    let incoming = p.tmp(total);
    let (mut lo, mut hi) = (0usize, n);
    let mut pending: Option<(usize, usize)> = None;
    let mut d = n / 2;
    while d >= 1 {
        let partner = (r ^ d) as u32;
        let mid = lo + (hi - lo) / 2;
        let (keep, give) = if r & d == 0 {
            ((lo, mid), (mid, hi))
        } else {
            ((mid, hi), (lo, mid))
        };
        let (ko, kl) = span(keep.0, keep.1);
        let (go, gl) = span(give.0, give.1);
        p.step();
        let src = match pending.take() {
            // Combine what arrived in the previous step, then send from the combined data.
            Some((o, l)) => {
                p.reduce(Region::new(incoming, o, l), Region::new(acc, o, l), true);
                acc
            }
            // The first step sends straight from the caller's buffer.
            None => {
                p.copy(Region::new(Buf::Send, ko, kl), Region::new(acc, ko, kl));
                Buf::Send
            }
        };
        p.recv(partner, Region::new(incoming, ko, kl));
        p.send(partner, Region::new(src, go, gl));
        pending = Some((ko, kl));
        (lo, hi) = keep;
        d /= 2;
    }
    p.step();
    if let Some((o, l)) = pending {
        p.reduce(Region::new(incoming, o, l), Region::new(acc, o, l), true);
    }
    debug_assert_eq!((lo, hi), (r, r + 1));
    p.copy(
        Region::new(acc, mine.0, mine.1),
        Region::new(Buf::Recv, 0, mine.1),
    );
    p
}

/// A recursive-halving reduce-scatter of the whole vector and the fold of the ranks beyond
/// the largest power of two.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let all = m.procs() * m.bytes();
    (m.halving_reduce_scatter(all) + m.fold(all)) * m.all_ranks_busy()
}
