//! Rabenseifner's allreduce and reduce: a reduce-scatter by recursive halving over the
//! largest power of two p' ≤ n (the first 2(n − p') ranks fold in pairs first, as in
//! recursive doubling), then either an allgather by recursive doubling (allreduce) or a
//! gather of the p' finished chunks at the root (reduce, "reduce_scatter_gather"). Each rank
//! moves about 2·(p'−1)/p' of the buffer in 2·log2 p' steps: for large messages. Chunks are
//! combined out of rank order: commutative operations only.

use super::chunks;
use crate::coll::schedule::{Buf, Plan, Region};

/// Where the result goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Every rank's receive buffer (allreduce).
    Everyone,
    /// The receive buffer of this root only (reduce).
    Root(u32),
}

pub(crate) fn plan(rank: u32, size: u32, count: usize, elem_bytes: usize, finish: Finish) -> Plan {
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
        let mut mask = pof2 / 2;
        // Reduce-scatter by recursive halving: keep the half that contains chunk nr.
        while mask > 0 {
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
            mask /= 2;
        }
        if let Finish::Root(root) = finish {
            // Every participant holds one finished chunk; the root collects them.
            if rank != root {
                p.step();
                p.send(root, span(acc_buf, lo, hi));
            }
        }
        // Allgather by recursive doubling: swap the finished ranges, doubling each time.
        let mut mask = if finish == Finish::Everyone { 1 } else { pof2 };
        while mask < pof2 {
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
            mask *= 2;
        }
    }
    if let Finish::Root(root) = finish {
        if rank == root {
            p.step();
            for nr in (0..pof2).filter(|&nr| real(nr) != root) {
                let (o, l) = parts[nr as usize];
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
