//! Rabenseifner's allreduce and reduce: a reduce-scatter by recursive halving over the
//! largest power of two p' ≤ n (the first 2(n − p') ranks fold in pairs first, as in
//! recursive doubling), then either an allgather by recursive doubling (allreduce) or a
//! gather of the p' finished chunks at the root (reduce, "reduce_scatter_gather"). Each rank
//! moves about 2·(p'−1)/p' of the buffer in 2·log2 p' steps: for large messages. Chunks are
//! combined out of rank order: commutative operations only.
//!
//! The halving may pair the ranks in either order of distance: far first (partners p'/2
//! apart, then p'/4, ...: rank i ends with chunk i) or near first (partners 1 apart, then 2,
//! ...: the chunk index is the rank's bits reversed). The first steps move the most bytes
//! (half, then a quarter, ...), so on a communicator placed node by node near first keeps
//! the big halves inside the nodes and sends only the small ones across; the caller decides
//! from the node layout ([`crate::comm::Comm`]'s `coll_near_first`).

use crate::coll::algo::chunks;
use crate::coll::schedule::{Buf, Plan, Region};
use weft_model::cost::CollModel;

/// Where the result goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Every rank's receive buffer (allreduce).
    Everyone,
    /// The receive buffer of this root only (reduce).
    Root(u32),
}

/// Whether the halving should pair ranks near first on a communicator whose rank i is on
/// node `nodes[i]`: when fewer of the first near-first step's pairs than of the first
/// far-first step's cross nodes (so on one node, or with ranks dealt round robin over the
/// nodes, the order stays far first). The same on every rank: every rank has the table.
pub(crate) fn pairs_near_first(nodes: &[u32]) -> bool {
    let size = nodes.len() as u32;
    if size < 4 {
        return false;
    }
    let pof2 = 1u32 << (31 - size.leading_zeros());
    let rem = size - pof2;
    let real = |n: u32| (if n < rem { n * 2 + 1 } else { n + rem }) as usize;
    let crossing = |m: u32| {
        (0..pof2)
            .filter(|&n| nodes[real(n)] != nodes[real(n ^ m)])
            .count()
    };
    crossing(1) < crossing(pof2 / 2)
}

/// The masks of the halving steps, in order: near first (1, 2, 4, ...) or far first.
fn mask_order(pof2: u32, near_first: bool) -> impl DoubleEndedIterator<Item = u32> + Clone {
    let bits = pof2.trailing_zeros();
    (0..bits).map(move |b| if near_first { 1 << b } else { pof2 >> (b + 1) })
}

/// The chunk that (renumbered) rank `nr` holds after the halving: its bits read in the
/// order of `masks`, the first one the most significant.
fn chunk_of(nr: u32, masks: impl Iterator<Item = u32>) -> u32 {
    masks.fold(0, |idx, m| idx * 2 + u32::from(nr & m != 0))
}

pub(crate) fn plan(
    rank: u32,
    size: u32,
    count: usize,
    elem_bytes: usize,
    finish: Finish,
    near_first: bool,
) -> Plan {
    let bytes = count * elem_bytes;
    let mut p = Plan::new();
    let acc_buf = match finish {
        Finish::Root(root) if root != rank => p.tmp(bytes),
        _ => Buf::Recv,
    };
    let acc = Region::new(acc_buf, 0, bytes);
    let tmp_buf = p.tmp(bytes);
    p.step();
    p.copy(Region::new(Buf::Send, 0, bytes), acc);
    let pof2 = if size.is_power_of_two() {
        size
    } else {
        1 << (31 - size.leading_zeros())
    };
    let rem = size - pof2;
    let new_rank = if rank < 2 * rem {
        if rank.is_multiple_of(2) {
            p.send(rank + 1, acc);
            None
        } else {
            let tmp = Region::new(tmp_buf, 0, bytes);
            p.recv(rank - 1, tmp);
            p.step();
            p.reduce(tmp, acc, true);
            Some(rank / 2)
        }
    } else {
        Some(rank - rem)
    };
    let parts = chunks(count, elem_bytes, pof2 as usize);
    let real = |n: u32| if n < rem { n * 2 + 1 } else { n + rem };
    if let Some(nr) = new_rank {
        // Byte region of chunks [lo, hi) in `buf`.
        let span = |buf: Buf, lo: u32, hi: u32| {
            let off = parts[lo as usize].0;
            let end = parts[hi as usize - 1].0 + parts[hi as usize - 1].1;
            Region::new(buf, off, end - off)
        };
        let (mut lo, mut hi) = (0u32, pof2);
        // Reduce-scatter by recursive halving: keep the half that contains this rank's
        // chunk (the partner, which differs in this step's bit only, has the same range).
        for mask in mask_order(pof2, near_first) {
            let partner = real(nr ^ mask);
            let mid = lo + (hi - lo) / 2;
            let (keep, give) = if nr & mask == 0 {
                ((lo, mid), (mid, hi))
            } else {
                ((mid, hi), (lo, mid))
            };
            p.step();
            p.recv(partner, span(tmp_buf, keep.0, keep.1));
            p.send(partner, span(acc_buf, give.0, give.1));
            p.step();
            p.reduce(
                span(tmp_buf, keep.0, keep.1),
                span(acc_buf, keep.0, keep.1),
                true,
            );
            (lo, hi) = keep;
        }
        debug_assert_eq!(lo, chunk_of(nr, mask_order(pof2, near_first)));
        if let Finish::Root(root) = finish {
            // Every participant holds one finished chunk; the root collects them.
            if rank != root {
                p.step();
                p.send(root, span(acc_buf, lo, hi));
            }
        }
        // Allgather by recursive doubling: swap the finished ranges, doubling each time, in
        // the halving's steps backwards.
        let steps = if finish == Finish::Everyone {
            pof2.trailing_zeros()
        } else {
            0
        };
        for mask in mask_order(pof2, near_first).rev().take(steps as usize) {
            let partner = real(nr ^ mask);
            let width = hi - lo;
            let other = if nr & mask == 0 {
                (hi, hi + width)
            } else {
                (lo - width, lo)
            };
            p.step();
            p.recv(partner, span(acc_buf, other.0, other.1));
            p.send(partner, span(acc_buf, lo, hi));
            lo = lo.min(other.0);
            hi = hi.max(other.1);
        }
    }
    if let Finish::Root(root) = finish {
        if rank == root {
            p.step();
            for nr in (0..pof2).filter(|&nr| real(nr) != root) {
                let (o, l) = parts[chunk_of(nr, mask_order(pof2, near_first)) as usize];
                p.recv(real(nr), Region::new(Buf::Recv, o, l));
            }
        }
        return p;
    }
    if rank < 2 * rem {
        p.step();
        if rank.is_multiple_of(2) {
            p.recv(rank + 1, acc);
        } else {
            p.send(rank - 1, acc);
        }
    }
    p
}

/// A recursive-halving reduce-scatter, a recursive-doubling allgather and the fold of the
/// ranks beyond the largest power of two.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let n = m.bytes();
    (m.halving_reduce_scatter(n) + m.doubling_allgather(n) + m.fold(n)) * m.all_ranks_busy()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_first_only_where_it_keeps_big_steps_on_a_node() {
        assert!(!pairs_near_first(&[0; 8]), "one node");
        assert!(!pairs_near_first(&[0, 1, 0, 1]), "round robin");
        assert!(pairs_near_first(&[0, 0, 1, 1]), "2 nodes x 2");
        assert!(pairs_near_first(&[0, 0, 0, 0, 1, 1, 1, 1]), "2 nodes x 4");
        assert!(
            !pairs_near_first(&[0, 0, 1, 1, 0, 0, 1, 1]),
            "blocks of 2, far pairs share"
        );
        // 6 ranks: 2 fold away, renumbered 0,1 = ranks 1,3 and 2,3 = ranks 4,5.
        assert!(pairs_near_first(&[0, 0, 0, 0, 1, 1]));
        assert!(!pairs_near_first(&[0, 0, 0]), "too small to matter");
    }

    #[test]
    fn chunk_of_reads_bits_in_step_order() {
        let far: Vec<u32> = mask_order(8, false).collect();
        let near: Vec<u32> = mask_order(8, true).collect();
        assert_eq!(far, [4, 2, 1]);
        assert_eq!(near, [1, 2, 4]);
        for nr in 0..8 {
            assert_eq!(chunk_of(nr, far.iter().copied()), nr);
            assert_eq!(chunk_of(nr, near.iter().copied()), nr.reverse_bits() >> 29);
        }
    }
}
